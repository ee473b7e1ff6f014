"""The instructor's grading pipeline: nbgrader, unchanged, driven from one command per step.

``grade`` takes a folder laid out ``<student_id>/<chapter>/<chapter>.ipynb`` (an LMS export or
``nbgrader collect``, unzipped), checks every notebook, copies the readable ones into nbgrader's
``submitted`` folder, puts the assignments and students in the gradebook, runs ``nbgrader autograde`` on
each submission (``jobs`` of them at a time) and prints a score table per chapter. ``feedback`` and
``export`` are nbgrader's generate_feedback and CSV export. Everything is stored under the course folder:
``course/`` at the repository root (git-ignored), or ``$POSENC_COURSE_DIR``.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import json
import multiprocessing
import os
import re
import shutil
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from . import course

ROOT = course.ROOT
# Matched with fullmatch: `$` alone would accept a trailing newline in a folder name.
STUDENT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.@+-]*")
# A handed-in notebook larger than this is refused before it is read (outputs or data left in it).
MAX_NOTEBOOK_BYTES = 50 * 2**20
# nbgrader runs `alembic` (its database migrations) as a program: make this environment's bin/ findable
# even when Python was started without activating the virtualenv (as `make` does).
_BIN = str(Path(sys.executable).parent)
if _BIN not in os.environ.get("PATH", "").split(os.pathsep):
    os.environ["PATH"] = _BIN + os.pathsep + os.environ.get("PATH", "")


def course_dir() -> Path:
    """The instructor's data folder: gradebook, submitted, autograded, feedback (never committed)."""
    return Path(os.environ.get("POSENC_COURSE_DIR") or ROOT / "course").resolve()


def load_config():
    """nbgrader's configuration exactly as `nbgrader` loads it from the repository root."""
    from traitlets.config.loader import PyFileConfigLoader

    course_dir().mkdir(parents=True, exist_ok=True)
    cfg = PyFileConfigLoader("nbgrader_config.py", path=str(ROOT)).load_config()
    # formgrader warns on every page when the exchange folder is missing, even if the course never uses it
    Path(cfg.Exchange.root).mkdir(parents=True, exist_ok=True)
    # generate_assignment writes a student version as a side effect; the gradebook is all grading needs,
    # so that copy goes to the course folder and lessons/ (committed) is left alone.
    cfg.CourseDirectory.release_directory = str(course_dir() / "release")
    return cfg


def _api(cfg=None):
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory

    warnings.filterwarnings("ignore", module="nbgrader")  # SQLAlchemy chatter inside nbgrader's gradebook
    warnings.filterwarnings("ignore", message="Cell is missing an id field")  # cells nbgrader re-inserts
    _patient_sqlite()
    cfg = cfg or load_config()
    return NbGraderAPI(coursedir=CourseDirectory(config=cfg), config=cfg)


def _gradebook(cfg):
    from nbgrader.api import Gradebook

    _patient_sqlite()
    return Gradebook(cfg.CourseDirectory.db_url, cfg.CourseDirectory.course_id)


# ----------------------------------------------------------------------------------------------------------
# What an assignment asks, read from the nbgrader metadata of its source notebook.

@dataclass(frozen=True)
class Problem:
    grade_id: str
    points: float
    kind: str  # "test": autograded test cell; "written": manually graded answer; "task": manually graded task


def problems(assignment: str) -> list[Problem]:
    """The graded cells of an assignment in notebook order, with their points."""
    import nbformat

    nb = nbformat.read(course.SOLUTIONS / assignment / f"{assignment}.ipynb", as_version=4)
    found = []
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("grade") or meta.get("task"):
            kind = "task" if meta.get("task") else "written" if meta.get("solution") else "test"
            found.append(Problem(meta["grade_id"], float(meta.get("points", 0)), kind))
    return found


# ----------------------------------------------------------------------------------------------------------
# Submissions.

@dataclass
class Submission:
    student: str
    assignment: str
    folder: Path  # <student>/<assignment>/ in the folder handed to `grade`

    @property
    def notebook(self) -> Path:
        return self.folder / f"{self.assignment}.ipynb"


