"""The course's JupyterHub on one machine (hub/README.md has the walk-through).

`sudo make hub` starts it: JupyterHub from the project's virtualenv, its proxy (configurable-http-proxy, from
node_modules/, `make assets`), and for each user who logs in a JupyterLab started as that Unix user
(JupyterHub's LocalProcessSpawner) with the course's environment as its kernel (posenc importable). One
instructor, whose server has nbgrader's formgrader and whose course folder (gradebook, submissions, feedback) is
`~/posenc-course`, private to them; students, whose servers have only the Assignments tab (fetch, validate,
submit, fetch feedback). Assignments and submissions travel through nbgrader's exchange, a folder of this
machine shared by everyone with the permissions nbgrader expects. Grading runs each submission in the
bubblewrap sandbox, as everywhere in the course.

Settings are environment variables (the README's table), so that `make hub` needs no edited copy of this file:
POSENC_HUB_INSTRUCTOR and POSENC_HUB_STUDENTS name the accounts (existing Unix users); POSENC_HUB_DIR holds the
hub's state and the exchange; with the default authenticator (a shared password, for a demo),
POSENC_HUB_PASSWORD is the students' password and POSENC_HUB_INSTRUCTOR_PASSWORD the instructor's.

Before starting, the configuration checks what would otherwise leak answers or fail later, and refuses to
start with one line per problem: the hub must run as root; the accounts must exist with private homes; the
students must not be able to read solutions/ (the hidden tests) or the checkout's course/ folder, and the
instructor must; every user must be able to reach the checkout, the virtualenv, the interpreter behind it and
the exchange; nobody but root (and the instructor, for the course's folder) may own the hub's folders.
"""

import grp
import os
import pwd
import shutil
import stat
import subprocess
import sys
from pathlib import Path

c = get_config()  # noqa: F821 (provided by traitlets when JupyterHub loads this file)

HUB = Path(__file__).resolve().parent
ROOT = HUB.parent
# What of the checkout holds the hidden tests or model answers besides solutions/, and must be closed to students
# (`sudo chmod o-rwx` on each; the instructor's server reads none of them). Checked as far as a student can reach:
# closing _build closes the editions built inside it.
INSTRUCTOR_ONLY = {
    ".git": "the repository's history, solutions/ included (`git show HEAD:solutions/...`)",
    ".jupyter_cache": "the book's execution cache, which the instructor edition fills with executed solutions",
    "_build": "the built books, the instructor and self-study editions with the model answers among them",
    "_build/instructor": "the instructor edition, built with the model answers (make book-instructor)",
    "_build/selfstudy": "the self-study edition, built with the model answers (make book-selfstudy)",
    "selfstudy": "the self-study edition's staged notebooks, with the model answers (make book-selfstudy)",
    "course": "a local gradebook, which stores the source cells too",
}
BIN = Path(sys.prefix) / "bin"  # the virtualenv JupyterHub runs from: its jupyterhub-singleuser and kernel
COURSE_ID = "posenc"  # autograder/nbgrader_config.py's CourseDirectory.course_id
PROXY = ROOT / "node_modules" / ".bin" / "configurable-http-proxy"

STATE = Path(os.environ.get("POSENC_HUB_DIR", "/srv/posenc-hub")).absolute()
PRIVATE = STATE / "hub"          # JupyterHub's database, cookie secret and pid files: root only
EXCHANGE = STATE / "exchange"    # nbgrader's exchange: everyone
IP = os.environ.get("POSENC_HUB_IP", "127.0.0.1")
PORT = int(os.environ.get("POSENC_HUB_PORT", "8000"))
HUB_API_PORT = int(os.environ.get("POSENC_HUB_API_PORT", "8081"))
PROXY_API_PORT = int(os.environ.get("POSENC_HUB_PROXY_API_PORT", "8001"))
INSTRUCTOR = os.environ.get("POSENC_HUB_INSTRUCTOR", "").strip()
ROSTER = os.environ.get("POSENC_HUB_ROSTER", "").strip()  # nbgrader's student CSV (`python -m autograder roster`)


