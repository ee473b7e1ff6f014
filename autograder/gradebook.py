"""nbgrader's gradebook (SQLite or PostgreSQL) through its unpatched API: assignments and students in, scores out."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import sys
import warnings
from collections import namedtuple
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
import sqlalchemy
from nbgrader.api import Gradebook
from nbgrader.apps import NbGraderAPI
from nbgrader.coursedir import CourseDirectory

from . import course

SQLITE_WAIT = 600  # seconds a worker waits for another's write to the gradebook (SQLite's default: 5)
CONNECT_TIMEOUT = 10  # seconds to reach a database server before saying it does not answer
ENV = "POSENC_DB_URL"  # the environment variable that names the gradebook (autograder/nbgrader_config.py)
ALLOWED = "sqlite:///PATH or postgresql+psycopg2://USER:PASSWORD@HOST:PORT/DATABASE (the driver psycopg2)"
WAITS = {"sqlite": {"timeout": str(SQLITE_WAIT)}, "postgresql": {"connect_timeout": str(CONNECT_TIMEOUT)}}


def _parsed(url):
    """``url`` parsed by SQLAlchemy, or None."""
    try:
        return sqlalchemy.make_url(str(url))
    except (sqlalchemy.exc.ArgumentError, ValueError):
        return None


def waiting_url(url) -> str:
    """``url`` with ``WAITS`` (SQLite waits SQLITE_WAIT s for another worker's lock, PostgreSQL gives up connecting
    after CONNECT_TIMEOUT s), the URL's own values kept; a URL that does not parse is returned as it is."""
    parsed = _parsed(url)
    if parsed is None:
        return str(url)
    query = {**WAITS.get(parsed.get_backend_name(), {}), **parsed.query}
    return parsed.update_query_dict(query).render_as_string(hide_password=False)


def find_alembic() -> None:
    """Put this environment's bin/ on PATH, where nbgrader finds the ``alembic`` it runs to make a gradebook."""
    path, here = os.environ.get("PATH", ""), str(Path(sys.executable).parent)
    if here not in path.split(os.pathsep):
        os.environ["PATH"] = here + os.pathsep + path if path else here


class Unavailable(Exception):
    """The gradebook's database cannot be used; the message is one line: which database, why, what to do."""


def shown(url) -> str:
    """The database URL for messages: its password replaced by ***, without the parameters of ``WAITS``."""
    parsed = _parsed(url)
    if parsed is None:
        return re.sub(r"(://[^:/@]*:)[^@]*@", r"\1***@", str(url))
    waits = WAITS.get(parsed.get_backend_name(), {})
    return parsed.difference_update_query(waits).render_as_string(hide_password=True)


def _setting(url) -> str:
    """Where the URL was set: the environment variable, or nbgrader's configuration."""
    return ENV if waiting_url(os.environ.get(ENV, "")) == waiting_url(url) else "c.CourseDirectory.db_url"


def url_problem(url) -> str | None:
    """Why nbgrader cannot use ``url`` as the gradebook here (one line: the setting, the URL without its password,
    what is allowed), or None."""
    parsed = _parsed(url)
    if parsed and parsed.database and (parsed.get_backend_name() == "sqlite"
                                       or parsed.drivername == "postgresql+psycopg2" and parsed.host):
        return None
    return f"{_setting(url)}={shown(url)!r} is not a gradebook this course can use: write {ALLOWED}"


def unreachable(url) -> str | None:
    """Why the PostgreSQL server of ``url`` does not answer (one line: the URL without its password, the reason,
    what to do), or None; an SQLite file always answers (nbgrader creates it)."""
    if url_problem(url) or _parsed(url).get_backend_name() == "sqlite":
        return None
    try:
        with sqlalchemy.create_engine(waiting_url(url), poolclass=sqlalchemy.pool.NullPool).connect():
            return None
    except sqlalchemy.exc.DBAPIError as exc:  # (libpq's first line: 'connection to server at ... failed: WHY')
        reason = " ".join(str(exc.orig).partition("\n")[0].rpartition(" failed: ")[2].split())
        return (f"the gradebook database {shown(url)} cannot be opened ({reason or type(exc.orig).__name__}): check "
                f"that its PostgreSQL server is running and that {_setting(url)} is right, then run the command "
                "again; the grades already in it are kept")


