"""The synthetic class: generated submissions graded by the real nbgrader pipeline (generate_assignment,
autograde with --jobs 2, generate_feedback, export), with the exact score of every student on every
problem asserted from the gradebook.

Every chapter is graded on a perfect, a blank and a partial submission; the hostile set (wrong answers,
types, shapes, exceptions, hard-coded visible tests, calls to posenc's reference, monkeypatches, edited and
deleted test cells, loops, exits, huge output, a corrupt file) runs on HOSTILE. Expected scores come from
the points in the notebooks' nbgrader metadata (tests/synthetic/), never typed in here.
"""

from __future__ import annotations

import csv
import os
import pickle
import re
import sqlite3
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pytest
from nbgrader.api import Gradebook

import synthetic
from autograder import course, scan
from autograder.liveness import demo_cells_to_skip
from autograder.verdict import split_hidden
from differently_correct import DIFFERENT, WARNING_VARIANTS
from support import run_cli

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("autograder_class")]

CHAPTERS = course.assignments()
HOSTILE = [name for name in ("01_why_position", "02_sinusoidal") if name in CHAPTERS] or CHAPTERS[:2]
CELL_TIMEOUT = "30"  # seconds per cell while grading here: generous for a loaded machine, short for loops

# Solutions that hand back posenc's reference instead of implementing it. Where the test blocks the
# reference (checks.without) they score 0; a value exercise (pe100) cannot be protected that way: see the
# instructor guide's limitations (the scan command flags it).
CALLS_REFERENCE = {
    "01_why_position": {
        "ex_attention": "def my_attention(q, k, v):\n    return posenc.attention(q, k, v)\n",
        "ex_causal": "def my_causal_attention(q, k, v):\n"
                     "    return posenc.attention(q, k, v, causal=True, return_weights=True)\n",
    },
    "02_sinusoidal": {
        # Tensor2Tensor's frequencies are posenc's at another base, max_timescale^(n / (n - 1)): the reference,
        # reordered into the half layout
        "t2t_signal": "def t2t_signal(positions, d, max_timescale=1e4):\n"
                      "    n = d // 2\n"
                      "    pe = posenc.sinusoidal(positions, d, max_timescale ** (n / (n - 1)))\n"
                      "    return np.concatenate([pe[:, 0::2], pe[:, 1::2]], axis=1)\n",
        "layout_fix": "def layout_fix(d):\n    return posenc.layout_permutation(d, 'half', 'interleaved')\n",
    },
}

# Correct solutions that read a variable of a narrative cell tagged `demo` (grading leaves such cells out
# unless a later cell reads what they define): they must get full marks, as in the student's own notebook.
USES_NARRATIVE = {
    "02_sinusoidal": {
        # `train_length` (512) comes only from the narrative cell of the extrapolation section.
        "beyond_measure": "train = posenc.sinusoidal(np.arange(train_length), 128)\n"
                          "new = posenc.sinusoidal(np.arange(train_length, 4 * train_length), 128)\n"
                          "similarity = new @ train.T / 64\n"
                          "nearest_position = np.argmax(similarity, axis=1)\n"
                          "nearest_similarity = np.max(similarity, axis=1)\n",
    },
}


def gradebook_grades(course_dir: Path) -> dict:
    """{(student, assignment): {grade_id: grade}} through nbgrader's own gradebook API."""
    out = {}
    with Gradebook(f"sqlite:///{course_dir / 'gradebook.db'}", "posenc") as gb:
        for assignment in gb.assignments:
            for sub in assignment.submissions:
                out[(sub.student.id, assignment.name)] = {
                    g.name: SimpleNamespace(score=float(g.score), max_score=float(g.max_score),
                                            auto_score=g.auto_score, manual_score=g.manual_score,
                                            needs_manual_grade=bool(g.needs_manual_grade))
                    for nb in sub.notebooks for g in nb.grades}
    return out


def mismatches(student: synthetic.Student, grades: dict, points: dict) -> list[str]:
    """Every difference between what the gradebook says and what the student must get."""
    found = []
    if set(grades) != set(student.expected):
        found.append(f"graded cells {sorted(grades)} != expected {sorted(student.expected)}")
    for grade_id, want in student.expected.items():
        got = grades.get(grade_id)
        if got is None:
            continue
        if got.score != want:
            found.append(f"{grade_id}: score {got.score:g}, expected {want:g}")
        if got.max_score != points[grade_id]:
            found.append(f"{grade_id}: max {got.max_score:g}, the notebook metadata says {points[grade_id]:g}")
        if got.needs_manual_grade != (grade_id in student.needs_manual):
            found.append(f"{grade_id}: needs_manual_grade {got.needs_manual_grade}, expected "
                         f"{grade_id in student.needs_manual}")
    return found


