"""Every chapter: one source notebook, a generated lesson that matches it, and exercises that grade.

For each folder of solutions/: the source (MyST markdown, written as the notebook nbgrader reads) is committed
clean; executed as is it passes all its
own tests (visible and hidden) within the time budget; the lesson in lessons/ is exactly what nbgrader
generates from it; the lesson contains no solution code, hidden test or mark scheme, its narrative cells
run, and every graded test cell fails until the student writes the code.
"""

from __future__ import annotations

import json
import re

import nbformat
import psutil
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError
from nbgrader.utils import is_grade, is_solution

import lessons  # tools/lessons.py (tools/ is on the path through support.py, which conftest imports)
from autograder import course
from autograder.ipc_kernel import IpcKernelManager
from autograder.commands.release import release
from autograder.liveness import DEMO_TAG, demo_cells_to_skip, is_demo

CHAPTERS = course.assignments()
BUDGET_SECONDS = 30  # kernel CPU seconds; each chapter runs once per student at grading time


def _source(name):
    return nbformat.read(course.source_notebook(name), as_version=4)


def _lesson(name):
    return nbformat.read(course.lesson_notebook(name), as_version=4)


def _execute(nb, allow_errors):
    """Run every cell in a fresh kernel; return the kernel's CPU seconds (user + system).

    CPU time, not wall time: it is what the chapter costs on this CPU, and it does not grow when other
    processes share the machine."""
    # skip_cells_with_tag: the book skips exercise cells (tag skip-execution); grading must run them all.
    client = NotebookClient(nb, timeout=120, kernel_name="python3", allow_errors=allow_errors,
                            kernel_manager_class=IpcKernelManager,
                            skip_cells_with_tag="posenc-grading-never-skips",
                            resources={"metadata": {"path": str(course.ROOT)}})
    with client.setup_kernel():
        kernel = psutil.Process(client.km.provisioner.pid)
        for index, cell in enumerate(nb.cells):
            client.execute_cell(cell, index)
        times = kernel.cpu_times()
    return times.user + times.system + times.children_user + times.children_system


def _errored(cell):
    return any(out.get("output_type") == "error" for out in cell.get("outputs", []))


def test_there_are_chapters():
    assert CHAPTERS, "solutions/ holds no chapter notebooks"


@pytest.mark.parametrize("name", CHAPTERS)
def test_source_is_committed_clean(name):
    nb = course.read_source(name)
    assert nb.metadata.kernelspec.name == "python3"
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            assert not cell.outputs, f"{name}: cell {i} has committed outputs (strip them)"
            assert cell.execution_count is None, f"{name}: cell {i} has an execution count"


@pytest.mark.slow
@pytest.mark.parametrize("name", CHAPTERS)
def test_lesson_is_what_nbgrader_generates(name, tmp_path):
    """`make lessons` end to end: nbgrader generates each lesson from its source (``python -m autograder
    release``), tools/lessons.py makes it the book's, as committed."""
    [fresh] = release([name], release_dir=tmp_path)
    assert lessons.finish([name], release_dir=tmp_path) == [fresh]
    committed = (course.lesson_notebook(name)).read_text()
    assert json.loads(fresh.read_text()) == json.loads(committed), (
        f"lessons/{name} is stale: run `make lessons` and commit the result")


@pytest.mark.parametrize("name", CHAPTERS)
def test_lesson_hides_solutions_and_hidden_tests(name):
    source, lesson = _source(name), _lesson(name)
    text = json.dumps(lesson)
    for marker in ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "BEGIN MARK SCHEME"):
        assert marker not in text, f"lessons/{name} still contains '{marker}'"
    # Every line of every solution region and hidden-test region is gone from the lesson, unless the chapter
    # gives it outside those regions too (a colleague's buggy code that the solution repairs). Compared as
    # text, not as the lesson's JSON, where a quote would be escaped and never match.
    region = r"### BEGIN (SOLUTION|HIDDEN TESTS)\n(.*?)### END (SOLUTION|HIDDEN TESTS)"
    given = "\n".join(re.sub(region, "", cell.source, flags=re.S) for cell in source.cells)
    lesson_text = "\n".join(cell.source for cell in lesson.cells)
    for cell in source.cells:
        for _, body, _ in re.findall(region, cell.source, re.S):
            for line in body.splitlines():
                line = line.strip()
                if len(line) > 25 and line not in given:  # long enough to be specific to the solution
                    assert line not in lesson_text, f"lessons/{name} leaks a solution or hidden-test line: {line!r}"
        if is_solution(cell) and cell.cell_type == "markdown":
            assert cell.source.strip() not in text, f"lessons/{name} leaks a written model answer"


@pytest.mark.parametrize("name", CHAPTERS)
def test_lesson_says_which_source_it_is_generated_from(name):
    """Whoever opens a lesson to change it reads, in its notebook metadata, where the chapter is written."""
    note = _lesson(name).metadata.get("posenc", {})
    assert note.get("generated_from") == course.source_markdown(name).relative_to(course.ROOT).as_posix(), note
    assert "make lessons" in note.get("do_not_edit", ""), note


def _graded_ids(nb):
    return [course.grade_id(c) for c in nb.cells if c.cell_type == "code" and is_grade(c) and not is_solution(c)]


@pytest.mark.parametrize("name", CHAPTERS)
def test_demo_tags_are_display_only_and_not_stale(name):
    """Cells tagged `demo` are narrative cells (never a solution, test or locked cell) that grading leaves out
    for the instructor's own solutions: no exercise or test reads a name only they define."""
    nb = _source(name)
    tagged = {i for i, c in enumerate(nb.cells) if DEMO_TAG in c.metadata.get("tags", [])}
    assert all(is_demo(nb.cells[i]) for i in tagged), "only narrative code cells may be tagged demo"
    needed = tagged - demo_cells_to_skip(nb)
    assert not needed, (f"{name}: demo cells {sorted(needed)} define names that an exercise or a test reads; "
                        "untag them or move those names into a cell the exercises may rely on")


@pytest.mark.slow
@pytest.mark.parametrize("name", CHAPTERS)
def test_source_notebook_passes_its_own_tests_within_budget(name):
    nb = _source(name)
    assert _graded_ids(nb), f"{name} has no autograded test cell"
    try:
        seconds = _execute(nb, allow_errors=False)
    except CellExecutionError as exc:
        pytest.fail(f"{name}: the source notebook fails its own tests:\n{str(exc)[-1500:]}")
    assert seconds < BUDGET_SECONDS, f"{name} took {seconds:.1f} s of CPU to execute (budget {BUDGET_SECONDS} s)"


@pytest.mark.slow
@pytest.mark.parametrize("name", CHAPTERS)
def test_lesson_narrative_runs_and_every_test_fails_unsolved(name):
    nb = _lesson(name)
    _execute(nb, allow_errors=True)
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        tags = cell.metadata.get("tags", [])
        if is_grade(cell) and not is_solution(cell):
            assert _errored(cell), f"{name}: test cell {course.grade_id(cell)} passes on the unsolved lesson"
        elif not is_solution(cell) and "raises-exception" not in tags:
            assert not _errored(cell), f"{name}: a narrative cell fails in the lesson:\n{cell.source[:300]}"
