"""The book's part of `make lessons`, after nbgrader's (``python -m autograder release``): each lesson of lessons/
made what the book and a student read. In place, for the chapters named (default: all):

- its text written as Markdown any Jupyter renders, with the MyST kept for the book (book/_ext/lesson_markdown.py);
- the install cell first (book/_ext/install_cell.py: it installs the course's package where a launch button or a
  download opens the lesson without it), filled in from _config.yml's repository and pyproject.toml;
- the setup cell and the test cells folded in the book (``hide-input``).

Run on a lesson it has already made, it gives the same lesson.

    .venv/bin/python tools/lessons.py [CHAPTER ...]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import nbformat

from autograder import course

sys.path.insert(0, str(course.ROOT / "book" / "_ext"))
import install_cell  # noqa: E402  (book/_ext/install_cell.py)
import lesson_markdown  # noqa: E402  (book/_ext/lesson_markdown.py)

READER_FOLDS = "hide-input"  # myst-nb's tag: the cell's code folded behind one "Show" control in the book


def fold_grading(nb) -> None:
    """Fold the grading machinery out of a reader's way in the book: the setup cell (it imports the checks) and
    every test cell get ``hide-input``, so a page shows an exercise as its statement and the stub a student fills
    in, and the checks behind one control. JupyterLab, Colab and nbgrader ignore the tag: a student's lesson
    keeps every cell it needs, as it was."""
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        test = cell.cell_type == "code" and meta.get("grade") and not meta.get("solution")
        if test or meta.get("grade_id") == "setup":
            tags = cell.metadata.setdefault("tags", [])
            if READER_FOLDS not in tags:
                tags.append(READER_FOLDS)


def finish(names: list[str] | None = None, release_dir: Path | None = None) -> list[Path]:
    """Make the released lessons of ``names`` (default: every chapter), in lessons/ or ``release_dir``, the
    book's lessons. Returns the lesson paths written."""
    cell = install_cell.book_source()
    written = []
    for name in names or course.assignments():
        lesson = course.lesson_notebook(name, release_dir)
        nb = nbformat.from_dict(lesson_markdown.restore(nbformat.read(lesson, as_version=4)))  # MyST again
        fold_grading(nb)
        lesson_markdown.make_readable(nb, name)  # what JupyterLab and Colab render; the book reads the MyST back
        install_cell.put_first(nb, cell)
        nbformat.write(nb, lesson)
        written.append(lesson)
    return written


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python tools/lessons.py", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("chapters", nargs="*", help="chapter names (default: all)")
    args = parser.parse_args(argv)
    unknown = [n for n in args.chapters if n not in course.assignments()]
    if unknown:
        parser.error(f"chapters: no chapter {unknown[0]!r}; the chapters are {', '.join(course.assignments())}")
    for path in finish(args.chapters or None):
        print(f"made {path.relative_to(course.ROOT)} the book's lesson")
    return 0


if __name__ == "__main__":
    sys.exit(main())
