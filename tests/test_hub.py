"""The course's JupyterHub (hub/), used the way a class uses it: real Unix users made here, the hub started with
`make hub` as root, each person's JupyterLab started by JupyterHub's own spawner as that person, nbgrader's exchange,
and one Chromium context per person.

The instructor generates and releases chapter 2 in formgrader; two students log in and fetch it from the
Assignments tab; ada hands in the lesson untouched, then her solved notebook (the source solutions, as the
synthetic class types them), and bob a hostile notebook (the IPython payloads of tests/synthetic, which made nbgrader
score untouched stubs as passed); the due date passes between ada's last submission and bob's. The hub restarts.
The instructor collects, autogrades in formgrader (sandboxed: the course's configuration) and once more with
`python -m autograder grade` on the collected folder, grades ada's written answers by hand in formgrader, then
generates and releases feedback; each student fetches their own. Checked: the gradebook's scores (ada's latest
submission, bob 0 on every autograded cell), bob late and ada not, who sees formgrader, what a student can read
of the exchange and of the others' folders, and that the restart lost nothing. Screenshots of the students' and
the instructor's views go to _build/test-artefacts/hub/.

Done in the browser, where a person clicks: logging in, the Assignments tab (fetch, submit, fetch feedback),
formgrader (generate, release, due date, collect, autograde, manual grades, feedback). Through the student's own
server (the contents API, from their page): saving a notebook, as JupyterLab does when they save. From the
command line: `python -m autograder grade` as the instructor (what they would type in their terminal), and the
checks of permissions, run as the students.
"""

from __future__ import annotations

import ast
import contextlib
import datetime
import json
import os
import pwd
import re
import secrets
import signal
import stat
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest
from nbgrader.api import Gradebook
from playwright.sync_api import TimeoutError as PlaywrightTimeout

import synthetic
from support import ROOT, VENV_BIN, free_port, watched_context

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("hub")]

CHAPTER = "02_sinusoidal"
ARTEFACTS = ROOT / "_build" / "test-artefacts" / "hub"
HUB_CONFIG = ROOT / "hub" / "jupyterhub_config.py"
# What of the checkout the hub requires closed to students besides solutions/ (read from its configuration):
# .git, the built editions, the book's cache, the checkout's course/
INSTRUCTOR_ONLY = ast.literal_eval(re.search(r"^INSTRUCTOR_ONLY = (\{.*?^\})$", HUB_CONFIG.read_text(),
                                             re.M | re.S).group(1))
SPAWN_TIMEOUT = 180_000  # ms: a JupyterLab starting on a loaded 2-core machine
ACTION_TIMEOUT = 180_000  # ms: a formgrader button (generate, autograde: a sandboxed kernel)
NBGRADER_MATHJAX = "https://cdnjs.cloudflare.com/ajax/libs/mathjax/2.7.7/"


# ---------------------------------------------------------------------------------------------------------
# Unix accounts, made for this test and removed after it

@dataclass
class Account:
    name: str
    password: str

    @property
    def pw(self):
        return pwd.getpwnam(self.name)

    @property
    def home(self) -> Path:
        return Path(self.pw.pw_dir)


def _kill_processes_of(uids: set[int]) -> None:
    """Every process still running as one of the test's own users (servers and kernels the hub started for them)."""
    import psutil

    for proc in psutil.process_iter(["uids"]):
        try:
            if proc.info["uids"] and proc.info["uids"].real in uids:
                proc.kill()
        except psutil.Error:
            pass


@contextlib.contextmanager
def unix_users(homes: Path, names: list[str]):
    """The users, each with a private home under ``homes``; afterwards their processes, homes and groups go."""
    made = []
    try:
        for name in names:
            subprocess.run(["useradd", "--create-home", "--home-dir", str(homes / name), "--shell", "/bin/bash",
                            "--user-group", "--comment", "posenc hub test", name],
                           check=True, capture_output=True, text=True)
            made.append(name)
            os.chmod(homes / name, 0o700)
        yield
    finally:
        uids = set()
        for name in made:
            with contextlib.suppress(KeyError):
                uids.add(pwd.getpwnam(name).pw_uid)
        _kill_processes_of(uids)
        time.sleep(0.5)
        for name in made:
            subprocess.run(["userdel", "--remove", name], capture_output=True)


@contextlib.contextmanager
def closed_to_students(instructor_gid: int):
    """solutions/ readable by the instructor's group and by nobody else, and the checkout's .git, course/, built
    editions and caches closed to other users, as the hub requires (hub/README.md); the checkout's modes and
    groups are put back after, exactly."""
    saved, made = [], []
    top = [(ROOT / name, None) for name in INSTRUCTOR_ONLY if "/" not in name]  # .git, _build, caches, course/
    for folder, group in ((ROOT / "solutions", instructor_gid), *top):
        # (made now if missing, closed: another test making one meanwhile, a book build its cache or _build, would
        # stop the hub's restart)
        if not folder.exists():
            folder.mkdir(mode=0o755)
            made.append(folder)
        info = folder.stat()
        saved.append((folder, info.st_mode & 0o7777, info.st_gid))
        if group is not None:
            os.chown(folder, -1, group)
        os.chmod(folder, (info.st_mode & 0o7770) | (0o050 if group is not None else 0))
    # A checkout inside a folder other users cannot enter (a clone in `mktemp -d`, mode 700) gets only the search
    # bit for others on that folder, so that the users' servers reach the course's environment, as
    # hub/README.md asks of a real machine; put back after like the rest.
    for folder in [*reversed(ROOT.parents), ROOT]:
        info = folder.stat()
        if not info.st_mode & stat.S_IXOTH:
            saved.append((folder, info.st_mode & 0o7777, info.st_gid))
            os.chmod(folder, (info.st_mode & 0o7777) | stat.S_IXOTH)
    try:
        yield
    finally:
        for folder, mode, gid in reversed(saved):
            os.chown(folder, -1, gid)
            os.chmod(folder, mode)
        for folder in made:
            with contextlib.suppress(OSError):  # (filled meanwhile, by a build or another test: then it stays)
                folder.rmdir()


# ---------------------------------------------------------------------------------------------------------
# The hub, started and stopped as `make hub`

