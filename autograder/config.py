"""nbgrader's configuration as the commands load it, the sandbox chosen on the loaded object."""

from __future__ import annotations

from pathlib import Path

from traitlets.config import Config
from traitlets.config.loader import PyFileConfigLoader

from . import course, sandbox


def load_config(sandboxed: bool = True) -> Config:
    """nbgrader's configuration as `nbgrader` loads it from the repository root; with ``sandboxed=False``, its
    ``GuardedExecute`` runs students' kernels without the sandbox."""
    course.course_dir().mkdir(parents=True, exist_ok=True)
    cfg = PyFileConfigLoader("nbgrader_config.py", path=str(course.ROOT)).load_config()
    Path(cfg.Exchange.root).mkdir(parents=True, exist_ok=True)  # (formgrader warns on every page without it)
    # generate_assignment's student copy is a side effect: to the course folder, lessons/ left alone
    cfg.CourseDirectory.release_directory = str(course.course_dir() / "release")
    cfg.GuardedExecute.sandboxed = sandboxed
    return cfg


def refused(unsandboxed: bool, out) -> bool:
    """Whether a command must refuse to run students' code, saying why with ``out``: never with ``unsandboxed``
    (after the warning that lists the risks), else when the sandbox or a kernel in it cannot start here."""
    if unsandboxed:
        out(sandbox.UNSANDBOXED_WARNING)
        return False
    if reason := sandbox.unavailable():
        out(f"ERROR refusing to run student code: it must run in a sandbox and {reason}. Pass --unsandboxed to "
            "run it anyway with the risks it prints.")
        return True
    if reason := sandbox.preflight():
        out(f"ERROR nobody was graded: {reason}")
    return bool(reason)
