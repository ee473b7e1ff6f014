"""``python -m autograder grade SUBMISSIONS [--jobs N] [--assignment CH] [--unsandboxed]``: the steps are listed
in autograder/README.md ("Commands")."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from .. import autograde, config, course, gradebook, printable, report, submissions


def grade(folder, jobs: int = 1, assignments=None, out=print, unsandboxed: bool = False) -> int:
    """Returns 1 if any submission could not be graded, 2 if nobody was (no sandbox without ``unsandboxed``, a
    bad setting, a gradebook that cannot be opened), 0 otherwise."""
    if config.refused(unsandboxed, out):
        return 2
    try:
        submissions.max_folder_bytes()
        cfg = config.load_config(sandboxed=not unsandboxed)
        gradebook.check(cfg)
    except (ValueError, gradebook.Unavailable) as exc:
        out(f"ERROR nobody was graded: {exc}")
        return 2
    found, errors = submissions.find_submissions(Path(folder), assignments)
    for message in errors:
        out(f"ERROR {printable.one_line(message)}")  # (file names from a student's folder: one line each)
    if not found:
        out("no gradable submissions found")
        return 1
    try:
        with gradebook.session():
            return _grade(found, errors, cfg, jobs, out)
    except gradebook.Unavailable as exc:  # the database server stopped answering between two steps
        out(f"ERROR {exc}")
        return 1


def _grade(found, errors: list, cfg, jobs, out) -> int:
    failures = gradebook.sync_assignments(sorted({s.assignment for s in found}), cfg)
    for message in failures.values():
        out(f"ERROR {message}")
    found = [s for s in found if s.assignment not in failures]
    gradebook.register_students([s.student for s in found], cfg)
    copied = []
    for sub in found:
        try:
            submissions.copy_in(sub, cfg)
            copied.append(sub)
        except (OSError, shutil.Error, RecursionError) as exc:  # (what changed since find_submissions looked)
            out(f"ERROR {sub.student}: {sub.assignment} not graded: its folder could not be copied "
                f"({type(exc).__name__}: {printable.one_line(str(exc)[:200])})")  # (its file names: one line)
    if not copied:
        return 1
    names = sorted({s.assignment for s in copied})
    out(f"autograding {len(copied)} submissions of {len(names)} assignments with {jobs} job(s) "
        f"into {course.course_dir()}")
    start = time.perf_counter()
    results = autograde.autograde([(s.assignment, s.student) for s in copied], cfg, jobs=jobs, progress=lambda r: out(
        f"  {r['student']}/{r['assignment']}: {'ok' if r['success'] else 'FAILED'} ({r['seconds']:.1f} s)"))
    out(f"autograded in {time.perf_counter() - start:.1f} s")
    if down := next((r["unavailable"] for r in results if r.get("unavailable")), None):  # (one line for all)
        out(f"ERROR grading stopped after {sum(r['success'] for r in results)} of {len(results)} submissions: "
            f"{down}")
        return 1
    for r in results:
        if not r["success"]:
            out(f"ERROR {r['student']}: {r['assignment']}" + (f" not graded: {r['error']}" if r.get("died") else
                                                              f": nbgrader could not autograde it:\n{r['error']}"))
    scores = gradebook.read_scores(names, cfg)
    for name in names:
        rows = [scores[s.student, name] for s in copied if s.assignment == name and (s.student, name) in scores]
        for r in rows:
            r.notes = report.notes_for(name, r.student, cfg)
        out(f"\n{report.format_table(name, rows)}")
    return 1 if errors or failures or len(copied) < len(found) or not all(r["success"] for r in results) else 0
