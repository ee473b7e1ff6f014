"""Where the course lives: the repository's folders, each chapter's notebooks, the instructor's course folder,
and the list of assignments (one per chapter folder of solutions/); and what a notebook cell's nbgrader metadata
names it (for the flags grade, solution, locked and task, nbgrader's own ``nbgrader.utils.is_grade`` and so on)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = ROOT / "solutions"
LESSONS = ROOT / "lessons"


def source_notebook(assignment: str) -> Path:
    """The nbgrader source notebook of a chapter, the one place it is written: solutions/<ch>/<ch>.ipynb."""
    return SOLUTIONS / assignment / f"{assignment}.ipynb"


def lesson_notebook(assignment: str, release_dir: Path | None = None) -> Path:
    """The student notebook of a chapter, generated from its source: lessons/<ch>/<ch>.ipynb (or
    <release_dir>/<ch>/<ch>.ipynb, where ``release`` was asked to write it)."""
    return (release_dir or LESSONS) / assignment / f"{assignment}.ipynb"


def nbgrader_meta(cell) -> dict:
    """A notebook cell's nbgrader metadata (``cell.metadata.nbgrader``), empty for a cell nbgrader does not track."""
    return cell.metadata.get("nbgrader", {})


def grade_id(cell) -> str | None:
    """The name nbgrader knows a cell by (its ``grade_id``), None for a cell without one."""
    return nbgrader_meta(cell).get("grade_id")


def course_dir() -> Path:
    """The instructor's data folder: gradebook, submitted, autograded, feedback (never committed). ``course/``
    at the repository root, or ``$POSENC_COURSE_DIR``."""
    return Path(os.environ.get("POSENC_COURSE_DIR") or ROOT / "course").resolve()


def assignments() -> list[str]:
    """Chapter names, in order: every folder of solutions/ that holds a notebook of its own name."""
    return sorted(p.name for p in SOLUTIONS.iterdir() if source_notebook(p.name).is_file())


def nbgrader(*args: str, env: dict | None = None, check: bool = True) -> subprocess.CompletedProcess:
    """Run the nbgrader of this environment from the repository root, where it finds the course config."""
    exe = Path(sys.executable).with_name("nbgrader")
    return subprocess.run([str(exe), *args], cwd=ROOT, env={**os.environ, **(env or {})}, check=check,
                          capture_output=True, text=True)