def _closed_ancestor(path: Path) -> Path | None:
    """The first folder on the way to path that other users cannot enter, if any."""
    return next((part for part in [*reversed(path.parents), path] if not part.stat().st_mode & stat.S_IXOTH), None)


# Run in a mount namespace of the hub's own where the folder that closes the interpreter off (pyenv in /root, on the
# project's machines) is an empty tmpfs holding only a read-only view of the interpreter's installation: every user
# can then run the virtualenv's Python, as hub/README.md requires of a real machine, and root's home stays hidden.
# Arguments: the installation, a staging folder, the closed folder, then the command.
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
    """`make hub` started and stopped as a person would, and commands run as its users."""

    def __init__(self, env: dict, log: Path, stage: Path):
        self.env, self.log, self.stage, self.proc = env, log, stage, None
        self.url = f"http://127.0.0.1:{env['POSENC_HUB_PORT']}"
        self.python = Path(sys.base_prefix).resolve()
        self.closed = _closed_ancestor(self.python)

    def command(self) -> list[str]:
        make = ["make", "-s", "--no-print-directory", "hub"]
        if self.closed is None:
            return make
        self.stage.mkdir(exist_ok=True)
        return ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c", INTERPRETER_VIEW, "sh",
                str(self.python), str(self.stage), str(self.closed), *make]

    def run_as(self, account: Account, *cmd: str, env: dict | None = None,
               timeout: float = 600) -> subprocess.CompletedProcess:
        """A command run as the account (its uid, gid and groups), in its home, with a plain environment, in the
        hub's view of the file system."""
        user = account.pw
        environ = {"PATH": f"{VENV_BIN}:/usr/bin:/bin", "HOME": user.pw_dir, "USER": user.pw_name,
                   "LANG": "C.UTF-8", **(env or {})}
        enter = [] if self.closed is None else ["nsenter", f"--target={self.proc.pid}", "--mount", "--"]
        return subprocess.run([*enter, "setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}",
                               "--init-groups", "--", *cmd], cwd=user.pw_dir, env=environ, capture_output=True,
                              text=True, timeout=timeout)

    def as_root(self, *cmd: str, timeout: float = 120) -> subprocess.CompletedProcess:
        """A command run as root in the hub's view of the file system (where the students' drawers are mounted)."""
        enter = [] if self.closed is None else ["nsenter", f"--target={self.proc.pid}", "--mount", "--"]
        return subprocess.run([*enter, *cmd], capture_output=True, text=True, timeout=timeout)

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def start(self, timeout: float = 120) -> None:
        """Start the hub; return once it runs, its proxy routing to the users' servers that survived a restart."""
        started = self.log_text().count("JupyterHub is now running")
        with open(self.log, "a") as out:
            # (SIGINT as a terminal or systemd leaves it: a test run in the background inherits it ignored, and
            # JupyterHub's stop then waits 30 s for its idle-culler service to ignore the interrupt)
            self.proc = subprocess.Popen(self.command(), cwd=ROOT, env=self.env, stdout=out,
                                         stderr=subprocess.STDOUT, start_new_session=True,
                                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                pytest.fail(f"make hub exited with {self.proc.returncode}:\n{self.log_text()[-5000:]}")
            if self.log_text().count("JupyterHub is now running") > started:
                with urllib.request.urlopen(self.url + "/hub/api/", timeout=5) as answer:
                    assert "version" in json.loads(answer.read())
                return
            if time.monotonic() > deadline:
                pytest.fail(f"the hub did not answer in {timeout} s:\n{self.log_text()[-5000:]}")
            time.sleep(0.3)

    def stop(self, timeout: float = 90) -> None:
        """SIGTERM to the group `make hub` started in (make passes no signal on): JupyterHub stops its proxy and
        exits; the users' servers run on (hub/jupyterhub_config.py), until the accounts' teardown ends them."""
        if self.proc is None or self.proc.poll() is not None:
            return
        os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)


@dataclass
class Class:
    hub: Hub
    instructor: Account
    ada: Account
    bob: Account
    # Students who work from a terminal (never a browser here), each attacking the exchange one way:
    mallory: Account  # hands in as ada (a folder of hers named ada+...)
    eve: Account  # hands in links to the instructor's files, and a pipe
    oscar: Account  # hands in more than the size limit, at submit and in his drawer, and fills his drawer
    carol: Account  # hands in by hand after the due date, dated before it, without submission_secret.txt
    state: Path

    @property
    def course(self) -> Path:
        return self.instructor.home / "posenc-course"

    @property
    def exchange(self) -> Path:
        return self.state / "exchange" / "posenc"


@pytest.fixture(scope="module")
def hub_class():
    if os.geteuid() != 0:
        pytest.skip("the hub runs users' servers as those users: only root can start it (CI runs as root)")
    ARTEFACTS.mkdir(parents=True, exist_ok=True)
    for old in ARTEFACTS.glob("*.png"):
        old.unlink()
    tag, shared = secrets.token_hex(2), secrets.token_hex(6)  # the students share a password, not the instructor
    instructor = Account(f"ph{tag}t", secrets.token_hex(20))
    ada, bob = Account(f"ph{tag}a", shared), Account(f"ph{tag}b", shared)
    mallory, eve, oscar, carol = (Account(f"ph{tag}{c}", shared) for c in "meoc")
    attackers = [mallory, eve, oscar, carol]
    # Homes, state and exchange in a folder every user can traverse (pytest's own temporary folder is root's alone).
    base = Path(tempfile.mkdtemp(prefix="posenc-hub-"))
    os.chmod(base, 0o755)
    (base / "home").mkdir(mode=0o755)
    try:
        with unix_users(base / "home", [a.name for a in (instructor, ada, bob, *attackers)]), \
                closed_to_students(instructor.pw.pw_gid):
            ports = [free_port() for _ in range(3)]
            env = {"PATH": f"{VENV_BIN}:/usr/bin:/bin", "HOME": str(base), "LANG": "C.UTF-8",
                   "POSENC_HUB_DIR": str(base / "state"), "POSENC_HUB_PORT": str(ports[0]),
                   "POSENC_HUB_API_PORT": str(ports[1]), "POSENC_HUB_PROXY_API_PORT": str(ports[2]),
                   "POSENC_HUB_INSTRUCTOR": instructor.name,
                   "POSENC_HUB_STUDENTS": " ".join(a.name for a in (ada, bob, *attackers)),
                   "POSENC_HUB_PASSWORD": shared, "POSENC_HUB_INSTRUCTOR_PASSWORD": instructor.password,
                   "POSENC_CELL_TIMEOUT": "30", "POSENC_HUB_DRAWER_MB": str(DRAWER_MB)}
            hub = Hub(env, ARTEFACTS / "hub.log", base / "python-view")
            hub.log.write_text("")
            hub.start()
            try:
                yield Class(hub, instructor, ada, bob, *attackers, base / "state")
            finally:
                hub.stop()
    finally:
        # the drawers, where the hub mounted them in this view (under unshare they went with the hub's view)
        mounts = [line.split()[1] for line in Path("/proc/self/mounts").read_text().splitlines()]
        for point in sorted((m for m in mounts if m.startswith(f"{base}/")), reverse=True):
            subprocess.run(["umount", "-l", point], capture_output=True)
        subprocess.run(["rm", "-rf", "--one-file-system", str(base)])


