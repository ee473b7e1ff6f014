"""Grading that the graded cannot subvert: hostile submissions against the real nbgrader pipeline with every
kernel in the bubblewrap sandbox (autograder/sandbox.py).

One chapter, graded in three runs of `python -m autograder grade`:

1. the honest class (perfect, blank, partial), sandboxed: it scores exactly what the metadata says; then the
   gradebook (every row of every table) and every file of the course folder and of the instructor's
   repository files are snapshotted;
2. hostile submissions, each of which tries one thing (read the instructor's files and run the stolen
   solutions; write the gradebook and course files and plant symlinks; reach the network; fork-bomb; take
   unbounded memory; print without end; sleep forever), with one more honest student: each hostile one
   scores exactly what its honest code earns (0: it solved nothing), every earlier row and file is
   unchanged, the honest student is graded, and the autograded notebooks show that each attack ran and
   was stopped (SANDBOX-HELD) and none got through (SANDBOX-BREACH);
3. a control: the two attacks that matter most, graded with --unsandboxed in a course of their own, do
   work there (full marks from stolen solutions, another student's grades rewritten), so the checks above
   can tell.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import sqlite3
import threading
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pytest
from nbgrader.utils import is_solution

import synthetic
from autograder import course, sandbox
from autograder.config import load_config
from autograder.preprocessors import GuardedExecute, guarded_execute
from support import run_cli

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("sandbox")]

CHAPTER = "01_why_position" if "01_why_position" in course.assignments() else course.assignments()[0]
CELL_TIMEOUT = "30"  # per cell: generous on a loaded 2-core machine; the flood and the sleeper each cost one
ROOT = course.ROOT

needs_bwrap = pytest.mark.skipif(sandbox.unavailable() is not None,
                                 reason=f"no sandbox here: {sandbox.unavailable()}")


def grade(handed_in: Path, course_dir: Path, *extra: str, sandboxed: bool = True, env=None):
    """`python -m autograder grade` as an instructor runs it (sandboxed by default)."""
    return run_cli("grade", handed_in, *extra, *([] if sandboxed else ["--unsandboxed"]), course_dir=course_dir,
                   cell_timeout=CELL_TIMEOUT, env=env)


# ------------------------------------------------------------------------------------------------------------
# The attacks: each replaces the stub of the first exercise's solution cell of the blank lesson. Every attempt
# prints SANDBOX-HELD when it is stopped and SANDBOX-BREACH when it gets through.

_PRELUDE = '''import json, os, sys
_T = json.loads({targets!r})
def _held(what, exc):
    print("SANDBOX-HELD", what, type(exc).__name__)
def _breach(what):
    print("SANDBOX-BREACH", what)
'''

ATTACKS = {
    # Read every instructor file it knows of, search the file tree for the source notebook (or the gradebook,
    # which holds the solution cells too), and run the solution cells it finds.
    "steals": '''
for _p in _T["secret_files"]:
    try:
        with open(_p, "rb") as _f:
            _f.read(1)
        _breach("read " + _p)
    except OSError as _e:
        _held("read " + _p, _e)
for _d in _T["secret_dirs"]:
    try:
        _breach("list %s: %s" % (_d, os.listdir(_d)[:5]))
    except OSError as _e:
        _held("list " + _d, _e)
import time, sqlite3
_classmates = [n for n in os.listdir(os.path.dirname(os.path.dirname(os.getcwd())))
               if n != os.path.basename(os.path.dirname(os.getcwd()))]
if _classmates:
    _breach("saw classmates' folders %s" % _classmates[:5])
else:
    _held("list classmates' folders", FileNotFoundError())
_stolen, _own, _deadline = [], os.path.abspath(_T["notebook_name"]), time.time() + 10


def _solutions_in(path):
    """Solution cells from a source notebook or from a gradebook (it keeps the source cells)."""
    if path.endswith(".ipynb") and os.path.abspath(path) != _own:
        try:
            nb = json.load(open(path))
        except Exception:
            return []
        return ["".join(c["source"]) for c in nb.get("cells", []) if c.get("cell_type") == "code"
                and c.get("metadata", {}).get("nbgrader", {}).get("solution") and "BEGIN SOLUTION" in "".join(c["source"])]
    if path.endswith(".db"):
        try:
            rows = sqlite3.connect(path).execute("select source from source_cell").fetchall()
        except Exception:
            return []
        return [r[0] for r in rows if "BEGIN SOLUTION" in (r[0] or "")]
    return []


def _candidates():
    yield from _T["secret_files"]
    for top in [str(p) for p in __import__("pathlib").Path.cwd().parents] + ["/"]:
        for folder, dirs, files in os.walk(top):
            if time.time() > _deadline or folder.count(os.sep) - top.count(os.sep) > 3:
                dirs[:] = []
                continue
            dirs[:] = [d for d in dirs if d not in ("proc", "sys", "dev", "usr", "lib", ".venv", ".pyenv", ".git",
                                                    "node_modules", "_build", "site-packages")]
            for name in files:
                yield os.path.join(folder, name)


for _path in _candidates():
    _code = _solutions_in(_path)
    if _code:
        _stolen = [(_path, _code)]
        break
if _stolen:
    _breach("found the solutions in " + _stolen[0][0])
    for _c in _stolen[0][1]:
        try:
            exec(_c, globals())
        except Exception:
            pass
else:
    _held("search for the solutions", FileNotFoundError())
''',
    # Change every grade in the gradebook, delete it, write instructor files, and plant symlinks in the
    # working folder that the grader would follow afterwards (its autograded notebook onto the gradebook,
    # a "data file" onto the solutions for the feedback folder).
    "tampers": '''
import sqlite3
try:
    _con = sqlite3.connect(_T["gradebook"])
    _con.execute("UPDATE grade SET manual_score = 99")
    _con.execute("UPDATE grade SET auto_score = 0")
    _con.commit()
    _breach("rewrote the gradebook")
except Exception as _e:
    _held("write the gradebook", _e)
import tempfile
for _p in _T["secret_files"]:
    try:
        with open(_p, "ab"):  # opened for writing is enough: nothing is written, so that if this ever
            pass              # ran unsandboxed by mistake the instructor's files would stay as they are
        _breach("opened for writing " + _p)
    except OSError as _e:
        _held("open for writing " + _p, _e)
for _p in _T["deletable"]:  # files of the test's own temporary course only
    try:
        os.remove(_p)
        _breach("deleted " + _p)
    except OSError as _e:
        _held("delete " + _p, _e)
for _d in _T["protected_dirs"]:
    try:
        with tempfile.NamedTemporaryFile(dir=_d):  # made and removed at once
            pass
        _breach("created a file in " + _d)
    except OSError as _e:
        _held("create a file in " + _d, _e)
for _name, _target in [(_T["notebook_name"], _T["gradebook"]), ("leak.ipynb", _T["secret_files"][0])]:
    try:
        os.symlink(_target, _name)
        print("planted", _name)
    except OSError as _e:
        _held("plant " + _name, _e)
''',
    # Read everything the kernel can reach that is not the system's or Python's: its own working folder (where
    # nbgrader writes the notebook being graded with every test cell restored, hidden tests included), the same
    # through /proc/self/cwd, every other mount, and the environment; look there for a test or a model answer.
    "reads_own_folder": '''
# (kept reversed in this cell's source: IPython's history in /tmp holds the source of every cell that ran)
_needles = [_n[::-1] for _n in ["STSET NEDDIH NIGEB", "STSET NEDDIH DNE", "NOITULOS NIGEB", "EMEHCS KRAM NIGEB"]
            + _T["model_lines"]]
_system = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/proc", "/sys", "/dev",
           sys.prefix, sys.base_prefix, os.path.dirname(os.path.dirname(os.path.realpath(sys.executable))))
def _is_system(_p):
    return any(_p == _s or _p.startswith(_s.rstrip("/") + "/") for _s in _system)
_tops = ["/", "/proc/self/cwd", os.getcwd()]
with open("/proc/self/mountinfo") as _f:
    _tops += [_line.split()[4] for _line in _f]
_read, _found = 0, []
for _top in _tops:
    if _top != "/proc/self/cwd" and _is_system(_top):
        continue
    if os.path.isfile(_top):
        _walk = [(os.path.dirname(_top), [], [os.path.basename(_top)])]
    else:
        _walk = os.walk(_top)
    for _folder, _dirs, _files in _walk:
        _dirs[:] = [_d for _d in _dirs if not _is_system(os.path.join(_folder, _d))]
        for _name in _files:
            _path = os.path.join(_folder, _name)
            try:
                if not os.path.isfile(_path) or os.path.getsize(_path) > 50 * 2**20:
                    continue
                with open(_path, "rb") as _f:
                    _text = _f.read().decode("utf-8", "replace")
            except OSError:
                continue
            _read += 1
            _found += ["%s in %s" % (_n[:40], _path) for _n in _needles if _n in _text]
_env = "\\n".join("%s=%s" % _kv for _kv in os.environ.items())
_found += ["%s in the environment" % _n[:40] for _n in _needles if _n in _env]
if _found:
    _breach("read tests or answers: %s" % _found[:5])
else:
    _held("read %d files of its folder and mounts" % _read, FileNotFoundError())
''',
    # Reach a server the test listens with on the host's localhost, and the outside world.
    "network": '''
import socket
for _host, _port in [("127.0.0.1", _T["port"]), ("::1", _T["port"]), ("1.1.1.1", 80), ("8.8.8.8", 53)]:
    try:
        socket.create_connection((_host, _port), timeout=3).close()
        _breach("connected to %s:%s" % (_host, _port))
    except OSError as _e:
        _held("connect to %s:%s" % (_host, _port), _e)
try:
    socket.getaddrinfo("pypi.org", 443)
    _breach("resolved pypi.org")
except OSError as _e:
    _held("resolve pypi.org", _e)
''',
    # Processes that each fork for ever: the process limit stops them.
    "forkbomb": '''
import time
_forks, _refused = 0, None
for _ in range(2000):
    try:
        _pid = os.fork()
    except OSError as _e:
        _refused = _e
        continue
    if _pid == 0:
        while True:
            try:
                os.fork()
            except BaseException:
                time.sleep(0.05)
    _forks += 1
print("forks", _forks)
if _refused is not None:
    _held("fork bomb after %d forks" % _forks, _refused)
else:
    _breach("2000 forks")
''',
    # Memory without bound: the address-space limit raises MemoryError.
    "hog": '''
def _grab():
    _chunks = []
    while True:
        _chunks.append(bytearray(256 * 2**20))
        if len(_chunks) > 200:
            _breach("50 GB allocated")
            return
try:
    _grab()
except MemoryError as _e:
    _held("unbounded memory", _e)
''',
    # Output without end: the timeout stops it, the output kept is bounded.
    "floods": '''
print("SANDBOX-HELD flood starts")
while True:
    print("x" * 10000)
''',
    # A cell that never returns: the timeout interrupts it, the rest of the notebook runs.
    "sleeps": '''
import time
print("SANDBOX-HELD sleep starts")
time.sleep(10**6)
''',
}


CANARY = 'import os\nprint("CANARY", "VISIBLE" if os.path.exists({0!r}) or os.path.exists({1!r}) else "HIDDEN")\n'


def hostile(name: str, attack: str, targets: dict) -> synthetic.Student:
    """The blank lesson with the attack in place of the first exercise's stub; it earns what blank earns."""
    b = synthetic.Builder(CHAPTER)
    blank = b.blank(name)
    code = _PRELUDE.format(targets=json.dumps(targets)) + ATTACKS[attack]
    cells = [sid for ex in b.a.exercises for sid in ex.solutions]
    for sid in cells if attack == "steals" else cells[:1]:  # the thief runs what it stole in every answer cell
        synthetic.find_cell(blank.notebook, sid).source = code
    return blank