def _roster() -> list[str]:
    if not ROSTER:
        return []
    from autograder.commands.roster import read

    try:
        return read(ROSTER)
    except (OSError, ValueError) as exc:
        sys.exit(f"The course's JupyterHub cannot start here (hub/README.md):\n  - POSENC_HUB_ROSTER: {exc}")


STUDENTS = sorted((set(os.environ.get("POSENC_HUB_STUDENTS", "").split()) | set(_roster())) - {INSTRUCTOR})
AUTH = os.environ.get("POSENC_HUB_AUTH", "shared-password")
# Grading settings the instructor's server takes from the hub's environment when they are set there.
INSTRUCTOR_PASSES = ("POSENC_CELL_TIMEOUT", "POSENC_NOTEBOOK_TIMEOUT", "POSENC_DB_URL")

# nbgrader's exchange, with the modes nbgrader itself gives these folders (nbgrader/exchange/default/*.py): the
# root writable by all (sticky here, so that nobody can rename or remove another's entry); the course folder and
# `outbound` (released assignments) readable by all, written by the instructor; `inbound` (submissions)
# writable and enterable but not listable by students, each submission in a folder named with a random part;
# `feedback` enterable only, each page named by a hash of a secret that only its student's submission holds.
EXCHANGE_MODES = {"": 0o755, "inbound": 0o2733, "outbound": 0o755, "feedback": 0o711}
# Each student's drawer: inbound/<student>, a file system of its own (an ext4 image of DRAWER_MB megabytes in the
# hub's private folder, loop-mounted there), owned by the student, readable by the instructor. What one student
# writes into the exchange is then bounded by the kernel (this kernel has no disk quotas to do it otherwise), and
# inbound itself is closed to students' writes. DRAWER_MB = 0 leaves nbgrader's open inbound (a student can then
# fill the exchange's disk).
DRAWER_MB = int(os.environ.get("POSENC_HUB_DRAWER_MB", "200"))
DRAWERS = PRIVATE / "drawers"
if DRAWER_MB:
    EXCHANGE_MODES["inbound"] = 0o711


def _user(name):
    try:
        return pwd.getpwnam(name)
    except KeyError:
        return None


def _in_group(user, gid: int) -> bool:
    return user.pw_gid == gid or user.pw_name in grp.getgrgid(gid).gr_mem


def _can_read(user, info: os.stat_result) -> int:
    """The permission bits (r=4, w=2, x=1) that apply to ``user`` on a file with ``info``; None is other users."""
    if user is not None and info.st_uid == user.pw_uid:
        return (info.st_mode >> 6) & 7
    if user is not None and _in_group(user, info.st_gid):
        return (info.st_mode >> 3) & 7
    return info.st_mode & 7


def _reaches(user, path: Path) -> bool:
    """Whether ``user`` (None: every other user) can enter the checkout's folders down to ``path`` and list or open
    what is in it, by the modes alone (root's view: the check runs as root)."""
    inside = path.relative_to(ROOT).parts
    for i in range(len(inside)):
        if not _can_read(user, (ROOT.joinpath(*inside[:i])).stat()) & 1:
            return False
    return bool(_can_read(user, path.stat()) & 5)


def _git_dirs() -> list[Path]:
    """The repository's folder: .git, or where a .git file (a worktree's or a submodule's) points."""
    dot = ROOT / ".git"
    if dot.is_file():
        line = dot.read_text().strip()
        if line.startswith("gitdir:"):
            return [dot, (ROOT / line.split(":", 1)[1].strip()).resolve()]
    return [dot]