# ---------------------------------------------------------------------------------------------------------
# What a person does in their browser

def log_in(watched, hub: Hub, account: Account):
    page = watched.new_page()
    page.set_default_timeout(60_000)
    page.goto(f"{hub.url}/hub/login")
    page.fill("#username_input", account.name)
    page.fill("#password_input", account.password)
    page.click("#login_submit")
    wait_for_lab(page, account)
    return page


def wait_for_lab(page, account: Account) -> None:
    page.wait_for_url(re.compile(rf"/user/{account.name}/lab"), timeout=SPAWN_TIMEOUT, wait_until="domcontentloaded")
    page.locator("#jp-menu-panel .lm-MenuBar-itemLabel", has_text="Nbgrader").wait_for(timeout=SPAWN_TIMEOUT)


def nbgrader_menu(page) -> list[str]:
    """The commands a user can pick in JupyterLab's Nbgrader menu (the menu lists every nbgrader command; those of
    a disabled extension are not registered, so they show disabled, without a label)."""
    page.locator("#jp-menu-panel .lm-MenuBar-itemLabel", has_text="Nbgrader").click()
    items = page.locator("#jp-mainmenu-nbgrader li[data-command]")
    items.first.wait_for()
    found = [(items.nth(i).get_attribute("data-command"), items.nth(i).get_attribute("class"),
              items.nth(i).inner_text().strip()) for i in range(items.count())]
    page.keyboard.press("Escape")
    return [command for command, classes, label in found if label and "lm-mod-disabled" not in (classes or "")]


def open_assignments(page) -> None:
    """Nbgrader > Assignments. A loaded JupyterLab may still be closing the menu the previous step opened (its
    click then toggles the menu shut): the menu is opened again until the item shows, as a person would."""
    item = page.locator('#jp-mainmenu-nbgrader li[data-command="nbgrader:open-assignment-list"]')
    for _ in range(5):
        page.locator("#jp-menu-panel .lm-MenuBar-itemLabel", has_text="Nbgrader").click()
        try:
            item.wait_for(state="visible", timeout=15_000)
            break
        except PlaywrightTimeout:
            page.keyboard.press("Escape")
    item.click()
    page.locator("#released_assignments_list").wait_for()


def assignment_rows(page, kind: str, count: int):
    from playwright.sync_api import expect

    rows = page.locator(f"#{kind}_assignments_list > .list_item")
    expect(rows).to_have_count(count, timeout=60_000)
    return rows


def submissions_listed(page, count: int) -> None:
    """Wait until the Assignments tab lists this many submissions (one row each, under the assignment's row)."""
    from playwright.sync_api import expect

    expect(page.locator("#submitted_assignments_list .nested_list_item")).to_have_count(count, timeout=60_000)


def save_notebook(page, account: Account, path: str, notebook) -> None:
    """Save a notebook in the student's server through its contents API, from their page (as JupyterLab saves)."""
    status = page.evaluate(
        """async ([url, content]) => {
            const xsrf = document.cookie.split('; ').find(c => c.startsWith('_xsrf='));
            const answer = await fetch(url, {method: 'PUT', credentials: 'same-origin', headers: {
                'Content-Type': 'application/json', 'X-XSRFToken': xsrf ? xsrf.slice(6) : ''},
                body: JSON.stringify({type: 'notebook', format: 'json', content})});
            return answer.status;
        }""", [f"/user/{account.name}/api/contents/{path}", json.loads(json.dumps(notebook))])
    assert status in (200, 201), f"saving {path} as {account.name} answered {status}"


def formgrader_click(page, link, what: str) -> str:
    """Click one of formgrader's action links and wait for its result; returns the success message."""
    link.click()
    modal = page.locator("#success-modal, #error-modal")
    modal.wait_for(state="visible", timeout=ACTION_TIMEOUT)
    text = modal.inner_text()
    if page.locator("#error-modal").count():
        page.screenshot(path=str(ARTEFACTS / "formgrader_error.png"), full_page=True)
        pytest.fail(f"formgrader could not {what}:\n{text[-4000:]}")
    modal.locator(".modal-footer button").click()
    modal.wait_for(state="detached")
    return text


def assignment_row(page, name: str):
    row = page.locator("#main-table tr", has=page.locator(f"td.name a:text-is('{name}')"))
    row.wait_for()
    return row


def shot(page, name: str) -> None:
    page.screenshot(path=str(ARTEFACTS / f"{name}.png"))


@contextlib.contextmanager
def shots_on_failure(*watched):
    """Every open page's screenshot in the artefacts when the block fails."""
    try:
        yield
    except BaseException:
        for i, w in enumerate(watched):
            for j, page in enumerate(w.context.pages):
                with contextlib.suppress(Exception):
                    page.screenshot(path=str(ARTEFACTS / f"failed-{i}-{j}.png"), full_page=True)
        raise


# ---------------------------------------------------------------------------------------------------------
# What students do in a terminal, and the instructor's terminal