def notebook_problem(path: Path) -> str | None:
    """Why nbgrader could not read this file as a notebook, in words; None if it can.

    Whatever the file holds, this returns a sentence and never raises: one student's file must not stop the
    grading of the class (JSON nested a few thousand levels deep makes the json module raise RecursionError,
    a huge integer literal ValueError, a huge file MemoryError)."""
    import nbformat

    text, problem = _read_notebook_text(path)
    if problem:
        return problem
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        return f"{path.name} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); the file is corrupt"
    except RecursionError:
        return f"{path.name} is JSON nested too deeply to be a notebook"
    except MemoryError:
        return f"{path.name} is too large to read as JSON"
    except ValueError as exc:  # e.g. an integer literal longer than Python converts
        return f"{path.name} is not JSON a notebook can hold ({_first_line(exc)})"
    try:
        nb = nbformat.reads(text, as_version=4)
        nbformat.validate(nb)
    except RecursionError:
        return f"{path.name} is JSON nested too deeply to be a notebook"
    except MemoryError:
        return f"{path.name} is too large to read as a notebook"
    except Exception as exc:  # nbformat raises several types for a notebook it cannot read
        return f"{path.name} is JSON but not a valid notebook ({_first_line(exc)})"
    return None


def _read_notebook_text(path: Path) -> tuple[str, str | None]:
    """The file's text, or why it cannot be read: too large (refused before reading it), unreadable, not UTF-8."""
    limit = f"{MAX_NOTEBOOK_BYTES / 2**20:g} MiB"
    try:
        size = path.stat().st_size
        if size > MAX_NOTEBOOK_BYTES:
            return "", (f"{path.name} is {size / 2**20:.0f} MiB, over the {limit} a notebook may be (clear "
                        "its outputs and hand it in again)")
        with path.open("rb") as f:
            data = f.read(MAX_NOTEBOOK_BYTES + 1)  # the file may have grown since stat
    except OSError as exc:
        return "", f"cannot read {path.name}: {exc.strerror or exc}"
    except MemoryError:
        return "", f"{path.name} is too large to read"
    if len(data) > MAX_NOTEBOOK_BYTES:
        return "", f"{path.name} is over the {limit} a notebook may be (clear its outputs and hand it in again)"
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        return "", f"cannot read {path.name}: it is not UTF-8 text ({exc.reason} at byte {exc.start})"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return (text.splitlines()[0] if text else type(exc).__name__)[:200]


def _shown(name: str) -> str:
    """A folder name as it can be printed on one line (quoted when it holds a newline or other control)."""
    return name if name.isprintable() else repr(name)


def _not_inside(path: Path, root: Path) -> str | None:
    """Why path is not a real file or folder of the handed-in folder root (already resolved), in words;
    None if it is. A symbolic link is refused wherever it points: `unzip` restores the links stored in a
    zip, so `alice/01_why_position -> ../../solutions/01_why_position` would hand in the model solutions."""
    if path.is_symlink():
        try:
            target = os.readlink(path)
        except OSError:
            target = "?"
        return f"is a symbolic link (to {_shown(target)})"
    try:
        resolved = path.resolve(strict=True)
    except (OSError, RuntimeError) as exc:
        return f"cannot be read ({exc})"
    if resolved != root and root not in resolved.parents:
        return f"is outside the handed-in folder (it is {_shown(str(resolved))})"
    return None


def _refused(student: str, relative: str, path: Path, problem: str) -> str:
    """The line for a student or chapter folder that is not a real folder of the handed-in one (a link that
    leads nowhere is still called a folder: it stands where one should be)."""
    kind = "file" if path.is_file() else "folder"
    return f"{_shown(student)}: not graded: the {kind} {_shown(relative)} {problem}; hand in the notebook itself"


def _visible_entries(folder: Path) -> list[Path]:
    """The entries of a folder, hidden ones (.ipynb_checkpoints, .DS_Store) left out, sorted."""
    return sorted(p for p in folder.iterdir() if not p.name.startswith("."))


