"""nbgrader's configuration as the grading commands use it: loaded exactly as `nbgrader` loads it from the
repository root, with the Execute step chosen on the loaded object. The course's settings file selects the
sandboxed step (``SandboxedExecute``), so plain `nbgrader autograde` is sandboxed too; ``grade --unsandboxed``
and ``validate --unsandboxed`` load a copy whose step is ``GuardedExecute``, and that copy is what the grading
workers receive."""

from __future__ import annotations

import copy
from pathlib import Path

from traitlets.config import Config
from traitlets.config.loader import PyFileConfigLoader

from . import course, sandbox
from .preprocessors import GuardedExecute


def load_config(sandboxed: bool = True) -> Config:
    """nbgrader's configuration as `nbgrader` loads it from the repository root; with ``sandboxed=False``, its
    autograde runs students' kernels without the sandbox."""
    course.course_dir().mkdir(parents=True, exist_ok=True)
    cfg = PyFileConfigLoader("nbgrader_config.py", path=str(course.ROOT)).load_config()
    # formgrader warns on every page when the exchange folder is missing, even if the course never uses it
    Path(cfg.Exchange.root).mkdir(parents=True, exist_ok=True)
    # generate_assignment writes a student version as a side effect; the gradebook is all grading needs,
    # so that copy goes to the course folder and lessons/ (committed) is left alone.
    cfg.CourseDirectory.release_directory = str(course.course_dir() / "release")
    return cfg if sandboxed else with_execute(cfg, GuardedExecute)


def with_execute(cfg: Config, step: type) -> Config:
    """A copy of a loaded config whose autograde runs its Execute step as ``step`` (sandboxed or not)."""
    cfg = copy.deepcopy(cfg)
    cfg.Autograde.autograde_preprocessors = [step if issubclass(s, GuardedExecute) else s
                                             for s in cfg.Autograde.autograde_preprocessors]
    return cfg


def execute_step(cfg: Config) -> type:
    """The Execute step autograde runs under ``cfg``: ``SandboxedExecute`` or ``GuardedExecute``."""
    return next(s for s in cfg.Autograde.autograde_preprocessors if issubclass(s, GuardedExecute))


def refused(unsandboxed: bool, out) -> bool:
    """Whether a command must refuse to run students' code, saying why with ``out``: never with
    ``unsandboxed`` (after the warning that lists the risks); otherwise when the sandbox cannot be used here or
    a kernel cannot start in it."""
    if unsandboxed:
        out(sandbox.UNSANDBOXED_WARNING)
        return False
    reason = sandbox.unavailable()
    if reason:
        out(f"ERROR refusing to run student code: it must run in a sandbox and {reason}. Install it "
            "(Debian/Ubuntu: sudo apt-get install bubblewrap), or pass --unsandboxed to run it anyway "
            "with the risks it prints.")
        return True
    reason = sandbox.preflight()
    if reason:
        out(f"ERROR nobody was graded: {reason}")
        return True
    return False
