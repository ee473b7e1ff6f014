"""The launch settings (book/_ext/launch.py): one setting, repository.url in _config.yml, decides whether the book
shows launch buttons and repository links. The built pages are checked in test_book_delivery.py.

What a launch button opens runs: Binder and Colab open lessons/<ch>/<ch>.ipynb from the repository, where nothing
has installed the course's package, so every lesson starts with the install cell (book/_ext/install_cell.py),
released with the book's repository in it. Where the package imports, the cell does nothing and never reaches for
the network (the grading sandbox has none); without the package and without a repository it stops with one line;
with a repository, it installs the course from it and the chapter runs top to bottom in a fresh environment."""

from __future__ import annotations

import shutil
import subprocess
import sys
from types import SimpleNamespace

import nbformat
import pytest
import yaml

from autograder import course
from support import ROOT, clean_env, run_notebook, where_the_course_is, without_the_course

sys.path.insert(0, str(ROOT / "book" / "_ext"))
import install_cell  # noqa: E402  (book/_ext/install_cell.py)
import launch  # noqa: E402


def theme_options(url):
    return {"repository_url": url, "launch_buttons": {"binderhub_url": "https://mybinder.org",
                                                      "colab_url": "https://colab.research.google.com"},
            "use_repository_button": False}


def test_without_a_repository_there_is_nothing_to_launch():
    for url in ("", None, "  "):
        config = SimpleNamespace(html_theme_options=theme_options(url))
        launch.configure(None, config)
        options = config.html_theme_options
        assert options["launch_buttons"] == {} and "repository_url" not in options
        assert not any(options[k] for k in launch.REPOSITORY_BUTTONS)


def test_a_repository_gets_launch_buttons_and_a_link():
    config = SimpleNamespace(html_theme_options=theme_options("https://github.com/someone/posenc-course"))
    launch.configure(None, config)
    options = config.html_theme_options
    assert options["launch_buttons"]["binderhub_url"] and options["launch_buttons"]["colab_url"]
    assert options["use_repository_button"] is True


def test_config_has_one_launch_setting_and_no_placeholder():
    text = (ROOT / "_config.yml").read_text()
    config = yaml.safe_load(text)
    assert "REPLACE" not in text and "example.org" not in text, "a placeholder in _config.yml"
    assert set(config["launch_buttons"]) <= {"notebook_interface", "binderhub_url", "colab_url"}, \
        "launch providers beyond the public ones need settings of their own"
    url = config["repository"]["url"]
    assert url == "" or url.startswith("https://github.com/"), f"repository.url {url!r}: empty or a GitHub URL"


# --- The install cell that the lessons start with ----------------------------------------------------------

CHAPTERS = course.assignments()
WHEEL = install_cell.wheel_name()


@pytest.mark.parametrize("name", CHAPTERS)
def test_every_lesson_starts_with_the_books_install_cell(name):
    """Once, first, hidden from the page, not an nbgrader cell, and released for the repository _config.yml names
    now (a stale lesson: `make lessons`)."""
    nb = nbformat.read(course.lesson_notebook(name), as_version=4)
    cells = [c for c in nb.cells if install_cell.is_install_cell(c)]
    assert cells == nb.cells[:1], f"lessons/{name}: the install cell is not its first cell, once (make lessons)"
    cell = cells[0]
    assert cell.source == install_cell.book_source(), (
        f"lessons/{name} was released for another repository.url, branch or package version: run `make lessons`")
    assert cell.cell_type == "code" and "remove-cell" in cell.metadata.get("tags", []), cell.metadata
    assert "nbgrader" not in cell.metadata, "the install cell must be no graded or locked cell"


def run_cell(python: str, cell: str, cwd, *flags: str, prelude: str = "") -> subprocess.CompletedProcess:
    return subprocess.run([python, *flags, "-c", prelude + cell], cwd=cwd, capture_output=True, text=True,
                          env=clean_env(), timeout=120)


def test_without_the_package_or_a_repository_the_cell_stops_with_one_line(tmp_path):
    """No posenc, no wheel beside the notebook, no repository: one line that names the wheel, the Setup page and
    the folder to put the wheel in."""
    # -I -S: no site-packages (so no posenc, numpy or matplotlib) and not the repository on the path
    done = run_cell(sys.executable, install_cell.source(""), tmp_path, "-I", "-S")
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("ModuleNotFoundError: ") and "is not installed" in last, done.stderr
    assert WHEEL in last and "Setup page" in last and str(tmp_path) in last, last
    assert "During handling" not in done.stderr, "the message drags the ImportError's traceback along"
    assert "Installing" not in done.stdout