def find_submissions(folder: Path, assignments: list[str] | None = None) -> tuple[list[Submission], list[str]]:
    """Every <student>/<chapter>/<chapter>.ipynb under folder; plus a message per entry that cannot be graded.

    Submissions are files and nothing else: a student folder, chapter folder or notebook that is a symbolic
    link, or that resolves outside the folder, is refused (with one line naming the student) before anything
    is read or copied. The folder itself may be given through a link: it is resolved once, here."""
    given = Path(folder)
    if not given.is_dir():
        raise SystemExit(f"{given} is not a folder (expected <student_id>/<chapter>/<chapter>.ipynb inside)")
    root = given.resolve()
    known = course.assignments()
    found, errors = [], []
    for student_dir in _visible_entries(root):
        student = student_dir.name
        problem = _not_inside(student_dir, root)
        if problem:
            errors.append(_refused(student, student, student_dir, problem))
            continue
        if not student_dir.is_dir():
            continue  # a stray file next to the student folders (an export's index, a zip)
        if not STUDENT_ID.fullmatch(student):
            errors.append(f"{_shown(student)}: not graded: a student id must be letters, digits and _ . @ + - "
                          f"(rename the folder {_shown(str(given / student))})")
            continue
        try:
            chapter_dirs = _visible_entries(student_dir)
        except OSError as exc:
            errors.append(f"{student}: not graded: cannot read the folder {student} ({exc.strerror or exc})")
            continue
        for chapter_dir in chapter_dirs:
            name = chapter_dir.name
            if assignments and name not in assignments:
                continue
            problem = _not_inside(chapter_dir, root)
            if problem:
                errors.append(_refused(student, f"{student}/{name}", chapter_dir, problem))
                continue
            if not chapter_dir.is_dir():
                continue
            if name not in known:
                errors.append(f"{student}: {_shown(name)} is not an assignment of this course "
                              f"(known: {', '.join(known)})")
                continue
            sub = Submission(student, name, chapter_dir)
            if sub.notebook.is_symlink():
                errors.append(f"{student}: {name} not graded: {name}.ipynb is a symbolic link, not a file "
                              "(hand in the notebook itself)")
                continue
            if not sub.notebook.is_file():
                others = sorted(_shown(p.name) for p in chapter_dir.glob("*.ipynb"))
                hint = f"; found {', '.join(others)}: rename it to {name}.ipynb" if others else ""
                errors.append(f"{student}: not graded: {name}/{name}.ipynb is missing{hint}")
                continue
            problem = _not_inside(sub.notebook, root)
            if problem:
                errors.append(f"{student}: {name} not graded: {name}.ipynb {problem}")
                continue
            problem = notebook_problem(sub.notebook) or metadata_tampering(sub.notebook, name)
            if problem:
                errors.append(f"{student}: {name} not graded: {problem}. Their previous grades, if any, are kept.")
                continue
            found.append(sub)
    return found, errors


_FLAGS = ("grade", "solution", "task")  # (a changed `locked` or `points` nbgrader puts back itself)


def metadata_tampering(path: Path, assignment: str) -> str | None:
    """How the nbgrader metadata of a handed-in notebook differs from the lesson's, in words; None if it
    does not. A cell may be missing, locked or unlocked, its points changed (nbgrader puts all that back),
    but every cell that carries nbgrader metadata must carry a grade_id of the lesson, once, on the same
    kind of cell, as the same kind of graded cell (test, solution, task). nbgrader itself fails on such a notebook with a bare KeyError or "Inconsistent
    checksums", naming neither the student nor the cause."""
    import nbformat

    nb = nbformat.read(path, as_version=4)
    lesson = nbformat.read(course.ROOT / "lessons" / assignment / f"{assignment}.ipynb", as_version=4)
    known = {c.metadata["nbgrader"]["grade_id"]: c for c in lesson.cells
             if c.metadata.get("nbgrader", {}).get("grade_id")}
    seen = set()
    for index, cell in enumerate(nb.cells):
        meta = cell.metadata.get("nbgrader")
        if meta is None:
            continue
        gid = meta.get("grade_id") if isinstance(meta, dict) else None
        where = f"cell {index}"
        if gid is None:
            return f"its nbgrader metadata was tampered with: {where} carries nbgrader metadata without a grade_id"
        if not isinstance(gid, str) or gid not in known:
            return (f"its nbgrader metadata was tampered with: {where} carries grade_id {str(gid)[:40]!r}, "
                    "which the lesson does not have")
        if gid in seen:
            return f"its nbgrader metadata was tampered with: grade_id {gid!r} appears twice ({where})"
        seen.add(gid)
        original = known[gid]
        want = original.metadata["nbgrader"]
        changed = [flag for flag in _FLAGS if bool(meta.get(flag)) != bool(want.get(flag))]
        if cell.cell_type != original.cell_type:
            changed.append("cell type")
        if changed:
            return (f"its nbgrader metadata was tampered with: {where} ({gid}) has its {', '.join(changed)} "
                    "changed from the lesson's")
    return None


# ----------------------------------------------------------------------------------------------------------
# The gradebook side.

