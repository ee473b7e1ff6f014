"""The course's JupyterHub (hub/) started as `make hub` starts it, with real Unix users made for the occasion and
removed after, for a script a person runs as root (tools/hub_capacity.py). Nothing here imports the tests; the
same steps are what tests/test_hub.py does with its own copies.

- ``unix_users(homes, names)``: the users, each with a private home; afterwards their processes, homes and groups
  go, even when the body failed.
- ``closed_to_students(instructor_gid)``: ``solutions/`` readable by the instructor's group only (its files by the
  instructor), and the
  checkout's other copies of the hidden tests (``INSTRUCTOR_ONLY`` in hub/jupyterhub_config.py) closed to other
  users, as the hub requires; every mode and group put back after, exactly.
- ``Hub(env, log, stage)``: `make hub` started (``start``) and stopped (``stop``) as a person would; when the
  virtualenv's interpreter sits in a folder other users cannot enter (pyenv in root's home), the hub runs in a
  mount namespace of its own where that folder holds only a read-only view of the interpreter.
"""

from __future__ import annotations

import ast
import contextlib
import json
import os
import pwd
import re
import signal
import socket
import stat
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV_BIN = Path(sys.executable).parent
HUB_CONFIG = ROOT / "hub" / "jupyterhub_config.py"
# What of the checkout the hub requires closed to students besides solutions/ (read from its configuration)
INSTRUCTOR_ONLY = ast.literal_eval(re.search(r"^INSTRUCTOR_ONLY = (\{.*?^\})$", HUB_CONFIG.read_text(),
                                             re.M | re.S).group(1))


class HubError(RuntimeError):
    """The hub did not start or answer; the message ends with its log's tail."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def processes_of(uids: set[int]):
    """The running processes whose real uid is one of ``uids``."""
    import psutil

    for proc in psutil.process_iter(["uids"]):
        try:
            if proc.info["uids"] and proc.info["uids"].real in uids:
                yield proc
        except psutil.Error:
            pass


def kill_processes_of(uids: set[int]) -> None:
    import psutil

    for proc in processes_of(uids):
        with contextlib.suppress(psutil.Error):
            proc.kill()


@contextlib.contextmanager
def unix_users(homes: Path, names: list[str], comment: str = "posenc hub"):
    """The users, each with a private home under ``homes``; afterwards their processes, homes and groups go."""
    made = []
    try:
        for name in names:
            subprocess.run(["useradd", "--create-home", "--home-dir", str(homes / name), "--shell", "/bin/bash",
                            "--user-group", "--comment", comment, name], check=True, capture_output=True, text=True)
            made.append(name)
            os.chmod(homes / name, 0o700)
        yield
    finally:
        uids = set()
        for name in made:
            with contextlib.suppress(KeyError):
                uids.add(pwd.getpwnam(name).pw_uid)
        kill_processes_of(uids)
        time.sleep(0.5)
        kill_processes_of(uids)  # (a server that forked while the first round ran)
        for name in made:
            subprocess.run(["userdel", "--remove", name], capture_output=True)


@contextlib.contextmanager
def closed_to_students(instructor_gid: int):
    """solutions/ readable by the instructor's group and by nobody else, and the checkout's .git, course/, built
    editions and caches closed to other users, as the hub requires (hub/README.md); modes and groups put back."""
    saved, made = [], []
    top = [(ROOT / name, None) for name in INSTRUCTOR_ONLY if "/" not in name]
    for folder, group in ((ROOT / "solutions", instructor_gid), *top):
        if not folder.exists():
            folder.mkdir(mode=0o755)
            made.append(folder)
        info = folder.stat()
        saved.append((folder, info.st_mode & 0o7777, info.st_gid))
        if group is not None:
            os.chown(folder, -1, group)
        os.chmod(folder, (info.st_mode & 0o7770) | (0o050 if group is not None else 0))
    # A checkout inside a folder other users cannot enter gets only the search bit for others on that folder, so
    # that the users' servers reach the course's environment; put back after like the rest.
    for folder in [*reversed(ROOT.parents), ROOT]:
        info = folder.stat()
        if not info.st_mode & stat.S_IXOTH:
            saved.append((folder, info.st_mode & 0o7777, info.st_gid))
            os.chmod(folder, (info.st_mode & 0o7777) | stat.S_IXOTH)
    # Files in solutions/ written private (mode 600, e.g. a source notebook regenerated from its markdown) opened to
    # the instructor as the hub asks (`chmod -R a+rX solutions`: the folder itself stays closed to students).
    for path in sorted((ROOT / "solutions").rglob("*")):
        info = path.lstat()
        want = stat.S_IROTH | (stat.S_IXOTH if stat.S_ISDIR(info.st_mode) else 0)
        if not stat.S_ISLNK(info.st_mode) and (info.st_mode & want) != want:
            saved.append((path, info.st_mode & 0o7777, info.st_gid))
            os.chmod(path, (info.st_mode & 0o7777) | want)
    try:
        yield
    finally:
        for folder, mode, gid in reversed(saved):
            with contextlib.suppress(FileNotFoundError):  # (a file removed meanwhile by whoever made it)
                os.chown(folder, -1, gid)
                os.chmod(folder, mode)
        for folder in made:
            with contextlib.suppress(OSError):
                folder.rmdir()


def closed_ancestor(path: Path) -> Path | None:
    """The first folder on the way to path that other users cannot enter, if any."""
    return next((part for part in [*reversed(path.parents), path] if not part.stat().st_mode & stat.S_IXOTH), None)


# Arguments: the interpreter's installation, a staging folder, the closed folder, then the command.
INTERPRETER_VIEW = """set -e
mount --bind "$1" "$2"
mount -t tmpfs -o mode=0755,size=1m tmpfs "$3"
mkdir -p "$1"
mount --bind "$2" "$1"
mount -o remount,bind,ro "$1"
shift 3
exec "$@"
"""


class Hub:
    """`make hub` started and stopped as a person would."""

    def __init__(self, env: dict, log: Path, stage: Path):
        self.env, self.log, self.stage, self.proc = env, log, stage, None
        self.url = f"http://127.0.0.1:{env['POSENC_HUB_PORT']}"
        self.python = Path(sys.base_prefix).resolve()
        self.closed = closed_ancestor(self.python)

    def command(self) -> list[str]:
        make = ["make", "-s", "--no-print-directory", "hub"]
        if self.closed is None:
            return make
        self.stage.mkdir(exist_ok=True)
        return ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c", INTERPRETER_VIEW, "sh",
                str(self.python), str(self.stage), str(self.closed), *make]

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def start(self, timeout: float = 120) -> None:
        started = self.log_text().count("JupyterHub is now running")
        with open(self.log, "a") as out:
            self.proc = subprocess.Popen(self.command(), cwd=ROOT, env=self.env, stdout=out,
                                         stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise HubError(f"make hub exited with {self.proc.returncode}:\n{self.log_text()[-5000:]}")
            if self.log_text().count("JupyterHub is now running") > started:
                with urllib.request.urlopen(self.url + "/hub/api/", timeout=5) as answer:
                    assert "version" in json.loads(answer.read())
                return
            if time.monotonic() > deadline:
                raise HubError(f"the hub did not answer in {timeout} s:\n{self.log_text()[-5000:]}")
            time.sleep(0.3)

    def stop(self, timeout: float = 90) -> None:
        """SIGTERM to the group `make hub` started in: JupyterHub stops its proxy and exits (the users' servers run
        on until their users' processes are ended)."""
        if self.proc is None or self.proc.poll() is not None:
            return
        os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)
