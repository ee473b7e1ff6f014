"""Shared fixtures: the strictly built book (built once per test session, on one xdist worker) and the browser.
The helpers they use, and the tests use, are in support.py."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from autograder import gradebook
from support import CHROMIUM, CHROMIUM_ARGS, build_book, clean_env

# Every test names its own gradebook: an instructor's POSENC_DB_URL (a shared PostgreSQL gradebook) must not send
# the tests' grades there. The PostgreSQL tests pass theirs to the commands they run.
os.environ.pop("POSENC_DB_URL", None)
gradebook.find_alembic()  # the tests create gradebooks through nbgrader's API, as the command line does


def pytest_sessionstart(session):
    """The notebooks nbgrader reads, solutions/<ch>/<ch>.ipynb, written from the chapters' markdown before any test
    copies, serves or grades them (git ignores them: a fresh clone has only the .md)."""
    from autograder import course

    for name in course.assignments():
        course.source_notebook(name)


@pytest.fixture(scope="session")
def built_book(tmp_path_factory):
    """Build the whole book strictly (warnings are errors, a failing cell fails) re-reading every page.

    Returns (html_dir, build_log). Tests that use it carry @pytest.mark.xdist_group("book") so that one
    worker builds it once."""
    if os.environ.get("POSENC_BOOK_HTML"):  # reuse a book built earlier (quick reruns of the browser tests)
        html = Path(os.environ["POSENC_BOOK_HTML"]).resolve()
        return html, (html.parent.parent / "build.log").read_text() if (html.parent.parent / "build.log").exists() else ""
    out = tmp_path_factory.mktemp("book")
    result = build_book(out)
    log = result.stdout + result.stderr
    if result.returncode != 0:
        pytest.fail(f"the strict book build failed:\n{log[-6000:]}")
    return out / "_build" / "html", log


@pytest.fixture(scope="session")
def built_selfstudy(built_book, tmp_path_factory):
    """The self-study edition (tools/selfstudy_book.py, `make book-selfstudy`) built strictly once per session.
    It comes after the student book, whose execution cache serves it (its code cells are the lessons'), so it
    executes nothing again. Returns (html_dir, build_log); tests that use it carry xdist_group("book")."""
    import selfstudy_book  # tools/ is on the path (support.py)

    out = tmp_path_factory.mktemp("selfstudy")
    result = selfstudy_book.build(out)
    log = result.stdout + result.stderr
    if result.returncode != 0:
        pytest.fail(f"the strict build of the self-study edition failed:\n{log[-6000:]}")
    return out / "_build" / "html", log


@pytest.fixture(scope="session")
def fresh_venv(tmp_path_factory) -> Path:
    """A new virtual environment with JupyterLab only (the Setup page's install step), made once per session:
    the downloaded chapters (test_downloads.py) and the launched lesson (test_launch.py) run in it. Tests that use
    it carry xdist_group("book") so that one worker makes it, and uninstall the course's package before their
    notebook installs it (support.without_the_course), so that each install is really done."""
    venv = tmp_path_factory.mktemp("fresh") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, env=clean_env(), timeout=300)
    done = subprocess.run([str(venv / "bin" / "pip"), "install", "--quiet", "jupyterlab"], capture_output=True,
                          text=True, env=clean_env(), timeout=1200)
    assert done.returncode == 0, done.stdout + done.stderr
    check = subprocess.run([str(venv / "bin" / "python"), "-c", "import posenc"], capture_output=True, text=True,
                           env=clean_env(), cwd=venv)
    assert check.returncode != 0, "posenc is importable in the fresh environment before any install"
    return venv


@pytest.fixture(scope="session")
def browser():
    """Debian's Chromium driven by Playwright (which never downloads a browser of its own)."""
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: install Debian's chromium (.ci/run does)")
    from playwright.sync_api import sync_playwright  # only the browser tests need it

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def postgres_server():
    """A real PostgreSQL server of the test's own (tests/postgres.py): a cluster made by initdb in a temporary
    folder, on 127.0.0.1 and a free port, run by an unprivileged user when the tests run as root; stopped and
    deleted after the test. ``create_database(name)`` gives a gradebook URL."""
    import postgres

    why = postgres.missing()
    if why:
        pytest.fail(why)
    with postgres.Server.started() as server:
        yield server