def metadata_problems(assignment: str) -> list[str]:
    """nbgrader metadata that `nbgrader validate` accepts but that breaks putting the assignment in the
    gradebook (generate_assignment then fails with a bare KeyError), in words."""
    import nbformat

    nb = nbformat.read(course.SOLUTIONS / assignment / f"{assignment}.ipynb", as_version=4)
    problems, seen = [], set()
    for index, cell in enumerate(nb.cells):
        meta = cell.metadata.get("nbgrader", {})
        gid = meta.get("grade_id")
        if not meta:
            continue
        if (meta.get("grade") or meta.get("task")) and "points" not in meta:
            kind = "task" if meta.get("task") else "graded"
            problems.append(f"cell {index} ({gid}) is a {kind} cell without points: give it points (a rubric "
                            "that is not graded on its own belongs in the answer cell, not in a task cell)")
        if gid in seen:
            problems.append(f"cell {index}: grade_id {gid!r} is used twice")
        seen.add(gid)
    return problems


def _source_hash(assignment: str) -> str:
    return hashlib.sha256((course.SOLUTIONS / assignment / f"{assignment}.ipynb").read_bytes()).hexdigest()


def sync_assignments(names, cfg=None, api=None) -> dict[str, str]:
    """Make sure the gradebook holds each assignment as its source notebook is now (nbgrader
    generate_assignment, run again only when the source changed since the last time). Returns an error
    message per assignment that could not be put in the gradebook; the others are unaffected."""
    from nbgrader.api import MissingEntry

    cfg = cfg or load_config()
    failures = {}
    stamp_file = course_dir() / "source_versions.json"
    stamps = json.loads(stamp_file.read_text()) if stamp_file.exists() else {}
    for name in sorted(set(names)):
        with _gradebook(cfg) as gb:
            try:
                gb.find_assignment(name)
                present = True
            except MissingEntry:
                present = False
        digest = _source_hash(name)
        if present and stamps.get(name) == digest:
            continue
        problems = metadata_problems(name)
        if problems:
            failures[name] = (f"solutions/{name} cannot be put in the gradebook, so no {name} submission can be "
                              "graded until it is fixed:\n  " + "\n  ".join(problems))
            continue
        api = api or _api(cfg)
        result = api.generate_assignment(name, force=True, create=True)
        if not result["success"]:
            failures[name] = (f"nbgrader generate_assignment {name} failed, so no {name} submission can be "
                              f"graded until solutions/{name} is fixed:\n{_last_error(result)}")
            continue
        stamps[name] = digest
        stamp_file.write_text(json.dumps(stamps, indent=1, sort_keys=True))
    return failures


def register_students(ids, cfg=None) -> None:
    """Add the students to the gradebook before any autograde runs, so that parallel workers only update
    rows (two workers inserting the same new row would collide)."""
    from nbgrader.api import Gradebook

    cfg = cfg or load_config()
    with _gradebook(cfg) as gb:
        for student in sorted(set(ids)):
            gb.update_or_create_student(student)
    # nbgrader's grading steps open the gradebook without a course id, which inserts a "default_course"
    # row the first time: create it here, once, for the same reason.
    with Gradebook(cfg.CourseDirectory.db_url):
        pass


def copy_in(sub: Submission, cfg) -> Path:
    """Copy one submission into nbgrader's submitted/<student>/<assignment>/ (replacing an older one)."""
    dest = Path(cfg.CourseDirectory.submitted_directory) / sub.student / sub.assignment
    if dest.exists():
        shutil.rmtree(dest)

    def skipped(folder, names):
        # Hidden files, caches, and symbolic links: copytree would copy a link's *target*, so a submission
        # holding `x -> /path/to/solutions/...` would bring the instructor's files into the course folder.
        return [n for n in names if n.startswith(".") or n == "__pycache__" or os.path.islink(os.path.join(folder, n))]

    shutil.copytree(sub.folder, dest, ignore=skipped)
    return dest


def _last_error(result: dict) -> str:
    """nbgrader's error summary lines, with the exception that caused them (the last line of a traceback)."""
    lines, exceptions, last = [], [], None
    for line in (result.get("log") or "").splitlines():
        if line.startswith("[ERROR]"):
            if last:
                exceptions.append(last)
                last = None
            if "Traceback" not in line and "Please see" not in line:
                lines.append(line)
        elif line.strip() and line.startswith((" ", "\t")) and not line.strip().startswith(("File ", "^", "~")):
            last = line.strip()
    if not lines and not exceptions:
        tail = (result.get("error") or "").strip().splitlines()[-1:]
        return "\n".join(tail) or "(no message)"
    return "\n".join(lines[-4:] + [f"cause: {e}" for e in exceptions[-2:]])


