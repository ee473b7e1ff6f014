"""The boundaries a student's bytes cross, each pinned by a hostile case (autograder/README.md, "Threat model").

Fast tier: what the grader decodes (wire), the grader's own time on a test cell (verdict's watch), what reaches
a person (printable, the score table, the CSV, the command line's streams). The end-to-end hostile class, graded
in the real sandbox, is in tests/test_hostile_class.py."""

from __future__ import annotations

import csv
import json
import subprocess
import sys

import numpy as np
import posenc
import pytest

from autograder import checks, printable, report, verdict, wire
from autograder.commands import export
from support import DescribesThenForges

# -- what the grader decodes ----------------------------------------------------------------------------------

COLLIDING = 2 ** 61 - 1  # CPython hashes an int modulo this prime: every multiple of it hashes to 0


def _colliding_dict(n: int) -> str:
    return json.dumps({"$": "dict", "items": [[k * COLLIDING, 0] for k in range(1, n + 1)]})


def test_a_dict_whose_keys_share_a_hash_is_refused_before_it_is_built():
    assert len({hash(k * COLLIDING) for k in range(1, 100)}) == 1  # (the attack: every key hashes alike)
    with pytest.raises(wire.WireError, match="share a hash"):
        wire.loads(_colliding_dict(40_000))
    # a few shared hashes are honest (CPython hashes -1 and -2 alike), and a large dict of ints decodes
    assert wire.loads(wire.dumps({-1: "a", -2: "b"})) == {-1: "a", -2: "b"}
    big = {k: k for k in range(20_000)}
    assert wire.loads(wire.dumps(big)) == big


def test_a_range_longer_than_the_element_cap_is_refused():
    with pytest.raises(wire.WireError, match="range"):
        wire.loads(wire.dumps(range(10 ** 8)))
    with pytest.raises(wire.WireError, match="range"):
        wire.loads(wire.dumps(range(-10 ** 30, 10 ** 30)))  # (len() itself overflows)
    assert wire.loads(wire.dumps(range(5, 1000, 7))) == range(5, 1000, 7)


def test_decoding_counts_every_value_against_one_cap(monkeypatch):
    monkeypatch.setattr(wire, "MAX_ELEMENTS", 1000)
    with pytest.raises(wire.WireError, match="values in one payload"):
        wire.loads(json.dumps([[]] * 1001))  # tagged lists
    with pytest.raises(wire.WireError, match="values in one payload"):
        wire.loads(json.dumps({"$": "dict", "items": [[0, []]] * 1001}))
    with pytest.raises(wire.WireError, match="values in one payload"):
        wire.loads(json.dumps({"$": "tuple", "items": [0] * 1001}))
    assert wire.loads(wire.dumps([[]] * 400)) == [[]] * 400


