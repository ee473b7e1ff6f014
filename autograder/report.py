"""What `grade` prints: per chapter, each student's scores and notes on what happened while grading."""

import collections
from pathlib import Path

import nbformat
from nbgrader.utils import is_grade, is_solution, is_task

from . import course, gradebook, printable, scan


# kind: "test", an autograded test cell; "written", a manually graded answer; "task", a manually graded task
Problem = collections.namedtuple("Problem", "grade_id points kind")


def problems(assignment: str) -> list[Problem]:
    """The graded cells of an assignment in notebook order, with their points."""
    cells = nbformat.read(course.source_notebook(assignment), as_version=4).cells
    return [Problem(course.grade_id(c), float(course.nbgrader_meta(c).get("points", 0)),
                    "task" if is_task(c) else "written" if is_solution(c) else "test")
            for c in cells if is_grade(c) or is_task(c)]


# The errors in an autograded notebook the instructor should hear of (a RuntimeError only with _REFERENCE in it).
_NOTABLE = {"CellTimeoutError": "timed out", "KernelDied": "kernel died (os._exit or crash): later cells not run",
            "KernelUnresponsive": "ignored the timeout interrupt: later cells not run",
            "RuntimeError": "called posenc's reference", "SystemExit": "sys.exit() in a cell",
            "KernelLost": "the kernel died or hung while the grader called its code: later cells not run",
            "NoAnswer": "the kernel did not answer the grader's calls (code that changed or blocked them)"}
_REFERENCE = "is the reference this exercise asks you to write"


def notes_for(assignment: str, student: str, cfg) -> list[str]:
    """Notes on what happened while grading one submission (its autograded notebook), and its ``reference_notes``."""
    path = Path(cfg.CourseDirectory.autograded_directory) / student / assignment / f"{assignment}.ipynb"
    if not path.exists():
        return []
    cells_by_note = {}  # what it means -> {cell: None}, in order
    for index, cell in enumerate(nbformat.read(path, as_version=4).cells):
        for out in cell.get("outputs", []):
            note = _NOTABLE.get(out.get("ename")) if out.get("output_type") == "error" else None
            if note and (out["ename"] != "RuntimeError" or _REFERENCE in out.get("evalue", "")):
                cells_by_note.setdefault(note, {})[course.grade_id(cell) or f"cell {index}"] = None
    notes = [(", ".join(cells) if len(cells) <= 2 else f"{next(iter(cells))} and {len(cells) - 1} more cells")
             + f": {note}" for note, cells in cells_by_note.items()]
    return notes + reference_notes(assignment, student, cfg)


def reference_notes(assignment: str, student: str, cfg) -> list[str]:
    """A note when the student's handed-in notebook holds code that can reach posenc's reference around the
    tests' block (``scan.AROUND_THE_REFERENCE``), which can score what they did not write (`scan`: every line)."""
    path = Path(cfg.CourseDirectory.submitted_directory) / student / assignment / f"{assignment}.ipynb"
    try:
        found = [f for f in scan.scan_notebook(path, student, assignment) if f.message in scan.AROUND_THE_REFERENCE]
    except Exception:  # (unreadable now: grading has already said why)
        return []
    more = f" and {len(found) - 1} more" if len(found) > 1 else ""
    return [f"SCAN {f.cell} line {f.line}: {f.message}{more} (a way around the block on posenc's reference: read "
            "`scan`)" for f in found[:1]]


def format_table(assignment: str, results: list[gradebook.Result]) -> str:
    """One chapter's score table: a row per student, a column per problem ("-" = awaiting manual grading)."""
    probs = problems(assignment)
    rows = [["student", *(f"{p.grade_id}{'*' if p.kind != 'test' else ''} /{p.points:g}" for p in probs),
             f"total /{sum(p.points for p in probs):g}", "notes"]]
    for r in sorted(results, key=lambda r: r.student):
        scores = [r.scores.get(p.grade_id) for p in probs]
        rows.append([printable.one_line(r.student),  # (a student's strings: one line, no escapes)
                     *("?" if s is None else "-" if s.needs_manual_grade and s.manual_score is None
                       else f"{s.score:g}" for s in scores),
                     f"{r.total:g}", printable.one_line("; ".join(r.notes))])
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths)) + "  " + row[-1] for row in rows]
    return "\n".join([f"{assignment}   (* graded by hand in formgrader; '-' = not graded yet)"]
                     + [line.rstrip() for line in lines])
