"""The gradebook on a PostgreSQL server (``POSENC_DB_URL``) instead of the default SQLite file.

Fast: the URL comes from the environment, SQLite stays the default, a URL nbgrader cannot use is refused in one
line that names the setting and what is allowed, a server that does not answer is named without its password and
stops grading at once; the instructor guide's class-scale numbers are those of book/data/class_scale.json.
Slow, against a real server (tests/postgres.py: initdb in a temporary folder, 127.0.0.1, a free port): a small
synthetic class graded with ``--jobs 2`` gets the same score on every cell on PostgreSQL as on SQLite, and every
grade row is there once; the connections and transactions a submission costs the server are what the guide says;
nbgrader's alembic sees the schema at its head revision; a server stopped between two runs and in the middle of
one gives one clear line, and no grade already written is lost.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time

import pytest
from nbgrader.api import Gradebook, get_alembic_version
from sqlalchemy.engine import make_url

import bench_grading  # tools/bench_grading.py (tools/ is on the path through support.py, which conftest imports)
import synthetic
from autograder import autograde, config, course, gradebook
from support import ROOT, VENV_BIN, cli_command, cli_env, free_port, run_cli

CHAPTERS = [n for n in ("01_why_position", "02_sinusoidal") if n in course.assignments()] or course.assignments()[:2]
CELL_TIMEOUT = 30
GUIDE_STUDENTS = 200  # the instructor guide's example course: 200 students handing in every chapter


def class_of(*kinds_by_chapter: tuple[str, list[str]]) -> list[synthetic.Student]:
    """Students of the synthetic class: for each (chapter, [builder method, ...])."""
    students = []
    for name, kinds in kinds_by_chapter:
        b = synthetic.Builder(name)
        students += [getattr(b, kind)() for kind in kinds]
    return students


def grades(url: str) -> dict:
    """{(student, chapter): {grade_id: (score, max_score, auto_score, manual_score, needs_manual_grade)}}, read
    through nbgrader's own gradebook API."""
    out = {}
    with gradebook.session(), Gradebook(url, "posenc") as gb:
        for assignment in gb.assignments:
            for sub in assignment.submissions:
                out[(sub.student.id, assignment.name)] = {
                    g.name: (float(g.score), float(g.max_score), g.auto_score, g.manual_score,
                             bool(g.needs_manual_grade)) for nb in sub.notebooks for g in nb.grades}
    return out


def wrong_scores(students, found: dict) -> list[str]:
    """Every difference between the gradebook and the scores the synthetic class's metadata says."""
    problems = []
    for s in students:
        got = found.get((s.student, s.assignment))
        if got is None:
            problems.append(f"{s.student}/{s.assignment}: not in the gradebook")
            continue
        if set(got) != set(s.expected):
            problems.append(f"{s.student}/{s.assignment}: graded cells {sorted(got)} != {sorted(s.expected)}")
        problems += [f"{s.student}/{s.assignment}/{gid}: {got[gid][0]:g}, expected {want:g}"
                     for gid, want in s.expected.items() if gid in got and got[gid][0] != want]
    return problems


def grade(submissions, course_dir, db_url: str | None):
    return run_cli("grade", submissions, "--jobs", "2", course_dir=course_dir, cell_timeout=CELL_TIMEOUT,
                   env={"POSENC_DB_URL": db_url} if db_url else None)


def score_tables(stdout: str) -> str:
    """What grade printed after grading: the score tables (the progress lines come in any order)."""
    return stdout.split("\nautograded in ", 1)[1].split("\n", 1)[1]


def errors(result) -> list[str]:
    return [line for line in result.stdout.splitlines() if line.startswith("ERROR")]


# ---------------------------------------------------------------------------------------------------------
# Which database (fast)

def test_the_gradebook_url_comes_from_the_environment_and_sqlite_stays_the_default(tmp_path, monkeypatch):
    monkeypatch.setenv("POSENC_COURSE_DIR", str(tmp_path / "course"))
    assert config.load_config().CourseDirectory.db_url == f"sqlite:///{tmp_path / 'course'}/gradebook.db"
    url = "postgresql+psycopg2://grader:secret@db.example:5432/posenc"
    monkeypatch.setenv("POSENC_DB_URL", url)
    cfg = config.load_config()
    assert cfg.CourseDirectory.db_url == url
    assert gradebook.url_problem(url) is None


