"""A hostile class that has read the grader's source, graded as an instructor grades it (`python -m autograder grade`,
every kernel in the sandbox), beside an honest student: the boundaries of autograder/README.md's threat model that
only a real grading run crosses.

* replies built to be expensive for the grader: a dict (a subclass whose ``items`` makes its pairs on the fly, so
  it costs the kernel nothing) whose 40,000 keys all hash alike, and a ``range`` of 10**8 (61 bytes on the wire);
* strings built to write to the instructor's terminal: exception classes named with escape sequences, a carriage
  return and OSC 52 (the clipboard), printed output with the same;
* a chapter folder over the size limit (a sparse file: it costs the test no disk).

Each hostile student scores what its blank notebook scores (0), the honest one full marks, the run's output holds
no control character, the grading process stays under 1.5 GB, and the refusals say why in the cells.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pytest

import synthetic
from autograder import course, sandbox, submissions
from support import cli_command, cli_env

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("sandbox")]

CHAPTER = "01_why_position" if "01_why_position" in course.assignments() else course.assignments()[0]
MAX_GRADER_BYTES = 1.5 * 2**30

VALUES = {
    "collides": '''
class _Keys(dict):  # pairs made on the fly: the kernel never builds the dict whose keys all hash alike
    def items(self):
        return [(k * (2**61 - 1), 0) for k in range(1, 40_001)]
    def __len__(self):
        return 40_000
def _value():
    return _Keys()
''',
    "huge_range": '''
def _value():
    return range(10**8)
''',
    "escapes": '''
_EVIL = "Err\\r\\x1b[2K\\x1b[1Aada  10/10\\x1b]0;pwned\\x07\\x1b]52;c;cm0gLXJmIH4=\\x07\\u202e"
print(_EVIL)
def _value():
    raise type(_EVIL, (Exception,), {})(_EVIL + "\\n" + _EVIL)
''',
}


def _names(stub: str) -> tuple[list[str], list[str]]:
    """(functions, answer variables) a solution cell's stub defines."""
    functions, variables = [], []
    for node in ast.parse(stub).body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            functions.append(node.name)
        elif isinstance(node, ast.Assign):
            variables += [t.id for t in node.targets if isinstance(t, ast.Name)]
    return functions, variables


def hostile(name: str) -> synthetic.Student:
    """The blank lesson where every solution cell's functions return (or raise) the hostile value, and every
    answer variable holds it: it earns what blank earns."""
    b = synthetic.Builder(CHAPTER)
    student = b.blank(name)
    for ex in b.a.exercises:
        for sid in ex.solutions:
            cell = synthetic.find_cell(student.notebook, sid)
            functions, variables = _names(cell.source)
            code = [VALUES[name]]
            code += [f"def {f}(*args, **kwargs):\n    return _value()\n" for f in functions]
            code += [f"try:\n    {v} = _value()\nexcept Exception:\n    {v} = None\n" for v in variables]
            cell.source = "\n".join(code)
    return student


def _controls(text: str) -> list[str]:
    return sorted({c for c in text if (ord(c) < 32 and c not in "\n\t") or 0x7f <= ord(c) <= 0x9f
                   or c in "\u202e\u2066\u200f"})


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    if sandbox.unavailable():
        pytest.skip(sandbox.unavailable())
    root = tmp_path_factory.mktemp("hostile")
    course_dir, handed_in = root / "course", root / "handed_in"
    students = [hostile(name) for name in VALUES] + [synthetic.Builder(CHAPTER).perfect("honest")]
    for student in students:
        student.write(handed_in)
    oversize = synthetic.Builder(CHAPTER).perfect("oversize")
    oversize.write(handed_in)
    with open(handed_in / "oversize" / CHAPTER / "data.bin", "wb") as handle:  # sparse: no disk used
        handle.truncate(submissions.DEFAULT_MAX_FOLDER_MB * 2**20 + 1)
    # The grading process's peak memory, from a parent that waits for it (its own children, the kernels,
    # are bounded by the sandbox's 4 GiB each, and they count here too: so this bounds the grader all the more).
    wrapper = ("import resource, subprocess, sys\n"
               "done = subprocess.run(sys.argv[1:])\n"
               "print('MAXRSS_KB', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr)\n"
               "sys.exit(done.returncode)\n")
    run = subprocess.run([sys.executable, "-c", wrapper, *cli_command("grade", handed_in)], capture_output=True,
                         text=True, cwd=course.ROOT, env=cli_env(course_dir, cell_timeout=30), timeout=1500)
    maxrss = int(run.stderr.rsplit("MAXRSS_KB", 1)[1].split()[0]) * 1024
    return SimpleNamespace(run=run, course=course_dir, students=students, maxrss=maxrss)


def _scores(course_dir: Path) -> dict:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course_dir / 'gradebook.db'}", "posenc") as gb:
        return {sub.student.id: {g.name: float(g.score) for nb in sub.notebooks for g in nb.grades}
                for assignment in gb.assignments for sub in assignment.submissions}


def _outputs(course_dir: Path, student: str) -> str:
    nb = nbformat.read(course_dir / "autograded" / student / CHAPTER / f"{CHAPTER}.ipynb", as_version=4)
    return json.dumps([o for c in nb.cells for o in c.get("outputs", [])])


def test_each_hostile_student_scores_what_blank_scores_and_the_honest_one_full_marks(graded):
    scores = _scores(graded.course)
    for student in graded.students:
        assert scores.get(student.student) == student.expected, (student.student, graded.run.stdout[-3000:])


def test_expensive_replies_are_refused_with_a_reason(graded):
    assert "share a hash" in _outputs(graded.course, "collides")
    assert "a range of more than" in _outputs(graded.course, "huge_range")


def test_the_grading_process_stays_under_its_memory_bound(graded):
    assert graded.maxrss < MAX_GRADER_BYTES, f"{graded.maxrss / 2**30:.2f} GiB"


def test_no_control_character_reaches_the_instructors_terminal(graded):
    out = graded.run.stdout + graded.run.stderr
    assert "escapes" in out  # (its row is there, with its notes)
    assert _controls(out) == [], _controls(out)


def test_feedback_folders_hold_the_page_alone(graded):
    from autograder.commands.feedback import KEPT

    run = subprocess.run(cli_command("feedback", CHAPTER), capture_output=True, text=True, cwd=course.ROOT,
                         env=cli_env(graded.course), timeout=900)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert _controls(run.stdout + run.stderr) == []
    for student in graded.students:
        folder = graded.course / "feedback" / student.student / CHAPTER
        kept = sorted(p.name for p in folder.rglob("*"))
        assert f"{CHAPTER}.html" in kept and set(kept) <= {f"{CHAPTER}.html", *KEPT}, (student.student, kept)


def test_an_oversize_folder_costs_only_its_student_one_line(graded):
    lines = [line for line in graded.run.stdout.splitlines() if line.startswith("ERROR")]
    assert len(lines) == 1 and "oversize" in lines[0] and "MiB" in lines[0], lines
    assert "oversize" not in _scores(graded.course)
    assert not (graded.course / "submitted" / "oversize").exists()
    assert graded.run.returncode == 1  # (a submission could not be graded), and every other one was
    assert "honest" in _scores(graded.course)
