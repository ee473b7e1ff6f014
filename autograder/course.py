"""Where the course lives: the repository's folders, each chapter's notebooks, the instructor's course folder,
and the list of assignments (one per chapter folder of solutions/); and what a notebook cell's nbgrader metadata
names it (for the flags grade, solution, locked and task, nbgrader's own ``nbgrader.utils.is_grade`` and so on).

A chapter is written as a MyST markdown notebook (jupytext's ``md:myst``), solutions/<ch>/<ch>.md: text a reviewer
reads, each code cell a ```` ```{code-cell} ```` block whose options are the cell's metadata (nbgrader's, the tags,
myst-nb's) and its ``id``, each markdown cell after a ``+++ {"id": ...}`` line. nbgrader reads notebooks, so
``source_notebook`` writes the .ipynb beside it (git-ignored, regenerated whenever the text says otherwise);
``from_markdown`` and ``to_markdown`` are the two directions, lossless both ways (tests/test_sources.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = ROOT / "solutions"
LESSONS = ROOT / "lessons"


# What a chapter's front matter keeps of the notebook's metadata (the rest of jupytext's own is not written, so a
# new jupytext version does not change every chapter).
METADATA_FILTER = "kernelspec,language_info,-jupytext.text_representation.jupytext_version"


def source_markdown(assignment: str) -> Path:
    """The source of a chapter, the one place it is written: solutions/<ch>/<ch>.md (MyST markdown notebook)."""
    return SOLUTIONS / assignment / f"{assignment}.md"


def from_markdown(text: str):
    """The notebook a chapter's MyST markdown describes (nbformat 4.5), each cell's ``id`` taken from its
    options, no jupytext metadata left: the notebook nbgrader generates the lesson from."""
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


def to_markdown(nb) -> str:
    """A notebook as the MyST markdown of a chapter (the inverse of ``from_markdown``); outputs are not kept."""
    import copy

    import jupytext

    nb = copy.deepcopy(nb)
    for cell in nb.cells:
        cell.metadata = {"id": cell.pop("id"), **cell.metadata}
        cell.pop("outputs", None)
        if cell.cell_type == "code":
            cell["outputs"], cell["execution_count"] = [], None
    nb.metadata.pop("posenc", None)  # the generated notebook's marker (``source_notebook``)
    nb.metadata["jupytext"] = {"notebook_metadata_filter": METADATA_FILTER,
                               "text_representation": {"extension": ".md", "format_name": "myst"}}
    return jupytext.writes(nb, fmt="md:myst")


def read_source(assignment: str):
    """A chapter's source as a notebook (nbformat), read from its markdown."""
    return from_markdown(source_markdown(assignment).read_text(encoding="utf-8"))


def source_notebook(assignment: str) -> Path:
    """The nbgrader source notebook of a chapter, solutions/<ch>/<ch>.ipynb, generated from solutions/<ch>/<ch>.md
    (git-ignored; written again, whole, whenever it differs from what the markdown says)."""
    import nbformat

    path = SOLUTIONS / assignment / f"{assignment}.ipynb"
    markdown = source_markdown(assignment)
    if not markdown.is_file():
        return path
    nb = read_source(assignment)
    nb.metadata["posenc"] = {
        "generated_from": markdown.relative_to(ROOT).as_posix(),
        "do_not_edit": "generated from the chapter's MyST markdown (autograder/course.py, at every `make lessons`"
                       " and grading run): edit the .md",
    }
    text = nbformat.writes(nb) + "\n"
    if not path.is_file() or path.read_text(encoding="utf-8") != text:
        import tempfile

        # written whole or not at all: two processes (a test worker and make) may generate it at once
        with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False, prefix=".", suffix=".tmp",
                                         encoding="utf-8") as tmp:
            tmp.write(text)
        # the markdown's own permissions (a temporary file is made 0600: the instructor's account on the hub, which
        # reads solutions/ through its group, could not read the notebook nbgrader grades from)
        os.chmod(tmp.name, markdown.stat().st_mode & 0o777)
        os.replace(tmp.name, path)
    readable = markdown.stat().st_mode & 0o444  # (a notebook written before, or made read-only since, is opened)
    if path.stat().st_mode & readable != readable:
        os.chmod(path, (path.stat().st_mode | readable) & 0o7777)
    return path


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
    """Chapter names, in order: every folder of solutions/ that holds a MyST markdown notebook of its own name."""
    return sorted(p.name for p in SOLUTIONS.iterdir() if source_markdown(p.name).is_file())


def nbgrader(*args: str, env: dict | None = None, check: bool = True) -> subprocess.CompletedProcess:
    """Run the nbgrader of this environment from the repository root, where it finds the course config."""
    exe = Path(sys.executable).with_name("nbgrader")
    return subprocess.run([str(exe), *args], cwd=ROOT, env={**os.environ, **(env or {})}, check=check,
                          capture_output=True, text=True)
