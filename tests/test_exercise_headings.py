"""Every exercise heading says what the exercise asks (its kind) and how many points it is worth, and the points
in the heading are the gradebook's: the cells between one exercise heading and the next (or the end of the
practice problems) carry exactly that many points."""

from __future__ import annotations

import re

import nbformat
import pytest

from autograder import course

CHAPTERS = course.assignments()
HEADING = re.compile(r"^###\s+Exercise\s+(\d+)\b(.*)$")
KINDS = ("derive", "implement from a description", "diagnose", "predict, then measure")
# The chapters whose exercises are held to the four kinds (the arena's chapters 8 and 9 have exercises of
# judgement on measured data, "decide", not yet named so).
NAMED_KINDS = [name for name in CHAPTERS if name[:2] not in ("08", "09")]


def exercises(name: str) -> list[tuple[str, float]]:
    """[(heading, points of the graded cells under it)] in order."""
    nb = nbformat.read(course.source_notebook(name), as_version=4)
    found = []
    for cell in nb.cells:
        first = cell.source.splitlines()[0] if cell.source else ""
        if cell.cell_type == "markdown" and HEADING.match(first):
            found.append([first, 0.0])
        elif cell.cell_type == "markdown" and first.startswith("## ") and found:
            found.append(["", 0.0])  # a section after the exercises: nothing more counts
        meta = course.nbgrader_meta(cell)
        if meta.get("grade") or meta.get("task"):
            if not found or not found[-1][0]:
                continue
            found[-1][1] += float(meta.get("points", 0))
    return [(h, p) for h, p in found if h]


def heading_points(heading: str) -> float:
    """The points a heading states: every "N point(s)" and "N + M points" in its last parenthesis."""
    inside = heading[heading.rfind("(") + 1:]
    total = 0.0
    for group in re.findall(r"((?:\d+(?:\.\d+)?\s*\+\s*)*\d+(?:\.\d+)?)\s*points?\b", inside):
        total += sum(float(n) for n in group.split("+"))
    return total


@pytest.mark.parametrize("name", CHAPTERS)
def test_the_points_a_heading_states_are_the_gradebooks(name):
    found = exercises(name)
    assert found, f"{name}: no exercise headings"
    wrong = [f"{h!r}: the heading says {heading_points(h):g}, the cells carry {p:g}"
             for h, p in found if heading_points(h) != p]
    assert not wrong, f"{name}:\n" + "\n".join(wrong)


def test_points_are_read_from_every_form_of_heading():
    assert heading_points("### Exercise 3: debug (2 points + 3 points for the proof)") == 5
    assert heading_points("### Exercise 6: beyond (1 + 2 + 2 + 3 points)") == 8
    assert heading_points("### Exercise 5: predict (1 point + 2 points)") == 3
    assert heading_points("### Exercise 2: rule (derivation, 2 points; computation, 2 points)") == 4


@pytest.mark.parametrize("name", NAMED_KINDS)
def test_every_heading_names_what_the_exercise_asks(name):
    """Each exercise says in its heading what it asks for: a derivation, an implementation from a description,
    the diagnosis of a planted bug, or a prediction checked by a measurement (no autograded point for
    transcribing a formula shown above)."""
    unnamed = [h for h, _ in exercises(name)
               if not any(re.search(rf"\(\s*{re.escape(kind)}\b|[;,]\s*{re.escape(kind)}\b", h) for kind in KINDS)]
    assert not unnamed, f"{name}: headings that do not name their kind ({', '.join(KINDS)}):\n" + "\n".join(unnamed)
