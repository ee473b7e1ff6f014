"""What the grader accepts as a submission, and what the scan reads in it.

Submissions are files: a student folder, chapter folder or notebook that is a symbolic link (which `unzip`
restores from a zip) is refused before anything is read or copied. A file that breaks the JSON reader (nested
too deeply, a huge number, too large) costs its student one line, not the run. The scan reads every cell that
is not the lesson's own code whatever its nbgrader metadata says, as IPython runs it (what it finds there:
test_autograder.py).
"""

from __future__ import annotations

import shutil
import stat
import subprocess
import zipfile
from pathlib import Path

import nbformat
import pytest

import synthetic
from autograder import autograde, config, course, gradebook, scan, submissions
from autograder.commands import grade as grade_command
from autograder.commands.scan import scan as scan_folder
from synthetic import submit

CHAPTERS = course.assignments()
NAME = CHAPTERS[0]


def _submit(folder: Path, student: str, text: str | None = None) -> Path:
    return submit(folder, student, NAME, text)


def _graded(found) -> list[tuple[str, str]]:
    return [(s.student, s.assignment) for s in found]


# ---------------------------------------------------------------------------------------------------------
# Symbolic links and student ids.

def test_a_symlinked_chapter_folder_is_refused_with_one_line(tmp_path):
    """`alice/01 -> the solutions' folder` would hand in the model solutions as alice's work."""
    folder = tmp_path / "in"
    _submit(folder, "bob")
    (folder / "alice").mkdir(parents=True)
    (folder / "alice" / NAME).symlink_to(course.SOLUTIONS / NAME, target_is_directory=True)
    found, errors = submissions.find_submissions(folder)
    assert _graded(found) == [("bob", NAME)]
    assert len(errors) == 1, errors
    assert errors[0].startswith(f"alice: not graded: the folder alice/{NAME} is a symbolic link (to "
                                f"{course.SOLUTIONS / NAME})"), errors
    assert errors[0].endswith("hand in the notebook itself")


