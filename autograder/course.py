"""Where the course lives: the repository's folders, each chapter's notebooks, the instructor's course folder and
the assignments. A chapter is written as MyST markdown (solutions/<ch>/<ch>.md, jupytext's ``md:myst``, each cell's
metadata and ``id`` in its options); ``source_notebook`` writes the .ipynb nbgrader reads beside it."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = ROOT / "solutions"
LESSONS = ROOT / "lessons"


def source_markdown(assignment: str) -> Path:
    """The source of a chapter, the one place it is written: solutions/<ch>/<ch>.md (MyST markdown notebook)."""
    return SOLUTIONS / assignment / f"{assignment}.md"


def from_markdown(text: str):
    """The notebook (nbformat 4.5) a chapter's MyST markdown describes, each cell's ``id`` from its options."""
    import jupytext  # only where a chapter is converted (a second's import)

    nb = jupytext.reads(text, fmt="md:myst")
    nb.metadata.pop("jupytext", None)
    for index, cell in enumerate(nb.cells):
        if "id" not in cell.metadata:
            raise ValueError(f"cell {index} of the chapter has no id option (every cell names itself: "
                             f"{cell.source[:60]!r})")
        cell["id"] = str(cell.metadata.pop("id"))
    nb.nbformat, nb.nbformat_minor = 4, 5
    return nb


def read_source(assignment: str):
    """A chapter's source as a notebook (nbformat), read from its markdown."""
    return from_markdown(source_markdown(assignment).read_text(encoding="utf-8"))


def source_notebook(assignment: str) -> Path:
    """solutions/<ch>/<ch>.ipynb, nbgrader's source notebook, written again from the chapter's markdown (whole, with
    the markdown's permissions: the hub's instructor reads solutions/ through a group) whenever it differs."""
    path, markdown = SOLUTIONS / assignment / f"{assignment}.ipynb", source_markdown(assignment)
    nb = read_source(assignment)
    nb.metadata["posenc"] = {
        "generated_from": markdown.relative_to(ROOT).as_posix(),
        "do_not_edit": "generated from the chapter's MyST markdown (autograder/course.py, at every `make lessons`"
                       " and grading run): edit the .md",
    }
    text = nbformat.writes(nb) + "\n"
    readable = markdown.stat().st_mode & 0o444
    if not path.is_file() or path.stat().st_mode & readable != readable or path.read_text(encoding="utf-8") != text:
        # (two processes, a test worker and make, may write it at once)
        with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False, prefix=".", encoding="utf-8") as tmp:
            tmp.write(text)
        os.chmod(tmp.name, markdown.stat().st_mode & 0o777)
        os.replace(tmp.name, path)
    return path


def lesson_notebook(assignment: str, release_dir: Path | None = None) -> Path:
    """The student notebook of a chapter, generated from its source: lessons/<ch>/<ch>.ipynb (or
    <release_dir>/<ch>/<ch>.ipynb, where ``release`` was asked to write it)."""
    return (release_dir or LESSONS) / assignment / f"{assignment}.ipynb"


def nbgrader_meta(cell) -> dict:
    """A cell's nbgrader metadata, empty for a cell nbgrader does not track."""
    return cell.metadata.get("nbgrader", {})


def grade_id(cell) -> str | None:
    """The name nbgrader knows a cell by (its ``grade_id``), None for a cell without one."""
    return nbgrader_meta(cell).get("grade_id")


def course_dir() -> Path:
    """The instructor's data folder (gradebook, submitted, autograded, feedback): $POSENC_COURSE_DIR, else course/."""
    return Path(os.environ.get("POSENC_COURSE_DIR") or ROOT / "course").resolve()


def assignments() -> list[str]:
    """Chapter names, in order: every folder of solutions/ that holds a MyST markdown notebook of its own name."""
    return sorted(p.name for p in SOLUTIONS.iterdir() if source_markdown(p.name).is_file())


def nbgrader(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    """Run the nbgrader of this environment from the repository root, where it finds the course config."""
    return subprocess.run([str(Path(sys.executable).with_name("nbgrader")), *args], cwd=ROOT, check=check,
                          capture_output=True, text=True)