def targets_for(course_dir: Path, submissions: Path, port: int = 9) -> dict:
    return {
        "secret_files": [str(course.source_notebook(CHAPTER)), str(ROOT / "nbgrader_config.py"),
                         str(ROOT / "autograder" / "nbgrader_config.py"), str(course_dir / "gradebook.db"),
                         str(course_dir / "submitted" / "perfect" / CHAPTER / f"{CHAPTER}.ipynb"),
                         str(course_dir / "autograded" / "perfect" / CHAPTER / f"{CHAPTER}.ipynb"),
                         str(submissions / "perfect" / CHAPTER / f"{CHAPTER}.ipynb"),
                         os.path.expanduser("~/.bashrc")],
        # Folders whose listing would give something away. (The course folder and autograded/ exist inside
        # the sandbox, but only as the path to the kernel's own working folder: see "classmates" below.)
        "secret_dirs": [str(ROOT / "solutions"), str(submissions), str(course_dir / "submitted")],
        "protected_dirs": [str(ROOT), str(ROOT / "solutions"), str(course_dir), str(course_dir / "submitted"),
                           str(submissions), os.path.expanduser("~")],
        "gradebook": str(course_dir / "gradebook.db"),
        "deletable": [str(course_dir / "gradebook.db"),
                      str(course_dir / "submitted" / "perfect" / CHAPTER / f"{CHAPTER}.ipynb")],
        "notebook_name": f"{CHAPTER}.ipynb",
        "model_lines": [line[::-1] for line in model_lines()],
        "own": str(course_dir / "submitted" / "x" / CHAPTER / f"{CHAPTER}.ipynb"),
        "port": port,
    }


