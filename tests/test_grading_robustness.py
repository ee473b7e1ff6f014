"""Grading survives any handed-in file and any accident: tampered nbgrader metadata is named as such, a
worker killed mid-grading costs at most the submission it was grading, a notebook has a total time limit,
floods of widget messages and non-text output cost nothing, huge cells cost the demo-cell analysis nothing.
The slow tests run the real `python -m autograder grade` with the sandbox."""

from __future__ import annotations

import copy
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_notebook
import pytest
from jupyter_core.utils import run_sync
from nbgrader.api import Gradebook
from nbgrader.utils import is_grade, is_solution

import synthetic
from autograder import config, course, preprocessors, sandbox, submissions
from autograder.commands import grade as grade_command
from autograder.ipc_kernel import IpcKernelManager
from autograder.liveness import MAX_SOURCE, cell_names
from support import cli_command, cli_env

CHAPTER = "02_sinusoidal"  # numpy only: the quickest chapter to grade


def _lesson_copy(tmp_path, edit) -> Path:
    nb = nbformat.read(course.lesson_notebook(CHAPTER), as_version=4)
    edit(nb)
    path = tmp_path / f"{CHAPTER}.ipynb"
    nbformat.write(nb, str(path))
    return path


def _graded_cells(nb):
    return [c for c in nb.cells if is_grade(c)]


def _test_cell(nb):
    return next(c for c in nb.cells if c.cell_type == "code" and is_grade(c) and not is_solution(c))


@pytest.mark.parametrize("edit, words", [
    (lambda nb: _test_cell(nb).metadata["nbgrader"].update(grade_id="renamed"), "grade_id 'renamed'"),
    (lambda nb: nb.cells.append(copy.deepcopy(_test_cell(nb))), "appears twice"),
    (lambda nb: _test_cell(nb).metadata["nbgrader"].update(solution=True), "solution changed"),
    (lambda nb: _test_cell(nb).metadata["nbgrader"].pop("grade_id"), "without a grade_id"),
    (lambda nb: _test_cell(nb).metadata["nbgrader"].update(grade=False), "grade changed"),
    (lambda nb: nb.cells[0].metadata.update(nbgrader={"grade": True, "grade_id": "x", "points": 99}), "'x'"),
])
def test_tampered_nbgrader_metadata_is_named_as_such(tmp_path, edit, words):
    problem = submissions.metadata_tampering(_lesson_copy(tmp_path, edit), CHAPTER)
    assert problem and "tampered" in problem and words in problem, problem


def test_what_nbgrader_puts_back_itself_is_not_tampering(tmp_path):
    def edit(nb):
        meta = _test_cell(nb).metadata["nbgrader"]
        meta["points"], meta["locked"] = 100, False
        nb.cells.remove(_graded_cells(nb)[-1])
    assert submissions.metadata_tampering(_lesson_copy(tmp_path, edit), CHAPTER) is None


def test_find_submissions_refuses_a_tampered_notebook_with_one_line(tmp_path):
    b = synthetic.Builder(CHAPTER)
    good, bad = b.perfect("good"), b.perfect("bad")
    _test_cell(bad.notebook).metadata["nbgrader"]["solution"] = True
    for student in (good, bad):
        student.write(tmp_path)
    found, errors = submissions.find_submissions(tmp_path)
    assert [s.student for s in found] == ["good"]
    assert len(errors) == 1 and errors[0].startswith("bad: ") and "tampered" in errors[0], errors


