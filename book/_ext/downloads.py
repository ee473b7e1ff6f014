"""Chapter downloads that run outside the repository: the course's package as a wheel, and the install cell first
in every downloaded chapter.

A chapter imports ``posenc`` (formulas, explorers, ``posenc.ARENA_RESULTS``), ``autograder.checks`` (the test
cells' helpers) and for some chapters ``arena``, none of which is on PyPI. So the book ships them:

- **The wheel.** When the build starts, this extension builds ``posenc-<version>-py3-none-any.whl`` from
  pyproject.toml (its packages posenc, autograder and arena, and book/data/arena.json, which pyproject.toml puts
  inside posenc, where ``posenc.ARENA_RESULTS`` finds it outside the repository) into ``_build/wheel/``, from a
  staged copy so that the checkout stays clean; it is rebuilt only when one of its files changed. The Setup page
  links it with Sphinx's ``{download}`` role (a missing wheel is a warning, so the strict build fails).
- **The install cell** (book/_ext/install_cell.py). The lessons start with it (`make lessons` puts it there), so
  the notebook the download button serves (``_sources/**.ipynb``) has it already and gets no second copy; a
  notebook that imports the course's modules without it (the instructor edition's source notebooks) gets it in
  front. Either way its text is the one this build's repository (``repository_url``, ``repository_branch``) and
  pyproject.toml give: a lesson released with another text (the URL, the branch or the version changed since
  `make lessons`) is a warning, so the strict build fails until the lessons are released again. The page itself
  does not show the cell (tag ``remove-cell``).
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

import install_cell  # book/_ext/install_cell.py (Sphinx puts book/_ext on sys.path)
from install_cell import wheel_name

logger = logging.getLogger(__name__)

WHEEL_FOLDER = Path("_build") / "wheel"  # relative to the book's root (book/setup.md links the wheel there)
COURSE_MODULES = ("posenc", "autograder", "arena")


def _inputs(root: Path) -> list[Path]:
    """The files the wheel is built from: pyproject.toml, and for each of its packages (in its folder, which
    ``package-dir`` may map elsewhere) its Python files and its ``package-data``."""
    setuptools = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]
    files = [root / "pyproject.toml"]
    for package in setuptools["packages"]:
        folder = root / setuptools.get("package-dir", {}).get(package, package.replace(".", "/"))
        files += sorted(folder.glob("*.py"))
        for pattern in setuptools.get("package-data", {}).get(package, []):
            files += sorted(folder.glob(pattern))
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


def build_cell(app: Sphinx) -> str:
    """The install cell of this build: its repository (empty when launch.py found none) and pyproject.toml."""
    options = app.config.html_theme_options
    return install_cell.source(options.get("repository_url") or "", options.get("repository_branch") or "main",
                               root=Path(app.confdir))


def imports_the_course(nb) -> bool:
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    return any(f"import {m}" in code or f"from {m}" in code for m in COURSE_MODULES)


def check_lessons(app: Sphinx, env) -> None:
    """Warn about a notebook of the book whose install cell is not this build's (lessons not released since
    repository.url, its branch or the package's version changed)."""
    cell = build_cell(app)
    for docname in sorted(env.found_docs):
        path = Path(env.doc2path(docname))
        if path.suffix != ".ipynb":
            continue
        nb = nbformat.read(path, as_version=4)
        installs = [c for c in nb.cells if install_cell.is_install_cell(c)]
        if installs and (installs != nb.cells[:1] or installs[0].source != cell):
            logger.warning(f"{docname}: its install cell is not this book's (the repository's URL or branch, or "
                           "the package's version, changed since it was released): run `make lessons`",
                           location=docname)


def add_install_cell(app: Sphinx, exception) -> None:
    """Every downloadable notebook that imports the course's modules starts with this build's install cell."""
    if exception is not None or app.builder.format != "html":
        return
    cell = build_cell(app)
    for path in sorted((Path(app.outdir) / "_sources").rglob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        if not (any(install_cell.is_install_cell(c) for c in nb.cells) or imports_the_course(nb)):
            continue
        if install_cell.put_first(nb, cell):
            nbformat.write(nb, path)


def setup(app: Sphinx):
    app.connect("config-inited", make_wheel)
    app.connect("env-check-consistency", check_lessons)
    app.connect("build-finished", add_install_cell)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
