"""``GuardedExecute``: nbgrader's ``Execute`` step, with three changes (configured in autograder/nbgrader_config.py).

* A kernel that dies (``os._exit()`` in a student's cell, a crash, the out-of-memory killer) or that ignores
  the interrupt sent after a cell's timeout (a loop that catches ``KeyboardInterrupt``) no longer fails the
  whole submission, as it does in plain nbgrader (no grade at all for that student). Here the cell gets an
  error that says what happened, the cells after it are marked as not run (an error output each, so their
  tests score 0, which is what the student would see after *Restart and Run All*), and nbgrader records the
  points earned before it. A cell that did reply is finished even when its closing "idle" message never
  comes (the kernel's output socket drops messages a busy grader has not read yet): nbgrader would shut the
  kernel down as if it hung.
* The narrative cells the instructor tagged ``demo`` (figures, explorers, glue: display only) are left out
  when no cell run after them uses a name they define (``autograder.liveness.demo_cells_to_skip``): a student
  whose solution uses such a name gets that cell run, as in their own notebook. Autograding then costs the
  graded cells, not the chapter's figures.
* While autograding (when ``RestoreImports`` has put the instructor's test sources in the resources), each
  test cell runs only its visible tests in the kernel and is then decided in this process by
  ``autograder.verdict``; ``settle_outputs`` makes the cell's outputs say that verdict.
"""

from __future__ import annotations

import json
import os
import secrets
import time
from pathlib import Path

from jupyter_core.utils import run_sync
from nbclient.exceptions import CellTimeoutError, DeadKernelError
from nbformat import NotebookNode
from nbformat.v4 import new_output
from nbgrader.preprocessors import Execute
from nbgrader.utils import determine_grade, is_grade, is_solution
from traitlets import Bool, Integer, Unicode

from .. import verdict as verdicts
from ..ipc_kernel import IpcKernelManager
from ..kernel_channel import KernelChannel
from ..liveness import DEMO_TAG, demo_cells_to_skip
from .restore_imports import TESTS_KEY

# The ``ename`` of the error outputs this module writes; the instructor's score table reports them.
KERNEL_DIED = "KernelDied"
KERNEL_UNRESPONSIVE = "KernelUnresponsive"
NOT_RUN = "CellNotRun"
GRADER_NOTE = "the grader's own run of this cell's tests, outside your notebook, decides its points"


def _error(ename: str, evalue: str):
    return new_output("error", ename=ename, evalue=evalue, traceback=[f"{ename}: {evalue}"])


def _without_hidden(source: str) -> str:
    """A test cell's source without its hidden tests (what the lesson shows)."""
    return verdicts.split_hidden(source)[0].rstrip("\n")


def _is_test(cell) -> bool:
    return cell.cell_type == "code" and bool(is_grade(cell)) and not is_solution(cell)


def _as_text(output) -> dict:
    """A kernel's error output or stderr stream, as plain stdout text (it no longer decides the score)."""
    if output.output_type == "error":
        lines = output.get("traceback") or [f"{output.get('ename', '')}: {output.get('evalue', '')}"]
        text = "Your notebook's own run of these tests reported:\n" + "\n".join(map(str, lines)) + "\n"
    else:
        text = output.get("text", "")
    return new_output("stream", name="stdout", text=text)


def settle_outputs(outputs, decided: verdicts.Verdict):
    """The outputs nbgrader scores a test cell from, made to say the grader's verdict: the kernel's errors
    and stderr become text, its execute_results display data (nbgrader would read a number in one as
    partial credit), and a failed verdict adds one error output with the failing check's message."""
    settled = []
    for output in outputs:
        if output.output_type == "error" or (output.output_type == "stream" and output.get("name") == "stderr"):
            settled.append(_as_text(output))
        elif output.output_type == "execute_result":
            settled.append(new_output("display_data", data=output.get("data", {})))
        else:
            settled.append(output)
    if not decided.passed:
        where = "the hidden tests" if decided.stage == "hidden" else "the tests"
        settled.append(new_output("error", ename=decided.ename or "AssertionError", evalue=decided.message,
                                  traceback=[f"{decided.ename or 'AssertionError'}: {decided.message}",
                                             f"({where} of this cell failed in the grader's run: {GRADER_NOTE})"]))
    return settled