@pytest.mark.slow  # (decodes the largest payload the cap admits)
def test_the_whole_largest_payload_decodes_within_the_cap():
    """An honest payload as large as the wire allows decodes: the cap is not smaller than JSON's own."""
    values = list(range(wire.MAX_BYTES // 16))
    assert len(wire.dumps(values)) < wire.MAX_BYTES
    assert wire.loads(wire.dumps(values)) == values


# -- the grader's own time on a test cell ---------------------------------------------------------------------

SETUP = ["import numpy as np", "import posenc", "from autograder import checks"]


def test_the_graders_own_work_on_a_cell_is_bounded_by_the_cells_time():
    # work in the grading process that never ends (what a reply built to be slow to compare would cost)
    cell = "value = answer()\nwhile True:\n    value = [value]\n    value = value[0]\n"
    decided = verdict.judge(cell, SETUP, DescribesThenForges(1.0), salt=1, seconds=0.3)
    assert not decided.passed and decided.ename == "GraderTimeout", decided
    assert "took longer than" in decided.message


class _LostOnCall(DescribesThenForges):
    """A kernel that answers the description, then is lost on the first call."""

    def request(self, payload):
        if wire.loads(payload)["op"] != "describe":
            raise verdict.KernelLost("the kernel ignored the interrupt")
        return super().request(payload)


def test_a_lost_kernel_stays_lost_when_the_graders_timer_rings_as_the_failure_unwinds():
    # (the cell's finally runs while KernelLost unwinds; the timer rings there, after the cell's time)
    cell = "try:\n    answer()\nfinally:\n    while True:\n        pass\n"
    decided = verdict.judge(cell, SETUP, _LostOnCall(0.0), salt=1, seconds=0.3)
    assert not decided.passed and decided.ename == "KernelLost" and decided.lost, decided


def test_a_timeout_inside_a_blocked_reference_leaves_posenc_whole():
    cell = ("with checks.without(posenc.sinusoidal):\n"
            "    while True:\n"
            "        answer()\n")
    before = posenc.sinusoidal(4, 8)
    decided = verdict.judge(cell, SETUP, DescribesThenForges(0.0), salt=1, seconds=0.3)
    assert not decided.passed and decided.ename == "GraderTimeout", decided
    assert np.array_equal(posenc.sinusoidal(4, 8), before)  # the reference is restored


class _Late(float):
    """An answer that computes itself when it is read: its value is posenc's reference, asked for late."""

    def __float__(self):
        return float(posenc.softmax(np.array([1.0, 0.0]))[0])

    def __str__(self):
        return str(float(self))


@pytest.mark.parametrize("op", ["call", "each"])
def test_an_answer_that_calls_the_reference_when_read_is_read_inside_the_block(op):
    """The block on posenc's reference lasts through the encoding of the answer, so an answer whose __float__
    (or an exception whose __str__) calls the reference gets the block's error, not the reference's value."""
    from autograder import agent

    def student():
        return _Late(0.0)

    def raises():
        raise ValueError(_Late(0.0))

    request = {"op": op, "name": "student", "blocked": ["posenc.softmax"]}
    request.update({"args": []} if op == "call" else {"cases": [[]]})
    reply = wire.loads(agent.reply(wire.dumps(request), {"student": student, "raises": raises}))
    assert reply["ok"] is False and "reference this exercise asks you to write" in reply["message"], reply
    reply = wire.loads(agent.reply(wire.dumps({**request, "name": "raises"}), {"student": student, "raises": raises}))
    assert reply["ok"] is False and "reference this exercise asks you to write" in reply["message"], reply
    assert float(_Late(0.0)) == pytest.approx(posenc.softmax(np.array([1.0, 0.0]))[0])  # unblocked, it is the value


def test_a_cell_within_its_time_is_not_touched_by_the_timer():
    cell = "checks.close(answer(), 2.0, 'answer()')\n"
    assert verdict.judge(cell, SETUP, DescribesThenForges(2.0), salt=1, seconds=5).passed
    assert not verdict.judge(cell, SETUP, DescribesThenForges(3.0), salt=1, seconds=5).passed


# -- what reaches a person -------------------------------------------------------------------------------------

ATTACK = ("Err\r\x1b[2K\x1b[1Aada  10/10\x1b]0;pwned\x07\x1b]52;c;cm0gLXJmIH4=\x07\u202eevil\x9b2K"
          "\x1b]unterminated\nbob  10/10\x00\x7f")


def _no_controls(text: str, newlines: bool):
    allowed = {"\n", "\t"} if newlines else set()
    bad = [c for c in text if (ord(c) < 32 or 0x7f <= ord(c) <= 0x9f or c in "\u202e\u2066\u200f")
           and c not in allowed]
    assert not bad, f"control characters reached the output: {bad!r} in {text!r}"


def test_printable_removes_escape_sequences_and_shows_other_controls_escaped():
    shown = printable.printable(ATTACK)
    _no_controls(shown, newlines=True)
    assert "\\r" in shown and "\\u202e" in shown and "\\x9b" in shown
    assert "52;c" not in shown and "pwned" not in shown  # (a terminated OSC goes whole)
    line = printable.one_line(ATTACK)
    _no_controls(line, newlines=False)
    assert "\\n" in line
    # colour codes in a traceback go; the text stays
    assert printable.printable("\x1b[0;31mValueError\x1b[0m: x\n\ty") == "ValueError: x\n\ty"


def test_an_unterminated_sequence_cannot_swallow_the_rows_after_it():
    table = printable.printable("ada  1  \x1b]0;x\nbob  2\ncyd  3")
    assert "bob  2" in table and "cyd  3" in table


def test_the_score_table_shows_a_students_note_on_its_own_row(monkeypatch):
    problem = report.Problem("ex1", 2.0, "test")
    monkeypatch.setattr(report, "problems", lambda assignment: [problem])
    rows = [report.gradebook.Result(student="eve", assignment="ch", scores={}, notes=[ATTACK])]
    table = report.format_table("ch", rows)
    _no_controls(table, newlines=True)
    assert len(table.splitlines()) == 3  # title, header, eve's one row


@pytest.mark.parametrize("cell, shown", [("=HYPERLINK(\"http://x\")", "'=HYPERLINK(\"http://x\")"),
                                         ("+1+cmd|' /C calc'!A0", "'+1+cmd|' /C calc'!A0"),
                                         ("-2+3", "'-2+3"), ("@SUM(A1)", "'@SUM(A1)"), ("\tx", "'\\tx"),
                                         ("ada", "ada"), ("3.5", "3.5"), ("-2", "-2"), ("", "")])
def test_the_csv_shows_formulas_as_text(tmp_path, cell, shown):
    path = tmp_path / "grades.csv"
    with open(path, "w", newline="") as handle:
        csv.writer(handle).writerows([["student_id", "score"], [cell, "1.0"]])
    export.neutralise(path)
    with open(path, newline="") as handle:
        rows = list(csv.reader(handle))
    assert rows == [["student_id", "score"], [shown, "1.0"]]


@pytest.mark.slow  # (a command line started: seconds; the graded hostile class checks grade's output too)
def test_the_command_line_prints_no_control_character(tmp_path):
    """What a command prints goes through printable, whatever produced it: here the ERROR line naming a student
    folder whose name carries escape codes, printed by `scan`."""
    evil = "eve\x1b]52;c;cm0gLXJmIH4=\x07\x1b[2K\r"
    (tmp_path / evil / "02_sinusoidal").mkdir(parents=True)
    (tmp_path / evil / "02_sinusoidal" / "02_sinusoidal.ipynb").write_text("{}")
    done = subprocess.run([sys.executable, "-m", "autograder", "scan", str(tmp_path)], capture_output=True,
                          text=True, timeout=120)
    assert "ERROR" in done.stdout, done.stdout + done.stderr
    _no_controls(done.stdout + done.stderr, newlines=True)


# -- what the instructor hears about the reference ------------------------------------------------------------

AROUND = {  # a few kinds (every way the scan finds: test_autograder.py)
    "gc": "import gc\nfor f in gc.get_objects():\n    pass\n",
    "code objects": "def f():\n    pass\nf.__code__ = f.__code__\n",
    "a second copy": "import importlib.util\nspec = importlib.util.spec_from_file_location('p2', 'x.py')\n",
    "exec of a file": "exec(open('posenc/sinusoidal.py').read())\n",
    "a stand-in where the block looks": "import posenc.attention as m\nm.softmax = lambda *a, **k: 0\n",
    "a copy beside the notebook": "import posenc_copy\n",
    "another process": "import subprocess\nsubprocess.run(['python', 'copy.py'])\n",
}


@pytest.mark.parametrize("code", AROUND.values(), ids=list(AROUND))
def test_scan_puts_a_way_around_the_block_on_the_reference_in_the_notes_column(tmp_path, code):
    from types import SimpleNamespace

    import nbformat

    from autograder import course

    chapter = course.assignments()[0]
    nb = nbformat.read(course.lesson_notebook(chapter), as_version=4)
    stub = next(c for c in nb.cells if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("solution"))
    folder = tmp_path / "submitted" / "eve" / chapter
    folder.mkdir(parents=True)
    cfg = SimpleNamespace(CourseDirectory=SimpleNamespace(submitted_directory=str(tmp_path / "submitted")))
    nbformat.write(nb, folder / f"{chapter}.ipynb")
    assert report.reference_notes(chapter, "eve", cfg) == []  # the lesson as released: nothing to say
    stub.source = code
    nbformat.write(nb, folder / f"{chapter}.ipynb")
    notes = report.reference_notes(chapter, "eve", cfg)
    assert len(notes) == 1 and notes[0].startswith("SCAN ") and "around the block" in notes[0], notes


# -- the files kept ------------------------------------------------------------------------------------------

def test_a_feedback_folder_keeps_its_page_and_what_release_feedback_reads(tmp_path):
    from autograder.commands import feedback

    folder = tmp_path / "feedback" / "eve" / "ch"
    (folder / "sub").mkdir(parents=True)
    for name in ("ch.html", "timestamp.txt", "submission_secret.txt", "data.bin", "sub/x.txt", "sub/ch.html"):
        (folder / name).write_text("x")
    (folder / "link").symlink_to(tmp_path)
    feedback.prune(folder, "ch")
    assert sorted(p.name for p in folder.rglob("*")) == ["ch.html", "submission_secret.txt", "timestamp.txt"]
    assert tmp_path.is_dir()  # (the link went, not what it pointed at)


def test_the_generated_source_notebook_is_as_readable_as_its_markdown():
    """The notebook nbgrader grades from is readable by whoever can read the chapter's markdown: the hub's instructor
    reads solutions/ through its group (a 0600 file stopped the hub from starting)."""
    from autograder import course

    for name in course.assignments():
        notebook = course.source_notebook(name)
        readable = course.source_markdown(name).stat().st_mode & 0o444
        assert notebook.stat().st_mode & readable == readable, (name, oct(notebook.stat().st_mode))