def _sandbox_problem(instructor) -> str | None:
    """Why the instructor's server could not grade: autograde runs each submission in bubblewrap, which, for a user
    other than root, needs unprivileged user namespaces (autograder/sandbox.py)."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return "bubblewrap is missing (`sudo apt-get install bubblewrap`): grading runs every submission in it"
    probe = [bwrap, "--unshare-user", "--unshare-pid", "--unshare-net", "--ro-bind", "/", "/", "--proc", "/proc",
             "--dev", "/dev", "true"]
    done = subprocess.run(probe, user=instructor.pw_uid, group=instructor.pw_gid, extra_groups=[], cwd="/",
                          capture_output=True, text=True, timeout=60)
    if done.returncode:
        return (f"the grading sandbox cannot start as {instructor.pw_name} ({done.stderr.strip()[:200]}): it needs "
                "unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, or an AppArmor profile "
                "for bwrap on Ubuntu 24.04)")
    return None


def _problems() -> list[str]:
    """What stops this machine from running the course's hub safely, one sentence each."""
    problems = []
    if os.geteuid() != 0:
        problems.append("the hub starts every user's server as that user, which needs root: run `sudo make hub`")
    if not INSTRUCTOR:
        problems.append("no instructor: set POSENC_HUB_INSTRUCTOR to the instructor's Unix user name")
    if not PROXY.exists():
        problems.append(f"{PROXY.relative_to(ROOT)} is missing: run `make assets` (npm installs the hub's proxy)")
    if AUTH == "shared-password":
        if len(os.environ.get("POSENC_HUB_PASSWORD", "")) < 8:
            problems.append("set POSENC_HUB_PASSWORD, the students' shared password (8 characters or more)")
        if len(os.environ.get("POSENC_HUB_INSTRUCTOR_PASSWORD", "")) < 32:
            problems.append("set POSENC_HUB_INSTRUCTOR_PASSWORD, the instructor's own password (32 characters or "
                            "more, e.g. `openssl rand -hex 16`): with the students' password alone, any student "
                            "could log in as the instructor")
    names = [INSTRUCTOR, *STUDENTS] if INSTRUCTOR else STUDENTS
    users = {}
    for name in names:
        user = _user(name)
        if user is None:
            problems.append(f"there is no Unix user {name!r}: create it (`sudo useradd --create-home {name}`)")
            continue
        users[name] = user
        home = Path(user.pw_dir)
        try:
            info = home.stat()
        except OSError:
            problems.append(f"{name}'s home {home} does not exist: `sudo mkhomedir_helper {name}`")
            continue
        if info.st_uid != user.pw_uid:
            problems.append(f"{name}'s home {home} is not owned by {name}")
        elif info.st_mode & 0o077:
            problems.append(f"{name}'s home {home} is open to other users (mode {stat.filemode(info.st_mode)}): "
                            f"students could read each other's work; `sudo chmod 700 {home}`")
    students = [users[s] for s in STUDENTS if s in users]
    instructor = users.get(INSTRUCTOR)
    if instructor and os.geteuid() == 0:
        problems += filter(None, [_sandbox_problem(instructor)])
    # The hidden tests and model answers (solutions/) and every other copy of them in the checkout (its history,
    # the built editions, caches, the checkout's own course folder) must be closed to students; the instructor
    # reads solutions/. Checked as far as a student can reach.
    closed = [(ROOT / "solutions", "the hidden tests and model answers")]
    closed += [(ROOT / name, holds) for name, holds in INSTRUCTOR_ONLY.items()]
    closed += [(path, INSTRUCTOR_ONLY[".git"]) for path in _git_dirs()[1:]]
    for folder, holds in closed:
        if not folder.exists():
            continue
        inside = folder.is_relative_to(ROOT)
        if inside and _reaches(None, folder) or not inside and folder.stat().st_mode & 0o005:
            problems.append(f"{folder} can be read by every user on this machine, students included (it holds "
                            f"{holds}): `sudo chmod o-rwx {folder}`")
            continue
        for student in students:
            if _reaches(student, folder) if inside else _can_read(student, folder.stat()) & 5:
                problems.append(f"student {student.pw_name} can read {folder} (its owner or group; it holds "
                                f"{holds})")
    solutions = (ROOT / "solutions").stat()
    if instructor and not (solutions.st_uid == instructor.pw_uid
                           or (solutions.st_mode & 0o050 == 0o050 and _in_group(instructor, solutions.st_gid))):
        group = grp.getgrgid(instructor.pw_gid).gr_name
        problems.append(f"the instructor {INSTRUCTOR} cannot read solutions/ (the source notebooks formgrader "
                        f"generates assignments from): `sudo chgrp {group} {ROOT / 'solutions'}` and "
                        f"`sudo chmod 750 {ROOT / 'solutions'}`")
    if instructor:  # formgrader generates each chapter from these files, as the instructor
        unreadable = [p for p in sorted((ROOT / "solutions").rglob("*"))
                      if p.is_file() and not _can_read(instructor, p.stat()) & 4]
        if unreadable:
            problems.append(f"the instructor {INSTRUCTOR} cannot read {len(unreadable)} file(s) in solutions/ "
                            f"(e.g. {unreadable[0]}): `sudo chmod -R a+rX {ROOT / 'solutions'}` (the folder "
                            "itself stays closed to students)")
    # What every user's server runs and imports: the folders on the way must be open to others. The virtualenv's
    # interpreter is often a link into another installation (pyenv's, in root's home: closed to everyone else).
    python = Path(os.path.realpath(sys.executable))
    reported = set()
    for path, fix in ((ROOT, "put the checkout where every user can reach it"),
                      (BIN, "put the virtualenv where every user can reach it"),
                      (next(p for p in (STATE, *STATE.parents) if p.exists()),
                       "set POSENC_HUB_DIR to a folder every user can reach (the exchange is in it)"),
                      (python, "it is the virtualenv's Python: make .venv from a Python every user can run "
                               "(`rm -rf .venv && make install PYTHON=/usr/bin/python3`)"),
                      (Path(sys.base_prefix), "the same Python's standard library must be readable by every user")):
        closed = next((part for part in [*reversed(path.parents), path] if not part.stat().st_mode & stat.S_IXOTH),
                      None)
        if closed and closed not in reported:
            problems.append(f"{closed} is closed to other users, so their servers cannot reach {path}: {fix}")
            reported.add(closed)
    # Nobody but root may own or write the hub's folder and the exchange's root (a student who could replace
    # them would receive the others' submissions); the course's folder in the exchange belongs to the instructor.
    for path in (STATE, EXCHANGE):
        if path.is_symlink() or (path.exists() and path.stat().st_uid != 0):
            problems.append(f"{path} must be a folder owned by root (remove it; the hub makes it)")
    if instructor:
        for sub in EXCHANGE_MODES:
            path = EXCHANGE / COURSE_ID / sub if sub else EXCHANGE / COURSE_ID
            if path.is_symlink() or (path.exists() and path.stat().st_uid != instructor.pw_uid):
                problems.append(f"{path} exists and is not the instructor's folder: remove it (the hub makes it)")
    return problems