def nbgrader_time(when: datetime.datetime) -> str:
    return when.strftime("%Y-%m-%d %H:%M:%S.%f UTC")


def parse_time(text: str) -> datetime.datetime:
    """nbgrader's timestamp (or formgrader's due date, UTC) as a naive UTC datetime."""
    return datetime.datetime.fromisoformat(text.strip().removesuffix(" UTC").replace("T", " "))


# Run as a student, in their home: args are a JSON object {"make": [[kind, path, arg], ...]} of entries to make,
# in order (folder, file with text, sparse file of a size, symbolic link, pipe).
DRAWER_MB = 64  # each student's drawer in the test's hub (POSENC_HUB_DRAWER_MB)
FILL = r"""
import errno, json, os, sys
path, size = sys.argv[1], int(sys.argv[2])
written, error = 0, None
try:
    with open(path, "wb") as out:
        block = b"x" * (1 << 20)
        while written < size:
            written += out.write(block)
            out.flush()
        os.fsync(out.fileno())
except OSError as exc:
    error = errno.errorcode.get(exc.errno, str(exc.errno))
print(json.dumps([written, error]))
"""

MAKE_ENTRIES = r"""
import json, os, sys
for kind, path, arg in json.loads(sys.argv[1]):
    if kind == "folder":
        os.makedirs(path)
    elif kind == "text":
        with open(path, "w") as out:
            out.write(arg)
    elif kind == "sparse":
        with open(path, "wb") as out:
            out.truncate(arg)
    elif kind == "link":
        os.symlink(arg, path)
    elif kind == "pipe":
        os.mkfifo(path)
"""


LIST_INBOUND = r"""
import json, os, sys
inbound = sys.argv[1]
found = {}
for drawer in sorted(os.listdir(inbound)):
    path = os.path.join(inbound, drawer)
    found[drawer] = {"mounted": os.path.ismount(path), "owner": os.lstat(path).st_uid,
                     "entries": sorted(os.listdir(path)) if os.path.isdir(path) and not os.path.islink(path) else None}
print(json.dumps(found))
"""


def inbound_entries(cls: Class) -> dict:
    """{drawer: {"mounted", "owner", "entries"}} of inbound, as the hub sees it (the drawers are mounted there)."""
    done = cls.hub.as_root(sys.executable, "-I", "-c", LIST_INBOUND, str(cls.exchange / "inbound"))
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def submissions_in_inbound(cls: Class) -> list[str]:
    return sorted(n for d in inbound_entries(cls).values() for n in d["entries"] or [])


def make_entries(cls: Class, account: Account, entries: list) -> None:
    done = cls.hub.run_as(account, sys.executable, "-I", "-c", MAKE_ENTRIES, json.dumps(entries))
    assert done.returncode == 0, done.stderr


def attack_the_exchange(cls: Class, due: str) -> datetime.datetime:
    """Each attack on nbgrader's exchange, made the way a student can in a terminal (each student writes only in
    their own drawer, inbound/<student>, a file system of its own; hub/README.md); returns the time carol's folder
    claims."""
    inbound = cls.exchange / "inbound"
    lesson = (cls.exchange / "outbound" / CHAPTER / f"{CHAPTER}.ipynb").read_text()
    notebook = f"{CHAPTER}.ipynb"
    now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)

    def folder(account: Account, claimed: str, when: datetime.datetime, tag: str) -> Path:
        return inbound / account.name / f"{claimed}+{CHAPTER}+{nbgrader_time(when)}+{tag}"

    # mallory: a folder of hers named as ada's, newer than ada's own submissions.
    fake = folder(cls.mallory, cls.ada.name, now + datetime.timedelta(hours=1), "forged")
    make_entries(cls, cls.mallory, [["folder", str(fake), None], ["text", str(fake / notebook), lesson],
                                    ["text", str(fake / "timestamp.txt"), nbgrader_time(now)]])
    # eve: the instructor's source notebook as hers, through a link inside her folder and through the folder
    # itself being a link (collect runs as the instructor, who can read it), and a pipe (copying it would block).
    source = cls.course / "solutions" / CHAPTER
    inner, pipe = (folder(cls.eve, cls.eve.name, now + datetime.timedelta(minutes=m), t) for m, t in
                   ((2, "inner"), (1, "pipe")))
    make_entries(cls, cls.eve, [["folder", str(inner), None], ["link", str(inner / notebook), str(source / notebook)],
                                ["link", str(folder(cls.eve, cls.eve.name, now, "outer")), str(source)],
                                ["folder", str(pipe), None], ["pipe", str(pipe / notebook), None]])
    # oscar: a submission over the limit through nbgrader's own submit (refused before anything is written), then
    # a folder of 150 MB (sparse) made by hand in inbound, which made nbgrader's collect stop for everyone.
    home = cls.oscar.home / "posenc" / CHAPTER
    make_entries(cls, cls.oscar, [["folder", str(home), None], ["text", str(home / notebook), lesson],
                                  ["sparse", str(home / "data.bin"), 60 * 10**6]])
    submit = cls.hub.run_as(cls.oscar, "sh", "-c", 'cd "$HOME" && exec "$@"', "sh",  # (in his home, as a terminal)
                            str(VENV_BIN / "nbgrader"), "submit", CHAPTER, "--course", "posenc",
                            env={"JUPYTER_CONFIG_PATH": str(ROOT / "hub" / "jupyter" / "student"),
                                 "POSENC_EXCHANGE_DIR": str(cls.state / "exchange")})
    assert submit.returncode != 0 and "over the size limit" in submit.stdout + submit.stderr, (
        submit.stdout[-2000:] + submit.stderr[-2000:])
    big = folder(cls.oscar, cls.oscar.name, now, "big")
    make_entries(cls, cls.oscar, [["folder", str(big), None], ["text", str(big / notebook), lesson],
                                  ["sparse", str(big / "data.bin"), 150 * 10**6]])
    # carol: her own work, handed in by hand after the due date, in a folder whose name and timestamp.txt say an
    # hour before it, without the submission_secret.txt that nbgrader's submit writes.
    claimed = parse_time(due) - datetime.timedelta(hours=1)
    late = folder(cls.carol, cls.carol.name, claimed, "late")
    make_entries(cls, cls.carol, [["folder", str(late), None], ["text", str(late / notebook), lesson],
                                  ["text", str(late / "timestamp.txt"), nbgrader_time(claimed)]])
    assert not any(n.startswith(f"{cls.oscar.name}+") and "big" not in n for n in submissions_in_inbound(cls))
    # oscar again: 2 GB written for real into his drawer stops at the drawer's size (the kernel says the disk is
    # full), and nothing can be written in inbound itself, nor in a classmate's drawer.
    fill = cls.hub.run_as(cls.oscar, sys.executable, "-I", "-c", FILL, str(inbound / cls.oscar.name / "fill.bin"),
                          str(2 << 30))
    assert fill.returncode == 0, fill.stderr
    written, error = json.loads(fill.stdout)
    assert error == "ENOSPC" and written <= DRAWER_MB << 20, (written, error)
    for where in (inbound / "junk.bin", inbound / cls.ada.name / "junk.bin"):
        tried = cls.hub.run_as(cls.oscar, sys.executable, "-I", "-c", FILL, str(where), str(1 << 20))
        assert tried.returncode == 0 and json.loads(tried.stdout) == [0, "EACCES"], (where, tried.stdout, tried.stderr)
    # ... which costs him his own drawer only: he frees it himself (his folder, his files).
    freed = cls.hub.run_as(cls.oscar, "rm", "-f", str(inbound / cls.oscar.name / "fill.bin"))
    assert freed.returncode == 0, freed.stderr
    return claimed


