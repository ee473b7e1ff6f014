"""What the tests share: the repository's places, the book's pages and strict build, the instructor's command
line, a course of its own for nbgrader, and live Jupyter servers and browser contexts.
The fixtures that use them are in conftest.py."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from autograder import verdict, wire

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import book_build  # noqa: E402  (tools/book_build.py: the strict flags and the TOC's pages, for the tools too)
from book_pdf import is_local  # noqa: E402,F401  (a request that stays on this machine; the PDF's printer uses it too)

STRICT = book_build.STRICT
VENV_BIN = Path(sys.executable).parent
SCREENSHOTS = ROOT / "_build" / "screenshots"
TOC = Path(os.environ.get("POSENC_TOC", ROOT / "_toc.yml"))  # another TOC for checks of a partial book
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run",
                 "--disable-dev-shm-usage"]


# ---------------------------------------------------------------------------------------------------------
# The book

def toc_pages() -> list[str]:
    """Every page of the TOC (_toc.yml, or $POSENC_TOC), in order."""
    return book_build.toc_pages(TOC)


def toc_chapters() -> list[str]:
    """The chapters of the TOC, as lessons/<ch>/<ch> page names."""
    return book_build.toc_chapters(TOC)


def build_book(out: Path) -> subprocess.CompletedProcess:
    """The whole book built strictly into ``out``, re-reading every page (`make book-all`)."""
    jb = VENV_BIN / "jupyter-book"
    return subprocess.run([str(jb), "build", str(ROOT), "--path-output", str(out), "--all", *STRICT],
                          capture_output=True, text=True, cwd=ROOT)


# ---------------------------------------------------------------------------------------------------------
# The instructor's command line and a course of the test's own

def cli_command(*args) -> list[str]:
    """`python -m autograder ARGS` with this environment's Python."""
    return [sys.executable, "-m", "autograder", *map(str, args)]


def cli_env(course_dir: Path, cell_timeout: int = 30, **extra: str) -> dict:
    """The environment of a command run on the course folder ``course_dir`` with a cell timeout of its own."""
    return {**os.environ, "POSENC_COURSE_DIR": str(course_dir), "POSENC_CELL_TIMEOUT": str(cell_timeout), **extra}


def run_cli(*args, course_dir: Path, cell_timeout: int = 30, env: dict | None = None,
            timeout: float = 1800) -> subprocess.CompletedProcess:
    """`python -m autograder ARGS` from the repository root, on its own course folder; output captured."""
    return subprocess.run(cli_command(*args), cwd=ROOT, env=cli_env(course_dir, cell_timeout, **(env or {})),
                          capture_output=True, text=True, timeout=timeout)


def write_course_config(root: Path) -> None:
    """A root nbgrader_config.py that loads the course's configuration with the course moved to ``root``."""
    (root / "nbgrader_config.py").write_text(
        f'load_subconfig({str(ROOT / "autograder" / "nbgrader_config.py")!r})  # noqa: F821\n'
        f'c = get_config()  # noqa: F821\n'
        f'c.CourseDirectory.root = {str(root)!r}\n')


# ---------------------------------------------------------------------------------------------------------
# Live servers and the browser (tests/test_browser.py, test_lab.py, test_formgrader.py)

@dataclass
class Watched:
    """A browser context that routes every request: anything leaving the machine is aborted and recorded,
    as are console errors and uncaught exceptions of its pages."""

    context: object
    outside: list = field(default_factory=list)
    errors: list = field(default_factory=list)
    failed: list = field(default_factory=list)

    def new_page(self):
        page = self.context.new_page()
        page.on("console", lambda m: self.errors.append(f"console: {m.text} ({m.location.get('url', '')})")
                if m.type == "error" else None)
        page.on("pageerror", lambda e: self.errors.append(f"uncaught: {e}"))
        page.on("requestfailed", lambda r: self.failed.append(f"{r.url}: {r.failure}")
                if is_local(r.url) else None)
        return page