def _folder(path: Path, uid: int, gid: int, mode: int) -> None:
    """Make the folder if missing and set its owner and mode, on the folder itself: never through a link that
    someone put in its place (O_NOFOLLOW)."""
    path.mkdir(exist_ok=True)
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        os.fchown(fd, uid, gid)
        os.fchmod(fd, mode)
    finally:
        os.close(fd)


def _make_exchange(instructor) -> None:
    """The hub's folders: its private state (root only), the exchange's root (everyone, sticky) and the course's
    folders in it, owned by the instructor, made before any student can squat the names."""
    STATE.parent.mkdir(parents=True, exist_ok=True)
    for path, mode in ((STATE, 0o755), (PRIVATE, 0o700), (EXCHANGE, 0o1777)):
        _folder(path, 0, 0, mode)
    for sub, mode in EXCHANGE_MODES.items():
        _folder(EXCHANGE / COURSE_ID / sub if sub else EXCHANGE / COURSE_ID, instructor.pw_uid, instructor.pw_gid,
                mode)


def _system_tool(name: str) -> str:
    """A system program by its full path (the hub's PATH may leave out sbin, where mkfs lives)."""
    found = shutil.which(name, path="/usr/sbin:/sbin:/usr/bin:/bin")
    if found is None:
        raise OSError(f"{name} is not installed (Debian: e2fsprogs, mount)")
    return found