class GuardedExecute(Execute):
    """nbgrader's Execute; a dead or unresponsive kernel costs the rest of that notebook, not the grade, and
    display-only demo cells nothing later needs are not run (``skip_demo_cells``). While autograding (when
    ``RestoreImports`` has put the instructor's test sources in the resources), each test cell runs its
    visible tests in the kernel, and is then decided in this process by ``autograder.verdict``."""

    skip_demo_cells = Bool(True, help="leave out demo cells no later cell needs").tag(config=True)
    demo_tag = Unicode(DEMO_TAG, help="the tag of display-only narrative cells").tag(config=True)
    secret_file = Unicode("", help="file holding the grader's secret that salts the hidden tests' random "
                          "cases per submission (made on first use); empty: a new salt every run").tag(config=True)
    verdict_dir = Unicode("", help="folder where each submission's verdicts are written as "
                          "<student>/<assignment>.json (empty: not written)").tag(config=True)
    decide_outside = Bool(True, help="decide test cells in this process from the values the student's code "
                          "returns (False: nbgrader's own rule, the kernel's outputs decide; only the grading "
                          "benchmark uses it, to measure what deciding outside costs)").tag(config=True)
    notebook_timeout = Integer(600, help="seconds one notebook may run in all, its cells and the grader's "
                               "calls together (each cell also has Execute.timeout); past it, the cells "
                               "left are marked as not run").tag(config=True)

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("kernel_manager_class", IpcKernelManager)  # (sockets that cannot collide: ipc_kernel.py)
        super().__init__(*args, **kwargs)

    def preprocess(self, nb, resources=None, km=None):
        self._stopped = None  # why execution stopped, once it has
        self.__dict__.pop("_posenc_comm", None)  # the grader's comm and stored arguments belong to one kernel
        self.__dict__.pop("_posenc_stored", None)
        self._ends = time.monotonic() + self.notebook_timeout
        self._skipped = demo_cells_to_skip(nb, self.demo_tag) if self.skip_demo_cells else set()
        self._tests = (resources or {}).get(TESTS_KEY) if self.decide_outside else None
        self._decided = {}
        self._secret = self._read_secret() if self._tests else None
        self._content = verdicts.submission_digest(nb, (resources or {}).get("metadata", {}).get("path"))
        nb, resources = super().preprocess(nb, resources, km)
        if self._tests:
            self._write_verdicts(resources)
        return nb, resources

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type != "code" or index in self._skipped:
            return cell, resources
        test = None
        if self._tests and _is_test(cell):
            gid = cell.metadata["nbgrader"].get("grade_id")
            test = self._tests["sources"].get(gid)
            if test is not None:
                cell.source = _without_hidden(cell.source)  # the kernel never sees the hidden tests
        if self._stopped is None and time.monotonic() >= self._ends:
            self._stopped = f"the notebook used up the {self.notebook_timeout} s it may run in all"
            self.log.warning("Cell %d: %s; the remaining cells are marked as not run", index, self._stopped)
        if self._stopped is not None:
            cell.outputs = [_error(NOT_RUN, f"this cell was not run because {self._stopped}")]
            if test is not None:
                self._record(cell, None, verdicts.Verdict(False, "visible", NOT_RUN, self._stopped))
            return cell, resources
        self._interrupted = False
        try:
            cell, resources = super().preprocess_cell(cell, resources, index)
        except DeadKernelError:
            self._stopped = f"the kernel died while running cell {index} (for example os._exit() or a crash)"
            cell.outputs.append(_error(KERNEL_DIED, "the kernel died while this cell ran: "
                                       "os._exit(), a crash, or the machine ran out of memory"))
        except CellTimeoutError:
            if self._interrupted:
                self._stopped = (f"cell {index} did not stop within {self.timeout} s and ignored the interrupt, "
                                 "so the kernel was shut down")
                cell.outputs.append(_error(KERNEL_UNRESPONSIVE, f"no reply within {self.timeout} s and the kernel "
                                           "ignored the interrupt (a loop that catches KeyboardInterrupt?); "
                                           "the kernel was shut down"))
                self._kill_kernel()
            else:  # it replied; only its closing messages were lost (see _async_handle_timeout)
                self.log.warning("Cell %d: the kernel replied but its last messages were dropped", index)
        if self._stopped is not None:
            self.log.warning("Cell %d: %s; the remaining cells are marked as not run", index, self._stopped)
            if test is not None:
                self._record(cell, None, verdicts.Verdict(False, "visible", "KernelLost", self._stopped))
            return cell, resources
        if test is not None:
            self._decide(cell, index, test, resources)
        return cell, resources

    def _decide(self, cell, index, source, resources):
        """Run the cell's tests in this process against the kernel, and make the outputs say the verdict."""
        errors = [o for o in cell.outputs if o.output_type == "error"]
        # What nbgrader alone would have scored from the kernel's outputs, a warning on stderr aside.
        quiet = NotebookNode({**cell, "outputs": [o for o in cell.outputs
                                                  if not (o.output_type == "stream" and o.get("name") == "stderr")]})
        score, points = determine_grade(quiet)
        kernel_passed = score is not None and score >= points
        kernel_error = f"{errors[0].get('ename', '')}: {errors[0].get('evalue', '')}"[:300] if errors else ""
        gid = cell.metadata["nbgrader"]["grade_id"]
        meta = resources.get("nbgrader", {})
        salt = (verdicts.salt_for(self._secret, str(meta.get("student")), str(meta.get("assignment")), gid,
                                  self._content) if self._secret else secrets.randbits(63))
        start = time.perf_counter()
        seconds = min(float(self.timeout or 60), max(1.0, self._ends - time.monotonic()))
        decided = verdicts.judge(source, self._tests["setup"], KernelChannel(self, seconds), salt, seconds)
        self.log.debug("Cell %d (%s) decided in %.2f s: %s", index, gid, time.perf_counter() - start, decided)
        if decided.lost:
            self._stopped = f"the kernel stopped answering while cell {index}'s tests ran"
            self._kill_kernel()
        cell.outputs = settle_outputs(cell.outputs, decided)
        self._record(cell, kernel_passed, decided, kernel_error)

    def _record(self, cell, kernel_passed, decided, kernel_error=""):
        """What the kernel's own run of the visible tests said, and the grader's verdict (for `grade`'s notes)."""
        self._decided[cell.metadata["nbgrader"]["grade_id"]] = {
            "kernel": None if kernel_passed is None else ("pass" if kernel_passed else "fail"),
            "kernel_error": kernel_error,
            "grader": "pass" if decided.passed else "fail", "stage": decided.stage,
            "error": decided.ename, "message": decided.message[:1000]}

    def _read_secret(self) -> bytes:
        if not self.secret_file:
            return b""
        path = Path(self.secret_file)
        path.parent.mkdir(parents=True, exist_ok=True)
        try:  # made once, by whichever grading process comes first
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            return path.read_bytes()
        with os.fdopen(fd, "wb") as handle:
            handle.write(secrets.token_bytes(32))
        return path.read_bytes()

    def _write_verdicts(self, resources):
        meta = resources.get("nbgrader", {})
        if not self.verdict_dir or not meta.get("student") or not meta.get("assignment"):
            return
        path = Path(self.verdict_dir) / str(meta["student"]) / f"{meta['assignment']}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self._decided, indent=1, sort_keys=True))

    def _get_timeout(self, cell):
        """A cell's timeout, shortened to what is left of the notebook's."""
        timeout = super()._get_timeout(cell)
        if not hasattr(self, "_ends"):  # (outside preprocess)
            return timeout
        left = max(1, int(self._ends - time.monotonic()) + 1)
        return left if timeout is None else min(timeout, left)

    async def _async_handle_timeout(self, timeout, cell=None):
        """nbclient calls this when a cell has not replied in time, and interrupts the kernel. Only then is a
        CellTimeoutError that follows a kernel that ignored the interrupt. Without it, the kernel did reply and
        only the cell's closing "idle" status never came: the kernel's output socket drops what a busy grading
        process has not read yet (ZeroMQ's high-water mark), so a cell that sends thousands of messages fast
        could lose it. That cell finished, and the notebook goes on."""
        self._interrupted = True
        return await super()._async_handle_timeout(timeout, cell)

    def _kill_kernel(self):
        try:
            if self.km is not None and run_sync(self.km.is_alive)():
                run_sync(self.km.shutdown_kernel)(now=True)
        except Exception as exc:  # the clean-up of nbclient tries again; never lose the grades over it
            self.log.warning("Could not shut down the unresponsive kernel: %s", exc)


