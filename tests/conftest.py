"""Shared fixtures: the strictly built book (built once per test session, on one xdist worker)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def built_book(tmp_path_factory):
    """Build the whole book strictly (warnings are errors, a failing cell fails) re-reading every page.

    Returns (html_dir, build_log). Tests that use it carry @pytest.mark.xdist_group("book") so that one
    worker builds it once."""
    if os.environ.get("POSENC_BOOK_HTML"):  # reuse a book built earlier (quick reruns of the browser tests)
        html = Path(os.environ["POSENC_BOOK_HTML"]).resolve()
        return html, (html.parent.parent / "build.log").read_text() if (html.parent.parent / "build.log").exists() else ""
    out = tmp_path_factory.mktemp("book")
    jb = Path(sys.executable).with_name("jupyter-book")
    result = subprocess.run([str(jb), "build", str(ROOT), "--path-output", str(out), "--all",
                             "--warningiserror", "--nitpick", "--keep-going"],
                            capture_output=True, text=True, cwd=ROOT)
    log = result.stdout + result.stderr
    if result.returncode != 0:
        pytest.fail(f"the strict book build failed:\n{log[-6000:]}")
    return out / "_build" / "html", log


# ---------------------------------------------------------------------------------------------------------
# Live servers and the browser (tests/test_browser.py, test_lab.py, test_formgrader.py)

import contextlib  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import secrets  # noqa: E402
import signal  # noqa: E402
import socket  # noqa: E402
import time  # noqa: E402
import urllib.error  # noqa: E402
import urllib.request  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run",
                 "--disable-dev-shm-usage"]
SCREENSHOTS = ROOT / "_build" / "screenshots"
VENV_BIN = Path(sys.executable).parent
TOC = Path(os.environ.get("POSENC_TOC", ROOT / "_toc.yml"))  # another TOC for checks of a partial book


def toc_chapters() -> list[str]:
    """The chapters of _toc.yml, as lessons/<ch>/<ch> page names."""
    import yaml

    toc = yaml.safe_load(TOC.read_text())
    entries = list(toc.get("chapters", []))
    for part in toc.get("parts", []):
        entries += part.get("chapters", [])
    return [e["file"] for e in entries if e.get("file", "").startswith("lessons/")]


def is_local(url: str) -> bool:
    """A request that stays on this machine."""
    from urllib.parse import urlsplit

    if url.startswith(("file:", "data:", "blob:", "about:")):
        return True
    return urlsplit(url).hostname in ("localhost", "127.0.0.1", "::1")


@pytest.fixture(scope="session")
def browser():
    """Debian's Chromium driven by Playwright (which never downloads a browser of its own)."""
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: install Debian's chromium (.ci/run does)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


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


def submit(folder: Path, student: str, name: str, text: str | None = None, filename: str | None = None) -> Path:
    """Hand in ``<folder>/<student>/<name>/<filename or name.ipynb>``: the lesson untouched, or ``text``."""
    import nbformat

    from autograder import synthetic

    path = folder / student / name / (filename or f"{name}.ipynb")
    path.parent.mkdir(parents=True, exist_ok=True)
    if text is None:
        nbformat.write(synthetic.Builder(name).blank().notebook, path)
    else:
        path.write_text(text)
    return path


def write_course_config(root: Path) -> None:
    """A root nbgrader_config.py that loads the course's configuration with the course moved to ``root``."""
    (root / "nbgrader_config.py").write_text(
        f'load_subconfig({str(ROOT / "autograder" / "nbgrader_config.py")!r})  # noqa: F821\n'
        f'c = get_config()  # noqa: F821\n'
        f'c.CourseDirectory.root = {str(root)!r}\n')
