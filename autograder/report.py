"""What `grade` prints: per chapter, a row per student with the score of every problem, the total, and notes on
what happened while grading (read from the autograded notebook)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbgrader.utils import is_grade, is_solution, is_task

from . import course, gradebook, printable, scan


@dataclass(frozen=True)
class Problem:
    grade_id: str
    points: float
    kind: str  # "test": autograded test cell; "written": manually graded answer; "task": manually graded task


def problems(assignment: str) -> list[Problem]:
    """The graded cells of an assignment in notebook order, with their points."""
    nb = nbformat.read(course.source_notebook(assignment), as_version=4)
    found = []
    for cell in nb.cells:
        if is_grade(cell) or is_task(cell):
            kind = "task" if is_task(cell) else "written" if is_solution(cell) else "test"
            found.append(Problem(course.grade_id(cell), float(course.nbgrader_meta(cell).get("points", 0)), kind))
    return found


# Error outputs in an autograded notebook that the instructor should hear about: (name, text in the message,
# what it means).
_NOTABLE = [
    ("CellTimeoutError", "", "timed out"),
    ("KernelDied", "", "kernel died (os._exit or crash): later cells not run"),
    ("KernelUnresponsive", "", "ignored the timeout interrupt: later cells not run"),
    ("RuntimeError", "is the reference this exercise asks you to write", "called posenc's reference"),
    ("SystemExit", "", "sys.exit() in a cell"),
    ("KernelLost", "", "the kernel died or hung while the grader called its code: later cells not run"),
    ("NoAnswer", "", "the kernel did not answer the grader's calls (code that changed or blocked them)"),
]


def _where(cells: list[str]) -> str:
    return ", ".join(cells) if len(cells) <= 2 else f"{cells[0]} and {len(cells) - 1} more cells"


def notes_for(assignment: str, student: str, cfg) -> list[str]:
    """Short notes on what happened while grading one submission, read from its autograded notebook."""
    path = Path(cfg.CourseDirectory.autograded_directory) / student / assignment / f"{assignment}.ipynb"
    if not path.exists():
        return []
    cells_by_note = {}  # what it means -> {cell: None}, in order
    for index, cell in enumerate(nbformat.read(path, as_version=4).cells):
        for out in [out for out in cell.get("outputs", []) if out.get("output_type") == "error"]:
            for name, needle, text in _NOTABLE:
                if out.get("ename") == name and needle in out.get("evalue", ""):
                    cells_by_note.setdefault(text, {})[course.grade_id(cell) or f"cell {index}"] = None
    notes = [f"{_where(list(cells))}: {text}" for text, cells in cells_by_note.items()]
    return notes + reference_notes(assignment, student, cfg)


def reference_notes(assignment: str, student: str, cfg) -> list[str]:
    """A note when the student's handed-in notebook holds code that can reach posenc's reference around the
    tests' block (``scan.AROUND_THE_REFERENCE``): such code can score what the student did not write, and the
    grade cannot tell; `scan` lists every line."""
    path = Path(cfg.CourseDirectory.submitted_directory) / student / assignment / f"{assignment}.ipynb"
    try:
        findings = [f for f in scan.scan_notebook(path, student, assignment)
                    if f.message in scan.AROUND_THE_REFERENCE]
    except Exception:  # (unreadable now: grading has already said why)
        return []
    if not findings:
        return []
    first, more = findings[0], f" and {len(findings) - 1} more" if len(findings) > 1 else ""
    return [f"SCAN {first.cell} line {first.line}: {first.message}{more} (a way around the block on posenc's "
            "reference: read `scan`)"]


def format_table(assignment: str, results: list[gradebook.Result]) -> str:
    """One chapter's score table: a row per student, a column per problem ("-" = awaiting manual grading)."""
    probs = problems(assignment)
    header = ["student"] + [f"{p.grade_id}{'*' if p.kind != 'test' else ''} /{p.points:g}"
                            for p in probs] + [f"total /{sum(p.points for p in probs):g}", "notes"]
    rows = []
    for r in sorted(results, key=lambda r: r.student):
        cells = [printable.one_line(r.student)]
        for p in probs:
            s = r.scores.get(p.grade_id)
            waiting = s is not None and s.needs_manual_grade and s.manual_score is None
            cells.append("?" if s is None else "-" if waiting else f"{s.score:g}")
        cells.append(f"{r.total:g}")
        cells.append(printable.one_line("; ".join(r.notes)))  # (a student's string: one line, no escapes)
        rows.append(cells)
    widths = [max(len(str(row[i])) for row in [header] + rows) for i in range(len(header) - 1)]
    lines = [f"{assignment}   (* graded by hand in formgrader; '-' = not graded yet)"]
    for row in [header] + rows:
        lines.append("  ".join(str(c).ljust(w) for c, w in zip(row, widths)) + "  " + row[-1])
    return "\n".join(line.rstrip() for line in lines)