# ----------------------------------------------------------------------------------------------------------
# Autograding, serially or by several worker processes.

_WORKER_API = None


def _patient_sqlite() -> None:
    """Let a worker wait up to 10 minutes for another's write to the SQLite gradebook instead of failing
    with "database is locked" after SQLite's default 5 s. SQLite serialises writers itself (each write is
    a transaction; nbgrader commits after each grade); this only lengthens the wait."""
    import nbgrader.api
    import sqlalchemy

    if getattr(nbgrader.api, "_posenc_waits", False):
        return
    original = sqlalchemy.create_engine

    def create_engine(url, *args, **kwargs):
        if str(url).startswith("sqlite"):
            kwargs.setdefault("connect_args", {}).setdefault("timeout", 600)
        return original(url, *args, **kwargs)

    nbgrader.api.create_engine = create_engine
    nbgrader.api._posenc_waits = True


def _worker_init() -> None:
    global _WORKER_API
    _WORKER_API = _api()


def in_progress_dir() -> Path:
    """Where each worker notes the submission it is grading (``<assignment>__<student>``, holding its pid):
    when a worker dies, what it was grading is known, and an instructor can see what is being graded."""
    return course_dir() / "in_progress"


def _autograde_one(assignment: str, student: str) -> dict:
    """Run nbgrader autograde for one submission (in this process); never raises."""
    api = _WORKER_API or _api()
    start = time.perf_counter()
    marker = in_progress_dir() / f"{assignment}__{student}"
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text(str(os.getpid()))
    try:
        result = api.autograde(assignment, student, force=True, create=True)
    except Exception as exc:  # nbgrader's API reports failures in its result; this is a last resort
        result = {"success": False, "error": f"{type(exc).__name__}: {exc}", "log": ""}
    finally:
        marker.unlink(missing_ok=True)
    return {"assignment": assignment, "student": student, "success": bool(result["success"]),
            "error": None if result["success"] else _last_error(result),
            "seconds": time.perf_counter() - start}


def _died(assignment: str, student: str, why: str) -> dict:
    return {"assignment": assignment, "student": student, "success": False, "seconds": 0.0, "died": True,
            "error": f"the grading process died while grading it ({why}; killed, or out of memory?)"}


def _pool_round(pairs, jobs, progress, results) -> tuple[list, list]:
    """Grade ``pairs`` in one pool of ``jobs`` workers. When a worker dies, the pool breaks and every
    unfinished future fails with it: returns (the submissions that were being graded then, the ones still
    waiting), told apart by the workers' in-progress notes."""
    context = multiprocessing.get_context("spawn")  # a clean interpreter: no inherited kernels or sockets
    unfinished = []
    with concurrent.futures.ProcessPoolExecutor(max_workers=min(jobs, len(pairs)), mp_context=context,
                                                initializer=_worker_init) as pool:
        futures = {pool.submit(_autograde_one, a, s): (a, s) for a, s in pairs}
        for future in concurrent.futures.as_completed(futures):
            try:
                result = future.result()
            except concurrent.futures.process.BrokenProcessPool:
                unfinished.append(futures[future])
                continue
            except Exception as exc:  # the result could not come back: that submission alone
                result = _died(*futures[future], f"{type(exc).__name__}: {exc}")
            results.append(result)
            if progress:
                progress(result)
    busy = [pair for pair in unfinished if (in_progress_dir() / f"{pair[0]}__{pair[1]}").exists()]
    for pair in busy:
        (in_progress_dir() / f"{pair[0]}__{pair[1]}").unlink(missing_ok=True)
    return busy, [pair for pair in unfinished if pair not in busy]


def autograde(pairs, jobs: int = 1, progress=None) -> list[dict]:
    """Autograde (assignment, student) pairs: in this process when jobs == 1, else in ``jobs`` worker
    processes that share the gradebook (each submission is one nbgrader autograde run). A worker that dies
    (killed, out of memory) costs only what it was grading: the pool is rebuilt for the others, and each
    submission that was being graded when a worker died is graded once more alone; if its worker dies
    again, that submission alone is reported."""
    pairs = list(pairs)
    results = []
    if jobs <= 1 or len(pairs) <= 1:
        global _WORKER_API
        _WORKER_API = _WORKER_API or _api()
        for assignment, student in pairs:
            results.append(_autograde_one(assignment, student))
            if progress:
                progress(results[-1])
        return results
    waiting, retried, stalled = pairs, set(), 0
    while waiting:
        done_before = len(results)
        busy, waiting = _pool_round(waiting, jobs, progress, results)
        stalled = stalled + 1 if not busy and len(results) == done_before else 0
        if stalled >= 2:  # workers that die before grading anything (they cannot even start)
            for pair in waiting:
                results.append(_died(*pair, "before it started: the workers could not run"))
                if progress:
                    progress(results[-1])
            break
        for pair in busy:
            if pair in retried:
                results.append(_died(*pair, "twice"))
                if progress:
                    progress(results[-1])
            else:
                retried.add(pair)
                waiting.append(pair)
        if busy and all(pair in retried for pair in waiting):
            jobs = 1  # only suspects are left: one at a time, so that a death names its submission
    return sorted(results, key=lambda r: (r["assignment"], r["student"]))


