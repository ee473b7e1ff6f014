"""``GuardedExecute``: nbgrader's Execute, each kernel in the bubblewrap sandbox (``sandboxed``; ``--unsandboxed``
turns it off on the loaded config), where a dead or unresponsive kernel costs the cells after it, not the
submission's grade, and a cell's output is bounded while it runs; demo cells nothing later needs are left out
(``liveness``); and, while autograding, test cells are decided in this process by ``autograder.verdict``."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import time
from pathlib import Path

from jupyter_core.utils import run_sync
from nbclient.exceptions import CellTimeoutError, DeadKernelError
from nbformat.v4 import new_output
from nbgrader.preprocessors import Execute
from nbgrader.utils import is_grade, is_solution
from traitlets import Bool, Integer, Unicode

from .. import verdict as verdicts
from ..ipc_kernel import IpcKernelManager
from ..kernel_channel import KernelChannel
from ..liveness import demo_cells_to_skip
from ..sandbox import SandboxKernelManager, unavailable
from .instructor_tests import TESTS_KEY


def _error(ename: str, evalue: str, *more: str):
    return new_output("error", ename=ename, evalue=evalue, traceback=[f"{ename}: {evalue}", *more])


class GuardedExecute(Execute):
    """The module's Execute. Test cells are decided here when ``InstructorTests`` put their sources in resources."""

    secret_file = Unicode("", help="file holding the grader's secret that salts the hidden tests' random "
                          "cases per submission (made on first use); empty: a new salt every run").tag(config=True)
    notebook_timeout = Integer(600, help="seconds one notebook may run in all, its cells and the grader's calls "
                               "(each cell also has Execute.timeout); later cells are then not run").tag(config=True)
    sandboxed = Bool(True, help="start each kernel in the bubblewrap sandbox (autograder.sandbox); refuse to run "
                     "a notebook where it cannot start").tag(config=True)
    max_output_chars = Integer(2_000_000, help="characters of a cell's output messages (their JSON) kept while it "
                               "runs (InertOutputs cuts only after the notebook ran, too late for `while True: "
                               "print(...)`); the rest is dropped, errors kept, and a note says so").tag(config=True)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.timeout_func = self._cell_timeout  # (nbclient's public switch for a cell's timeout)
        self._output_used = {}  # characters of output kept so far, per cell index

    def create_kernel_manager(self):
        """nbclient's hook: the kernel's manager as ``sandboxed`` says when the kernel starts (unsandboxed: sockets
        that cannot collide, ipc_kernel.py); refused where the sandbox cannot start."""
        if self.sandboxed and (reason := unavailable()):
            raise RuntimeError(f"refusing to run this submission unsandboxed: {reason}. "
                               "`python -m autograder grade --unsandboxed` runs it anyway (see its warning).")
        self.kernel_manager_class = SandboxKernelManager if self.sandboxed else IpcKernelManager
        return super().create_kernel_manager()

    def preprocess(self, nb, resources=None, km=None):
        resources = resources or {}
        self._output_used = {}
        self._stopped = None  # why execution stopped, once it has
        self._ends = time.monotonic() + self.notebook_timeout
        self._skipped = demo_cells_to_skip(nb)
        self._tests = resources.get(TESTS_KEY)
        self._secret = self._read_secret() if self._tests else None
        self._content = verdicts.submission_digest(nb, resources.get("metadata", {}).get("path"))
        self._grader_channel = None  # the comm to this notebook's kernel, opened on the first test cell
        return super().preprocess(nb, resources, km)

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type != "code" or index in self._skipped:
            return cell, resources
        test = None
        if self._tests and is_grade(cell) and not is_solution(cell):
            test = self._tests["sources"].get(cell.metadata["nbgrader"].get("grade_id"))
            if test is not None:
                cell.source = verdicts.split_hidden(cell.source)[0].rstrip("\n")  # (what the lesson shows)
        if self._stopped is None and time.monotonic() >= self._ends:
            self._stop(index, f"the notebook used up the {self.notebook_timeout} s it may run in all")
        if self._stopped is not None:
            cell.outputs = [_error("CellNotRun", f"this cell was not run because {self._stopped}")]
        elif test is not None:
            self._decide(cell, index, test, resources)
        else:
            self._interrupted = False
            try:
                return super().preprocess_cell(cell, resources, index)
            except DeadKernelError:
                self._stop(index, f"the kernel died while running cell {index} (for example os._exit() or a crash)")
                cell.outputs.append(_error("KernelDied", "the kernel died while this cell ran: "
                                           "os._exit(), a crash, or the machine ran out of memory"))
            except CellTimeoutError:
                if not self._interrupted:  # it replied; only its closing messages were lost (_async_handle_timeout)
                    self.log.warning("Cell %d: the kernel replied but its last messages were dropped", index)
                    return cell, resources
                self._stop(index, f"cell {index} ignored the interrupt sent after {self.timeout} s")
                cell.outputs.append(_error("KernelUnresponsive", f"no reply within {self.timeout} s and the kernel "
                                           "ignored the interrupt (a loop that catches KeyboardInterrupt?); "
                                           "the kernel was shut down"))
        return cell, resources

    def _decide(self, cell, index, source, resources):
        """Run the cell's tests in this process against the kernel. The cell's outputs become what its visible
        tests printed, then, when it failed, one error with the failing check's message and where it failed."""
        gid = cell.metadata["nbgrader"]["grade_id"]
        meta = resources.get("nbgrader", {})
        salt = verdicts.salt_for(self._secret, str(meta.get("student")), str(meta.get("assignment")), gid,
                                 self._content)
        seconds = min(float(self.timeout or 60), max(1.0, self._ends - time.monotonic()))
        self._grader_channel = self._grader_channel or KernelChannel(self)
        self._grader_channel.begin(seconds)
        decided = verdicts.judge(source, self._tests["setup"], self._grader_channel, salt, seconds)
        self.log.debug("Cell %d (%s): %s", index, gid, decided)
        if decided.lost:
            self._stop(index, f"the kernel stopped answering while cell {index}'s tests ran")
        cell.outputs = [new_output("stream", name="stdout", text=decided.printed)] if decided.printed else []
        if not decided.passed:
            where = ("in a hidden test of this cell" if decided.stage == "hidden" else
                     f"at line {decided.line} of this cell's tests" if decided.line else "in this cell's tests")
            cell.outputs.append(_error(decided.ename or "AssertionError", decided.message, f"(failed {where})"))

    def handle_comm_msg(self, outs, msg, cell_index):
        return None  # nbclient would keep every widget message for a widget state that InertOutputs drops

    def output(self, outs, msg, display_id, cell_index):
        if msg["msg_type"] != "error":
            used = self._output_used.get(cell_index, 0)
            self._output_used[cell_index] = used + len(json.dumps(msg["content"], ensure_ascii=False))
            if self._output_used[cell_index] > self.max_output_chars:
                if used <= self.max_output_chars:
                    text = msg["content"].get("text")
                    if msg["msg_type"] == "stream" and isinstance(text, str):  # (what fits of it is kept)
                        super().output(outs, {**msg, "content": {**msg["content"], "text": text[:max(
                            0, self.max_output_chars - used)]}}, display_id, cell_index)
                    outs.append(new_output("stream", name="stderr", text=(
                        f"\n... Output truncated while the cell ran (more than {self.max_output_chars} "
                        "characters): the rest was not kept ...\n")))
                return None
        return super().output(outs, msg, display_id, cell_index)

    def _read_secret(self) -> bytes:
        """The grader's secret, made by whichever grading process comes first; without ``secret_file``, a new one."""
        if not self.secret_file:
            return secrets.token_bytes(32)
        path = Path(self.secret_file)
        path.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError), \
                os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb") as handle:
            handle.write(secrets.token_bytes(32))
        return path.read_bytes()

    def _cell_timeout(self, cell):
        """A cell's timeout, shortened to what is left of the notebook's."""
        left = max(1, int(self._ends - time.monotonic()) + 1)
        return min(self.timeout, left) if self.timeout and self.timeout > 0 else left

    async def _async_handle_timeout(self, timeout, cell=None):
        """Records that the kernel was interrupted: nbclient raises CellTimeoutError alike for a kernel that ignored
        the interrupt and for a cell whose closing "idle" ZeroMQ dropped, with no public hook to tell them apart."""
        self._interrupted = True
        return await super()._async_handle_timeout(timeout, cell)

    def _stop(self, index, why):
        """Mark the cells left as not run, saying ``why``, and shut the kernel down."""
        self._stopped = why
        self.log.warning("Cell %d: %s; the remaining cells are marked as not run", index, why)
        try:
            if self.km is not None and run_sync(self.km.is_alive)():
                run_sync(self.km.shutdown_kernel)(now=True)
        except Exception as exc:  # the clean-up of nbclient tries again; never lose the grades over it
            self.log.warning("Could not shut down the kernel: %s", exc)