@contextlib.contextmanager
def watched_context(browser, **options):
    context = browser.new_context(**{"viewport": {"width": 1200, "height": 900}, **options})
    watched = Watched(context)

    def route(r):
        if is_local(r.request.url):
            return r.continue_()
        watched.outside.append(r.request.url)
        return r.abort()

    context.route("**/*", route)
    try:
        yield watched
    finally:
        context.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Server:
    """A running Jupyter server: base url, token, process and log file."""

    url: str
    token: str
    proc: subprocess.Popen
    log: Path

    def request(self, method: str, path: str, body=None, timeout: float = 60):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method,
                                     headers={"Authorization": f"token {self.token}",
                                              "Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=timeout) as r:
            text = r.read().decode()
        return json.loads(text) if text.strip() else None

    def get(self, path: str):
        return self.request("GET", path)

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""


@contextlib.contextmanager
def jupyter_lab(root_dir: Path, cwd: Path, tmp: Path, env: dict | None = None, timeout: float = 90,
                via_make: bool = False):
    """Start `jupyter lab` from .venv on a free localhost port with a token (no browser, root allowed),
    serving root_dir, started in cwd (where nbgrader reads nbgrader_config.py); with via_make, through
    `make lab LAB_DIR=root_dir LAB_ARGS=...` from the repository root. Stopped by its PID (and, for make,
    its process group, which this fixture created)."""
    port, token = free_port(), secrets.token_hex(16)
    runtime = tmp / "jupyter-runtime"
    runtime.mkdir(parents=True, exist_ok=True)
    log = tmp / f"jupyter-lab-{port}.log"
    environ = {**os.environ, "JUPYTER_RUNTIME_DIR": str(runtime), "JUPYTER_CONFIG_DIR": str(tmp / "jupyter-config"),
               "PYTHONHASHSEED": "0", **(env or {})}
    environ.pop("MPLBACKEND", None)  # Agg would stop the lab kernel's inline figures (the explorers draw nothing)
    # JupyterLab renders only the cells in view by default; the browser test needs them all in the page.
    settings = tmp / "lab-settings" / "@jupyterlab" / "notebook-extension"
    settings.mkdir(parents=True, exist_ok=True)
    (settings / "tracker.jupyterlab-settings").write_text(json.dumps({"windowingMode": "none"}))
    options = ["--no-browser", "--allow-root", "--ip=127.0.0.1", f"--port={port}", "--ServerApp.port_retries=0",
               f"--IdentityProvider.token={token}", f"--LabApp.user_settings_dir={tmp / 'lab-settings'}",
               f"--LabApp.workspaces_dir={tmp / 'lab-workspaces'}", "--LabApp.expose_app_in_browser=True"]
    if via_make:
        cmd = ["make", "-s", "--no-print-directory", "lab", f"LAB_DIR={root_dir}", "LAB_ARGS=" + " ".join(options)]
        cwd = ROOT
    else:
        cmd = [str(VENV_BIN / "jupyter"), "lab", *options, f"--ServerApp.root_dir={root_dir}"]
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, cwd=cwd, env=environ, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
    server = Server(f"http://127.0.0.1:{port}", token, proc, log)
    try:
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                pytest.fail(f"jupyter lab exited with {proc.returncode}:\n{server.log_text()[-4000:]}")
            try:
                server.get("/api/status")
                break
            except (urllib.error.URLError, ConnectionError, OSError):
                if time.monotonic() > deadline:
                    pytest.fail(f"jupyter lab did not answer in {timeout} s:\n{server.log_text()[-4000:]}")
                time.sleep(0.3)
        yield server
    finally:
        if proc.poll() is None:
            if via_make:  # make does not pass SIGTERM on: signal the group this fixture started (make + server)
                os.killpg(proc.pid, signal.SIGTERM)
            else:
                os.kill(proc.pid, signal.SIGTERM)  # the server shuts its kernels down on SIGTERM
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)  # its own process group (start_new_session): server + kernels
                proc.wait(timeout=10)
        # make exits at once on SIGTERM while the server it started may still be stopping (or stuck stopping its
        # kernels): nothing of the group may outlive the fixture
        deadline = time.monotonic() + 20
        while _group_alive(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        if _group_alive(proc.pid):
            os.killpg(proc.pid, signal.SIGKILL)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False


# ---------------------------------------------------------------------------------------------------------
# A chapter outside the repository: a reader's fresh environment (test_downloads.py, test_launch.py; the
# fixture fresh_venv is in conftest.py)

# Runs a notebook as the book executes a chapter: cells tagged skip-execution (the exercises) are not run, and only
# cells tagged raises-exception may raise. The kernel starts in the notebook's folder, as JupyterLab starts it.
RUN_NOTEBOOK = """import sys, pathlib, nbformat
from nbclient import NotebookClient
path = sys.argv[1]
nb = nbformat.read(path, as_version=4)
NotebookClient(nb, timeout=600, kernel_name="python3", skip_cells_with_tag="skip-execution",
               resources={"metadata": {"path": str(pathlib.Path(path).parent)}}).execute()
print("first cell:", [o.get("text", o.get("ename", "")) for o in nb.cells[0].outputs])
"""


def clean_env(**extra: str) -> dict:
    """This process's environment without what would let a kernel find the repository's packages."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "MPLBACKEND")}
    return {**env, "PYTHONNOUSERSITE": "1", **extra}


def without_the_course(venv: Path) -> None:
    """Uninstall the course's package from ``venv`` (a test before may have installed it), so that the next
    notebook's install cell has to install it again."""
    python = str(venv / "bin" / "python")
    subprocess.run([python, "-m", "pip", "uninstall", "--yes", "--quiet", "posenc"], capture_output=True,
                   env=clean_env(), timeout=300)
    check = subprocess.run([python, "-c", "import posenc"], capture_output=True, env=clean_env(), cwd=venv)
    assert check.returncode != 0, f"posenc is still importable in {venv}"


def run_notebook(venv: Path, notebook: Path) -> subprocess.CompletedProcess:
    """Execute ``notebook`` (RUN_NOTEBOOK) with ``venv``'s Python, from the notebook's folder."""
    return subprocess.run([str(venv / "bin" / "python"), "-c", RUN_NOTEBOOK, str(notebook)], cwd=notebook.parent,
                          capture_output=True, text=True, env=clean_env(), timeout=1800)


def where_the_course_is(venv: Path, cwd: Path) -> tuple[Path, Path]:
    """Where ``venv`` imports posenc from, and where its posenc.ARENA_RESULTS points."""
    done = subprocess.run([str(venv / "bin" / "python"), "-c",
                           "import posenc, autograder.checks; print(posenc.__file__); print(posenc.ARENA_RESULTS)"],
                          cwd=cwd, capture_output=True, text=True, env=clean_env())
    assert done.returncode == 0, done.stdout + done.stderr
    module, results = done.stdout.split()
    return Path(module), Path(results)


# ---------------------------------------------------------------------------------------------------------
# A kernel stand-in for verdict.judge

class DescribesThenForges(verdict.Channel):
    """Says every name the test reads is a callable, then answers every call with ``value``."""

    def __init__(self, value):
        self.value = value

    def request(self, payload):
        request = wire.loads(payload)
        if request["op"] == "describe":
            return wire.dumps({"ok": True, "value": {n: {"kind": "callable"} for n in request["names"]}})
        return wire.dumps({"ok": True, "value": self.value})
