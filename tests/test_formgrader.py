"""Grading in formgrader, the way an instructor does it: a course folder with the released assignments, one
autograded submission, the live server's formgrader API listing the assignments, a written answer scored
by hand through that API, and the score in `nbgrader export`'s CSV. Everything in a temporary course."""

from __future__ import annotations

import csv
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from support import ROOT, VENV_BIN, jupyter_lab, toc_chapters, write_course_config

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("formgrader")]

STUDENT = "ada"


def nbgrader(course: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    done = subprocess.run([str(VENV_BIN / "nbgrader"), *args], cwd=course, capture_output=True, text=True,
                          timeout=timeout, env={"PATH": f"{VENV_BIN}:/usr/bin:/bin", "HOME": str(course),
                                                "POSENC_COURSE_DIR": str(course / "course"),
                                                "POSENC_CELL_TIMEOUT": "60", "PYTHONHASHSEED": "0",
                                                "MPLBACKEND": "Agg"})
    assert done.returncode == 0, f"nbgrader {' '.join(args)} failed:\n{done.stdout[-3000:]}{done.stderr[-3000:]}"
    return done


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """A course folder: the course's nbgrader configuration with its root moved here, the source notebooks,
    every assignment generated (released), and one student's autograded submission of the smallest chapter."""
    root = tmp_path_factory.mktemp("course")
    chapters = [Path(c).name for c in toc_chapters()]
    for chapter in chapters:
        shutil.copytree(ROOT / "solutions" / chapter, root / "solutions" / chapter,
                        ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    write_course_config(root)
    (root / "course").mkdir()  # gradebook, submissions and exchange (POSENC_COURSE_DIR)
    nbgrader(root, "db", "student", "add", STUDENT, "--first-name=Ada", "--last-name=Lovelace")
    # `nbgrader generate_assignment` for every chapter, in one process (nbgrader's own API; a CLI call per chapter
    # spends most of its time importing).
    script = ("import sys\n"
              "from nbgrader.apps import NbGraderAPI\n"
              "from traitlets.config.loader import PyFileConfigLoader\n"
              "config = PyFileConfigLoader('nbgrader_config.py', path='.').load_config()\n"
              "api = NbGraderAPI(config=config)\n"
              "for name in sys.argv[1:]:\n"
              "    result = api.generate_assignment(name, force=True)\n"
              "    assert result['success'], result\n")
    done = subprocess.run([sys.executable, "-c", script, *chapters], cwd=root, capture_output=True, text=True,
                          env={**os.environ, "POSENC_COURSE_DIR": str(root / "course")}, timeout=600)
    assert done.returncode == 0, f"generate_assignment failed:\n{done.stdout[-3000:]}{done.stderr[-3000:]}"
    # The fake student hands in the solved source notebook (smallest chapter: autograding runs it).
    graded = min(chapters, key=lambda c: (root / "solutions" / c / f"{c}.ipynb").stat().st_size)
    submitted = root / "course" / "submitted" / STUDENT / graded
    submitted.mkdir(parents=True)
    shutil.copy(root / "solutions" / graded / f"{graded}.ipynb", submitted / f"{graded}.ipynb")
    nbgrader(root, "autograde", graded, "--force")
    return root, chapters, graded


def export_scores(root: Path, graded: str) -> dict:
    nbgrader(root, "export", "--to", str(root / "grades.csv"))
    with open(root / "grades.csv") as f:
        rows = [r for r in csv.DictReader(f) if r["student_id"] == STUDENT and r["assignment"] == graded]
    assert rows, f"no row for {STUDENT}/{graded} in the exported CSV"
    return rows[0]


def test_formgrader_lists_assignments_and_takes_a_manual_grade(course, tmp_path):
    root, chapters, graded = course
    before = export_scores(root, graded)
    with jupyter_lab(root, cwd=root, tmp=tmp_path, env={"POSENC_COURSE_DIR": str(root / "course")}) as server:
        assignments = server.get("/formgrader/api/assignments")
        listed = {a["name"]: a for a in assignments}
        assert set(chapters) <= set(listed), f"formgrader lists {sorted(listed)}, not every chapter {chapters}"
        assert listed[graded]["num_submissions"] == 1, listed[graded]

        submissions = server.get(f"/formgrader/api/submitted_notebooks/{graded}/{graded}")
        assert len(submissions) == 1 and submissions[0]["student"] == STUDENT, submissions
        assert submissions[0]["needs_manual_grade"], "the written answer should wait for a manual grade"
        grades = server.get(f"/formgrader/api/grades?submission_id={submissions[0]['id']}")
        manual = [g for g in grades if g["needs_manual_grade"] and g["max_score"]]
        assert manual, f"no manually graded answer in {graded}: {grades}"
        answer = manual[0]
        scored = server.request("PUT", f"/formgrader/api/grade/{answer['id']}",
                                {"manual_score": answer["max_score"], "extra_credit": None})
        assert scored["manual_score"] == answer["max_score"] and not scored["needs_manual_grade"], scored
        again = server.get(f"/formgrader/api/grade/{answer['id']}")
        assert again["manual_score"] == answer["max_score"] and not again["needs_manual_grade"], again
    after = export_scores(root, graded)
    gained = float(after["raw_score"]) - float(before["raw_score"])
    assert gained == pytest.approx(answer["max_score"]), (before, after)
    assert float(after["max_score"]) >= float(after["raw_score"]) > 0