def _make_drawer(student, instructor) -> None:
    """The student's drawer in inbound (see DRAWER_MB): the image made once (sparse: it takes only what is
    written), mounted on each start where it is not (nodev, nosuid, noexec), its root the student's with the
    instructor's group (setgid, so collect, which runs as the instructor, can read what the student puts there)."""
    image = DRAWERS / f"{student.pw_name}.img"
    where = EXCHANGE / COURSE_ID / "inbound" / student.pw_name
    if not image.exists():
        with open(image, "wb") as out:
            out.truncate(DRAWER_MB << 20)
        mkfs = [_system_tool("mkfs.ext4"), "-q", "-F", "-m", "0", "-E", "lazy_itable_init=1,lazy_journal_init=1"]
        subprocess.run([*mkfs, str(image)], check=True, capture_output=True, text=True)
    if not os.path.ismount(where):
        _folder(where, 0, 0, 0o755)
        subprocess.run([_system_tool("mount"), "-o", "loop,nodev,nosuid,noexec", str(image), str(where)], check=True,
                       capture_output=True, text=True)
    _folder(where, student.pw_uid, instructor.pw_gid, 0o2750)
    lost = where / "lost+found"  # mkfs's, root's: nothing of the student's
    if lost.is_dir() and not lost.is_symlink() and not any(lost.iterdir()):
        lost.rmdir()


def _make_drawers(instructor) -> list[str]:
    """Every student's drawer; the problems that stopped one, one sentence each."""
    _folder(DRAWERS, 0, 0, 0o700)
    problems = []
    for name in STUDENTS:
        student = _user(name)
        if student is None:
            continue  # a student without an account has nothing to hand in (the roster makes the accounts)
        try:
            _make_drawer(student, instructor)
        except (OSError, subprocess.CalledProcessError) as exc:
            detail = (getattr(exc, "stderr", "") or str(exc)).strip().splitlines()[-1:] or [""]
            problems.append(f"{name}'s drawer in the exchange (a {DRAWER_MB} MB loop-mounted file system) could "
                            f"not be made: {detail[0]}; set POSENC_HUB_DRAWER_MB=0 to run without drawers (a "
                            "student can then fill the exchange's disk)")
    return problems


problems = _problems()
if problems:
    sys.exit("The course's JupyterHub cannot start here (hub/README.md):\n" + "\n".join(f"  - {p}" for p in problems))
_make_exchange(pwd.getpwnam(INSTRUCTOR))
if DRAWER_MB:
    problems = _make_drawers(pwd.getpwnam(INSTRUCTOR))
    if problems:
        sys.exit("The course's JupyterHub cannot start here (hub/README.md):\n" +
                 "\n".join(f"  - {p}" for p in problems))

# ---------------------------------------------------------------------------------------------------------
# JupyterHub and its proxy, on this machine only unless POSENC_HUB_IP says otherwise (put HTTPS in front first).
c.JupyterHub.bind_url = f"http://{IP}:{PORT}"
c.JupyterHub.hub_bind_url = f"http://127.0.0.1:{HUB_API_PORT}"
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{PROXY_API_PORT}"
c.ConfigurableHTTPProxy.command = [str(PROXY)]
c.ConfigurableHTTPProxy.pid_file = str(PRIVATE / "proxy.pid")
# The hub's state survives a restart: users, their sessions (the cookie secret), the servers it started. Users'
# servers keep running while the hub is stopped (a restart, to change this file or upgrade, interrupts nobody's
# kernel; the hub finds them again on start). To stop them all, use "Stop All" on the admin page (/hub/admin)
# before stopping the hub.
c.JupyterHub.db_url = f"sqlite:///{PRIVATE / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(PRIVATE / "jupyterhub_cookie_secret")
c.JupyterHub.pid_file = str(PRIVATE / "jupyterhub.pid")
c.JupyterHub.cleanup_servers = False