def terminal_run(page, account: Account, command: str, timeout: float = 900) -> tuple[int, str]:
    """Type ``command`` in a new terminal of the user's JupyterLab (jupyter_server's terminal, over its websocket,
    from the user's page); returns its exit status and its output (kept in files of the user's home)."""
    line = (f"{command} > ~/terminal.out 2>&1; echo $? > ~/terminal.status; printf 'end%s\\n' -of-command")
    output = page.evaluate(
        """async ([base, line, timeout]) => {
            const xsrf = document.cookie.split('; ').find(c => c.startsWith('_xsrf='));
            const made = await fetch(base + 'api/terminals', {method: 'POST', credentials: 'same-origin',
                                     headers: {'X-XSRFToken': xsrf ? xsrf.slice(6) : ''}});
            const {name} = await made.json();
            const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
            return await new Promise(resolve => {
                const socket = new WebSocket(`${scheme}//${location.host}${base}terminals/websocket/${name}`);
                let seen = '';
                socket.onopen = () => socket.send(JSON.stringify(['stdin', line + '\\r']));
                socket.onmessage = event => {
                    const [kind, text] = JSON.parse(event.data);
                    if (kind === 'stdout') seen += text;
                    if (seen.includes('end-of-command')) { socket.close(); resolve(seen); }
                };
                socket.onclose = () => resolve(seen);
                setTimeout(() => { socket.close(); resolve(seen); }, timeout * 1000);
            });
        }""", [f"/user/{account.name}/", line, timeout])
    status = account.home / "terminal.status"
    assert status.exists(), f"the terminal did not run the command: {output[-2000:]}"
    return int(status.read_text()), (account.home / "terminal.out").read_text()


# ---------------------------------------------------------------------------------------------------------
# Reading the results

def gradebook(cls: Class) -> dict:
    """{student: (grades {grade_id: grade}, seconds late)} for the chapter, through nbgrader's own API."""
    out = {}
    with Gradebook(f"sqlite:///{cls.course / 'gradebook.db'}", "posenc") as gb:
        for sub in gb.find_assignment(CHAPTER).submissions:
            grades = {g.name: (float(g.score), g.needs_manual_grade) for nb in sub.notebooks for g in nb.grades}
            out[sub.student.id] = (grades, float(sub.total_seconds_late))
    return out


def feedback_pages(account: Account) -> list[Path]:
    return sorted((account.home / "posenc" / CHAPTER / "feedback").glob(f"*/{CHAPTER}.html"))


def page_total(page: Path) -> tuple[float, float]:
    found = re.search(r"Score:\s*([\d.]+)\s*/\s*([\d.]+)", page.read_text())
    assert found, f"no total in {page}"
    return float(found.group(1)), float(found.group(2))


# Put at the top of bob's first solution cell: what his kernel sees of the instructor's files while it is graded.
SANDBOX_PROBE = """import os as _os
print("sandbox probe:", _os.path.exists({gradebook!r}), _os.path.exists({solutions!r}))
"""


def probe_output(notebook: Path) -> str:
    """What SANDBOX_PROBE printed in an autograded notebook."""
    for cell in json.loads(notebook.read_text())["cells"]:
        for output in cell.get("outputs", []):
            text = "".join(output.get("text", ""))
            if "sandbox probe:" in text:
                return text[text.index("sandbox probe:"):].splitlines()[0]
    return "(no output)"


PERMISSION_PROBE = r"""
import json, os, sys
tries = {}
for label, path in json.loads(sys.argv[1]).items():
    try:
        tries[label] = sorted(os.listdir(path)) if os.path.isdir(path) else open(path, "rb").read(10).hex()
    except PermissionError:
        tries[label] = "denied"
    except FileNotFoundError:
        tries[label] = "missing"
print(json.dumps(tries))
"""


def what_can_read(hub: Hub, account: Account, paths: dict[str, Path]) -> dict:
    done = hub.run_as(account, sys.executable, "-I", "-c", PERMISSION_PROBE,
                      json.dumps({k: str(v) for k, v in paths.items()}))
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


# ---------------------------------------------------------------------------------------------------------