@pytest.mark.parametrize("url", [
    "mysql://grader:secret@db.example/posenc", "postgresql://grader:secret@db.example/posenc",
    "postgres://grader:secret@db.example/posenc", "postgresql+asyncpg://grader:secret@db.example/posenc",
    "postgresql+psycopg2://grader:secret@/posenc", "not a url", "sqlite://",
])
def test_a_url_nbgrader_cannot_use_is_refused_naming_the_setting(url, tmp_path, monkeypatch):
    monkeypatch.setenv("POSENC_COURSE_DIR", str(tmp_path / "course"))
    monkeypatch.setenv("POSENC_DB_URL", url)
    with pytest.raises(gradebook.Unavailable) as refused:
        gradebook.check(config.load_config())
    message = str(refused.value)
    assert message.startswith("POSENC_DB_URL=") and "is not a gradebook this course can use" in message, message
    assert "\n" not in message and url.replace("secret", "***") in message, "names the URL as set, no password"
    assert "sqlite:///PATH" in message or "postgresql+psycopg2://" in message, "say what is allowed"
    assert "secret" not in message, "the password is never shown"


def test_a_server_that_does_not_answer_is_named_without_its_password(tmp_path):
    url = f"postgresql+psycopg2://grader:s3cret@127.0.0.1:{free_port()}/posenc"  # nothing listens there
    message = gradebook.unreachable(url)
    assert message and "\n" not in message, message
    assert "s3cret" not in message and f"grader:***@127.0.0.1" in message, message
    assert "Connection refused" in message and "PostgreSQL server is running" in message, message
    assert "c.CourseDirectory.db_url" in message, "the URL did not come from POSENC_DB_URL: say where it did"


def test_grading_opens_the_url_with_a_connect_timeout_and_names_the_url_as_set(monkeypatch):
    """Grading opens the gradebook at ``waiting_url`` (a server that does not answer is given up after
    CONNECT_TIMEOUT seconds); a message about it names the URL and the setting as the course wrote them."""
    url = f"postgresql+psycopg2://grader:s3cret@127.0.0.1:{free_port()}/posenc"
    waiting = gradebook.waiting_url(url)
    assert make_url(waiting).query == {"connect_timeout": str(gradebook.CONNECT_TIMEOUT)}
    assert gradebook.waiting_url(f"{url}?connect_timeout=3") == f"{url}?connect_timeout=3", "the course's own kept"
    monkeypatch.setenv("POSENC_DB_URL", url)
    message = gradebook.unreachable(waiting)
    assert message and gradebook.shown(url) in message and "POSENC_DB_URL" in message, message
    assert "connect_timeout" not in message and "s3cret" not in message, message


def test_grading_stops_at_the_first_submission_the_gradebook_fails(tmp_path, monkeypatch):
    """One at a time: the first submission finds the server gone, the others are not attempted."""
    monkeypatch.setenv("POSENC_COURSE_DIR", str(tmp_path / "course"))
    monkeypatch.setenv("POSENC_DB_URL", f"postgresql+psycopg2://grader:s3cret@127.0.0.1:{free_port()}/posenc")
    pairs = [(CHAPTERS[0], "ada"), (CHAPTERS[0], "bob"), (CHAPTERS[1], "ada")]
    results = autograde.autograde(pairs, config.load_config(), jobs=1)
    assert [r["success"] for r in results] == [False] * 3
    assert results[0]["unavailable"] and not results[0].get("skipped")
    assert all(r["skipped"] and r["unavailable"] == results[0]["unavailable"] for r in results[1:])
    assert "s3cret" not in results[0]["unavailable"]


@pytest.mark.slow  # (2 to 4 s: the fast tier stays under a minute)
def test_commands_refuse_a_bad_url_in_one_line(tmp_path):
    result = run_cli("export", course_dir=tmp_path / "course", env={"POSENC_DB_URL": "postgres:/nowhere"})
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stdout.strip().splitlines() == [result.stdout.strip()] and result.stdout.startswith(
        "ERROR POSENC_DB_URL='postgres:/nowhere'"), result.stdout
    assert "Traceback" not in result.stderr, result.stderr


