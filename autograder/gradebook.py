"""The gradebook: nbgrader's database (SQLite, or the PostgreSQL server ``POSENC_DB_URL`` names) through its API,
unpatched; what the commands put in (assignments, students) and read back (scores). autograder/README.md, "The
gradebook on a PostgreSQL server", says how it is opened and what a server that does not answer costs."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
import sqlalchemy
import sqlalchemy.exc
from nbgrader.api import Gradebook
from nbgrader.apps import NbGraderAPI
from nbgrader.coursedir import CourseDirectory
from sqlalchemy.engine import make_url

from . import course

SQLITE_WAIT = 600  # seconds a worker waits for another's write to the gradebook (SQLite's default: 5)
CONNECT_TIMEOUT = 10  # seconds to reach a database server before saying it does not answer
ENV = "POSENC_DB_URL"  # the environment variable that names the gradebook (autograder/nbgrader_config.py)
ALLOWED = ("sqlite:///PATH (the default: gradebook.db in the course folder) or "
           "postgresql+psycopg2://USER:PASSWORD@HOST:PORT/DATABASE")
# What waiting_url adds to a URL's query, by database: SQLAlchemy passes it to the driver (sqlite3.connect, libpq)
WAITS = {"sqlite": ("timeout", str(SQLITE_WAIT)), "postgresql": ("connect_timeout", str(CONNECT_TIMEOUT))}


def _parsed(url):
    """``url`` parsed, and what ``waiting_url`` adds to its query (None, None for a URL that does not parse or a
    database other than SQLite and PostgreSQL)."""
    try:
        parsed = make_url(str(url))
    except (sqlalchemy.exc.ArgumentError, ValueError):
        return None, (None, None)
    return parsed, WAITS.get(parsed.get_backend_name(), (None, None))


def waiting_url(url) -> str:
    """``url`` with SQLite connections that wait SQLITE_WAIT seconds for another worker's lock instead of failing
    with "database is locked", and PostgreSQL connections that give up after CONNECT_TIMEOUT seconds (``WAITS``);
    a value the URL sets already is kept, and a URL that does not parse is returned as it is."""
    parsed, (key, value) = _parsed(url)
    if key is None or key in parsed.query:
        return str(url)
    return parsed.update_query_dict({key: value}).render_as_string(hide_password=False)


def _as_set(url) -> str:
    """``url`` without what ``waiting_url`` adds: the URL as the course set it, for messages."""
    parsed, (key, value) = _parsed(url)
    if key is None or parsed.query.get(key) != value:
        return str(url)
    return parsed.difference_update_query([key]).render_as_string(hide_password=False)


def find_alembic() -> None:
    """Put this environment's bin/ first on PATH (for this process and those it starts) when it is not there:
    nbgrader creates a gradebook by running its ``alembic`` program by name, and a virtualenv's bin/ is on PATH
    only where it was activated. The programs that grade call this when they start."""
    path, here = os.environ.get("PATH", ""), str(Path(sys.executable).parent)
    if here not in path.split(os.pathsep):
        os.environ["PATH"] = here + os.pathsep + path if path else here


class Unavailable(Exception):
    """The gradebook's database cannot be used; the message is one line: which database, why, what to do."""


def shown(url) -> str:
    """The database URL as the course set it, with its password replaced by ***, for messages."""
    url = _as_set(url)
    try:
        return make_url(url).render_as_string(hide_password=True)
    except (sqlalchemy.exc.ArgumentError, ValueError):
        return re.sub(r"(://[^:/@]*:)[^@]*@", r"\1***@", str(url))


def _setting(url) -> str:
    """Where the URL was set: the environment variable, or nbgrader's configuration."""
    return ENV if os.environ.get(ENV) in (str(url), _as_set(url)) else "c.CourseDirectory.db_url"


def url_problem(url) -> str | None:
    """Why nbgrader cannot use ``url`` as the gradebook here (one line), or None."""
    setting = f"{_setting(url)}={shown(url)!r}"
    try:
        parsed = make_url(str(url))
    except (sqlalchemy.exc.ArgumentError, ValueError):
        return f"{setting} is not a database URL: use {ALLOWED}"
    backend, _, driver = parsed.drivername.partition("+")
    if backend == "sqlite":
        return None if parsed.database else f"{setting} names no file: use {ALLOWED}"
    if backend not in ("postgresql", "postgres"):
        return f"{setting}: the gradebook cannot be a {backend} database here; use {ALLOWED}"
    if (backend, driver) != ("postgresql", "psycopg2"):
        asked = f"the driver {driver!r}" if driver else "SQLAlchemy's default driver (psycopg 3)"
        return (f"{setting} asks for {asked}, which this environment does not have: write "
                "postgresql+psycopg2://USER:PASSWORD@HOST:PORT/DATABASE (psycopg2-binary is in requirements.txt)")
    if not (parsed.database and parsed.host):
        return f"{setting} needs a host and a database: use {ALLOWED}"
    return None


def unreachable(url) -> str | None:
    """Why the database server of ``url`` does not answer (one line: the URL without its password, the reason,
    what to do), or None. An SQLite file always answers (nbgrader creates it)."""
    if url_problem(url) or make_url(str(url)).get_backend_name() == "sqlite":
        return None
    engine = sqlalchemy.create_engine(waiting_url(url), poolclass=sqlalchemy.pool.NullPool)
    try:
        with engine.connect():
            return None
    except sqlalchemy.exc.DBAPIError as exc:
        text = str(exc.orig or exc).strip()
        reason = " ".join(text.splitlines()[0].split()) if text else type(exc).__name__
        reason = re.sub(r'^connection to server at "[^"]*"( \([^)]*\))?, port \d+ failed: ', "", reason)
        return (f"the gradebook database {shown(url)} cannot be opened ({reason}): check that its PostgreSQL "
                f"server is running and that {_setting(url)} is right, then run the command again; the grades "
                "already in it are kept")
    finally:
        engine.dispose()