def model_lines() -> list[str]:
    """Lines of the chapter's model answers and hidden tests that no lesson shows (long enough to be telling)."""
    source = nbformat.read(course.source_notebook(CHAPTER), as_version=4)
    lesson = "\n".join(c.source for c in nbformat.read(course.lesson_notebook(CHAPTER), as_version=4).cells)
    lines = []
    for cell in source.cells:
        for region in ("SOLUTION", "HIDDEN TESTS"):
            parts = cell.source.split(f"### BEGIN {region}")[1:]
            for part in parts:
                for line in part.split(f"### END {region}")[0].splitlines():
                    line = line.strip()
                    if len(line) >= 25 and line not in lesson and not line.startswith("#"):
                        lines.append(line)
    return sorted(set(lines))


# ------------------------------------------------------------------------------------------------------------
# Snapshots.

def gradebook_rows(db: Path) -> dict[str, set]:
    with sqlite3.connect(db) as con:
        tables = [r[0] for r in con.execute("select name from sqlite_master where type='table'")]
        return {t: set(con.execute(f'select * from "{t}"').fetchall()) for t in tables}


def file_hashes(*folders: Path, skip=()) -> dict[str, str]:
    out = {}
    for folder in folders:
        for path in sorted(Path(folder).rglob("*")):
            if path.is_file() and not any(part in skip for part in path.parts):
                out[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


# The instructor's files the graded chapter involves (other chapters may be edited while the tests run).
INSTRUCTOR = [ROOT / "solutions" / CHAPTER, ROOT / "lessons" / CHAPTER, ROOT / "nbgrader_config.py",
              ROOT / "autograder" / "nbgrader_config.py", ROOT / "autograder" / "checks.py"]


def instructor_hashes(course_dir: Path) -> dict[str, str]:
    hashes = file_hashes(course_dir, *[p for p in INSTRUCTOR if p.is_dir()], skip={"__pycache__", "gradebook.db"})
    for path in INSTRUCTOR:
        if path.is_file():
            hashes[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return hashes


def scores(course_dir: Path) -> dict:
    from nbgrader.api import Gradebook

    out = {}
    with Gradebook(f"sqlite:///{course_dir / 'gradebook.db'}", "posenc") as gb:
        for assignment in gb.assignments:
            for sub in assignment.submissions:
                out[sub.student.id] = {g.name: float(g.score) for nb in sub.notebooks for g in nb.grades}
    return out


def autograded_text(course_dir: Path, student: str) -> str:
    nb = nbformat.read(course_dir / "autograded" / student / CHAPTER / f"{CHAPTER}.ipynb", as_version=4)
    return "".join(o.get("text", "") + o.get("evalue", "") for c in nb.cells if c.cell_type == "code"
                   for o in c.get("outputs", []))


class Listener:
    """A TCP server on the host's localhost that records every connection it accepts."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.5)
        self.port = self.sock.getsockname()[1]
        self.accepted = []
        self.running = True
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while self.running:
            try:
                conn, addr = self.sock.accept()
                self.accepted.append(addr)
                conn.close()
            except OSError:
                pass

    def close(self):
        self.running = False
        self.thread.join()
        self.sock.close()


@pytest.fixture(scope="module")
def attacked(tmp_path_factory):
    if sandbox.unavailable():
        pytest.skip(sandbox.unavailable())
    root = tmp_path_factory.mktemp("sandbox")
    course_dir, first, second = root / "course", root / "honest", root / "hostile"
    honest = synthetic.standard_class(CHAPTER)
    canary = synthetic.Builder(CHAPTER).blank("canary")
    stub = next(ex for ex in synthetic.Builder(CHAPTER).a.exercises if ex.solutions).solutions[0]
    synthetic.find_cell(canary.notebook, stub).source = CANARY.format(str(ROOT / "solutions"), str(course_dir / "gradebook.db"))
    for student in honest + [canary]:
        student.write(first)
    run1 = grade(first, course_dir, "--jobs", "2")
    # The hostile submissions run only if the canary's kernel, graded the same way, saw none of the
    # instructor's files (a fork bomb or a memory hog must never run unsandboxed on the test machine).
    seen = autograded_text(course_dir, "canary") if (course_dir / "autograded" / "canary").exists() else ""
    if "CANARY HIDDEN" not in seen:
        pytest.fail(f"the canary was not sandboxed ({seen.strip()[:200]!r}): no hostile submission was run\n"
                    + _out(run1))
    before = SimpleNamespace(rows=gradebook_rows(course_dir / "gradebook.db"), files=instructor_hashes(course_dir),
                             scores=scores(course_dir))
    listener = Listener()
    targets = targets_for(course_dir, first, listener.port)
    attackers = [hostile(name, name, targets) for name in ATTACKS]
    late = synthetic.Builder(CHAPTER).perfect("late_perfect")
    for student in attackers + [late]:
        student.write(second)
    run2 = grade(second, course_dir, "--jobs", "2")
    listener.close()
    return SimpleNamespace(root=root, course=course_dir, run1=run1, run2=run2, before=before, honest=honest,
                           attackers=attackers, late=late, listener=listener,
                           after=SimpleNamespace(rows=gradebook_rows(course_dir / "gradebook.db"),
                                                 files=instructor_hashes(course_dir), scores=scores(course_dir)))


def _out(run) -> str:
    return (run.stdout + run.stderr)[-4000:]


@needs_bwrap
def test_honest_class_scores_exactly_as_the_metadata_says_in_the_sandbox(attacked):
    assert attacked.run1.returncode == 0, _out(attacked.run1)
    for student in attacked.honest:
        assert attacked.before.scores[student.student] == student.expected, student.student


@needs_bwrap
def test_each_hostile_submission_earns_what_its_honest_code_earns(attacked):
    assert attacked.run2.returncode == 0, _out(attacked.run2)
    for student in attacked.attackers + [attacked.late]:
        assert attacked.after.scores.get(student.student) == student.expected, (student.student, _out(attacked.run2))


@needs_bwrap
@pytest.mark.parametrize("attack", list(ATTACKS))
def test_each_attack_ran_and_was_stopped(attacked, attack):
    text = autograded_text(attacked.course, attack)
    # (the flood's first line goes with the rest of its output: the cut's note shows it ran)
    ran = "Output truncated while the cell ran" if attack == "floods" else "SANDBOX-HELD"
    assert ran in text, f"{attack}: the attack did not run?\n{text[:3000]}"
    assert "SANDBOX-BREACH" not in text, f"{attack} got through:\n" + "\n".join(
        line for line in text.splitlines() if "SANDBOX-BREACH" in line)


@needs_bwrap
def test_no_earlier_gradebook_row_changed(attacked):
    for table, rows in attacked.before.rows.items():
        missing = rows - attacked.after.rows.get(table, set())
        assert not missing, f"rows of {table} changed or vanished: {sorted(missing)[:3]}"


@needs_bwrap
def test_no_instructor_file_changed_and_nothing_planted(attacked):
    before, after = attacked.before.files, attacked.after.files
    changed = [p for p in before if after.get(p) != before[p]]
    assert not changed, f"changed or deleted: {changed}"
    new = [p for p in after if p not in before]
    hostile_names = {s.student for s in attacked.attackers} | {attacked.late.student}
    for path in new:
        rel = Path(path).relative_to(attacked.course) if Path(path).is_relative_to(attacked.course) else None
        assert rel is not None and rel.parts[0] in ("submitted", "autograded", "verdicts") \
            and rel.parts[1] in hostile_names, f"a file appeared outside the graded students' folders: {path}"
        # (verdicts/<student>/<chapter>.json is what the grading process decided, written by it alone)
        want = f"{CHAPTER}.json" if rel.parts[0] == "verdicts" else f"{CHAPTER}.ipynb"
        assert rel.name == want, f"a planted file reached the grader's folders: {path}"
    links = [p for p in attacked.course.rglob("*") if p.is_symlink()]
    assert not links, f"symlinks in the course folder: {links}"


@needs_bwrap
def test_no_connection_reached_the_host(attacked):
    assert attacked.listener.accepted == []


@needs_bwrap
def test_fork_bomb_was_bounded_and_output_was_cut(attacked):
    text = autograded_text(attacked.course, "forkbomb")
    forks = int(text.split("forks ")[1].split()[0])
    assert forks < 300, f"{forks} forks"
    path = attacked.course / "autograded" / "floods" / CHAPTER / f"{CHAPTER}.ipynb"
    assert path.stat().st_size < 1_000_000
    assert "Output truncated" in autograded_text(attacked.course, "floods")


@needs_bwrap
def test_without_the_sandbox_the_attacks_work(tmp_path):
    """The control: with --unsandboxed, stealing the solutions gives full marks and the gradebook is
    rewritten. (So the sandboxed results above are the sandbox's doing, not an attack that never worked.)"""
    course_dir, subs = tmp_path / "course", tmp_path / "subs"
    perfect = synthetic.Builder(CHAPTER).perfect()
    perfect.write(subs / "first")
    assert grade(subs / "first", course_dir, sandboxed=False).returncode == 0
    targets = {**targets_for(course_dir, subs / "first"), "deletable": []}
    thief = hostile("steals", "steals", targets)
    thief.write(subs / "second")
    run = grade(subs / "second", course_dir, sandboxed=False)
    assert run.returncode == 0, _out(run)
    got = scores(course_dir)["steals"]
    tests = [t for t in got if t.startswith("test_")]
    assert all(got[t] > 0 for t in tests), f"the stolen solutions should pass unsandboxed: {got}"
    tamper = hostile("tampers", "tampers", targets)
    (subs / "third").mkdir()
    tamper.write(subs / "third")
    grade(subs / "third", course_dir, sandboxed=False)
    with sqlite3.connect(course_dir / "gradebook.db") as con:
        manual = [r[0] for r in con.execute("select manual_score from grade")]
    assert 99 in manual, "the gradebook attack should work unsandboxed"


def test_grade_refuses_without_bubblewrap(tmp_path):
    """No bwrap: grade runs nothing and says how to install it; --unsandboxed grades after a warning."""
    subs = tmp_path / "subs"
    synthetic.Builder(CHAPTER).blank().write(subs)
    env = {"PATH": str(tmp_path / "no-bwrap")}  # (a PATH without bwrap)
    run = grade(subs, tmp_path / "course", env=env)
    assert run.returncode != 0
    assert "apt-get install bubblewrap" in run.stdout + run.stderr
    assert not (tmp_path / "course" / "autograded").exists(), "nothing may be executed"
    run = grade(subs, tmp_path / "course", env=env, sandboxed=False)
    assert run.returncode == 0, _out(run)
    assert "solutions" in run.stdout + run.stderr and "gradebook" in run.stdout + run.stderr


def test_course_config_autogrades_in_the_sandbox(monkeypatch):
    """autograder/nbgrader_config.py selects the sandboxed Execute step for autograde (and only there:
    students' `nbgrader validate` runs nbgrader's own Execute)."""
    cfg = load_config()
    assert GuardedExecute in list(cfg.Autograde.autograde_preprocessors) and GuardedExecute(config=cfg).sandboxed
    step = GuardedExecute(config=cfg, sandboxed=False, kernel_name="python3")
    step.sandboxed = True  # (read when the kernel starts, not when the step is made)
    monkeypatch.setattr(guarded_execute, "unavailable", lambda: None)
    assert type(step.create_kernel_manager()) is sandbox.SandboxKernelManager
    monkeypatch.setattr(guarded_execute, "unavailable", lambda: "no bwrap here")
    with pytest.raises(RuntimeError, match="refusing to run this submission unsandboxed: no bwrap here"):
        step.create_kernel_manager()
    assert "kernel_manager_class" not in cfg.get("Execute", {}), "validate must stay unsandboxed"


@needs_bwrap
def test_validate_runs_a_students_notebook_in_the_sandbox(tmp_path):
    """`python -m autograder validate` (an instructor checking a handed-in notebook by hand) runs nbgrader's
    validate with the kernel sandboxed: a cell that writes outside its folder cannot; with --unsandboxed it can."""
    marker = tmp_path / "written-by-the-student.txt"
    student = synthetic.Builder(CHAPTER).perfect("validated")
    first = next(c for c in student.notebook.cells if is_solution(c) and c.cell_type == "code")
    first.source = (f"try:\n    open({str(marker)!r}, 'w').write('planted')\nexcept OSError:\n    pass\n"
                    + first.source)
    path = student.write(tmp_path / "subs")
    def validate(*extra):
        return run_cli("validate", path, *extra, course_dir=tmp_path / "course", cell_timeout=CELL_TIMEOUT,
                       timeout=600)

    run = validate()
    assert "Success! Your notebook passes all the tests." in run.stdout, _out(run)
    assert not marker.exists(), "the sandboxed kernel wrote outside its own folder"
    run = validate("--unsandboxed")
    assert "WARNING: --unsandboxed" in run.stdout and marker.read_text() == "planted", _out(run)
    run = run_cli("validate", tmp_path / "missing.ipynb", course_dir=tmp_path / "course", cell_timeout=CELL_TIMEOUT,
                  timeout=600)
    assert run.returncode == 1 and "missing.ipynb: no such notebook" in run.stdout, _out(run)