def shared_folder(tmp_path_factory, name: str) -> Path:
    """A folder of this test session that every xdist worker sees (the session's base temp folder)."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # .../pytest-N/popen-gwK -> .../pytest-N: one per session, shared by its workers
    return base / name


@pytest.fixture(scope="module")
def graded_class(tmp_path_factory):
    """Build the class and grade it with `python -m autograder grade --jobs 2`, once per test session: the
    first worker to get here does it under a file lock, any other worker reuses the result (xdist groups
    are meant to keep these tests on one worker, but this does not rely on it)."""
    from filelock import FileLock

    root = shared_folder(tmp_path_factory, "autograder_synthetic_class")
    with FileLock(str(root) + ".lock"):
        state_file = root / "state.pickle"
        if not state_file.exists():
            root.mkdir(parents=True, exist_ok=True)
            submissions, course_dir = root / "submissions", root / "course"
            students = []
            for name in CHAPTERS:
                students += synthetic.standard_class(name)
            for i, name in enumerate(HOSTILE):
                students += synthetic.hostile_class(name, DIFFERENT.get(name), CALLS_REFERENCE.get(name),
                                                    separate_patches=(i == 0), stubborn=(i == 0), workdir=root)
            for name in [n for n in CHAPTERS if n not in HOSTILE]:  # (the hostile set has these and more)
                b = synthetic.Builder(name)
                students += [b.replaced_solutions("different", DIFFERENT[name], zero_if_blocked=False),
                             b.payload("hooks_all", "\n".join(synthetic.PAYLOADS.values())), b.harmless_hooks()]
            for name, replacements in WARNING_VARIANTS.items():
                students.append(synthetic.Builder(name).replaced_solutions("warns", replacements,
                                                                           zero_if_blocked=False))
            for name, replacements in USES_NARRATIVE.items():
                if name in CHAPTERS:
                    students.append(synthetic.Builder(name).replaced_solutions("uses_narrative", replacements,
                                                                               zero_if_blocked=False))
            for student in students:
                student.write(submissions)
            result = run_cli("grade", submissions, "--jobs", "2", course_dir=course_dir, cell_timeout=CELL_TIMEOUT)
            (root / "grade.log").write_text(result.stdout + result.stderr)  # for a human, if a test fails
            state = {"students": students, "returncode": result.returncode, "stdout": result.stdout,
                     "stderr": result.stderr}
            state_file.write_bytes(pickle.dumps(state))
        state = pickle.loads(state_file.read_bytes())
    course_dir = root / "course"
    return SimpleNamespace(root=root, submissions=root / "submissions", course=course_dir,
                           result=SimpleNamespace(returncode=state["returncode"], stdout=state["stdout"],
                                                  stderr=state["stderr"]),
                           students={(s.student, s.assignment): s for s in state["students"]},
                           grades=gradebook_grades(course_dir))


def _graded(graded_class):
    return {k: s for k, s in graded_class.students.items() if s.raw is None}


def test_grade_runs_and_names_only_the_corrupt_submissions(graded_class):
    out = graded_class.result.stdout + graded_class.result.stderr
    assert graded_class.result.returncode == 1, f"a corrupt submission must make grade exit 1:\n{out[-3000:]}"
    errors = [line for line in graded_class.result.stdout.splitlines() if line.startswith("ERROR")]
    corrupt = [k for k, s in graded_class.students.items() if s.raw is not None]
    assert corrupt, "the class has corrupt submissions"
    for student, assignment in corrupt:
        assert any(line.startswith(f"ERROR {student}: {assignment} not graded") and "not valid JSON" in line
                   for line in errors), f"no clear error for {student}/{assignment}:\n{out[-3000:]}"
    # A chapter nbgrader cannot put in the gradebook fails its own test below; nothing else may fail.
    others = [line for line in errors if not any(line.startswith(f"ERROR {s}: {a} not graded") for s, a in corrupt)
              and f"solutions/{_unusable_chapter(line)}" not in line]
    assert not others, "only the corrupt submissions may fail:\n" + "\n".join(others)
    gradable = {k for k in _graded(graded_class) if k[1] not in _unusable(graded_class)}
    assert set(graded_class.grades) == gradable, (
        f"every readable submission is in the gradebook, no corrupt one; grade printed:\n{out[-4000:]}")


def _unusable_chapter(line: str) -> str:
    match = re.search(r"solutions/(\w+)", line)
    return match.group(1) if match else "?"


def _unusable(graded_class) -> dict[str, str]:
    """Chapters that grade could not put in the gradebook, with its message."""
    found = {}
    for block in graded_class.result.stdout.split("\nERROR ")[1:]:
        if block.startswith("solutions/") or block.startswith("nbgrader generate_assignment"):
            found[_unusable_chapter(block)] = block.split("\n\n")[0]
    return found


@pytest.mark.parametrize("name", CHAPTERS)
def test_every_student_scores_exactly_what_the_metadata_says(graded_class, name):
    unusable = _unusable(graded_class)
    assert name not in unusable, unusable.get(name)
    points = synthetic.Assignment.load(name).points
    problems = []
    for (student, assignment), s in sorted(_graded(graded_class).items()):
        if assignment == name:
            grades = graded_class.grades.get((student, assignment))
            if grades is None:
                problems.append(f"{student}: not in the gradebook")
                continue
            problems += [f"{student}: {m}" for m in mismatches(s, grades, points)]
    assert not problems, f"{name}:\n" + "\n".join(problems)


@pytest.mark.parametrize("name", CHAPTERS)
def test_score_table_is_printed_with_totals(graded_class, name):
    assert name not in _unusable(graded_class), _unusable(graded_class).get(name)
    out = graded_class.result.stdout
    assert f"\n{name}   (" in out, f"no score table for {name}"
    table = out.split(f"\n{name}   (", 1)[1].split("\n\n", 1)[0].splitlines()
    for (student, assignment), s in _graded(graded_class).items():
        if assignment == name:
            row = next((line for line in table if line.split()[0] == student), None)
            assert row is not None, f"{student} missing from the {name} table"
            total = sum(s.expected.values())
            assert f"  {total:g}  " in f"{row}  ", f"{student}'s total should be {total:g}: {row}"


def _autograded(graded_class, student, name):
    return nbformat.read(graded_class.course / "autograded" / student / name / f"{name}.ipynb", as_version=4)


def _error_line(cell) -> int | None:
    """The line of the test cell where it failed, from the IPython traceback."""
    for out in cell.get("outputs", []):
        if out.get("output_type") == "error":
            text = re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(out.get("traceback", [])))
            match = re.search(r"Cell In\[\d+\], line (\d+)", text)
            if match:
                return int(match.group(1))
    return None


def _verdicts(graded_class, student, name) -> dict:
    """What the grader decided for each test cell of one submission, read from its autograded notebook (the
    outputs the grader's run of each test cell made): {grade_id: {"grader": "pass"/"fail", "stage": ...}}."""
    decided = {}
    for cell in _autograded(graded_class, student, name).cells:
        if cell.cell_type != "code" or not cell.metadata.get("nbgrader", {}).get("grade") or \
                cell.metadata["nbgrader"].get("solution"):
            continue
        errors = [o for o in cell.outputs if o.get("output_type") == "error"]
        text = "\n".join(line for o in errors for line in o.get("traceback", []))
        decided[course.grade_id(cell)] = {"grader": "fail" if errors else "pass",
                                          "stage": "hidden" if "a hidden test" in text else "visible" if errors else ""}
    return decided


@pytest.mark.parametrize("name", HOSTILE)
def test_hardcoded_answers_pass_the_visible_tests_and_fail_the_hidden_ones(graded_class, name):
    student = graded_class.students[("hardcoded", name)]
    failed = [t for t, v in student.expected.items() if v == 0 and t not in synthetic.Assignment.load(name).written]
    assert failed, "the hard-coded student should lose some hidden-test points"
    decided = _verdicts(graded_class, "hardcoded", name)
    for gid in failed:
        assert decided[gid]["grader"] == "fail" and decided[gid]["stage"] == "hidden", (
            f"{gid}: the hard-coded answers should pass the visible tests and fail a hidden one: {decided[gid]}")


@pytest.mark.parametrize("name", HOSTILE)
def test_every_test_cell_is_decided_by_the_grader(graded_class, name):
    """For every graded submission, the grader's verdict exists for every test cell and is what the
    gradebook holds: the kernel's own report never decides."""
    tests = synthetic.Assignment.load(name).test_ids()
    for (student, assignment), s in _graded(graded_class).items():
        if assignment != name:
            continue
        decided = _verdicts(graded_class, student, name)
        assert set(decided) == set(tests), f"{student}: verdicts for {sorted(decided)}"
        for gid in tests:
            score = graded_class.grades[(student, name)][gid].score
            assert (score > 0) == (decided[gid]["grader"] == "pass"), (student, gid, score, decided[gid])


@pytest.mark.parametrize("name", HOSTILE)
def test_grading_notes_say_what_happened(graded_class, name):
    out = graded_class.result.stdout
    table = out.split(f"\n{name}   (", 1)[1].split("\n\n", 1)[0].splitlines()

    def row(student):
        return next(line for line in table if line.split()[0] == student)

    assert "timed out" in row("disruptive") and "sys.exit()" in row("disruptive")
    assert "kernel died" in row("os_exit" if ("os_exit", name) in graded_class.students else "disruptive")
    assert "called posenc's reference" in row("calls_reference")
    # Patched libraries and IPython hooks on correct code change nothing the tests see (they never run in the
    # kernel): full marks and nothing to note.
    # (a patch of posenc, or hooks through get_ipython, can also reach round the block on the reference: such a
    # row has a SCAN note after its total)
    for k in [k for k, _ in graded_class.students if k.startswith("patch_")] + ["perfect", "different",
                                                                                  "harmless_hooks"]:
        if (k, name) in graded_class.students:
            total = f"{sum(graded_class.students[(k, name)].expected.values()):g}"
            before_notes = row(k).split("SCAN", 1)[0].rstrip()
            assert before_notes.endswith(total), row(k)
            assert k not in ("perfect", "different") or "SCAN" not in row(k), row(k)
    if ("stubborn_loop", name) in graded_class.students:
        assert "ignored the timeout interrupt" in row("stubborn_loop")
    assert row("perfect").rstrip().endswith(f"{sum(graded_class.students[('perfect', name)].expected.values()):g}")


@pytest.mark.parametrize("name", HOSTILE)
def test_huge_output_is_cut_in_the_autograded_notebook(graded_class, name):
    path = graded_class.course / "autograded" / "disruptive" / name / f"{name}.ipynb"
    assert path.stat().st_size < 1_000_000, f"{path} is {path.stat().st_size} bytes: output not limited"
    nb = nbformat.read(path, as_version=4)
    text = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    assert "Output truncated" in text


@pytest.mark.parametrize("name", HOSTILE)
def test_restored_test_cells_are_the_instructors(graded_class, name):
    """The student replaced every test by `pass`, changed points and deleted one: nbgrader put them back,
    and the grader ran and decided them (the partial student's scores, above)."""
    nb = _autograded(graded_class, "edits_tests", name)
    a = synthetic.Assignment.load(name)
    by_id = {course.grade_id(c): c for c in nb.cells}
    lesson = {course.grade_id(c): c for c in a.lesson.cells}
    for tid in a.test_ids():
        assert tid in by_id, f"test cell {tid} was not restored"
        assert "pass  # the tests are gone" not in by_id[tid].source
        assert by_id[tid].source.endswith(lesson[tid].source), f"{tid}: not the lesson's visible tests"
    assert set(_verdicts(graded_class, "edits_tests", name)) == set(a.test_ids())


def _hidden_lines(name) -> set[str]:
    """Lines of the chapter's hidden tests that appear nowhere in the lesson a student has."""
    a = synthetic.Assignment.load(name)
    lesson_text = "\n".join(c.source for c in a.lesson.cells)
    lines = set()
    for tid in a.test_ids():
        for line in split_hidden(a.test_source[tid])[1].splitlines():
            line = line.strip()
            if len(line) > 12 and line not in lesson_text:
                lines.add(line)
    return lines


def test_gradebook_survives_parallel_grading(graded_class):
    db = graded_class.course / "gradebook.db"
    with sqlite3.connect(db) as con:
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        duplicates = con.execute("SELECT COUNT(*) FROM (SELECT assignment_id, student_id, COUNT(*) AS n FROM "
                                 "submitted_assignment GROUP BY assignment_id, student_id HAVING n > 1)").fetchone()[0]
        assert duplicates == 0
    # one grade per graded cell for every submission (no lost or doubled writes)
    for key, grades in graded_class.grades.items():
        assert len(grades) == len(graded_class.students[key].expected), key


@pytest.fixture(scope="module")
def feedback_pages(graded_class):
    """`python -m autograder feedback` for the whole class, once."""
    result = run_cli("feedback", course_dir=graded_class.course, cell_timeout=CELL_TIMEOUT)
    assert result.returncode == 0, result.stdout + result.stderr
    return graded_class.course / "feedback"


def test_feedback_pages_for_every_graded_submission(graded_class, feedback_pages):
    for (student, name), s in _graded(graded_class).items():
        page = graded_class.course / "feedback" / student / name / f"{name}.html"
        assert page.exists(), f"no feedback page for {student}/{name}"
        assert page.stat().st_size < 3_000_000, f"{page} is too big: outputs not limited"
    perfect = (graded_class.course / "feedback" / "perfect" / HOSTILE[-1] / f"{HOSTILE[-1]}.html").read_text()
    total = sum(graded_class.students[("perfect", HOSTILE[-1])].expected.values())
    maximum = sum(synthetic.Assignment.load(HOSTILE[-1]).points.values())
    assert f"Score: {float(total)} / {float(maximum)}" in perfect, "the feedback page shows the total"


@pytest.mark.parametrize("name", CHAPTERS)
def test_no_feedback_page_or_autograded_notebook_shows_a_hidden_test(graded_class, feedback_pages, name):
    """Hidden tests stay hidden: not in any student's feedback page (the blank one included), not in the
    autograded notebooks formgrader shows; a failed hidden test shows only its check's message."""
    import html

    hidden = _hidden_lines(name)
    assert hidden, f"{name} has hidden tests"
    pages = sorted(feedback_pages.glob(f"*/{name}/{name}.html"))
    notebooks = sorted((graded_class.course / "autograded").glob(f"*/{name}/{name}.ipynb"))
    assert pages and notebooks
    for path in pages + notebooks:
        text = path.read_text()
        text = html.unescape(re.sub(r"<[^>]+>", "", text)) if path.suffix == ".html" else "\n".join(
            c.source for c in nbformat.reads(text, as_version=4).cells)
        leaked = [line for line in hidden if line in text]
        assert not leaked, f"{path} shows hidden tests: {leaked[:3]}"


def test_export_csv_has_every_total(graded_class):
    target = graded_class.root / "grades.csv"
    result = run_cli("export", "--to", target, course_dir=graded_class.course, cell_timeout=CELL_TIMEOUT)
    assert result.returncode == 0, result.stdout + result.stderr
    with open(target, newline="") as f:
        rows = {(r["student_id"], r["assignment"]): r for r in csv.DictReader(f)}
    for key, s in _graded(graded_class).items():
        if key[1] in _unusable(graded_class):
            continue
        assert key in rows, f"{key} missing from the CSV"
        assert float(rows[key]["score"]) == pytest.approx(sum(s.expected.values())), key
        assert float(rows[key]["max_score"]) == pytest.approx(
            sum(synthetic.Assignment.load(key[1]).points.values())), key


def test_scan_flags_the_cheats_and_not_the_honest(graded_class):
    result = run_cli("scan", graded_class.submissions, course_dir=graded_class.course, cell_timeout=CELL_TIMEOUT)
    assert result.returncode == 0, result.stdout + result.stderr
    flagged = {}
    for line in result.stdout.splitlines()[1:]:
        parts = line.split()
        if len(parts) >= 4 and not line.startswith("ERROR"):
            flagged.setdefault((parts[0], parts[1]), []).append(line)
    # what can reach posenc's reference around the tests' block (the notes column's SCAN): only a patch of posenc
    # or of the kernel's checks, and the IPython payloads (they reach the kernel's machinery); numpy patches,
    # exits and caught interrupts change no verdict now that tests run in the grading process only
    around = tuple(scan.AROUND_THE_REFERENCE)
    for (student, name), s in graded_class.students.items():
        lines = flagged.get((student, name), [])
        if student in ("patch_posenc", "patch_all", "patches_checks"):
            assert any(scan.PATCH in line for line in lines), f"{student}/{name} not flagged: {lines}"
        if student == "calls_reference":
            assert any(scan.USES_POSENC in line for line in lines), lines
        if student in synthetic.PAYLOADS or student == "hooks_all":
            assert lines, f"{student}/{name}: IPython hooks not flagged"
        if student in ("perfect", "blank", "partial", "different", "wrong"):
            assert not any(reason in line for line in lines for reason in around), lines


@pytest.mark.parametrize("name", sorted(USES_NARRATIVE))
def test_a_solution_reading_a_demo_cells_variable_gets_that_cell_run(name):
    """The class's uses_narrative student is a real test of the demo-cell rule: with their solution, grading
    runs a demo cell it leaves out for the perfect submission (their full marks are asserted above)."""
    b = synthetic.Builder(name)
    perfect = demo_cells_to_skip(b.perfect().notebook)
    uses = demo_cells_to_skip(b.replaced_solutions("uses_narrative", USES_NARRATIVE[name], False).notebook)
    assert uses < perfect, "the replacement should read a name that only a skipped demo cell defines"