def test_the_demo_cell_analysis_is_bounded():
    huge = "x = 1\n" * (MAX_SOURCE // 6 + 1)
    assert cell_names(huge) is None  # not analysed: treated like a cell that does not parse
    deep = "(" * 5000 + ")" * 5000
    assert cell_names(deep) is None
    assert cell_names("x = " + "-" * 900 + "1") is None  # parses, but too deep to analyse


# -- the real pipeline ----------------------------------------------------------------------------------

def _grade(handed_in: Path, course_dir: Path, *args, env=None, **kwargs) -> subprocess.Popen:
    """`python -m autograder grade` started in the background (the test acts while it grades)."""
    return subprocess.Popen(cli_command("grade", handed_in, *args), cwd=course.ROOT,
                            env=cli_env(course_dir, 60, **(env or {})), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, **kwargs)


def _scores(course_dir: Path) -> dict:
    with Gradebook(f"sqlite:///{course_dir / 'gradebook.db'}", "posenc") as gb:
        return {(s.student.id, a.name): {g.name: g.score for nb in s.notebooks for g in nb.grades}
                for a in gb.assignments for s in a.submissions}


def _sleeper(b: synthetic.Builder, student: str, seconds: int) -> synthetic.Student:
    """A perfect submission whose first solution cell sleeps first (time for the test to act)."""
    first = next(i for i, ex in enumerate(b.a.exercises) if ex.solutions)
    return b._perfect_with(student, {first: f"import time\ntime.sleep({seconds})\n"}, set(b.a.test_ids()))


def _kill_when_grading(course_dir: Path, pair: str, deadline: float, not_pid: int | None = None) -> int:
    """Wait until a worker notes it is grading ``pair``, then SIGKILL it (as the OOM killer would)."""
    marker = course_dir / "in_progress" / pair
    while time.monotonic() < deadline:
        try:
            pid = int(marker.read_text())
        except (OSError, ValueError):
            pid = None
        if pid and pid != not_pid:
            os.kill(pid, signal.SIGKILL)
            return pid
        time.sleep(0.2)
    raise AssertionError(f"no worker started grading {pair}")


@pytest.mark.slow
@pytest.mark.xdist_group("grading_robustness")
def test_a_killed_worker_costs_only_the_submission_it_was_grading(tmp_path):
    b = synthetic.Builder(CHAPTER)
    honest = [b.perfect(f"honest{i}") for i in range(4)] + [b.blank("blank")]
    for student in honest + [_sleeper(b, "victim", 12)]:
        student.write(tmp_path / "subs")
    course_dir = tmp_path / "course"
    run = _grade(tmp_path / "subs", course_dir, "--jobs", "2")
    deadline = time.monotonic() + 600
    first = _kill_when_grading(course_dir, f"{CHAPTER}__victim", deadline)
    _kill_when_grading(course_dir, f"{CHAPTER}__victim", deadline, not_pid=first)  # and again on its retry
    out, _ = run.communicate(timeout=900)
    assert run.returncode == 1, out
    errors = [line for line in out.splitlines() if line.startswith("ERROR")]
    assert len(errors) == 1 and errors[0].startswith(f"ERROR victim: {CHAPTER}") and "died" in errors[0] and "twice" in errors[0], out
    scores = _scores(course_dir)
    for student in honest:
        assert scores[(student.student, CHAPTER)] == student.expected, (student.student, out[-3000:])


@pytest.mark.slow
@pytest.mark.xdist_group("grading_robustness")
def test_a_notebook_has_a_total_time_limit_and_floods_cost_nothing(tmp_path):
    b = synthetic.Builder(CHAPTER)
    code = [i for i, ex in enumerate(b.a.exercises) if ex.solutions]
    # Exercise 2 on sleeps longer than the notebook may run: it is interrupted, later cells are not run.
    sleepy = b._perfect_with("sleepy", {code[1]: "import time\ntime.sleep(100)\n",
                                        code[2]: "import time\ntime.sleep(100)\n"},
                             b._tests_of(range(code[1])))
    flood = ("from ipykernel.comm import Comm\n_c = Comm(target_name='flood')\n"
             "for _i in range(3000):\n    _c.send({'x': 'y' * 10000})\n"
             "from IPython.display import display\n"
             "display({'application/json': {'k': ['v' * 1000] * 20000}}, raw=True)\n")
    flooder = b._perfect_with("flooder", {code[0]: flood}, set(b.a.test_ids()))
    # 2 MB of assignments in a solution cell: the demo-cell analysis skips it instead of costing minutes.
    huge = b._perfect_with("huge_source", {code[0]: "".join(f"_v{i} = {i}\n" for i in range(200_000))},
                           set(b.a.test_ids()))
    # Two grading runs at once (the sleeper mostly waits), so that no case shares a time budget with work whose
    # speed depends on the machine: the sleeper in a course of its own under a notebook limit of 60 s (its cells
    # before the sleep take a few seconds), the flood and the huge source under the default limit (IPython
    # alone takes about 7 s to run 200k statements on a quiet machine, and a loaded one once took more than 60).
    sleepy.write(tmp_path / "sleepy")
    for student in (flooder, huge):
        student.write(tmp_path / "subs")
    course_dir, sleepy_course = tmp_path / "course", tmp_path / "sleepy_course"
    runs = [_grade(tmp_path / "sleepy", sleepy_course, env={"POSENC_NOTEBOOK_TIMEOUT": "60",
                                                            "POSENC_CELL_TIMEOUT": "300"}),
            _grade(tmp_path / "subs", course_dir, "--jobs", "2", env={"POSENC_CELL_TIMEOUT": "300"})]
    (out, _), (out2, _) = runs[0].communicate(timeout=900), runs[1].communicate(timeout=1200)
    assert runs[0].returncode == 0, out
    assert runs[1].returncode == 0, out2
    scores = _scores(course_dir)
    assert _scores(sleepy_course)[("sleepy", CHAPTER)] == sleepy.expected, out[-3000:]
    assert scores[("flooder", CHAPTER)] == flooder.expected, out2[-3000:]
    assert scores[("huge_source", CHAPTER)] == huge.expected, out2[-3000:]
    autograded = course_dir / "autograded" / "flooder" / CHAPTER / f"{CHAPTER}.ipynb"
    assert autograded.stat().st_size < 2_000_000, "non-text output and widget messages are not kept"
    nb = nbformat.read(autograded, as_version=4)
    text = str([c.outputs for c in nb.cells if c.cell_type == "code"])
    assert "used up the" not in text
    sleepy_nb = nbformat.read(sleepy_course / "autograded" / "sleepy" / CHAPTER / f"{CHAPTER}.ipynb", as_version=4)
    # the limit bounds the sleeping notebook: the cells after the sleep are marked as not run, saying why
    sleepy_text = str([c.outputs for c in sleepy_nb.cells if c.cell_type == "code"])
    assert "used up the 60 s" in sleepy_text and "CellNotRun" in sleepy_text


class _Stream:
    """Stands for ipykernel's OutStream: keeps what is written, and what each flush would send."""

    def __init__(self):
        self.written, self.sent, self.pending = [], [], 0

    def write(self, string):
        if not isinstance(string, str):
            raise TypeError(f"write() argument must be str, not {type(string)}")
        self.written.append(string)
        self.pending += len(string)
        return len(string)

    def flush(self):
        self.sent.append(self.pending)
        self.pending = 0


def test_printed_output_goes_in_bounded_messages():
    """A loop that prints without end, or one huge string: the kernel sends it at least every FLUSH_CHARS
    characters, in order, so no message nears the size the grader refuses."""
    from autograder import agent, sandbox
    stream = _Stream()
    agent.bounded_writes(stream)
    for _ in range(1000):
        stream.write("x" * 10_000)
    stream.write("y" * (5 * agent.FLUSH_CHARS))
    stream.write("")
    text = "".join(stream.written)
    assert text == "x" * 10_000_000 + "y" * (5 * agent.FLUSH_CHARS)
    assert max(stream.sent) <= 2 * agent.FLUSH_CHARS and len(stream.sent) >= 14
    assert 4 * 2 * agent.FLUSH_CHARS < sandbox.MAX_MESSAGE_BYTES  # (4 bytes a character at most)
    with pytest.raises(TypeError):
        stream.write(b"bytes")  # as ipykernel's own: not a str


BOMB = """
_kernel = get_ipython().kernel
_body = b'{"data": {"text/plain": "."}, "metadata": {}, "junk": [' + b'[],' * 20_000_000 + b'[]]}'
_kernel.session.send(_kernel.iopub_socket, "display_data", content=_body, parent={})
del _body
"""


@pytest.mark.slow
@pytest.mark.xdist_group("grading_robustness")
def test_a_message_that_would_cost_the_grader_gigabytes_is_refused(tmp_path):
    """A cell that sends 60 MB of nested JSON as one message (not even for a cell of the notebook): the grading
    process used to parse it into about 1.6 GB before looking at whom it was for, so a kernel inside its 4 GiB
    could send what needs tens of GB in the process that grades the whole class. ZeroMQ now refuses it unread;
    the student's notebook loses its kernel's output from then on, a classmate is graded as ever, and the
    grading process (kernels included) stays small."""
    b = synthetic.Builder(CHAPTER)
    code = [i for i, ex in enumerate(b.a.exercises) if ex.solutions]
    bomber = b._perfect_with("bomber", {code[-1]: BOMB}, b._tests_of(range(code[-1])))
    perfect = b.perfect()
    for student in (bomber, perfect):
        student.write(tmp_path / "subs")
    course_dir = tmp_path / "course"
    run = _grade(tmp_path / "subs", course_dir, "--jobs", "1",
                 env={"POSENC_NOTEBOOK_TIMEOUT": "120", "POSENC_CELL_TIMEOUT": "20"})
    out = run.stdout.read()
    _, status, usage = os.wait4(run.pid, 0)
    run.returncode = os.waitstatus_to_exitcode(status)
    assert run.returncode in (0, 1), out[-3000:]
    peak_mb = usage.ru_maxrss / 1024  # (kilobytes on Linux; the largest of the grader and its kernels)
    assert peak_mb < 800, f"the grading process peaked at {peak_mb:.0f} MB"
    scores = _scores(course_dir)
    assert scores[("perfect", CHAPTER)] == perfect.expected, out[-3000:]
    assert ("bomber", CHAPTER) in scores, out[-3000:]
    assert sum(v or 0 for k, v in scores[("bomber", CHAPTER)].items() if k in b._tests_of([code[-1]])) == 0


@pytest.mark.slow
@pytest.mark.xdist_group("grading_robustness")
def test_grading_works_from_a_symlinked_virtualenv(tmp_path):
    """`.venv` as a symbolic link to the real environment (and the interpreter started through it): the
    sandbox recreates the link, so a perfect submission still gets full marks."""
    link = tmp_path / "venv-link"
    link.symlink_to(Path(sys.prefix).resolve(), target_is_directory=True)
    b = synthetic.Builder(CHAPTER)
    perfect = b.perfect()
    perfect.write(tmp_path / "subs")
    course_dir = tmp_path / "course"
    env = {**os.environ, "POSENC_COURSE_DIR": str(course_dir), "POSENC_CELL_TIMEOUT": "60"}
    done = subprocess.run([str(link / "bin" / "python"), "-m", "autograder", "grade", str(tmp_path / "subs")],
                          cwd=course.ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert _scores(course_dir)[("perfect", CHAPTER)] == perfect.expected


def test_a_kernel_that_cannot_start_in_the_sandbox_is_one_line_before_anyone_is_graded(tmp_path, monkeypatch):
    if sandbox.unavailable():
        pytest.skip(sandbox.unavailable())
    monkeypatch.setattr(sandbox, "PREFLIGHT", "import a_module_the_sandbox_lacks")
    monkeypatch.setenv("POSENC_COURSE_DIR", str(tmp_path / "course"))
    synthetic.Builder(CHAPTER).perfect().write(tmp_path / "subs")
    lines = []
    assert grade_command.grade(tmp_path / "subs", out=lines.append) == 2
    assert len(lines) == 1 and lines[0].startswith("ERROR nobody was graded: a kernel cannot start in the sandbox")
    assert "a_module_the_sandbox_lacks" in lines[0] and "virtualenv" in lines[0], lines
    assert not (tmp_path / "course" / "submitted").exists(), "nothing was copied or graded"


class _BusyGrader(preprocessors.GuardedExecute):
    """A grading process slow to read the kernel's messages (a loaded machine): each comm message costs it 2 ms,
    so a cell that sends thousands of them fills the kernel's output socket, which then drops messages,
    the cell's closing "idle" status among them."""

    def process_message(self, msg, cell, cell_index):
        if msg.get("msg_type") == "comm_msg":
            time.sleep(0.002)
        return super().process_message(msg, cell, cell_index)


@pytest.mark.slow
def test_a_finished_cell_whose_last_messages_were_dropped_does_not_stop_the_notebook(tmp_path, monkeypatch):
    # The flood is the course's own benign code, run in a plain kernel: no submission is involved.
    flood = ("from ipykernel.comm import Comm\n_c = Comm(target_name='flood')\n"
             "for _i in range(1500):\n    _c.send({'x': 'y' * 1000})\n")
    nb = new_notebook(cells=[new_code_cell(flood), new_code_cell("answer = 41 + 1"), new_code_cell("print(answer)")],
                      metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}})
    monkeypatch.setenv("POSENC_COURSE_DIR", str(tmp_path / "course"))
    executor = _BusyGrader(config=config.load_config(sandboxed=False), timeout=60, iopub_timeout=1)
    nb, _ = executor.preprocess(nb, {"metadata": {"path": "."}})
    outputs = [o for c in nb.cells for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"], outputs
    assert nb.cells[2].outputs[0].text == "42\n", nb.cells[2].outputs


def test_unsandboxed_kernels_talk_over_socket_files_of_their_own():
    """TCP ports are picked by binding port 0 and letting it go: two kernels started at once (two grading
    workers) can get the same one, and one of them dies before replying to kernel_info. The grader's
    unsandboxed kernels talk over IPC socket files in a private folder, removed with the kernel."""
    assert type(preprocessors.GuardedExecute(sandboxed=False, kernel_name="python3").create_kernel_manager()) is IpcKernelManager
    managers = [IpcKernelManager(kernel_name="python3") for _ in range(2)]
    folders = [Path(m.ip).parent for m in managers]
    assert folders[0] != folders[1] and all(m.transport == "ipc" for m in managers)
    for manager in managers:
        run_sync(manager.start_kernel)()
    try:
        for manager in managers:
            client = manager.client()
            client.start_channels()
            run_sync(client.wait_for_ready)(timeout=60)
            client.stop_channels()
            assert {p.name for p in Path(manager.ip).parent.iterdir()} >= {f"k-{manager.shell_port}"}
    finally:
        for manager in managers:
            run_sync(manager.shutdown_kernel)(now=True)
    assert not any(folder.exists() for folder in folders)