def test_the_instructor_guide_gives_the_measured_class_scale():
    """The guide's class-scale numbers are those of the last run (book/data/class_scale.json, written by
    `python tools/bench_grading.py --class-scale N --json ...`): its command, date, load, table and what follows."""
    data = json.loads((ROOT / "book" / "data" / "class_scale.json").read_text())
    assert data["submissions"] >= 300 and {r["graded"] for r in data["runs"]} == {data["submissions"]}
    assert {(r["db"], r["jobs"]) for r in data["runs"]} == {(db, jobs) for db in ("sqlite", "postgres")
                                                             for jobs in (1, 2)}
    section = (ROOT / "book" / "instructor.md").read_text().split("## Courses too large for one machine", 1)[1]
    flat = " ".join(section.split())
    assert f".venv/bin/{data['command']}\n" in section and f"Measured on {data['date']} " in section
    assert f"load average {data['load_start']:.1f} at the start and {data['load_end']:.1f} at the end" in flat
    assert f"{data['students']} students each handing in the {len(data['chapters'])} chapters" in flat
    assert ", ".join(f"`{c}`" for c in data["chapters"]) in flat and f"{data['submissions']} submissions" in flat
    assert bench_grading.scale_table(data) in section, "the table is the JSON's (bench_grading.scale_table prints it)"
    runs = {(r["db"], r["jobs"]): r for r in data["runs"]}
    assert all(runs[(db, 2)]["seconds"] < runs[(db, 1)]["seconds"] for db in ("sqlite", "postgres")), (
        "the guide says grading time falls with the cores grading")
    two = {r["db"]: r["per_hour"] for r in data["runs"] if r["jobs"] == 2}
    assert f"about {two['sqlite']} (SQLite) and {two['postgres']} (PostgreSQL) submissions an hour" in flat
    chapters = len(course.assignments())
    size = GUIDE_STUDENTS * chapters
    assert (f"{GUIDE_STUDENTS} students handing in all {chapters} chapters is {size:,} submissions: at the slower "
            f"of the two rates, {size / min(two.values()):.1f} hours") in flat


# ---------------------------------------------------------------------------------------------------------
# A real server (slow)

@pytest.mark.slow
def test_the_class_scores_the_same_on_postgresql_as_on_sqlite(postgres_server, tmp_path):
    students = class_of((CHAPTERS[0], ["perfect", "partial", "blank", "wrong_mix", "os_exit"]),
                        (CHAPTERS[1], ["perfect", "partial", "blank", "wrong_mix", "tampered_tests"]))
    for s in students:
        s.write(tmp_path / "submissions")
    url = postgres_server.create_database("posenc")

    on_sqlite = grade(tmp_path / "submissions", tmp_path / "sqlite", None)
    on_postgres = grade(tmp_path / "submissions", tmp_path / "postgres", url)
    for result in (on_sqlite, on_postgres):
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert (tmp_path / "sqlite" / "gradebook.db").exists() and not (tmp_path / "postgres" / "gradebook.db").exists()

    sqlite_grades, postgres_grades = grades(f"sqlite:///{tmp_path / 'sqlite' / 'gradebook.db'}"), grades(url)
    assert postgres_grades == sqlite_grades, "every student, chapter and cell scores the same on both"
    assert not wrong_scores(students, postgres_grades), "\n".join(wrong_scores(students, postgres_grades))
    assert score_tables(on_postgres.stdout) == score_tables(on_sqlite.stdout)

    # No lost or doubled write, seen by PostgreSQL itself: one submission per student and chapter, one grade
    # row per graded cell.
    rows = postgres_server.query("posenc", "SELECT COUNT(*) FROM grade")[0][0]
    assert rows == sum(len(s.expected) for s in students)
    assert postgres_server.query("posenc", "SELECT assignment_id, student_id FROM submitted_assignment "
                                           "GROUP BY assignment_id, student_id HAVING COUNT(*) > 1") == []
    # What the instructor guide says a submission costs the database server: about ten connections (nbgrader opens
    # the gradebook afresh each time) and a hundred or so transactions, counted here by PostgreSQL for the whole
    # `grade` run (its own openings included) and divided by the submissions.
    time.sleep(1)  # PostgreSQL counts a session when it ends and publishes its statistics within a second
    sessions, commits = postgres_server.query(
        "posenc", "SELECT sessions, xact_commit + xact_rollback FROM pg_stat_database WHERE datname = 'posenc'")[0]
    assert 5 <= sessions / len(students) <= 20 and 40 <= commits / len(students) <= 250, (sessions, commits)
    # nbgrader's migrations (alembic, run by `nbgrader db upgrade`) read the schema at their head revision.
    upgrade = subprocess.run([str(VENV_BIN / "nbgrader"), "db", "upgrade"], cwd=ROOT, capture_output=True, text=True,
                             env={**cli_env(tmp_path / "postgres", POSENC_DB_URL=url),
                                  "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}"})
    assert upgrade.returncode == 0, upgrade.stdout + upgrade.stderr
    with gradebook.session():
        head = get_alembic_version()
    assert postgres_server.query("posenc", "SELECT version_num FROM alembic_version") == [(head,)]