def test_the_hub_refuses_to_start_without_its_settings():
    """`make hub` on a machine not set up for it says what to do instead of starting half a hub."""
    env = {"PATH": f"{VENV_BIN}:/usr/bin:/bin", "HOME": tempfile.gettempdir(), "LANG": "C.UTF-8",
           "POSENC_HUB_DIR": os.path.join(tempfile.gettempdir(), "posenc-hub-never-made"),
           "POSENC_HUB_ROSTER": str(ROOT / "tests" / "hub_roster.csv")}  # (names posenc-no-such-user)
    staged = ROOT / "selfstudy"  # the self-study edition's notebooks, with the model answers, readable by all
    made = not staged.exists()
    staged.mkdir(mode=0o755, exist_ok=True)
    try:
        done = subprocess.run([str(VENV_BIN / "jupyterhub"), "-f", str(HUB_CONFIG)], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=120)
    finally:
        if made:
            with contextlib.suppress(OSError):  # (filled meanwhile by a self-study build: then it stays)
                staged.rmdir()
    assert done.returncode != 0
    message = done.stdout + done.stderr
    for expected in ("POSENC_HUB_INSTRUCTOR", "POSENC_HUB_PASSWORD", "POSENC_HUB_INSTRUCTOR_PASSWORD",
                     "there is no Unix user 'posenc-no-such-user'", f"{staged} can be read by every user",
                     f"{ROOT / '.git'} can be read by every user"):
        assert expected in message, f"{expected!r} not in the hub's refusal:\n{message[-3000:]}"
    assert not os.path.exists(env["POSENC_HUB_DIR"]), "a hub that refused to start made its folders anyway"


def test_the_roster_makes_the_class_accounts(tmp_path):
    """`python -m autograder roster` (as root) makes each missing account of nbgrader's student list as the hub
    asks (a private home, bash), leaves existing ones alone, and refuses a list with an id that is not a user name."""
    if os.geteuid() != 0:
        pytest.skip("making Unix accounts needs root")
    name = f"phr{secrets.token_hex(3)}"
    roster = tmp_path / "class.csv"
    roster.write_text(f"id,first_name,last_name,email\n{name},Ada,Lovelace,ada@example.org\n")
    homes = tmp_path / "homes"
    homes.mkdir()
    command = [str(VENV_BIN / "python"), "-m", "autograder", "roster", str(roster), "--home-base", str(homes)]
    try:
        first = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
        again = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
        user = pwd.getpwnam(name)
        assert first.returncode == 0 and f"{name}: made" in first.stdout, first.stdout + first.stderr
        assert again.returncode == 0 and f"{name}: exists" in again.stdout, again.stdout + again.stderr
        assert user.pw_shell == "/bin/bash" and user.pw_dir == str(homes / name)
        assert stat.S_IMODE((homes / name).stat().st_mode) == 0o700
    finally:
        subprocess.run(["userdel", "--remove", name], capture_output=True)
    roster.write_text("id\nRobert'); DROP\n")
    refused = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
    assert refused.returncode == 2 and "line 2" in refused.stdout and "not a Unix user name" in refused.stdout