@pytest.mark.parametrize("wheel_beside", [False, True])
def test_where_the_course_imports_the_cell_does_nothing(tmp_path, wheel_beside):
    """Where posenc, autograder.checks, matplotlib and myst-nb import (this environment, a class's hub, the grading
    sandbox without network), the cell starts no program, whatever repository it names and whatever lies beside."""
    if wheel_beside:
        (tmp_path / WHEEL).write_bytes(b"not a wheel")
    no_programs = "import subprocess\nsubprocess.check_call = subprocess.run = subprocess.Popen = None\n"
    done = run_cell(sys.executable, install_cell.source("https://github.com/someone/posenc-course"), tmp_path,
                    prelude=no_programs)
    assert done.returncode == 0 and done.stdout == "", done.stdout + done.stderr


def test_when_pip_fails_the_cell_says_so_with_pips_message(tmp_path):
    """A wheel beside the notebook that pip cannot install (here pip itself is replaced by a failing stand-in):
    the cell stops with pip's own message, not with a later ImportError."""
    (tmp_path / WHEEL).write_bytes(b"not a wheel")
    failing_pip = ("import subprocess\nsubprocess.run = lambda args, **kw: subprocess.CompletedProcess("
                   "args, 1, '', 'ERROR: the stand-in pip refuses')\n")
    done = run_cell(sys.executable, install_cell.source(""), tmp_path, "-I", "-S", prelude=failing_pip)
    assert done.stdout.startswith(f"Installing {WHEEL}[{install_cell.EXTRA}]"), done.stdout
    assert done.returncode != 0 and "RuntimeError: pip could not install" in done.stderr, done.stderr
    assert done.stderr.strip().endswith("ERROR: the stand-in pip refuses"), done.stderr
    assert "During handling" not in done.stderr


def snapshot_repository(dest) -> str:
    """A git repository holding this checkout's files as they are now (tracked and new, not ignored), committed on
    the branch main, its _config.yml naming it as the book's repository: what the course's repository holds once
    the working tree is pushed and repository.url is set. Returns its URL."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        if (ROOT / name).is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, dest / name)
    # file:// with a host: the pip that Python 3.11's venv brings rejects "name @ git+file:///path" (a URL without
    # one); GitHub's https URL has one
    url = f"file://localhost{dest.resolve().as_posix()}"
    set_repository(dest, url, "main")
    git = ["git", "-c", "user.name=posenc tests", "-c", "user.email=tests@localhost"]
    for args in (["init", "--quiet", "--initial-branch=main"], ["add", "--all"], ["commit", "--quiet", "-m", "snapshot"]):
        subprocess.run(git + args, cwd=dest, check=True, capture_output=True)
    return url


def set_repository(root, url: str, branch: str) -> None:
    """Set repository.url and .branch in root/_config.yml (a copy's, never the checkout's)."""
    assert root.resolve() != ROOT
    config = yaml.safe_load((root / "_config.yml").read_text())
    config["repository"].update(url=url, branch=branch)
    (root / "_config.yml").write_text(yaml.safe_dump(config, sort_keys=False))


def test_the_cell_installs_from_the_repository_and_branch_the_config_names(tmp_path):
    for name in ("_config.yml", "pyproject.toml"):
        shutil.copy(ROOT / name, tmp_path / name)
    set_repository(tmp_path, "https://github.com/someone/posenc-course/", "course-2027")
    cell = install_cell.book_source(tmp_path)
    assert cell == install_cell.source("https://github.com/someone/posenc-course", "course-2027", tmp_path)
    assert 'REPOSITORY = "git+https://github.com/someone/posenc-course@course-2027"' in cell, cell
    compile(cell, "install cell", "exec")


@pytest.mark.slow
@pytest.mark.xdist_group("book")  # where test_downloads.py's tests make the fresh environment it shares
def test_a_launched_lesson_installs_the_course_from_the_repository(fresh_venv, tmp_path):
    """The lesson as released for a book whose repository.url is a git repository (file://, which pip clones like
    GitHub's https://), opened where Colab or Binder opens it (a folder without the wheel, an environment with
    JupyterLab only): its install cell installs the course from the repository, with the arena's results, and the
    chapter runs top to bottom as the book runs it."""
    repo = tmp_path / "posenc-course"
    url = snapshot_repository(repo)
    cell = install_cell.book_source(repo)  # what `make lessons` puts first in the repository's lessons
    nb = nbformat.read(course.lesson_notebook(CHAPTERS[0]), as_version=4)
    install_cell.put_first(nb, cell)
    folder = tmp_path / "colab"
    folder.mkdir()
    notebook = folder / f"{CHAPTERS[0]}.ipynb"
    nbformat.write(nb, notebook)
    without_the_course(fresh_venv)
    done = run_notebook(fresh_venv, notebook)
    assert done.returncode == 0, f"the launched lesson failed:\n{(done.stdout + done.stderr)[-4000:]}"
    assert f"Installing posenc[{install_cell.EXTRA}] @ git+{url}@main" in done.stdout, done.stdout[-2000:]
    module, results = where_the_course_is(fresh_venv, folder)
    assert module.is_relative_to(fresh_venv) and results.is_file() and results.is_relative_to(fresh_venv), \
        (module, results)