def check(cfg) -> None:
    """Raise ``Unavailable`` when the course's gradebook URL is unusable or its server does not answer."""
    url = cfg.CourseDirectory.db_url
    if problem := url_problem(url) or unreachable(url):
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
def opened(cfg):
    """The course's gradebook, open for the block (inside a ``session``); ``Unavailable`` if its server is down."""
    url = cfg.CourseDirectory.db_url
    with session():
        try:
            gb = Gradebook(waiting_url(url), cfg.CourseDirectory.course_id)
        except sqlalchemy.exc.OperationalError:
            if problem := unreachable(url):
                raise Unavailable(problem) from None
            raise
        with gb:
            yield gb


def api(cfg) -> NbGraderAPI:
    """nbgrader's API on the course (call its methods inside a ``session``), on the gradebook's ``waiting_url``:
    nbgrader's steps open the gradebook at the URL of the API's coursedir."""
    coursedir = CourseDirectory(config=cfg, db_url=waiting_url(cfg.CourseDirectory.db_url))
    return NbGraderAPI(coursedir=coursedir, config=cfg)


def last_error(result: dict) -> str:
    """nbgrader's [ERROR] lines and the exception that caused them (the last line of each traceback it logged), or
    the last line of the result's error when its log has none."""
    log = result.get("log") or ""
    lines = re.findall(r"^\[ERROR\] (?!Traceback|Please see).*", log, re.M)
    causes = re.findall(r"^\[ERROR\] Traceback.*(?:\n[ \t].*)*\n[ \t]+(\S.*)", log, re.M)
    if not lines and not causes:
        return ((result.get("error") or "").strip().splitlines() or ["(no message)"])[-1]
    return "\n".join(lines[-4:] + [f"cause: {cause}" for cause in causes[-2:]])


def metadata_problems(assignment: str) -> list[str]:
    """The task and graded cells without points, in words: `nbgrader validate` accepts them, but generate_assignment
    then fails with a bare KeyError."""
    nb = nbformat.read(course.source_notebook(assignment), as_version=4)
    return [f"cell {index} ({meta.get('grade_id')}) is a {'task' if meta.get('task') else 'graded'} cell without "
            "points: give it points (a rubric that is not graded on its own belongs in the answer cell, not in a "
            "task cell)" for index, meta in enumerate(map(course.nbgrader_meta, nb.cells))
            if (meta.get("grade") or meta.get("task")) and "points" not in meta]


def sync_assignments(names, cfg) -> dict[str, str]:
    """Put each assignment in the gradebook as its source notebook is now (nbgrader generate_assignment, run again
    only when the source changed since); returns an error message per assignment that could not be put in."""
    failures = {}
    stamp_file = course.course_dir() / "source_versions.json"
    stamps = json.loads(stamp_file.read_text()) if stamp_file.exists() else {}
    with opened(cfg) as gb:
        present = {a.name for a in gb.assignments}
    for name in sorted(set(names)):
        digest = hashlib.sha256(course.source_notebook(name).read_bytes()).hexdigest()
        if name in present and stamps.get(name) == digest:
            continue
        problems = metadata_problems(name)
        if not problems:
            with session():
                result = api(cfg).generate_assignment(name, force=True, create=True)
            problems = [] if result["success"] else [last_error(result)]
        if problems:
            failures[name] = (f"solutions/{name} cannot be put in the gradebook (nbgrader generate_assignment), so "
                              f"no {name} submission can be graded until it is fixed:\n  " + "\n  ".join(problems))
            continue
        stamps[name] = digest
        stamp_file.write_text(json.dumps(stamps, indent=1, sort_keys=True))
    return failures


def register_students(ids, cfg) -> None:
    """Add the students and the "default_course" row (nbgrader's grading steps open the gradebook without a course
    id) before any autograde runs: parallel workers then only update rows (two inserting one would collide)."""
    with opened(cfg) as gb:
        for student in sorted(set(ids)):
            gb.update_or_create_student(student)
        gb.check_course()


Score = namedtuple("Score", "score needs_manual_grade manual_score")


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
    with opened(cfg) as gb:
        return {(sub.student.id, a.name): Result(sub.student.id, a.name, {
                    g.name: Score(float(g.score), bool(g.needs_manual_grade), g.manual_score)
                    for nb in sub.notebooks for g in nb.grades})
                for a in gb.assignments if a.name in assignments for sub in a.submissions}
