"""Chapter downloads that run outside the repository: the course's package as a wheel, and a first cell that
installs it.

A chapter imports ``posenc`` (formulas, explorers, ``posenc.ARENA_RESULTS``), ``autograder.checks`` (the test
cells' helpers) and for some chapters ``arena``, none of which is on PyPI. So the book ships them:

- **The wheel.** When the build starts, this extension builds ``posenc-<version>-py3-none-any.whl`` from
  pyproject.toml (its packages posenc, autograder and arena, plus a copy of book/data/arena.json inside posenc,
  where ``posenc.ARENA_RESULTS`` finds it outside the repository) into ``_build/wheel/``, from a staged copy so
  that the checkout stays clean; it is rebuilt only when one of its files changed. The Setup page links it with
  Sphinx's ``{download}`` role (a missing wheel is a warning, so the strict build fails).
- **The first cell.** Each notebook the download button serves (``_sources/**.ipynb``) gets one cell in front
  (``SETUP_CELL``): if the course's modules do not import, it installs the wheel found beside the notebook with
  the extra ``notebooks`` (matplotlib, myst-nb) into the kernel's own environment, or stops with a message that
  says what is missing and where to get it. The page itself and the notebooks in lessons/ are unchanged.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

import nbformat
from sphinx.application import Sphinx
from sphinx.util import logging

logger = logging.getLogger(__name__)

WHEEL_FOLDER = Path("_build") / "wheel"  # relative to the book's root (book/setup.md links the wheel there)
# The arena's results: where the checkout keeps them, where the wheel carries them (posenc.ARENA_RESULTS looks there)
DATA = (Path("book") / "data" / "arena.json", Path("posenc") / "data" / "arena.json")
# The first cell's id and metadata key: the cell is added once, also to a _sources file an earlier build left
MARKER = "posenc-setup"

SETUP_CELL = '''\
# Run this cell first. The chapter needs the course's package, posenc (formulas, explorers, exercise checks,
# the arena's results), which is not on PyPI. Download its wheel from the book's Setup page,
# {wheel}, into this notebook's folder: this cell then installs it, with matplotlib
# and myst-nb, into this kernel's environment. Or install it yourself: pip install "{wheel}[notebooks]"
import importlib, pathlib, subprocess, sys

WHEEL = pathlib.Path("{wheel}")
try:
    import posenc, autograder.checks, matplotlib, myst_nb
except ImportError as missing:
    if not WHEEL.is_file():
        raise ModuleNotFoundError(f"{{missing.name}} is not installed. Download {{WHEEL}} from the book's Setup "
                                  f"page into {{pathlib.Path.cwd()}} and run this cell again.") from None
    subprocess.check_call([sys.executable, "-m", "pip", "install", "--quiet", f"{{WHEEL}}[notebooks]"])
    importlib.invalidate_caches()
    import posenc, autograder.checks, matplotlib, myst_nb'''


def _project(root: Path) -> dict:
    return tomllib.loads((root / "pyproject.toml").read_text())["project"]


def wheel_name(root: Path) -> str:
    project = _project(root)
    return f"{project['name'].replace('-', '_')}-{project['version']}-py3-none-any.whl"


def _inputs(root: Path) -> list[Path]:
    """The files the wheel is built from: pyproject.toml, every Python file of its packages, the arena's data."""
    packages = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    files = [root / "pyproject.toml", root / DATA[0]]
    for package in packages:
        files += sorted(p for p in (root / package).glob("*.py"))
    return files


def build_wheel(root: Path) -> Path:
    """The wheel in ``root/_build/wheel/``, built unless a wheel from the same files is already there."""
    folder = root / WHEEL_FOLDER
    wheel = folder / wheel_name(root)
    digest = hashlib.sha256()
    for path in _inputs(root):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    stamp = folder / f"{wheel.name}.sha256"
    if wheel.is_file() and stamp.is_file() and stamp.read_text() == digest.hexdigest():
        return wheel
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="posenc-wheel-") as tmp:
        stage, out = Path(tmp) / "src", Path(tmp) / "out"
        for path in _inputs(root):
            target = stage / path.relative_to(root)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target)
        (stage / DATA[1]).parent.mkdir(parents=True, exist_ok=True)
        shutil.move(stage / DATA[0], stage / DATA[1])
        done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                               "--wheel-dir", str(out), str(stage)], capture_output=True, text=True)
        built = out / wheel.name
        if done.returncode != 0 or not built.is_file():
            raise RuntimeError(f"building {wheel.name} failed:\n{done.stdout}{done.stderr}")
        os.replace(shutil.copy2(built, folder / f".{wheel.name}.{os.getpid()}"), wheel)  # atomic for parallel builds
    stamp.write_text(digest.hexdigest())
    return wheel


def make_wheel(app: Sphinx, config) -> None:
    try:
        wheel = build_wheel(Path(app.confdir))
    except (RuntimeError, OSError, KeyError) as error:
        logger.warning(f"downloads: no course wheel: {error}")
        return
    logger.info(f"downloads: {wheel.name} in {WHEEL_FOLDER}")


def add_setup_cell(app: Sphinx, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    cell_source = SETUP_CELL.format(wheel=wheel_name(Path(app.confdir)))
    for path in sorted((Path(app.outdir) / "_sources").rglob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
        if not any(f"import {m}" in code or f"from {m}" in code for m in ("posenc", "autograder", "arena")):
            continue
        if nb.cells and MARKER in nb.cells[0].get("metadata", {}):
            nb.cells[0].source = cell_source  # a file kept from an earlier build: refresh the cell
        else:
            cell = nbformat.v4.new_code_cell(cell_source, metadata={MARKER: True})
            cell.id = MARKER
            nb.cells.insert(0, cell)
        nbformat.write(nb, path)


def setup(app: Sphinx):
    app.connect("config-inited", make_wheel)
    app.connect("build-finished", add_setup_cell)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