@pytest.mark.slow
def test_a_stopped_server_gives_one_clear_line_and_loses_no_grade(postgres_server, tmp_path):
    pg, course_dir = postgres_server, tmp_path / "course"
    url = pg.create_database("posenc")
    first = class_of((CHAPTERS[0], ["perfect", "partial"]))
    later = class_of((CHAPTERS[1], ["perfect", "partial", "blank", "wrong_mix"]), (CHAPTERS[0], ["blank", "wrong_mix"]))
    for s in first:
        s.write(tmp_path / "first")
    for s in later:
        s.write(tmp_path / "later")
    result = grade(tmp_path / "first", course_dir, url)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    before = grades(url)
    assert not wrong_scores(first, before)

    def clear_line(result, starts: str) -> str:
        out = result.stdout + result.stderr
        assert pg.password not in out, "the password is never printed"
        assert "Traceback" not in out, out[-3000:]
        lines = errors(result)
        assert len(lines) == 1 and lines[0].startswith(starts), result.stdout[-3000:]
        assert gradebook.shown(url) in lines[0] and "PostgreSQL server is running" in lines[0], lines[0]
        assert "POSENC_DB_URL" in lines[0], "say which setting to correct"
        return lines[0]

    # Stopped between two runs: nobody is graded, one line says which database and what to do.
    pg.stop()
    clear_line(grade(tmp_path / "later", course_dir, url), "ERROR nobody was graded: the gradebook database")
    exported = run_cli("export", course_dir=course_dir, env={"POSENC_DB_URL": url})
    assert exported.returncode == 2
    clear_line(exported, "ERROR the gradebook database")
    pg.start()
    assert grades(url) == before, "the grades written before the server stopped are all there"

    # Stopped in the middle of a run: the submissions graded before stay graded, one line for the rest.
    proc = subprocess.Popen(cli_command("grade", tmp_path / "later", "--jobs", "2"), cwd=ROOT, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=cli_env(course_dir, CELL_TIMEOUT, POSENC_DB_URL=url, PYTHONUNBUFFERED="1"))
    lines = []
    try:
        for line in proc.stdout:
            lines.append(line)
            if re.match(r"  \S+/\S+: ok ", line):
                pg.stop()  # a fast shutdown: open sessions end, their open transactions roll back
                break
        rest, stderr = proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:
            proc.kill()
    stopped = subprocess.CompletedProcess(proc.args, proc.returncode, "".join(lines) + rest, stderr)
    assert stopped.returncode == 1, stopped.stdout[-3000:] + stopped.stderr[-3000:]
    line = clear_line(stopped, "ERROR grading stopped after ")
    done = {tuple(m.groups()) for m in re.finditer(r"^  (\S+)/(\S+): ok ", stopped.stdout, re.M)}
    graded = int(re.match(r"ERROR grading stopped after (\d+) of (\d+) submissions", line).group(1))
    assert 1 <= graded == len(done) < len(later), line
    pg.start()
    after = grades(url)
    assert {k: after[k] for k in before} == before, "the earlier run's grades are untouched"
    finished = [s for s in later if (s.student, s.assignment) in done]
    assert not wrong_scores(finished, after), "\n".join(wrong_scores(finished, after))

    # Graded again once the server is back: everyone, each grade row once.
    again = grade(tmp_path / "later", course_dir, url)
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    final = grades(url)
    assert not wrong_scores(first + later, final), "\n".join(wrong_scores(first + later, final))
    assert pg.query("posenc", "SELECT COUNT(*) FROM grade")[0][0] == sum(len(s.expected) for s in first + later)