# ----------------------------------------------------------------------------------------------------------
# Reading the results back.

@dataclass
class Score:
    score: float
    max_score: float
    needs_manual_grade: bool
    auto_score: float | None
    manual_score: float | None


@dataclass
class Result:
    student: str
    assignment: str
    scores: dict[str, Score] = field(default_factory=dict)  # by grade_id
    notes: list[str] = field(default_factory=list)

    @property
    def total(self) -> float:
        return sum(s.score for s in self.scores.values())


def read_scores(assignments=None, students=None, cfg=None) -> dict[tuple[str, str], Result]:
    """Every submission's per-problem scores from the gradebook, keyed by (student, assignment)."""
    from nbgrader.api import MissingEntry

    cfg = cfg or load_config()
    out = {}
    with _gradebook(cfg) as gb:
        names = assignments or [a.name for a in gb.assignments]
        for name in names:
            try:
                assignment = gb.find_assignment(name)
            except MissingEntry:
                continue
            for sub in assignment.submissions:
                if students and sub.student.id not in students:
                    continue
                result = Result(sub.student.id, name)
                for nb in sub.notebooks:
                    for grade in nb.grades:
                        result.scores[grade.name] = Score(
                            float(grade.score), float(grade.max_score), bool(grade.needs_manual_grade),
                            None if grade.auto_score is None else float(grade.auto_score),
                            None if grade.manual_score is None else float(grade.manual_score))
                out[(result.student, name)] = result
    return out


# Error outputs in an autograded notebook that the instructor should hear about, with what they mean.
_NOTABLE = [
    ("CellTimeoutError", None, "timed out"),
    ("KernelDied", None, "kernel died (os._exit or crash): later cells not run"),
    ("KernelUnresponsive", None, "ignored the timeout interrupt: later cells not run"),
    ("Tampered", None, "replaced numpy/math/posenc/checks functions: tests refused"),
    ("RuntimeError", "is the reference this exercise asks you to write", "called posenc's reference"),
    ("SystemExit", None, "sys.exit() in a cell"),
    ("KernelLost", None, "the kernel died or hung while the grader called its code: later cells not run"),
    ("NoAnswer", None, "the kernel did not answer the grader's calls (code that changed or blocked them)"),
]


def _where(cells: list[str]) -> str:
    return ", ".join(cells) if len(cells) <= 2 else f"{cells[0]} and {len(cells) - 1} more cells"


def _verdicts(assignment: str, student: str, cfg) -> dict:
    """The grader's verdicts on one submission, as GuardedExecute wrote them ({} if there are none)."""
    path = Path(cfg.GuardedExecute.verdict_dir) / student / f"{assignment}.json"
    try:
        decided = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return decided if isinstance(decided, dict) else {}


def verdict_notes(decided: dict) -> list[str]:
    """Notes on test cells whose kernel-side result and the grader's own verdict disagree (read from the
    verdicts GuardedExecute wrote): marked for review, since the kernel's side is what a forged grade changes."""
    forged, refused = [], []
    for gid, v in sorted(decided.items()):
        visible_passed = v.get("grader") == "pass" or v.get("stage") == "hidden"
        if v.get("kernel") == "pass" and not visible_passed:
            forged.append(gid)
        elif v.get("kernel") == "fail" and visible_passed:
            refused.append(f"{gid} ({v.get('kernel_error', '').split(':')[0] or 'error'})")
    notes = []
    if forged:
        notes.append(f"REVIEW {_where(forged)}: the notebook's own run passed tests the grader's run failed "
                     "(code that hides failures?)")
    if refused:
        notes.append(f"REVIEW {_where(refused)}: the notebook's own run failed tests the grader's run passed "
                     "(IPython hooks or replaced functions?)")
    return notes