def test_a_symlinked_student_folder_is_refused(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    _submit(elsewhere, "alice")
    folder = tmp_path / "in"
    _submit(folder, "bob")
    (folder / "alice").symlink_to(elsewhere / "alice", target_is_directory=True)
    found, errors = submissions.find_submissions(folder)
    assert _graded(found) == [("bob", NAME)]
    assert errors == [f"alice: not graded: the folder alice is a symbolic link (to {elsewhere / 'alice'}); "
                      "hand in the notebook itself"]


def test_a_relative_link_restored_by_unzip_is_refused(tmp_path):
    """What a student's zip can hold: a chapter folder stored as a link `../../solutions/<chapter>`, which
    `unzip` restores as a link pointing out of the submissions folder."""
    if not shutil.which("unzip"):
        pytest.skip("needs unzip")
    archive = tmp_path / "alice.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("alice/", "")
        link = zipfile.ZipInfo(f"alice/{NAME}")
        link.create_system = 3  # Unix: external_attr holds the mode, and S_IFLNK makes the entry a link
        link.external_attr = (stat.S_IFLNK | 0o777) << 16
        z.writestr(link, f"../../solutions/{NAME}")
    folder = tmp_path / "in"
    folder.mkdir()
    subprocess.run(["unzip", "-q", str(archive), "-d", str(folder)], check=True)
    assert (folder / "alice" / NAME).is_symlink()
    _submit(tmp_path, "solutions_copy")  # give the link a target, as the instructor's machine would
    (tmp_path / "solutions").mkdir()
    (tmp_path / "solutions" / NAME).symlink_to(tmp_path / "solutions_copy" / NAME)
    assert (folder / "alice" / NAME / f"{NAME}.ipynb").is_file(), "the link leads to a notebook"
    found, errors = submissions.find_submissions(folder)
    assert found == []
    assert errors == [f"alice: not graded: the folder alice/{NAME} is a symbolic link (to ../../solutions/{NAME}); "
                      "hand in the notebook itself"]


def test_the_submissions_folder_itself_may_be_a_link(tmp_path):
    _submit(tmp_path / "real", "bob")
    (tmp_path / "link").symlink_to(tmp_path / "real", target_is_directory=True)
    found, errors = submissions.find_submissions(tmp_path / "link")
    assert errors == []
    assert _graded(found) == [("bob", NAME)]
    assert found[0].folder == (tmp_path / "real" / "bob" / NAME).resolve()


def _folder_handling_only(monkeypatch) -> list:
    """`grade` with everything after the folder's handling stubbed out (the sandbox check, the gradebook,
    nbgrader's autograde): what it would hand to autograde is collected in the returned list. The real
    pipeline is graded end to end in test_autograder_class.py."""
    monkeypatch.setattr(config, "refused", lambda unsandboxed, out: False)
    monkeypatch.setattr(gradebook, "sync_assignments", lambda names, cfg: {})
    monkeypatch.setattr(gradebook, "register_students", lambda ids, cfg: None)
    graded = []
    monkeypatch.setattr(autograde, "autograde", lambda pairs, cfg, jobs, progress: graded.extend(pairs) or [])
    monkeypatch.setattr(gradebook, "read_scores", lambda names, cfg: {})
    return graded


def test_nothing_from_a_refused_folder_is_copied_into_the_course(tmp_path, monkeypatch):
    folder = tmp_path / "in"
    _submit(folder, "bob")
    (folder / "alice").mkdir()
    (folder / "alice" / NAME).symlink_to(course.SOLUTIONS / NAME, target_is_directory=True)
    monkeypatch.setenv("POSENC_COURSE_DIR", str(tmp_path / "course"))
    graded = _folder_handling_only(monkeypatch)
    lines = []
    assert grade_command.grade(folder, out=lines.append) == 1
    assert graded == [(NAME, "bob")]
    submitted = tmp_path / "course" / "submitted"
    assert sorted(p.name for p in submitted.iterdir()) == ["bob"]
    assert [line for line in lines if line.startswith("ERROR")] == [
        f"ERROR alice: not graded: the folder alice/{NAME} is a symbolic link (to {course.SOLUTIONS / NAME}); "
        "hand in the notebook itself"]


def test_the_collected_folder_is_graded_where_it_lies(tmp_path, monkeypatch):
    """`grade` given nbgrader's own submitted folder (what `nbgrader collect` fills on the course's hub) grades the
    notebooks in place, timestamp.txt included, instead of deleting them to copy them onto themselves; a link
    in there is dropped as a copy would drop it."""
    monkeypatch.setenv("POSENC_COURSE_DIR", str(tmp_path / "course"))
    collected = tmp_path / "course" / "submitted"
    notebook = _submit(collected, "bob")
    (notebook.parent / "timestamp.txt").write_text("2026-11-24 08:24:17.230116 UTC")
    (notebook.parent / "data.txt").symlink_to(course.SOLUTIONS / NAME / f"{NAME}.ipynb")
    graded = _folder_handling_only(monkeypatch)
    assert grade_command.grade(collected, out=lambda line: None) == 0
    assert graded == [(NAME, "bob")]
    assert sorted(p.name for p in notebook.parent.iterdir()) == [f"{NAME}.ipynb", "timestamp.txt"]


def test_a_folder_tree_too_deep_to_copy_costs_one_student_one_line(tmp_path, monkeypatch):
    """A zip can carry a tree of folders hundreds of levels deep beside the notebook: shutil.copytree then runs
    out of recursion and `grade` ended in a traceback, grading nobody. It is refused before the copy."""
    folder = tmp_path / "in"
    _submit(folder, "alice")
    _submit(folder, "bob")
    deep = folder / "alice" / NAME
    for _ in range(600):
        deep = deep / "d"
    deep.mkdir(parents=True)
    monkeypatch.setenv("POSENC_COURSE_DIR", str(tmp_path / "course"))
    graded = _folder_handling_only(monkeypatch)
    lines = []
    assert grade_command.grade(folder, out=lines.append) == 1
    assert graded == [(NAME, "bob")]
    assert [line for line in lines if line.startswith("ERROR")] == [
        f"ERROR alice: {NAME} not graded: folders nested more than {submissions.MAX_FOLDER_DEPTH} levels deep (at "
        f"{NAME}{'/d' * (submissions.MAX_FOLDER_DEPTH + 1)}); hand in the notebook and the files it reads. Their "
        "previous grades, if any, are kept."]


def test_a_folder_of_too_many_files_costs_one_student_one_line(tmp_path):
    _submit(tmp_path, "alice")
    _submit(tmp_path, "bob")
    for k in range(submissions.MAX_FOLDER_ENTRIES):
        (tmp_path / "alice" / NAME / f"f{k}.txt").write_text("")
    found, errors = submissions.find_submissions(tmp_path)
    assert _graded(found) == [("bob", NAME)]
    assert len(errors) == 1 and errors[0].startswith(f"alice: {NAME} not graded: more than "
                                                     f"{submissions.MAX_FOLDER_ENTRIES} files"), errors


def test_a_file_that_cannot_be_read_costs_one_student_one_line(tmp_path, monkeypatch):
    """unzip restores a mode-000 entry; an instructor who is not root cannot copy it (root reads any, so the
    check is faked here)."""
    _submit(tmp_path, "alice")
    _submit(tmp_path, "bob")
    (tmp_path / "alice" / NAME / "secret.txt").write_text("x")
    opener = submissions.os.open

    def refusing(path, *args, **kwargs):
        if str(path).endswith("secret.txt"):
            raise PermissionError(13, "Permission denied", str(path))
        return opener(path, *args, **kwargs)

    monkeypatch.setattr(submissions.os, "open", refusing)
    found, errors = submissions.find_submissions(tmp_path)
    assert _graded(found) == [("bob", NAME)]
    assert errors == [f"alice: {NAME} not graded: cannot read {NAME}/secret.txt (Permission denied); hand in the "
                      "notebook and the files it reads. Their previous grades, if any, are kept."]


def test_a_chapter_folder_that_cannot_be_entered_costs_one_student_one_line(tmp_path, monkeypatch):
    _submit(tmp_path, "alice")
    _submit(tmp_path, "bob")
    is_symlink = Path.is_symlink

    def refusing(self):
        if self.parent.name == NAME and self.parent.parent.name == "alice":
            raise PermissionError(13, "Permission denied", str(self))  # lstat inside a folder without x
        return is_symlink(self)

    monkeypatch.setattr(Path, "is_symlink", refusing)
    found, errors = submissions.find_submissions(tmp_path)
    assert _graded(found) == [("bob", NAME)]
    assert errors == [f"alice: {NAME} not graded: cannot read it (Permission denied)"]


def test_a_copy_that_fails_costs_one_student_one_line(tmp_path, monkeypatch):
    """What changes between the check and the copy (a file removed, a disk full) costs that student a line."""
    folder = tmp_path / "in"
    _submit(folder, "alice")
    _submit(folder, "bob")
    monkeypatch.setenv("POSENC_COURSE_DIR", str(tmp_path / "course"))
    graded = _folder_handling_only(monkeypatch)
    copy_in = submissions.copy_in

    def failing(sub, cfg):
        if sub.student == "alice":
            raise shutil.Error([("a", "b", "No space left on device")])
        return copy_in(sub, cfg)

    monkeypatch.setattr(submissions, "copy_in", failing)
    lines = []
    assert grade_command.grade(folder, out=lines.append) == 1
    assert graded == [(NAME, "bob")]
    errors = [line for line in lines if line.startswith("ERROR")]
    assert len(errors) == 1 and errors[0].startswith(f"ERROR alice: {NAME} not graded: its folder could not be "
                                                     "copied (Error: "), errors


def test_a_student_id_is_matched_whole(tmp_path):
    """`re.match` with `$` accepts a trailing newline: "alice\\n" is not a student id."""
    _submit(tmp_path, "alice\n")
    _submit(tmp_path, "bob")
    found, errors = submissions.find_submissions(tmp_path)
    assert _graded(found) == [("bob", NAME)]
    assert len(errors) == 1 and errors[0].startswith("alice\\n: not graded: a student id must be"), errors
    assert "\n" not in errors[0], "one line"
    assert submissions.STUDENT_ID.fullmatch("alice.b@x+y-1")
    assert not submissions.STUDENT_ID.fullmatch("alice\n")


def test_an_unreadable_student_folder_costs_that_student_one_line(tmp_path, monkeypatch):
    _submit(tmp_path, "alice")
    _submit(tmp_path, "bob")
    listing = Path.iterdir

    def iterdir(self):
        if self.name == "alice":  # what a folder without read permission gives (root reads any, so fake it)
            raise PermissionError(13, "Permission denied", str(self))
        return listing(self)

    monkeypatch.setattr(Path, "iterdir", iterdir)
    found, errors = submissions.find_submissions(tmp_path)
    assert _graded(found) == [("bob", NAME)]
    assert errors == ["alice: not graded: cannot read the folder alice (Permission denied)"]


# ---------------------------------------------------------------------------------------------------------
# Files that break the JSON reader.

DEEP = "[" * 100_000 + "]" * 100_000
DEEP_METADATA = '{"cells": [], "metadata": ' + '{"a": ' * 5000 + "1" + "}" * 5000 + ', "nbformat": 4, ' \
                '"nbformat_minor": 5}'


@pytest.mark.parametrize("text, words", [
    (DEEP, "nested too deeply to be a notebook"),
    (DEEP_METADATA, "nested too deeply to be a notebook"),
    ('{"cells": [], "n": ' + "9" * 5000 + "}", "is not JSON a notebook can hold"),
    (b"\xff\xfe{}", "is not UTF-8 text"),
], ids=["deep_array", "deep_metadata", "huge_integer", "not_utf8"])
def test_notebook_problem_says_why_in_words_instead_of_raising(tmp_path, text, words):
    path = tmp_path / f"{NAME}.ipynb"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    problem = submissions.notebook_problem(path)
    assert problem.startswith((f"{NAME}.ipynb ", f"cannot read {NAME}.ipynb")), problem
    assert words in problem, problem


def test_a_notebook_over_the_size_limit_is_refused_before_it_is_read(tmp_path):
    path = tmp_path / f"{NAME}.ipynb"
    with path.open("wb") as f:
        f.truncate(submissions.MAX_NOTEBOOK_BYTES + 1)  # sparse: no disk space used, nothing to read
    problem = submissions.notebook_problem(path)
    assert problem == (f"{NAME}.ipynb is 50 MiB, over the 50 MiB a notebook may be (clear its outputs and "
                       "hand it in again)")


def test_the_size_limit_is_a_setting(tmp_path, monkeypatch):
    path = _submit(tmp_path, "amy")
    monkeypatch.setattr(submissions, "MAX_NOTEBOOK_BYTES", path.stat().st_size - 1)
    assert "over the" in submissions.notebook_problem(path)
    monkeypatch.setattr(submissions, "MAX_NOTEBOOK_BYTES", path.stat().st_size)
    assert submissions.notebook_problem(path) is None


def test_a_deeply_nested_file_costs_one_student_one_line(tmp_path):
    _submit(tmp_path, "deep", text=DEEP)
    _submit(tmp_path, "bob")
    found, errors = submissions.find_submissions(tmp_path)
    assert _graded(found) == [("bob", NAME)]
    assert errors == [f"deep: {NAME} not graded: {NAME}.ipynb is JSON too large or nested too deeply to be a "
                      "notebook. Their previous grades, if any, are kept."]


def test_scan_goes_on_past_unreadable_files(tmp_path, monkeypatch):
    _submit(tmp_path, "deep", text=DEEP)
    cheat = synthetic.Builder(NAME).blank().notebook
    cheat.cells.append(nbformat.v4.new_code_cell("import gc"))
    nbformat.write(cheat, _submit(tmp_path, "cheat"))
    findings, errors = scan_folder(tmp_path)
    assert [f.student for f in findings] == ["cheat"]
    assert len(errors) == 1 and errors[0].startswith("deep: ") and "nested too deeply" in errors[0]
    # a file that find_submissions accepts but the scan cannot read: one line, the others still scanned
    _submit(tmp_path, "alsobad")
    real = scan.scan_notebook

    def failing(path, student, assignment):
        if student == "alsobad":
            raise RecursionError("maximum recursion depth exceeded")
        return real(path, student, assignment)

    monkeypatch.setattr(scan, "scan_notebook", failing)
    findings, errors = scan_folder(tmp_path)
    assert [f.student for f in findings] == ["cheat"]
    assert f"alsobad: {NAME} not scanned: {NAME}.ipynb is unreadable (RecursionError: maximum recursion depth " \
           "exceeded)" in errors


@pytest.mark.parametrize("source", ["1" + " + 1" * 100_000, "x = " + "(" * 300 + ")" * 300],
                         ids=["long_sum", "deep_parentheses"])
def test_scan_reads_a_cell_too_deep_to_parse_as_text(source):
    """For a human: the kernel cannot parse the cell either, so none of it runs and nothing goes in the notes."""
    found = scan.scan_source(source + "\nexec('y')")
    reasons = ("does not parse as Python", "is nested too deeply (or too large) to parse")
    assert found[0] in {(1, f"{why} {scan.TEXT_ONLY}") for why in reasons}, found
    assert (2, f"{scan.TEXT_ONLY} {scan.RUNS} (exec)") in found, found
    assert not any(m in scan.AROUND_THE_REFERENCE for _, m in found), found


# ---------------------------------------------------------------------------------------------------------
# The scan: which cells it reads, and what it names.

def _locked_grade_id(name: str) -> str:
    nb = nbformat.read(course.source_notebook(name), as_version=4)
    return next(course.grade_id(c) for c in nb.cells if c.cell_type == "code" and course.nbgrader_meta(c).get("locked"))


@pytest.mark.parametrize("relabel", ["as_locked", "as_locked_test", "metadata_removed", "lesson_cell_id"])
def test_metadata_cannot_hide_a_cell_from_the_scan(tmp_path, relabel):
    """The cell's nbgrader metadata and id are the student's to edit: a solution cell relabelled as a locked
    cell (which the scan used to skip) or stripped of its metadata is read like any other."""
    b = synthetic.Builder(NAME)
    nb = b.blank().notebook
    solution_id = b.a.exercises[0].solutions[0]
    cell = next(c for c in nb.cells if course.grade_id(c) == solution_id)
    cell.source = "import gc\nfound = gc.get_objects()\n" + cell.source
    locked = _locked_grade_id(NAME)
    if relabel == "as_locked":
        cell.metadata["nbgrader"].update(grade_id=locked, locked=True, solution=False)
    elif relabel == "as_locked_test":
        cell.metadata["nbgrader"].update(grade_id=locked, locked=True, solution=False, grade=True, points=1)
    elif relabel == "metadata_removed":
        del cell.metadata["nbgrader"]
    else:
        other = next(c for c in nb.cells if c.cell_type == "code" and c is not cell)
        other.id, cell.id = cell.id, other.id  # the id of an unchanged lesson cell
    path = tmp_path / f"{NAME}.ipynb"
    nbformat.write(nb, path)
    findings = scan.scan_notebook(path, "amy", NAME)
    assert any(f.message == f"{scan.FRAMES} (gc)" for f in findings), findings


def test_the_lessons_own_cells_give_no_finding(tmp_path):
    """A cell byte-identical to a code cell of the released lesson is the instructor's code: not listed,
    wherever it stands and whatever its metadata says."""
    nb = synthetic.Builder(NAME).blank().notebook
    for cell in nb.cells:
        cell.metadata.pop("nbgrader", None)
    nb.cells.reverse()
    path = tmp_path / f"{NAME}.ipynb"
    nbformat.write(nb, path)
    assert scan.scan_notebook(path, "amy", NAME) == []


@pytest.mark.parametrize("name", CHAPTERS)
def test_scan_is_quiet_on_honest_submissions(tmp_path, name):
    """The model solutions typed into the lesson, and the lesson untouched: nothing but uses of posenc."""
    b = synthetic.Builder(name)
    for student in (b.perfect(), b.partial(), b.blank()):
        path = student.write(tmp_path)
        found = [f for f in scan.scan_notebook(path, student.student, name) if f.message != scan.USES_POSENC]
        assert found == [], f"{student.student}: {found}"


IPYTHON = [  # read as IPython runs the cell: magics, shell lines and help become calls, and what they run is code
    ("%run copy.py", f"{scan.MAGIC} (%run)"),
    ("%%writefile copy.py\nsoftmax = None", f"{scan.MAGIC} (%writefile)"),
    ("%load_ext my_extension", f"{scan.MAGIC} (%load_ext)"),
    ("!ls", f"{scan.PROCESS} (system)"),
    ("files = !ls", f"{scan.PROCESS} (getoutput)"),
    ("%time exec(text)", f"{scan.RUNS} (exec)"),
    ("%timeit -n1 -r1 exec(text)", f"{scan.RUNS} (exec)"),  # (its options: the line is read as text, and runs)
    ("%%time\nimport gc", f"{scan.FRAMES} (gc)"),
    ("posenc.attention.__code__?", f"{scan.INTERNALS} (__code__)"),
    (" ip = get_ipython()\n x = 1", f"{scan.AGENT} (get_ipython)"),  # (IPython dedents it: still the student's)
]


@pytest.mark.parametrize("code, message", IPYTHON, ids=[c.splitlines()[0] for c, _ in IPYTHON])
def test_scan_reads_ipython_syntax_as_ipython_runs_it(code, message):
    found = scan.scan_source(code)
    assert message in [m for _, m in found], found
    assert not any(scan.TEXT_ONLY in m for _, m in found), "read as Python, magics too"


def test_a_magic_is_named_as_itself_and_one_that_runs_only_its_python_is_quiet():
    assert scan.scan_source("%run copy.py\nx = 1") == [(1, f"{scan.MAGIC} (%run)")]
    assert scan.scan_source("%matplotlib inline\n%timeit -n 10 sum(range(9))") == []


@pytest.mark.parametrize("code", [
    "signal = np.sin(positions)\npeak = signal.max()",  # a variable named like a module
    "code = 3\nprint(code + 1)",
    "pattern = re.compile(r'x')",                        # compile, but a method
    "def run(threading_level):\n    return threading_level",
    "layers = list(model.modules())",                    # torch's modules(), not sys.modules
    "class Scaled(torch.nn.Module):\n    def __init__(self, scale):\n        super().__init__()\n"
    "        self.scale = scale",                          # a name posenc defines, on the object __init__ makes
    "table = np.load(path)",
    "print(type(x).__name__)",
])
def test_scan_is_quiet_on_lookalikes(code):
    assert scan.scan_source(code) == []
