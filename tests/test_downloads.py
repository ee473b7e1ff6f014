"""A chapter downloaded from the book runs outside the repository (book/_ext/downloads.py): in a fresh virtual
environment with only JupyterLab installed (the Setup page's step), the notebook's install cell (its first cell,
book/_ext/install_cell.py) installs the course's wheel found beside it, and every chapter then executes the way
the book executes it. The downloaded notebook is the lesson, install cell included: the extension adds no second
copy, and gives the cell, with the same text, to a notebook that lacks it."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pytest

from autograder import course
from support import ROOT, run_notebook, toc_chapters, where_the_course_is, without_the_course

sys.path.insert(0, str(ROOT / "book" / "_ext"))
import downloads  # noqa: E402  (book/_ext/downloads.py)
import install_cell  # noqa: E402  (book/_ext/install_cell.py)

WHEEL = downloads.wheel_name(ROOT)
CHAPTER = "01_why_position"


def fake_app(outdir: Path, url: str | None = None) -> SimpleNamespace:
    """What the extension reads of Sphinx's application: by default the book's repository (_config.yml)."""
    url, branch = install_cell.repository() if url is None else (url, "main")
    options = {"repository_url": url, "repository_branch": branch} if url else {}
    return SimpleNamespace(builder=SimpleNamespace(format="html"), outdir=str(outdir), confdir=str(ROOT),
                           config=SimpleNamespace(html_theme_options=options))


def install_cells(nb) -> list:
    return [c for c in nb.cells if install_cell.is_install_cell(c)]


def test_downloads_get_the_lessons_install_cell_once(tmp_path):
    """In the built book's _sources/: the lesson keeps its own install cell (no second copy, also when a
    second build finds the file again); a notebook that imports posenc without one (the instructor edition's source
    notebook) gets the same text in front; a notebook that does not import the course is left alone."""
    sources = tmp_path / "_sources"
    (sources / "lessons").mkdir(parents=True)
    (sources / "solutions").mkdir(parents=True)
    shutil.copy(course.lesson_notebook(CHAPTER), sources / "lessons" / f"{CHAPTER}.ipynb")
    shutil.copy(course.source_notebook(CHAPTER), sources / "solutions" / f"{CHAPTER}.ipynb")
    other = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print(1)")])
    nbformat.write(other, sources / "other.ipynb")
    for _ in range(2):
        downloads.add_install_cell(fake_app(tmp_path), None)
    lesson = nbformat.read(course.lesson_notebook(CHAPTER), as_version=4)
    for folder in ("lessons", "solutions"):
        nb = nbformat.read(sources / folder / f"{CHAPTER}.ipynb", as_version=4)
        assert install_cells(nb) == nb.cells[:1], f"{folder}: not one install cell, first"
        assert nb.cells[0].source == lesson.cells[0].source == install_cell.book_source(), folder
    assert nbformat.read(sources / "lessons" / f"{CHAPTER}.ipynb", as_version=4) == lesson
    assert not install_cells(nbformat.read(sources / "other.ipynb", as_version=4))


def test_a_lesson_released_for_another_repository_is_a_warning(tmp_path, monkeypatch):
    """The strict build fails on a lesson whose install cell names another repository than the book's (the URL
    changed, `make lessons` was not run)."""
    warned = []
    monkeypatch.setattr(downloads.logger, "warning", lambda message, **kw: warned.append(message))
    env = SimpleNamespace(found_docs={f"lessons/{CHAPTER}/{CHAPTER}", "book/setup"},
                          doc2path=lambda name: str(ROOT / (name + (".md" if name.startswith("book") else ".ipynb"))))
    downloads.check_lessons(fake_app(tmp_path), env)
    assert warned == []
    downloads.check_lessons(fake_app(tmp_path, "https://github.com/someone/another-course"), env)
    assert len(warned) == 1 and "make lessons" in warned[0] and CHAPTER in warned[0], warned


# --- The built book's downloads in a fresh virtual environment -------------------------------------------

# Run in full for one chapter of each kind of need, to keep the suite's time: numpy and matplotlib only (1),
# torch (3), the arena's published results and the arena package (8). Every chapter's download is checked for
# its install cell and the wheel's link below.
RUN_IN_FULL = ["01_why_position", "03_learned", "08_arena"]


@pytest.mark.slow
@pytest.mark.xdist_group("book")
@pytest.mark.parametrize("chapter", toc_chapters())
def test_every_downloaded_chapter_starts_with_the_lessons_install_cell(built_book, chapter):
    html, _ = built_book
    download = html / "_sources" / f"{chapter}.ipynb"
    assert f"_sources/{chapter}.ipynb" in (html / f"{chapter}.html").read_text(), f"{chapter}: no download link"
    nb = nbformat.read(download, as_version=4)
    lesson = nbformat.read(ROOT / f"{chapter}.ipynb", as_version=4)
    assert install_cells(nb) == nb.cells[:1], "the first cell is not the install cell, or it is there twice"
    assert nb.cells[0].source == lesson.cells[0].source == install_cell.book_source()
    assert "Run this cell first" not in (html / f"{chapter}.html").read_text(), "the page shows the install cell"


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
    assert nb.cells[0].source == install_cell.book_source(), "the first cell is not the install cell"
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
    without_the_course(fresh_venv)
    done = run_notebook(fresh_venv, notebook)
    assert done.returncode == 0, f"{chapter} failed in a fresh environment:\n{(done.stdout + done.stderr)[-4000:]}"
    assert f"Installing {WHEEL}[{install_cell.EXTRA}]" in done.stdout, done.stdout[-2000:]
    module, results = where_the_course_is(fresh_venv, folder)
    assert module.is_relative_to(fresh_venv) and results.is_file(), (module, results)
