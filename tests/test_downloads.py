"""A chapter downloaded from the book runs outside the repository (book/_ext/downloads.py): in a fresh virtual
environment with only JupyterLab installed (the Setup page's step), the notebook's first cell installs the course's
wheel found beside it, and every chapter then executes the way the book executes it. Without the wheel, the
first cell stops with a message that says what to do."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from support import ROOT, toc_chapters

sys.path.insert(0, str(ROOT / "book" / "_ext"))
import downloads  # noqa: E402  (book/_ext/downloads.py)

WHEEL = downloads.wheel_name(ROOT)


def clean_env(**extra: str) -> dict:
    """This process's environment without what would let a kernel find the repository's packages."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "MPLBACKEND")}
    return {**env, "PYTHONNOUSERSITE": "1", **extra}


def test_first_cell_without_the_course_package_says_what_to_do(tmp_path):
    """No posenc and no wheel beside the notebook: one line that names the wheel and where to get it."""
    cell = downloads.SETUP_CELL.format(wheel=WHEEL)
    # -I -S: no site-packages (so no posenc, numpy or matplotlib) and not the repository on the path
    done = subprocess.run([sys.executable, "-I", "-S", "-c", cell], cwd=tmp_path, capture_output=True, text=True,
                          env=clean_env(), timeout=60)
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("ModuleNotFoundError: ") and "is not installed" in last, done.stderr
    assert WHEEL in last and "Setup page" in last and str(tmp_path) in last, last
    assert "During handling" not in done.stderr, "the message drags the ImportError's traceback along"


# --- The built book's downloads in a fresh virtual environment -------------------------------------------

RUN = """import sys, nbformat
from nbclient import NotebookClient
path = sys.argv[1]
nb = nbformat.read(path, as_version=4)
# as the book executes a chapter: cells tagged skip-execution (the exercises) are not run, and only cells
# tagged raises-exception may raise
NotebookClient(nb, timeout=600, kernel_name="python3", skip_cells_with_tag="skip-execution",
               resources={"metadata": {"path": str(__import__("pathlib").Path(path).parent)}}).execute()
print("first cell:", [o.get("text", o.get("ename", "")) for o in nb.cells[0].outputs])
"""


@pytest.fixture(scope="module")
def fresh_venv(tmp_path_factory) -> Path:
    """A new virtual environment with JupyterLab only (the Setup page's install step)."""
    venv = tmp_path_factory.mktemp("fresh") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, env=clean_env(), timeout=300)
    done = subprocess.run([str(venv / "bin" / "pip"), "install", "--quiet", "jupyterlab"], capture_output=True,
                          text=True, env=clean_env(), timeout=1200)
    assert done.returncode == 0, done.stdout + done.stderr
    check = subprocess.run([str(venv / "bin" / "python"), "-c", "import posenc"], capture_output=True, text=True,
                           env=clean_env(), cwd=venv)
    assert check.returncode != 0, "posenc is importable in the fresh environment before any install"
    return venv


# Run in full for one chapter of each kind of need, to keep the suite's time: numpy and matplotlib only (1),
# torch (3), the arena's published results and the arena package (8). Every chapter's download is checked for
# its set-up cell and the wheel's link below.
RUN_IN_FULL = ["01_why_position", "03_learned", "08_arena"]


@pytest.mark.slow
@pytest.mark.xdist_group("book")
@pytest.mark.parametrize("chapter", toc_chapters())
def test_every_downloaded_chapter_starts_with_the_set_up_cell(built_book, chapter):
    html, _ = built_book
    download = html / "_sources" / f"{chapter}.ipynb"
    assert f"_sources/{chapter}.ipynb" in (html / f"{chapter}.html").read_text(), f"{chapter}: no download link"
    nb = nbformat.read(download, as_version=4)
    assert nb.cells[0].source == downloads.SETUP_CELL.format(wheel=WHEEL), "the first cell is not the set-up cell"


@pytest.mark.slow
@pytest.mark.xdist_group("book")
@pytest.mark.parametrize("chapter", [c for c in toc_chapters() if c.split("/")[-1] in RUN_IN_FULL])
def test_downloaded_chapter_runs_in_a_fresh_environment(built_book, fresh_venv, tmp_path, chapter):
    html, _ = built_book
    page = html / f"{chapter}.html"
    download = html / "_sources" / f"{chapter}.ipynb"
    assert download.is_file() and f"_sources/{chapter}.ipynb" in page.read_text(), \
        f"{chapter}: no download of the notebook from its page"
    nb = nbformat.read(download, as_version=4)
    assert nb.cells[0].source == downloads.SETUP_CELL.format(wheel=WHEEL), "the first cell is not the set-up cell"
    wheels = list((html / "_downloads").rglob(WHEEL))
    setup_page = (html / "book" / "setup.html").read_text()
    assert len(wheels) == 1 and wheels[0].relative_to(html).as_posix() in setup_page, \
        f"the Setup page does not link {WHEEL}"

    # The reader's folder, away from the repository: the notebook and the wheel from the Setup page.
    folder = tmp_path / "reader"
    folder.mkdir()
    notebook = folder / download.name
    notebook.write_bytes(download.read_bytes())
    (folder / WHEEL).write_bytes(wheels[0].read_bytes())
    done = subprocess.run([str(fresh_venv / "bin" / "python"), "-c", RUN, str(notebook)], cwd=folder,
                          capture_output=True, text=True, env=clean_env(), timeout=1800)
    assert done.returncode == 0, f"{chapter} failed in a fresh environment:\n{(done.stdout + done.stderr)[-4000:]}"
    where = subprocess.run([str(fresh_venv / "bin" / "python"), "-c",
                            "import posenc, autograder.checks; print(posenc.__file__); print(posenc.ARENA_RESULTS)"],
                           cwd=folder, capture_output=True, text=True, env=clean_env())
    module, results = where.stdout.split()
    assert Path(module).is_relative_to(fresh_venv) and Path(results).is_file(), where.stdout + where.stderr