def notes_for(assignment: str, student: str, cfg) -> list[str]:
    """Short notes on what happened while grading one submission, read from its autograded notebook and
    from the grader's verdicts."""
    import nbformat

    path = Path(cfg.CourseDirectory.autograded_directory) / student / assignment / f"{assignment}.ipynb"
    if not path.exists():
        return []
    nb = nbformat.read(path, as_version=4)
    errors = []  # (where, ename, evalue): the errors in the autograded notebook, then what the kernel raised
    for index, cell in enumerate(nb.cells):
        where = cell.metadata.get("nbgrader", {}).get("grade_id") or f"cell {index}"
        errors += [(where, out.get("ename"), out.get("evalue", "")) for out in cell.get("outputs", [])
                   if out.get("output_type") == "error"]
    decided = _verdicts(assignment, student, cfg)
    errors += [(gid, *v.get("kernel_error", "").partition(": ")[::2]) for gid, v in sorted(decided.items())]
    where_by_text = {}  # text -> the cells it happened in, in order
    for where, ename, evalue in errors:
        for name, needle, text in _NOTABLE:
            if ename == name and (needle is None or needle in evalue):
                cells = where_by_text.setdefault(text, [])
                if where not in cells:
                    cells.append(where)
    notes = [f"{_where(cells)}: {text}" for text, cells in where_by_text.items()]
    return notes + verdict_notes(decided)


def _fmt(x: float) -> str:
    return f"{x:g}"


def format_table(assignment: str, results: list[Result]) -> str:
    """One chapter's score table: a row per student, a column per problem ("-" = awaiting manual grading)."""
    probs = problems(assignment)
    header = ["student"] + [f"{p.grade_id}" + ("*" if p.kind != "test" else "") + f" /{_fmt(p.points)}"
                            for p in probs] + [f"total /{_fmt(sum(p.points for p in probs))}", "notes"]
    rows = []
    for r in sorted(results, key=lambda r: r.student):
        cells = [r.student]
        for p in probs:
            s = r.scores.get(p.grade_id)
            if s is None:
                cells.append("?")
            elif s.needs_manual_grade and s.manual_score is None:
                cells.append("-")
            else:
                cells.append(_fmt(s.score))
        cells.append(_fmt(r.total))
        cells.append("; ".join(r.notes))
        rows.append(cells)
    widths = [max(len(str(row[i])) for row in [header] + rows) for i in range(len(header) - 1)]
    lines = [f"{assignment}   (* graded by hand in formgrader; '-' = not graded yet)"]
    for row in [header] + rows:
        lines.append("  ".join(str(c).ljust(w) for c, w in zip(row, widths)) + "  " + row[-1])
    return "\n".join(line.rstrip() for line in lines)


# ----------------------------------------------------------------------------------------------------------
# The commands.

def _sandbox_refusal(unsandboxed: bool, out) -> bool:
    """Set up sandboxed (default) or unsandboxed execution of student code; True if it must be refused."""
    from . import sandbox

    if unsandboxed:
        os.environ["POSENC_UNSANDBOXED"] = "1"  # read by nbgrader_config.py, in the --jobs workers too
        out(sandbox.UNSANDBOXED_WARNING)
        return False
    os.environ.pop("POSENC_UNSANDBOXED", None)
    reason = sandbox.unavailable()
    if reason:
        out(f"ERROR refusing to run student code: it must run in a sandbox and {reason}. Install it "
            "(Debian/Ubuntu: sudo apt-get install bubblewrap), or pass --unsandboxed to run it anyway "
            "with the risks it prints.")
        return True
    reason = sandbox.preflight()
    if reason:
        out(f"ERROR nobody was graded: {reason}")
        return True
    return False


