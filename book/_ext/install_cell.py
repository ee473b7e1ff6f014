"""The install cell: the first cell of every chapter notebook, which makes the course's package importable in the
notebook's kernel wherever the notebook is opened, so that a chapter runs top to bottom on Colab and Binder (the
book's launch buttons open lessons/<ch>/<ch>.ipynb from the repository) and on a reader's machine (the book's
download button).

A chapter imports ``posenc`` and ``autograder.checks``, which are not on PyPI, and matplotlib and myst-nb (the extra
``notebooks`` of pyproject.toml). The cell, in order:

1. does nothing when they are there: in the repository's .venv, on the class's JupyterHub, in the grading
   sandbox (which has no network: the cell never reaches for it there). It looks for them without importing
   them (``importlib.util.find_spec``): importing matplotlib alone would add about 60 ms to the grading of every
   submission whose chapter does not use it;
2. otherwise installs, into the kernel's own environment, the course's wheel found beside the notebook (the
   book's Setup page links it; book/_ext/downloads.py builds it) with that extra;
3. otherwise, when the book names its repository (``repository: url`` and ``branch`` in _config.yml), installs the
   course from it: ``pip install "posenc[notebooks] @ git+<url>@<branch>"``;
4. otherwise stops with one line that says to download the wheel from the book's Setup page.

One text (``source``), filled in from pyproject.toml and _config.yml: `make lessons` puts it first in every lesson
(tools/lessons.py), so lessons/ changes when the repository's URL or the package's version does;
the book's download of a notebook that lacks it (the instructor edition's) gets the same text
(book/_ext/downloads.py). The cell carries the tag ``remove-cell``: the book's page does not show it, the notebook
keeps it. It has no nbgrader metadata: nbgrader neither locks nor grades it, and a student's edits to it run like
any cell of theirs. (It is not the chapter's locked "setup" cell of imports, which the grader restores.)
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import nbformat
import yaml

ROOT = Path(__file__).resolve().parents[2]  # the repository (this file is book/_ext/install_cell.py)

EXTRA = "notebooks"  # pyproject.toml's extra with what a chapter needs besides the course's package
MARKER = "posenc-install"  # the cell's id, and the key of its metadata that marks it
TAGS = ["remove-cell"]  # Jupyter Book leaves it out of the page (it still runs when the book executes)

TEMPLATE = '''\
# Run this cell first. The chapter needs the course's package, posenc
# (formulas, explorers, exercise checks), which is not on PyPI. Where it is
# installed, this cell does nothing. Elsewhere it installs it, with matplotlib
# and myst-nb, into this kernel's environment: from the wheel
# {wheel} if it lies beside this notebook
# (the book's Setup page links it){otherwise}.
import importlib.util

missing = [name for name in ("posenc", "autograder", "matplotlib", "myst_nb")
           if importlib.util.find_spec(name) is None]
if missing:
    import pathlib, subprocess, sys

    WHEEL = pathlib.Path({wheel_literal})
    REPOSITORY = {repository_literal}{repository_note}
    if WHEEL.is_file():
        package = f"{{WHEEL}}[{extra}]"
    elif REPOSITORY:
        package = f"{name}[{extra}] @ {{REPOSITORY}}"
    else:
        raise ModuleNotFoundError(
            f"{{missing[0]}} is not installed. Download {{WHEEL}} from the book's "
            f"Setup page into {{pathlib.Path.cwd()}} and run this cell again."
        ) from None
    print(f"Installing {{package}} ...")
    pip = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", package],
        capture_output=True, text=True)
    if pip.returncode:
        raise RuntimeError(
            f"pip could not install {{package}}:\\n{{pip.stderr}}") from None
    importlib.invalidate_caches()
    import posenc, autograder.checks, matplotlib, myst_nb'''


def _project(root: Path) -> dict:
    return tomllib.loads((root / "pyproject.toml").read_text())["project"]


def wheel_name(root: Path = ROOT) -> str:
    """The file name of the course's wheel, from pyproject.toml (``posenc-0.1.0-py3-none-any.whl``)."""
    project = _project(root)
    return f"{project['name'].replace('-', '_')}-{project['version']}-py3-none-any.whl"


def repository(root: Path = ROOT) -> tuple[str, str]:
    """The book's repository and branch (``repository: url, branch`` in root/_config.yml); url "" for none."""
    config = yaml.safe_load((root / "_config.yml").read_text()).get("repository") or {}
    return (config.get("url") or "").strip(), (config.get("branch") or "main").strip()


def source(url: str = "", branch: str = "main", root: Path = ROOT) -> str:
    """The install cell's text for a book whose repository is ``url`` (empty: none) at ``branch``."""
    project = _project(root)
    if EXTRA not in project.get("optional-dependencies", {}):
        raise KeyError(f"pyproject.toml has no extra {EXTRA!r}, which the install cell installs")
    wheel = wheel_name(root)
    url = url.strip().rstrip("/")
    return TEMPLATE.format(
        wheel=wheel, wheel_literal=json.dumps(wheel), name=project["name"], extra=EXTRA,
        otherwise=", or else from the course's repository" if url else "",
        repository_literal=json.dumps(f"git+{url}@{branch}" if url else ""),
        repository_note="" if url else "  # none: _config.yml names no repository")


def book_source(root: Path = ROOT) -> str:
    """The install cell of the book configured in root/_config.yml (what `make lessons` puts in the lessons)."""
    return source(*repository(root), root=root)


def is_install_cell(cell) -> bool:
    return bool(cell.get("metadata", {}).get(MARKER))


def put_first(nb, text: str) -> bool:
    """Make the install cell with ``text`` the first cell of ``nb``, once (an install cell already in the notebook
    is replaced, wherever it stands). Returns whether the notebook changed."""
    if nb.cells and is_install_cell(nb.cells[0]) and nb.cells[0].source == text \
            and not any(is_install_cell(c) for c in nb.cells[1:]):
        return False
    nb.cells = [c for c in nb.cells if not is_install_cell(c)]
    cell = nbformat.v4.new_code_cell(text, metadata={MARKER: True, "tags": list(TAGS)})
    cell.id = MARKER
    nb.cells.insert(0, cell)
    return True