def check(cfg) -> None:
    """Raise ``Unavailable`` when the course's gradebook URL is unusable or its server does not answer."""
    url = cfg.CourseDirectory.db_url
    problem = url_problem(url) or unreachable(url)
    if problem:
        raise Unavailable(problem)


@contextlib.contextmanager
def session():
    """nbgrader's calls in the block without the warnings it raises and cannot act on: SQLAlchemy's inside its
    gradebook, and "Cell is missing an id field" for the cells it re-inserts."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", module="nbgrader")
        warnings.filterwarnings("ignore", message="Cell is missing an id field")
        yield


@contextlib.contextmanager
def opened(cfg, course_id: bool = True):
    """The course's gradebook, open for the block (inside a ``session``). A database server that does not
    answer raises ``Unavailable``."""
    url = cfg.CourseDirectory.db_url
    with session():
        try:
            gb = Gradebook(waiting_url(url), *([cfg.CourseDirectory.course_id] if course_id else []))
        except sqlalchemy.exc.OperationalError:
            problem = unreachable(url)
            if problem:
                raise Unavailable(problem) from None
            raise
        with gb:
            yield gb


def api(cfg) -> NbGraderAPI:
    """nbgrader's API on the course (call its methods inside a ``session``), on the gradebook's ``waiting_url``:
    nbgrader's steps open the gradebook at the URL of the API's coursedir."""
    coursedir = CourseDirectory(config=cfg)
    coursedir.db_url = waiting_url(coursedir.db_url)
    return NbGraderAPI(coursedir=coursedir, config=cfg)


def last_error(result: dict) -> str:
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


def metadata_problems(assignment: str) -> list[str]:
    """nbgrader metadata that `nbgrader validate` accepts but that breaks putting the assignment in the
    gradebook (generate_assignment then fails with a bare KeyError), in words."""
    nb = nbformat.read(course.source_notebook(assignment), as_version=4)
    problems, seen = [], set()
    for index, cell in enumerate(nb.cells):
        meta = course.nbgrader_meta(cell)
        if not meta:
            continue
        gid = meta.get("grade_id")
        if (meta.get("grade") or meta.get("task")) and "points" not in meta:
            kind = "task" if meta.get("task") else "graded"
            problems.append(f"cell {index} ({gid}) is a {kind} cell without points: give it points (a rubric "
                            "that is not graded on its own belongs in the answer cell, not in a task cell)")
        if gid in seen:
            problems.append(f"cell {index}: grade_id {gid!r} is used twice")
        seen.add(gid)
    return problems


def sync_assignments(names, cfg) -> dict[str, str]:
    """Make sure the gradebook holds each assignment as its source notebook is now (nbgrader generate_assignment,
    run again only when the source changed since the last time). Returns an error message per assignment that
    could not be put in the gradebook; the others are unaffected."""
    failures, nbgrader_api = {}, None
    stamp_file = course.course_dir() / "source_versions.json"
    stamps = json.loads(stamp_file.read_text()) if stamp_file.exists() else {}
    with opened(cfg) as gb:
        present = {a.name for a in gb.assignments}
    for name in sorted(set(names)):
        digest = hashlib.sha256(course.source_notebook(name).read_bytes()).hexdigest()
        if name in present and stamps.get(name) == digest:
            continue
        problems = metadata_problems(name)
        if problems:
            failures[name] = (f"solutions/{name} cannot be put in the gradebook, so no {name} submission can be "
                              "graded until it is fixed:\n  " + "\n  ".join(problems))
            continue
        nbgrader_api = nbgrader_api or api(cfg)
        with session():
            result = nbgrader_api.generate_assignment(name, force=True, create=True)
        if not result["success"]:
            failures[name] = (f"nbgrader generate_assignment {name} failed, so no {name} submission can be "
                              f"graded until solutions/{name} is fixed:\n{last_error(result)}")
            continue
        stamps[name] = digest
        stamp_file.write_text(json.dumps(stamps, indent=1, sort_keys=True))
    return failures


def register_students(ids, cfg) -> None:
    """Add the students to the gradebook before any autograde runs, so that parallel workers only update
    rows (two workers inserting the same new row would collide)."""
    with opened(cfg) as gb:
        for student in sorted(set(ids)):
            gb.update_or_create_student(student)
    # nbgrader's grading steps open the gradebook without a course id, which inserts a "default_course"
    # row the first time: create it here, once, for the same reason.
    with opened(cfg, course_id=False):
        pass


@dataclass
class Score:
    score: float
    needs_manual_grade: bool
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


def read_scores(assignments, cfg) -> dict[tuple[str, str], Result]:
    """Every submission's per-problem scores in the gradebook, keyed by (student, assignment)."""
    out = {}
    with opened(cfg) as gb:
        for assignment in gb.assignments:
            if assignment.name not in assignments:
                continue
            for sub in assignment.submissions:
                result = out[(sub.student.id, assignment.name)] = Result(sub.student.id, assignment.name)
                for grade in (grade for nb in sub.notebooks for grade in nb.grades):
                    manual = None if grade.manual_score is None else float(grade.manual_score)
                    result.scores[grade.name] = Score(float(grade.score), bool(grade.needs_manual_grade), manual)
    return out