def validate(paths, unsandboxed: bool = False, out=print) -> int:
    """`python -m autograder validate NOTEBOOK ...`: nbgrader's validate (the visible tests, as a student's
    Validate button runs them) on notebooks handed in by students, with their kernel in the sandbox.
    Returns 1 if a notebook is missing or fails its tests, 2 if refused, 0 otherwise."""
    from nbgrader.preprocessors import CheckCellMetadata, ClearOutput
    from nbgrader.validator import Validator

    from . import sandbox

    class Recording(Validator):
        """nbgrader's Validator, keeping the results it prints (so that the exit status can say them)."""

        def validate(self, filename):
            self.results = super().validate(filename)
            return self.results

    if _sandbox_refusal(unsandboxed, out):
        return 2
    validator = Recording(config=load_config())
    # nbgrader's own steps, with the Execute step autograde uses (sandboxed unless --unsandboxed).
    validator.preprocessors = [CheckCellMetadata, ClearOutput, sandbox.autograde_execute_class()]
    status = 0
    for path in map(Path, paths):
        if not path.is_file():
            out(f"ERROR {path}: no such notebook")
            status = 1
            continue
        out(f"[{path}]")
        try:
            validator.validate_and_print(str(path.resolve()))
        except Exception as exc:  # a corrupt file, a kernel that would not start: name it, go on
            out(f"ERROR {path}: could not be validated: {type(exc).__name__}: {exc}")
            status = 1
            continue
        results = validator.results
        if results.get("failed") or results.get("type_changed") or results.get("changed"):
            status = 1
    return status


def grade(folder, jobs: int = 1, assignments=None, out=print, unsandboxed: bool = False) -> int:
    """`python -m autograder grade`: returns the exit status (1 if any submission could not be graded,
    2 if grading was refused because no sandbox is available and ``unsandboxed`` was not given)."""
    if _sandbox_refusal(unsandboxed, out):
        return 2
    submissions, errors = find_submissions(Path(folder), assignments)
    for message in errors:
        out(f"ERROR {message}")
    if not submissions:
        out("no gradable submissions found")
        return 1
    cfg = load_config()
    failures = sync_assignments(sorted({s.assignment for s in submissions}), cfg)
    for name, message in failures.items():
        errors.append(message)
        out(f"ERROR {message}")
    submissions = [s for s in submissions if s.assignment not in failures]
    if not submissions:
        return 1
    names = sorted({s.assignment for s in submissions})
    register_students([s.student for s in submissions], cfg)
    for sub in submissions:
        copy_in(sub, cfg)
    out(f"autograding {len(submissions)} submissions of {len(names)} assignments with {jobs} job(s) "
        f"into {course_dir()}")
    start = time.perf_counter()
    results = autograde([(s.assignment, s.student) for s in submissions], jobs=jobs,
                        progress=lambda r: out(f"  {r['student']}/{r['assignment']}: "
                                               f"{'ok' if r['success'] else 'FAILED'} ({r['seconds']:.1f} s)"))
    out(f"autograded in {time.perf_counter() - start:.1f} s")
    failed = [r for r in results if not r["success"]]
    for r in failed:
        if r.get("died"):
            errors.append(f"{r['student']}: {r['assignment']} not graded: {r['error']}")
        else:
            errors.append(f"{r['student']}: {r['assignment']}: nbgrader could not autograde it:\n{r['error']}")
        out(f"ERROR {errors[-1]}")
    graded = {(s.student, s.assignment) for s in submissions}
    scores = read_scores(names, cfg=cfg)
    for name in names:
        rows = [r for key, r in scores.items() if key in graded and r.assignment == name]
        for r in rows:
            r.notes = notes_for(name, r.student, cfg)
        out("")
        out(format_table(name, rows))
    return 1 if errors else 0


def feedback(assignments=None, out=print) -> int:
    """`python -m autograder feedback`: nbgrader's HTML feedback for every autograded submission."""
    cfg = load_config()
    api = _api(cfg)
    warnings.filterwarnings("ignore", message="Your element with mimetype")  # glue's data: not for the page
    autograded = Path(cfg.CourseDirectory.autograded_directory)
    names = assignments or sorted({p.name for p in autograded.glob("*/*") if p.is_dir()})
    status = 0
    for name in names:
        result = api.generate_feedback(name, force=True)
        if not result["success"]:
            out(f"ERROR feedback for {name} failed:\n{_last_error(result)}")
            status = 1
    feedback_dir = Path(cfg.CourseDirectory.feedback_directory)
    pages = sorted(feedback_dir.glob("*/*/*.html"))
    out(f"{len(pages)} feedback pages in {feedback_dir} (one per student and chapter: "
        "<student>/<chapter>/<chapter>.html)")
    return status


def export(to: str | None = None, out=print) -> Path:
    """`python -m autograder export`: the grades as CSV, written by nbgrader's CSV exporter."""
    from nbgrader.plugins import CsvExportPlugin

    cfg = load_config()
    path = Path(to) if to else course_dir() / "grades.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    plugin = CsvExportPlugin(config=cfg)
    plugin.to = str(path)
    with _gradebook(cfg) as gb:
        plugin.export(gb)
    out(f"wrote {path}")
    return path
