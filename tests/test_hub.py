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

import synthetic
from support import ROOT, VENV_BIN, free_port, watched_context

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("hub")]

CHAPTER = "02_sinusoidal"
ARTEFACTS = ROOT / "_build" / "test-artefacts" / "hub"
HUB_CONFIG = ROOT / "hub" / "jupyterhub_config.py"
# The folders the hub requires closed to students besides solutions/ and course/ (read from its configuration)
ANSWER_EDITIONS = ast.literal_eval(re.search(r"^ANSWER_EDITIONS = (.*)$", HUB_CONFIG.read_text(), re.M).group(1))
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
    """solutions/ readable by the instructor's group and by nobody else, and the checkout's course/ and the
    editions built with the model answers closed to other users, as the hub requires (hub/README.md); the
    checkout's modes and groups are put back after."""
    saved = []
    editions = [(ROOT / edition, None) for edition in ANSWER_EDITIONS if (ROOT / edition).exists()]
    for folder, group in ((ROOT / "solutions", instructor_gid), (ROOT / "course", None), *editions):
        # (course/ made now if missing, closed: another test making it meanwhile would stop the hub's restart)
        folder.mkdir(mode=0o755, exist_ok=True)
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

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def start(self, timeout: float = 120) -> None:
        """Start the hub; return once it runs, its proxy routing to the users' servers that survived a restart."""
        started = self.log_text().count("JupyterHub is now running")
        with open(self.log, "a") as out:
            self.proc = subprocess.Popen(self.command(), cwd=ROOT, env=self.env, stdout=out,
                                         stderr=subprocess.STDOUT, start_new_session=True)
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
    # Homes, state and exchange in a folder every user can traverse (pytest's own temporary folder is root's alone).
    base = Path(tempfile.mkdtemp(prefix="posenc-hub-"))
    os.chmod(base, 0o755)
    (base / "home").mkdir(mode=0o755)
    try:
        with unix_users(base / "home", [instructor.name, ada.name, bob.name]), \
                closed_to_students(instructor.pw.pw_gid):
            ports = [free_port() for _ in range(3)]
            env = {"PATH": f"{VENV_BIN}:/usr/bin:/bin", "HOME": str(base), "LANG": "C.UTF-8",
                   "POSENC_HUB_DIR": str(base / "state"), "POSENC_HUB_PORT": str(ports[0]),
                   "POSENC_HUB_API_PORT": str(ports[1]), "POSENC_HUB_PROXY_API_PORT": str(ports[2]),
                   "POSENC_HUB_INSTRUCTOR": instructor.name, "POSENC_HUB_STUDENTS": f"{ada.name} {bob.name}",
                   "POSENC_HUB_PASSWORD": shared, "POSENC_HUB_INSTRUCTOR_PASSWORD": instructor.password,
                   "POSENC_CELL_TIMEOUT": "30"}
            hub = Hub(env, ARTEFACTS / "hub.log", base / "python-view")
            hub.log.write_text("")
            hub.start()
            try:
                yield Class(hub, instructor, ada, bob, base / "state")
            finally:
                hub.stop()
    finally:
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
    page.locator("#jp-menu-panel .lm-MenuBar-itemLabel", has_text="Nbgrader").click()
    page.locator('#jp-mainmenu-nbgrader li[data-command="nbgrader:open-assignment-list"]').click()
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
           "POSENC_HUB_STUDENTS": "posenc-no-such-user"}
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
                     "there is no Unix user 'posenc-no-such-user'", f"{staged} can be read by every user"):
        assert expected in message, f"{expected!r} not in the hub's refusal:\n{message[-3000:]}"
    assert not os.path.exists(env["POSENC_HUB_DIR"]), "a hub that refused to start made its folders anyway"


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
        inbound = sorted(p.name for p in (cls.exchange / "inbound").iterdir())
        assert [n.split("+")[0] for n in inbound] == sorted([ada.name, ada.name, bob.name]), inbound

        # -- The hub restarts. Users' servers run on (their open pages keep working); users, sessions (the cookie
        # secret), the exchange and the gradebook (the due date) are all still there.
        hub.stop()
        hub.start()
        assert sorted(p.name for p in (cls.exchange / "inbound").iterdir()) == inbound
        home = b_ctx.new_page()
        home.goto(f"{hub.url}/hub/home")
        assert "/hub/login" not in home.url, "bob's hub session did not survive the restart"
        home.close()
        b_lab.locator("#refresh_assignments_list").click()
        submissions_listed(b_lab, 1)
        fg.goto(f"{hub.url}/user/{teacher.name}/formgrader")
        row = assignment_row(fg, CHAPTER)
        assert due.replace("T", " ") in row.locator("td.duedate").inner_text(), "the due date was lost"

        # -- The instructor collects, and autogrades in formgrader (the course's sandboxed autograde).
        formgrader_click(fg, row.locator("td.collect a"), f"collect {CHAPTER}")
        ada_times = sorted(n.split("+")[2] for n in inbound if n.startswith(f"{ada.name}+"))
        collected = (cls.course / "submitted" / ada.name / CHAPTER / "timestamp.txt").read_text().strip()
        assert collected == ada_times[-1], f"collected ada's submission of {collected}, not her latest {ada_times}"
        row = assignment_row(fg, CHAPTER)
        assert row.locator("td.num-submissions").inner_text().strip() == "2"
        row.locator("td.num-submissions a").click()
        for account in (ada, bob):
            student = fg.locator("#main-table tr", has=fg.locator(f"td.student-id:text-is('{account.name}')"))
            formgrader_click(fg, student.locator("td.autograde a"), f"autograde {account.name}")
        shot(fg, "instructor_submissions_autograded")
        autograded = cls.course / "autograded" / bob.name / CHAPTER / f"{CHAPTER}.ipynb"
        assert probe_output(autograded) == "sandbox probe: False False", (
            f"bob's kernel saw the instructor's files while formgrader graded it: {probe_output(autograded)}")

        # -- The same collected folder through the course's command line, as the instructor in a terminal.
        grade = hub.run_as(teacher, str(VENV_BIN / "python"), "-m", "autograder", "grade",
                           str(cls.course / "submitted"), "--assignment", CHAPTER,
                           env={"POSENC_COURSE_DIR": str(cls.course), "POSENC_CELL_TIMEOUT": "30",
                                "JUPYTER_CONFIG_PATH": str(ROOT / "hub" / "jupyter" / "instructor"),
                                "POSENC_EXCHANGE_DIR": str(cls.state / "exchange")})
        (ARTEFACTS / "grade.txt").write_text(grade.stdout + grade.stderr)
        assert grade.returncode == 0, grade.stdout[-3000:] + grade.stderr[-3000:]
        rows = {line.split()[0]: line.split() for line in grade.stdout.splitlines() if line.split()
                and line.split()[0] in (ada.name, bob.name)}
        cells = list(builder.a.points)  # the table's columns: the graded cells in the notebook's order
        assert rows[ada.name] == [ada.name, *("-" if g in manual_ids else f"{solved.expected[g]:g}" for g in cells),
                                  "8"], grade.stdout
        assert rows[bob.name][:len(cells) + 3] == [bob.name, *["0"] * (len(cells) + 1), "REVIEW"], grade.stdout
        assert probe_output(autograded) == "sandbox probe: False False", probe_output(autograded)

        # -- Manual grades for ada's written answers, typed in formgrader's grading page.
        submissions = fg.request.get(
            f"{hub.url}/user/{teacher.name}/formgrader/api/submitted_notebooks/{CHAPTER}/{CHAPTER}").json()
        ada_notebook = next(s for s in submissions if s["student"] == ada.name)
        fg.goto(f"{hub.url}/user/{teacher.name}/formgrader/submissions/{ada_notebook['id']}/?index=0")
        manual = {"shift_proof": None, "relative_matrices": "2", "beyond_prediction": None}  # None: "Full credit"
        assert set(manual) == set(manual_ids)
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
        fg.locator("input.score#shift_proof").scroll_into_view_if_needed()
        shot(fg, "instructor_manual_grading")

        # -- Feedback: generated and released in formgrader, fetched by each student from the Assignments tab.
        fg.goto(f"{hub.url}/user/{teacher.name}/formgrader")
        formgrader_click(fg, assignment_row(fg, CHAPTER).locator("td.generate-feedback a"), "generate feedback")
        formgrader_click(fg, assignment_row(fg, CHAPTER).locator("td.release-feedback a"), "release feedback")
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
    assert set(book) == {ada.name, bob.name}, book
    ada_grades, ada_late = book[ada.name]
    bob_grades, bob_late = book[bob.name]
    for grade_id, want in solved.expected.items():
        if grade_id in manual:
            continue
        assert ada_grades[grade_id][0] == want, f"ada {grade_id}: {ada_grades[grade_id]} != {want}"
    assert [ada_grades[g][0] for g in manual] == [3.0, 2.0, 1.0], ada_grades
    for grade_id, want in hostile.expected.items():
        assert want == 0.0 and bob_grades[grade_id][0] == 0.0, f"bob {grade_id}: {bob_grades[grade_id]}"
    assert ada_late == 0 and bob_late > 0, (ada_late, bob_late)
    ada_total = sum(score for score, _ in ada_grades.values())
    assert ada_total == 8 + 3 + 2 + 1

    # -- Each student has their own feedback, and only theirs.
    (ada_page,), (bob_page,) = feedback_pages(ada), feedback_pages(bob)
    assert page_total(ada_page) == (ada_total, 15.0)
    assert page_total(bob_page) == (0.0, 15.0)
    assert ada_page.stat().st_uid == ada.pw.pw_uid and bob_page.stat().st_uid == bob.pw.pw_uid
    elapsed = time.monotonic() - started
    (ARTEFACTS / "timing.txt").write_text(f"the class on the hub took {elapsed:.0f} s\n")