# ---------------------------------------------------------------------------------------------------------
# Who may log in. The default, a shared password, is for a demonstration or a test: every student logs in with
# the same password, so a student can log in as another student. The instructor, a hub admin, has a password
# of their own. For a class, use PAM (POSENC_HUB_AUTH=pam: each user logs in with their Unix password) or OAuth
# with your institution's identity provider (the `oauthenticator` package; POSENC_HUB_AUTH names its
# authenticator, configured in a jupyterhub_config.py that loads this one), and serve the hub over HTTPS.
c.Authenticator.allowed_users = {INSTRUCTOR, *STUDENTS}
c.Authenticator.admin_users = {INSTRUCTOR}
c.JupyterHub.authenticator_class = AUTH
if AUTH == "shared-password":
    c.SharedPasswordAuthenticator.user_password = os.environ["POSENC_HUB_PASSWORD"]
    c.SharedPasswordAuthenticator.admin_password = os.environ["POSENC_HUB_INSTRUCTOR_PASSWORD"]

# ---------------------------------------------------------------------------------------------------------
# Each user's server: JupyterLab from the project's virtualenv, started as that Unix user in their home, with
# nbgrader configured for their role by the folder hub/jupyter/<role> (first on JUPYTER_CONFIG_PATH, so it
# outranks the virtualenv's defaults): the instructor gets every nbgrader extension and the course's grading
# settings; a student gets the Assignments tab and Validate, without formgrader, the course list or the
# assignment editor.
c.JupyterHub.spawner_class = "localprocess"
c.Spawner.cmd = [str(BIN / "jupyterhub-singleuser")]
c.Spawner.default_url = "/lab"
c.Spawner.http_timeout = 120
c.Spawner.start_timeout = 120


def prepare_server(spawner) -> None:
    """The environment of a user's server, by role (JupyterHub calls this before each start)."""
    name = spawner.user.name
    role = "instructor" if name == INSTRUCTOR else "student"
    # The course's virtualenv first on PATH, for the server and its terminals (`python -m autograder ...` as the
    # guide writes it): the terminals run bash as an interactive shell that is not a login shell
    # (jupyter/<role>/jupyter_server_config.json), because a login shell reads /etc/profile, which resets PATH.
    env = {"PATH": f"{BIN}:/usr/local/bin:/usr/bin:/bin", "JUPYTER_CONFIG_PATH": str(HUB / "jupyter" / role),
           "POSENC_EXCHANGE_DIR": str(EXCHANGE), "SHELL": "/bin/bash"}
    if role == "instructor":
        # nbgrader's course folder (gradebook, submitted, autograded, feedback, release): private to the instructor,
        # made by their server (hub/jupyter/instructor/nbgrader_config.py), never by root in their home.
        env["POSENC_COURSE_DIR"] = str(Path(pwd.getpwnam(name).pw_dir) / "posenc-course")
        env.update({key: os.environ[key] for key in INSTRUCTOR_PASSES if key in os.environ})
    spawner.environment = {**spawner.environment, **env}


c.Spawner.pre_spawn_hook = prepare_server


# ---------------------------------------------------------------------------------------------------------
# Servers nobody has used for POSENC_HUB_IDLE_TIMEOUT seconds (default an hour) are stopped by the hub's idle
# culler (jupyterhub-idle-culler, a service the hub starts and stops with itself), so that a class's forgotten
# kernels do not hold the machine's memory; the users' files stay, and logging in again starts a new server.
IDLE_TIMEOUT = int(os.environ.get("POSENC_HUB_IDLE_TIMEOUT", "3600"))
c.JupyterHub.services = [{"name": "idle-culler",
                          "command": [sys.executable, "-m", "jupyterhub_idle_culler", f"--timeout={IDLE_TIMEOUT}"]}]
c.JupyterHub.load_roles = [{"name": "idle-culler", "services": ["idle-culler"],
                            "scopes": ["list:users", "read:users:activity", "read:servers", "delete:servers"]}]