def test_a_class_on_the_hub(hub_class, browser):
    cls = hub_class
    hub, teacher, ada, bob = cls.hub, cls.instructor, cls.ada, cls.bob
    builder = synthetic.Builder(CHAPTER)
    solved = builder.perfect(ada.name)
    probe = SANDBOX_PROBE.format(gradebook=str(cls.course / "gradebook.db"), solutions=str(ROOT / "solutions"))
    hostile = builder.payload(bob.name, "\n".join([probe, *synthetic.PAYLOADS.values()]))
    manual_ids = builder.a.written  # the written answers, graded by hand
    assignment_path = f"posenc/{CHAPTER}/{CHAPTER}.ipynb"  # where fetch puts it (Exchange.path_includes_course)
    started = time.monotonic()
    import psutil

    culler = [p for p in psutil.process_iter(["cmdline"]) if "jupyterhub_idle_culler" in (p.info["cmdline"] or [])]
    assert culler, "the hub started without its idle culler"

    with watched_context(browser) as t_ctx, watched_context(browser) as a_ctx, watched_context(browser) as b_ctx, \
            shots_on_failure(t_ctx, a_ctx, b_ctx):
        # -- The instructor: JupyterLab with formgrader; formgrader in its own tab (JupyterHub forbids frames).
        t_lab = log_in(t_ctx, hub, teacher)
        assert "nbgrader:open-formgrader" in nbgrader_menu(t_lab)
        fg = t_ctx.new_page()
        fg.set_default_timeout(60_000)
        fg.goto(f"{hub.url}/user/{teacher.name}/formgrader")
        row = assignment_row(fg, CHAPTER)
        formgrader_click(fg, row.locator("td.assign a"), f"generate {CHAPTER}")
        row = assignment_row(fg, CHAPTER)
        formgrader_click(fg, row.locator("td.release a"), f"release {CHAPTER}")
        assert (cls.exchange / "outbound" / CHAPTER / f"{CHAPTER}.ipynb").is_file()

        # -- ada: the Assignments tab, and nothing of the instructor's.
        a_lab = log_in(a_ctx, hub, ada)
        commands = nbgrader_menu(a_lab)
        assert "nbgrader:open-assignment-list" in commands
        assert not {"nbgrader:open-formgrader", "nbgrader:open-course-list"} & set(commands), commands
        refused = a_lab.request.get(f"{hub.url}/user/{ada.name}/formgrader/manage_assignments")
        assert refused.status == 404, f"a student's server serves formgrader ({refused.status})"
        open_assignments(a_lab)
        assignment_rows(a_lab, "released", 1).first.locator(".item_status button", has_text="Fetch").click()
        fetched = assignment_rows(a_lab, "fetched", 1)
        assert (ada.home / assignment_path).is_file(), "fetch did not put the chapter in ada's home"
        # She hands in the lesson as fetched, then her solved notebook: the later submission is the one graded.
        fetched.first.locator(".item_status button", has_text="Submit").click()
        submissions_listed(a_lab, 1)
        time.sleep(1.1)  # nbgrader's timestamps are to the microsecond; the two differ visibly
        save_notebook(a_lab, ada, assignment_path, solved.notebook)
        fetched.first.locator(".item_status button", has_text="Submit").click()
        submissions_listed(a_lab, 2)
        shot(a_lab, "student_assignments_submitted")

        # -- The due date passes: after ada's last submission, before bob's (formgrader's Edit dialog, UTC).
        time.sleep(1.1)
        due = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
        time.sleep(1.1)
        fg.reload()
        assignment_row(fg, CHAPTER).locator("td.edit a").click()
        dialog = fg.locator("#edit-assignment-modal")
        dialog.locator("input.modal-duedate").fill(due)
        dialog.locator("input.modal-timezone").fill("+0000")
        dialog.locator("button.save").click()
        dialog.wait_for(state="detached")

        # -- bob: fetches, hands in a hostile notebook, late.
        b_lab = log_in(b_ctx, hub, bob)
        open_assignments(b_lab)
        assignment_rows(b_lab, "released", 1).first.locator(".item_status button", has_text="Fetch").click()
        fetched = assignment_rows(b_lab, "fetched", 1)
        save_notebook(b_lab, bob, assignment_path, hostile.notebook)
        fetched.first.locator(".item_status button", has_text="Submit").click()
        submissions_listed(b_lab, 1)

        # -- What a student can reach: the released assignment, not the others' submissions, homes or grades.
        seen = what_can_read(hub, bob, {"inbound": cls.exchange / "inbound", "feedback": cls.exchange / "feedback",
                                        "outbound": cls.exchange / "outbound", "ada_home": ada.home,
                                        "course": cls.course, "solutions": ROOT / "solutions"})
        assert seen["outbound"] == [CHAPTER], seen
        for closed in ("inbound", "feedback", "ada_home", "course", "solutions"):
            assert seen[closed] == "denied", f"bob can read {closed}: {seen[closed]}"
        # ... nor the hidden tests by another path: the repository's history, the built editions, the caches.
        source = f"solutions/{CHAPTER}/{CHAPTER}.ipynb"
        shown = hub.run_as(bob, "git", "-c", "safe.directory=*", "-C", str(ROOT), "show", f"HEAD:{source}")
        assert shown.returncode != 0 and "BEGIN HIDDEN TESTS" not in shown.stdout, (
            f"bob read {source} through git: {shown.stdout[:300]}")
        others = {name: ROOT / name for name in INSTRUCTOR_ONLY}
        others.update({"git HEAD": ROOT / ".git" / "HEAD", "git objects": ROOT / ".git" / "objects"})
        seen = what_can_read(hub, bob, others)
        assert all(seen[name] in ("denied", "missing") for name in others), seen
        assert seen[".git"] == "denied", seen
        drawers = inbound_entries(cls)
        assert set(drawers) == {a.name for a in (ada, bob, cls.mallory, cls.eve, cls.oscar, cls.carol)}, drawers
        assert all(d["mounted"] for d in drawers.values()), drawers  # each a file system of its own
        assert all(d["owner"] == pwd.getpwnam(name).pw_uid for name, d in drawers.items()), drawers
        inbound = submissions_in_inbound(cls)
        assert [n.split("+")[0] for n in inbound] == sorted([ada.name, ada.name, bob.name]), inbound

        # -- The hub restarts. Users' servers run on (their open pages keep working); users, sessions (the cookie
        # secret), the exchange and the gradebook (the due date) are all still there.
        hub.stop()
        hub.start()
        assert submissions_in_inbound(cls) == inbound  # the drawers mounted again, their contents kept
        home = b_ctx.new_page()
        home.goto(f"{hub.url}/hub/home")
        assert "/hub/login" not in home.url, "bob's hub session did not survive the restart"
        home.close()
        b_lab.locator("#refresh_assignments_list").click()
        submissions_listed(b_lab, 1)
        fg.goto(f"{hub.url}/user/{teacher.name}/formgrader")
        row = assignment_row(fg, CHAPTER)
        assert due.replace("T", " ") in row.locator("td.duedate").inner_text(), "the due date was lost"

        # -- Four students attack the exchange from their terminals, after the due date.
        forged = attack_the_exchange(cls, due)

        # -- The instructor collects: the honest submissions and carol's (with the server's time), nothing of the
        # attackers', one line for each refusal; then autogrades in formgrader (the course's sandboxed autograde).
        log = formgrader_click(fg, row.locator("td.collect a"), f"collect {CHAPTER}")
        (ARTEFACTS / "collect.txt").write_text(log)
        assert sorted(p.name for p in (cls.course / "submitted").iterdir()) == sorted(
            [ada.name, bob.name, cls.carol.name]), "collect took a submission it should have refused"
        refusals = [line for line in log.splitlines() if "Refused a submission" in line]
        for who, count in ((ada.name, 1), (cls.eve.name, 3), (cls.oscar.name, 1)):
            assert sum(f"Refused a submission of {who} " in line for line in refusals) == count, log
        assert any(cls.mallory.name in line for line in refusals if f"of {ada.name} " in line), log
        assert "too big" not in log and "Traceback" not in log, log
        ada_times = sorted(parse_time(n.split("+")[2]) for n in inbound if n.startswith(f"{ada.name}+"))
        collected = parse_time((cls.course / "submitted" / ada.name / CHAPTER / "timestamp.txt").read_text())
        assert ada_times[-1] <= collected < ada_times[-1] + datetime.timedelta(seconds=60), (
            f"collected ada's submission of {collected}, not her latest {ada_times}")
        carol_time = parse_time((cls.course / "submitted" / cls.carol.name / CHAPTER / "timestamp.txt").read_text())
        assert carol_time > parse_time(due) > forged, f"carol's submission recorded at {carol_time}"
        row = assignment_row(fg, CHAPTER)
        assert row.locator("td.num-submissions").inner_text().strip() == "3"
        row.locator("td.num-submissions a").click()
        for account in (ada, bob):
            student = fg.locator("#main-table tr", has=fg.locator(f"td.student-id:text-is('{account.name}')"))
            formgrader_click(fg, student.locator("td.autograde a"), f"autograde {account.name}")
        shot(fg, "instructor_submissions_autograded")
        autograded = cls.course / "autograded" / bob.name / CHAPTER / f"{CHAPTER}.ipynb"
        assert probe_output(autograded) == "sandbox probe: False False", (
            f"bob's kernel saw the instructor's files while formgrader graded it: {probe_output(autograded)}")

        # -- The same collected folder through the course's command line, typed as the guide writes it in a
        # terminal of the instructor's JupyterLab (bash, with the course's environment on PATH).
        status, output = terminal_run(t_lab, teacher,
                                      f"python -m autograder grade ~/posenc-course/submitted --jobs 2 "
                                      f"--assignment {CHAPTER}")
        (ARTEFACTS / "grade.txt").write_text(output)
        assert status == 0, output[-3000:]
        rows = {line.split()[0]: line.split() for line in output.splitlines() if line.split()
                and line.split()[0] in (ada.name, bob.name)}
        cells = list(builder.a.points)  # the table's columns: the graded cells in the notebook's order
        automatic = sum(solved.expected[g] for g in cells if g not in manual_ids)  # the total before hand grading
        assert rows[ada.name] == [ada.name, *("-" if g in manual_ids else f"{solved.expected[g]:g}" for g in cells),
                                  f"{automatic:g}"], output
        # bob's IPython payloads reach the kernel's machinery, which the scan puts in the notes column
        assert rows[bob.name][:len(cells) + 3] == [bob.name, *["0"] * (len(cells) + 1), "SCAN"], output
        assert probe_output(autograded) == "sandbox probe: False False", probe_output(autograded)

        # -- Manual grades for ada's written answers, typed in formgrader's grading page.
        submissions = fg.request.get(
            f"{hub.url}/user/{teacher.name}/formgrader/api/submitted_notebooks/{CHAPTER}/{CHAPTER}").json()
        ada_notebook = next(s for s in submissions if s["student"] == ada.name)
        fg.goto(f"{hub.url}/user/{teacher.name}/formgrader/submissions/{ada_notebook['id']}/?index=0")
        # every other written answer gets "Full credit" (None), the others 1 point typed in the box
        manual = {g: None if i % 2 == 0 else "1" for i, g in enumerate(manual_ids)}
        for grade_id in manual:  # the page's grading boxes are ready once they show what waits for a grade
            fg.locator(f"input.score.needs_manual_grade#{grade_id}").wait_for()
        for grade_id, points in manual.items():
            cell = fg.locator(".nbgrader_cell", has=fg.locator(f"input.score#{grade_id}"))
            if points is None:
                cell.locator("button.full-credit").click()
            else:
                cell.locator(f"input.score#{grade_id}").fill(points)
                cell.locator(f"input.score#{grade_id}").press("Tab")
            fg.locator(f"input.score#{grade_id}:not(.needs_manual_grade)").wait_for()
        deadline = time.monotonic() + 30
        while any(gradebook(cls)[ada.name][0][g][1] for g in manual) and time.monotonic() < deadline:
            time.sleep(0.3)
        fg.locator(f"input.score#{manual_ids[0]}").scroll_into_view_if_needed()
        shot(fg, "instructor_manual_grading")

        # -- Feedback: generated and released in formgrader, fetched by each student from the Assignments tab.
        fg.goto(f"{hub.url}/user/{teacher.name}/formgrader")
        formgrader_click(fg, assignment_row(fg, CHAPTER).locator("td.generate-feedback a"), "generate feedback")
        log = formgrader_click(fg, assignment_row(fg, CHAPTER).locator("td.release-feedback a"),
                               "release feedback")
        assert f"Feedback not released for {cls.carol.name} " in log, log  # her folder has no submission secret
        shot(fg, "instructor_formgrader_assignments")
        released = sorted(p.name for p in (cls.exchange / "feedback").iterdir())
        assert len(released) == 2 and not any(a.name in n for a in (ada, bob) for n in released), released
        for account, lab in ((ada, a_lab), (bob, b_lab)):
            lab.locator("#refresh_assignments_list").click()
            lab.locator("#submitted_assignments_list .item_status button", has_text="Fetch Feedback").first.click()
            lab.locator("#submitted_assignments_list", has_text="view feedback").wait_for(timeout=60_000)
        shot(a_lab, "student_feedback_fetched")
        (ada_page,) = feedback_pages(ada)
        feedback = a_ctx.new_page()
        feedback.goto(f"{hub.url}/user/{ada.name}/files/"
                      + urllib.parse.quote(str(ada_page.relative_to(ada.home))))
        feedback.get_by_text("Score:").first.wait_for()
        shot(feedback, "student_feedback_page")
        # Nothing leaves the machine but nbgrader's own MathJax 2.7 (formgrader's grading page and the feedback
        # pages load it from cdnjs: offline, their formulas stay TeX).
        outside = [url for url in t_ctx.outside + a_ctx.outside + b_ctx.outside
                   if not url.startswith(NBGRADER_MATHJAX)]
        assert not outside, f"the hub's pages requested addresses off this machine: {outside}"

    # -- The gradebook: ada's latest submission, graded; bob 0 on every autograded cell, and late.
    book = gradebook(cls)
    assert set(book) == {ada.name, bob.name, cls.carol.name}, book
    assert book[cls.carol.name][1] > 0, "carol's forged time was believed"
    ada_grades, ada_late = book[ada.name]
    bob_grades, bob_late = book[bob.name]
    for grade_id, want in solved.expected.items():
        if grade_id in manual:
            continue
        assert ada_grades[grade_id][0] == want, f"ada {grade_id}: {ada_grades[grade_id]} != {want}"
    given = {g: builder.a.points[g] if typed is None else float(typed) for g, typed in manual.items()}
    assert {g: ada_grades[g][0] for g in manual} == given, ada_grades
    for grade_id, want in hostile.expected.items():
        assert want == 0.0 and bob_grades[grade_id][0] == 0.0, f"bob {grade_id}: {bob_grades[grade_id]}"
    assert ada_late == 0 and bob_late > 0, (ada_late, bob_late)
    ada_total = sum(score for score, _ in ada_grades.values())
    assert ada_total == automatic + sum(given.values())

    # -- Each student has their own feedback, and only theirs.
    (ada_page,), (bob_page,) = feedback_pages(ada), feedback_pages(bob)
    possible = float(sum(builder.a.points.values()))
    assert page_total(ada_page) == (ada_total, possible)
    assert page_total(bob_page) == (0.0, possible)
    assert ada_page.stat().st_uid == ada.pw.pw_uid and bob_page.stat().st_uid == bob.pw.pw_uid
    elapsed = time.monotonic() - started
    (ARTEFACTS / "timing.txt").write_text(f"the class on the hub took {elapsed:.0f} s\n")
