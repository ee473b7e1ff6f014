"""A synthetic class: student submissions generated from any assignment's notebooks, with the score each
one must get, derived from the nbgrader metadata (points of each test cell) and not typed in. The tests grade
them with the real pipeline, and the grading benchmark (``tools/bench_grading.py``) grades the plain kinds.

Every submission starts from the released lesson (what a student downloads). ``perfect`` puts the source
notebook's solutions in, ``blank`` hands the lesson in untouched, ``partial`` solves the first exercises
only. The hostile kinds change what a student would change (their own cells) to try what the tests must
withstand: wrong answers, wrong types and shapes, exceptions, answers hard-coded to the visible tests,
monkeypatched numpy/math/posenc, edited or deleted test cells, an infinite loop (one that the timeout's
interrupt stops and one that ignores it), sys.exit(), os._exit(), a huge printed output, a corrupt file.

An *exercise* here is a group: the solution code cells between two test cells and the test cells that
follow them (a second test cell right after a first one belongs to the same exercise).
"""

from __future__ import annotations

import ast
import copy
import json
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbgrader.utils import is_grade, is_locked, is_solution, is_task

from autograder import course
from autograder.ipc_kernel import IpcKernelManager
from autograder.preprocessors.instructor_tests import setup_imports

from . import payloads
from .student_code import call_tables, pasted, wrong

# What a test cell calls that makes it refuse to run after numpy/math/posenc were replaced.
CHECKED = re.compile(r"\bchecks\.(close|equal|without)\(")
WITHOUT = re.compile(r"\bchecks\.without\(")


def _is_solution_code(cell) -> bool:
    return cell.cell_type == "code" and is_solution(cell) and not is_grade(cell)


def _is_test(cell) -> bool:
    return cell.cell_type == "code" and is_grade(cell) and not is_solution(cell)


def _is_written(cell) -> bool:
    return cell.cell_type == "markdown" and is_grade(cell) and is_solution(cell)


@dataclass
class Exercise:
    solutions: list[str]  # grade_ids of the solution code cells
    tests: list[str]      # grade_ids of the test cells


@dataclass
class Assignment:
    """An assignment as the generator sees it: its source, its lesson, its exercises and points."""
    name: str
    source: nbformat.NotebookNode
    lesson: nbformat.NotebookNode
    exercises: list[Exercise]
    points: dict[str, float]   # grade_id -> points of every graded cell
    written: list[str]         # grade_ids of manually graded answers
    test_source: dict[str, str]
    solution_source: dict[str, str]

    @classmethod
    def load(cls, name: str) -> "Assignment":
        source = nbformat.read(course.source_notebook(name), as_version=4)
        lesson = nbformat.read(course.lesson_notebook(name), as_version=4)
        exercises, pending = [], []
        points, written, tests, solutions = {}, [], {}, {}
        for cell in source.cells:
            gid = course.grade_id(cell)
            if is_grade(cell) or is_task(cell):
                points[gid] = float(course.nbgrader_meta(cell).get("points", 0))
            if _is_solution_code(cell):
                pending.append(gid)
                solutions[gid] = cell.source
            elif _is_test(cell):
                tests[gid] = cell.source
                if pending:
                    exercises.append(Exercise(pending, [gid]))
                    pending = []
                elif exercises:
                    exercises[-1].tests.append(gid)
                else:
                    exercises.append(Exercise([], [gid]))
            elif _is_written(cell) or is_task(cell):
                written.append(gid)
        return cls(name, source, lesson, exercises, points, written, tests, solutions)

    def setup_imports_checks(self) -> bool:
        """Whether the locked setup code imports autograder's checks (the grader then re-checks before tests)."""
        setup = [c.source for c in self.source.cells if c.cell_type == "code" and is_locked(c)
                 and not is_grade(c) and not is_solution(c)]
        return "from autograder import checks" in setup_imports(setup)

    def test_ids(self) -> list[str]:
        return [t for ex in self.exercises for t in ex.tests]

    def function_names(self, solution_id: str) -> list[str]:
        """Top-level functions a solution cell defines (empty for a cell that assigns values)."""
        tree = ast.parse(self.solution_source[solution_id])
        return [n.name for n in tree.body if isinstance(n, ast.FunctionDef)]

    def value_names(self, solution_id: str) -> list[str]:
        """Top-level names a solution cell assigns (outside functions)."""
        tree = ast.parse(self.solution_source[solution_id])
        names = []
        for node in tree.body:
            if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                    names += [t.id for t in ast.walk(target) if isinstance(t, ast.Name) and t.id not in names]
        return names


@dataclass
class Student:
    """One generated submission and what the gradebook must say about it."""
    student: str
    assignment: str
    notebook: nbformat.NotebookNode | None
    expected: dict[str, float]            # grade_id -> score right after autograding
    needs_manual: set[str] = field(default_factory=set)  # written answers nbgrader leaves for a human
    raw: bytes | None = None              # the file's bytes, for a corrupt submission

    def write(self, folder: Path) -> Path:
        path = Path(folder) / self.student / self.assignment / f"{self.assignment}.ipynb"
        path.parent.mkdir(parents=True, exist_ok=True)
        if self.raw is not None:
            path.write_bytes(self.raw)
        else:
            nbformat.write(self.notebook, path)
        return path


def strip_markers(source: str) -> str:
    """A solution as a student would type it: without nbgrader's BEGIN/END SOLUTION lines."""
    return "\n".join(line for line in source.splitlines()
                     if line.strip() not in ("### BEGIN SOLUTION", "### END SOLUTION"))


def find_cell(nb, grade_id):
    for cell in nb.cells:
        if course.grade_id(cell) == grade_id:
            return cell
    raise KeyError(f"no cell with grade_id {grade_id!r}")


class Builder:
    """Makes the submissions of one assignment."""

    def __init__(self, name: str):
        self.a = Assignment.load(name)

    # -- plain kinds -----------------------------------------------------------------------------------------
    def _base(self, solved_exercises, answer_written: bool):
        nb = copy.deepcopy(self.a.lesson)
        for i, ex in enumerate(self.a.exercises):
            if i in solved_exercises:
                for sid in ex.solutions:
                    find_cell(nb, sid).source = strip_markers(self.a.solution_source[sid])
        if answer_written:
            for wid in self.a.written:
                cell = find_cell(nb, wid)
                if is_solution(cell):
                    cell.source = strip_markers(find_cell(self.a.source, wid).source)
        return nb

    def _expect(self, passing_tests, answer_written: bool):
        expected = {t: (self.a.points[t] if t in passing_tests else 0.0) for t in self.a.test_ids()}
        expected.update({w: 0.0 for w in self.a.written})
        manual = set(w for w in self.a.written if answer_written and is_solution(find_cell(self.a.source, w)))
        return expected, manual

    def _tests_of(self, exercise_indices):
        return {t for i in exercise_indices for t in self.a.exercises[i].tests}

    def perfect(self, student="perfect") -> Student:
        everything = range(len(self.a.exercises))
        expected, manual = self._expect(self._tests_of(everything), True)
        return Student(student, self.a.name, self._base(set(everything), True), expected, manual)

    def blank(self, student="blank") -> Student:
        expected, manual = self._expect(set(), False)
        return Student(student, self.a.name, copy.deepcopy(self.a.lesson), expected, manual)

    def partial(self, student="partial") -> Student:
        """The first half of the exercises solved (at least one, never all when there are two or more)."""
        n = len(self.a.exercises)
        solved = set(range(max(1, n // 2))) if n > 1 else set()
        expected, manual = self._expect(self._tests_of(solved), False)
        return Student(student, self.a.name, self._base(solved, False), expected, manual)

    # -- hostile kinds ---------------------------------------------------------------------------------------
    def _perfect_with(self, student, prefix_by_exercise: dict[int, str], passing) -> Student:
        nb = self._base(set(range(len(self.a.exercises))), True)
        for i, prefix in prefix_by_exercise.items():
            first = self.a.exercises[i].solutions[0]
            cell = find_cell(nb, first)
            cell.source = prefix + cell.source
        expected, manual = self._expect(passing, True)
        return Student(student, self.a.name, nb, expected, manual)

    def _target(self) -> int:
        """The exercise the disruptive kinds hit: the second one with a solution cell (the first if only one)."""
        with_code = [i for i, ex in enumerate(self.a.exercises) if ex.solutions]
        return with_code[1] if len(with_code) > 1 else with_code[0]

    def _wrong_notebook(self, kind_of):
        """Every exercise solved, then made wrong: kind_of(i) is "value", "type", "shape" or "raises".
        Returns the notebook and the exercises actually made wrong (a solution that only defines a class
        keeps its honest code except for "raises")."""
        nb = self._base(set(range(len(self.a.exercises))), True)
        changed = set()
        for i, ex in enumerate(self.a.exercises):
            kind = kind_of(i)
            for sid in ex.solutions:
                cell = find_cell(nb, sid)
                functions, values = self.a.function_names(sid), self.a.value_names(sid)
                if kind == "raises" or functions or values:
                    changed.add(i)
                if kind == "raises":
                    if functions:
                        cell.source += "\n\n" + pasted(wrong) + "".join(
                            f"{f} = _raising({f!r})\n" for f in functions)
                    else:
                        cell.source = "raise ValueError('a bug before the answers are assigned')\n" + cell.source
                else:
                    cell.source += "\n\n" + pasted(wrong) + "".join(
                        f"{f} = _wrap_wrong({f}, {kind!r})\n" for f in functions) + "".join(
                        f"{v} = _make_wrong({v}, {kind!r})\n" for v in values if not functions)
        return nb, changed

    def _all_but(self, exercises):
        return set(self.a.test_ids()) - self._tests_of(exercises)

    def wrong_mix(self, student="wrong") -> Student:
        """Exercise i gets a wrong value, a wrong type, a wrong shape or an exception (i mod 4)."""
        kinds = ["value", "type", "shape", "raises"]
        nb, changed = self._wrong_notebook(lambda i: kinds[i % 4])
        expected, manual = self._expect(self._all_but(changed), True)
        return Student(student, self.a.name, nb, expected, manual)

    def fake_checks(self, student, cheat: str) -> Student:
        """Every answer off by 0.5 (shapes and types right, so only the checks' comparisons can fail), plus a
        cheat at the top of the first solution cell that swaps the checks for ones that accept anything.
        The grader re-imports the real checks before each test: every test scores 0."""
        nb, changed = self._wrong_notebook(lambda i: "value")
        first = next(i for i, ex in enumerate(self.a.exercises) if ex.solutions)
        cell = find_cell(nb, self.a.exercises[first].solutions[0])
        cell.source = payloads.FAKE_CHECKS[cheat] + "\n" + cell.source
        expected, manual = self._expect(self._all_but(changed), True)
        return Student(student, self.a.name, nb, expected, manual)

    def replaced_solutions(self, student, replacements: dict[str, str], zero_if_blocked: bool) -> Student:
        """Solution cells replaced by given code (keyed by grade_id). With zero_if_blocked, every exercise
        whose cells were replaced and whose test calls checks.without() expects 0 (the code calls posenc's
        reference); otherwise the replacements are correct and every test expects full points."""
        nb = self._base(set(range(len(self.a.exercises))), True)
        failing = set()
        for sid, code in replacements.items():
            find_cell(nb, sid).source = code
            for ex in self.a.exercises:
                if sid in ex.solutions and zero_if_blocked:
                    failing |= {t for t in ex.tests if WITHOUT.search(self.a.test_source[t])}
        expected, manual = self._expect(set(self.a.test_ids()) - failing, True)
        return Student(student, self.a.name, nb, expected, manual)

    def patched(self, student, patch: str) -> Student:
        """Correct solutions, plus a monkeypatch at the top of the first solution cell. The patch runs in the
        student's kernel only; the tests run only in the grading process, from the values the correct code
        returns: full marks."""
        first = next(i for i, ex in enumerate(self.a.exercises) if ex.solutions)
        return self._perfect_with(student, {first: patch + "\n"}, set(self.a.test_ids()))

    def payload(self, student, code: str) -> Student:
        """The untouched lesson (every stub raises) with an IPython payload at the top of the first solution
        cell: hooks that make later cells look passed to nbgrader. Every test must score 0."""
        nb = copy.deepcopy(self.a.lesson)
        first = next(ex for ex in self.a.exercises if ex.solutions)
        cell = find_cell(nb, first.solutions[0])
        cell.source = code + "\n" + cell.source
        expected, manual = self._expect(set(), False)
        return Student(student, self.a.name, nb, expected, manual)

    def harmless_hooks(self, student="harmless_hooks") -> Student:
        """Correct solutions that also register IPython hooks doing nothing wrong (an identity input
        transformer, a timing callback, a custom exception handler that re-raises): full marks."""
        first = next(i for i, ex in enumerate(self.a.exercises) if ex.solutions)
        return self._perfect_with(student, {first: payloads.HARMLESS_HOOKS}, set(self.a.test_ids()))

    def tampered_tests(self, student="edits_tests") -> Student:
        """The partial student, who also replaced every test cell by `pass`, raised a test's points and
        unlocked it, deleted the first test cell (of a solved exercise: restored, it passes) and deleted the
        last exercise whole, solution and test cells (restored, its test fails). nbgrader restores the
        tests, so the score is the partial one."""
        base = self.partial(student)
        nb = base.notebook
        tests = self.a.test_ids()
        for tid in tests:
            find_cell(nb, tid).source = "pass  # the tests are gone"
        if len(tests) > 1:
            meta = course.nbgrader_meta(find_cell(nb, tests[1]))
            meta["points"], meta["locked"] = 100, False
        nb.cells.remove(find_cell(nb, tests[0]))
        last = self.a.exercises[-1]
        if len(self.a.exercises) >= 2:  # the partial student left it unsolved: deleting it costs nothing
            for gid in last.solutions + last.tests:
                nb.cells.remove(find_cell(nb, gid))
        return Student(student, self.a.name, nb, base.expected, base.needs_manual)

    def disruptive(self, student="disruptive") -> Student:
        """Correct code, disturbed. In the exercises with code, in order: the first prints 30 MB on one line
        and 100 000 short lines (full marks, small files); the second starts with `while True: pass` (the
        timeout interrupts it: 0 for it alone); the third is left alone (full marks: grading went on); the
        fourth starts with sys.exit() (IPython makes it an error in that cell: 0 for it alone); a fifth, if
        any, with os._exit() (the kernel dies: 0 for it and everything after)."""
        code = [i for i, ex in enumerate(self.a.exercises) if ex.solutions]
        prefixes = {code[0]: payloads.body(payloads.flood_output) + "\n"}
        failing = set()
        for index, prefix in [(1, payloads.body(payloads.endless_loop) + "\n"),
                              (3 if len(code) > 3 else 2, payloads.body(payloads.exits) + "\n")]:
            if index < len(code):
                prefixes[code[index]] = prefix
                failing |= set(self.a.exercises[code[index]].tests)
        if len(code) > 4:
            prefixes[code[4]] = payloads.body(payloads.kills_kernel) + "\n"
            failing |= self._tests_of(range(code[4], len(self.a.exercises)))
        return self._perfect_with(student, prefixes, set(self.a.test_ids()) - failing)

    def stubborn_loop(self, student="stubborn_loop") -> Student:
        """A loop that swallows the timeout's interrupt: the kernel is shut down, the exercises before it
        keep their points, that one and every later one score 0."""
        t = self._target()
        passing = self._tests_of(range(t))
        return self._perfect_with(student, {t: payloads.body(payloads.swallows_interrupts) + "\n"}, passing)

    def os_exit(self, student="os_exit") -> Student:
        """os._exit() kills the kernel: the exercises before keep their points, the rest score 0."""
        t = self._target()
        return self._perfect_with(student, {t: payloads.body(payloads.kills_kernel) + "\n"}, self._tests_of(range(t)))

    def corrupt(self, student="corrupt") -> Student:
        return Student(student, self.a.name, None, {}, set(), raw=b'{"cells": [{"cell_type": "code", "sour')

    # -- answers hard-coded to the visible tests --------------------------------------------------------------
    def hardcoded(self, student="hardcoded", workdir: Path | None = None) -> Student:
        """Each solution function replaced by a lookup table of the calls the visible tests make (recorded
        by running the source notebook once), returning None for anything else. A test cell scores only if
        its hidden tests call nothing new; exercises whose calls cannot be tabulated keep honest code."""
        calls = record_calls(self.a, workdir)
        visible = {}
        for (tid, phase, fn, key), value in calls["calls"].items():
            if phase == "visible":
                visible.setdefault(fn, {})[key] = value
        unusable = set(calls["unencodable"])
        nb = self._base(set(range(len(self.a.exercises))), True)
        hardcoded_functions = set()
        for ex in self.a.exercises:
            for sid in ex.solutions:
                functions = self.a.function_names(sid)
                if not functions or set(functions) & unusable:
                    continue
                body = pasted(call_tables) + "\n\n" + "".join(
                    f"_TABLE_{f} = _json.loads({json.dumps(json.dumps(visible.get(f, {})))})\n\n\n"
                    f"def {f}(*args, **kwargs):\n    return _lookup(_TABLE_{f}, args, kwargs)\n\n\n"
                    for f in functions)
                find_cell(nb, sid).source = body
                hardcoded_functions |= set(functions)
        passing = set(self.a.test_ids())
        for (tid, phase, fn, key), _ in calls["calls"].items():
            if fn in hardcoded_functions and key not in visible.get(fn, {}):
                passing.discard(tid)
        expected, manual = self._expect(passing, True)
        return Student(student, self.a.name, nb, expected, manual)


def record_calls(a: Assignment, workdir: Path | None = None) -> dict:
    """Run the source notebook with every solution function wrapped by a recorder: which calls each test
    cell makes, in its visible part and its hidden part, and what the reference solution returned."""
    nb = copy.deepcopy(a.source)
    for cell in nb.cells:
        if _is_solution_code(cell):
            functions = a.function_names(course.grade_id(cell))
            cell.source += "\n" + "".join(f"\n{f} = _posenc_rec.wrap({f!r}, {f})" for f in functions)
        elif _is_test(cell):
            tid = course.grade_id(cell)
            lines = [f"_posenc_rec.phase = ({tid!r}, 'visible')"]
            for line in cell.source.splitlines():
                lines.append(line)
                if line.strip() == "### BEGIN HIDDEN TESTS":
                    indent = line[: len(line) - len(line.lstrip())]
                    lines.append(f"{indent}_posenc_rec.phase = ({tid!r}, 'hidden')")
            lines.append("_posenc_rec.phase = None")
            cell.source = "\n".join(lines)
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        out = Path(tmp) / "calls.json"
        nb.cells.insert(0, nbformat.v4.new_code_cell(pasted(call_tables) + "\n\n_posenc_rec = _Recorder()\n"))
        nb.cells.append(nbformat.v4.new_code_cell(f"_posenc_rec.dump({str(out)!r})"))
        NotebookClient(nb, timeout=300, kernel_name="python3", allow_errors=False,
                       kernel_manager_class=IpcKernelManager,
                       skip_cells_with_tag="posenc-grading-never-skips",
                       resources={"metadata": {"path": str(course.ROOT)}}).execute()
        data = json.loads(out.read_text())
    calls = {}
    for tid, phase, fn, key, value in data["calls"]:
        calls[(tid, phase, fn, key)] = value
    return {"calls": calls, "unencodable": data["unencodable"]}


def submit(folder: Path, student: str, name: str, text: str | None = None, filename: str | None = None) -> Path:
    """Hand in ``<folder>/<student>/<name>/<filename or name.ipynb>``: the lesson untouched, or ``text``."""
    path = folder / student / name / (filename or f"{name}.ipynb")
    path.parent.mkdir(parents=True, exist_ok=True)
    if text is None:
        nbformat.write(Builder(name).blank().notebook, path)
    else:
        path.write_text(text)
    return path


def standard_class(name: str) -> list[Student]:
    """What every assignment is graded on: perfect, blank and partial."""
    b = Builder(name)
    return [b.perfect(), b.blank(), b.partial()]


def hostile_class(name: str, different: dict[str, str] | None = None,
                  calls_reference: dict[str, str] | None = None, separate_patches: bool = True,
                  stubborn: bool = True, workdir: Path | None = None) -> list[Student]:
    """The full hostile set on one assignment. ``different`` (correct solutions written another way) and
    ``calls_reference`` (solutions that call posenc's reference) are per-chapter code keyed by grade_id.
    With separate_patches, one student per monkeypatch; else one student applying all of them."""
    b = Builder(name)
    students = [b.wrong_mix(), b.hardcoded(workdir=workdir), b.tampered_tests(), b.disruptive(), b.corrupt()]
    if len([ex for ex in b.a.exercises if ex.solutions]) < 5:  # disruptive has no fifth exercise for os._exit
        students.append(b.os_exit())
    if stubborn:
        students.append(b.stubborn_loop())
    if separate_patches:
        students += [b.patched(kind, code) for kind, code in payloads.PATCHES.items()]
        students += [b.fake_checks(kind, kind) for kind in payloads.FAKE_CHECKS]
        students += [b.payload(kind, code) for kind, code in payloads.PAYLOADS.items()]
    else:
        students.append(b.patched("patch_all", "\n".join(payloads.PATCHES.values())))
        students.append(b.payload("hooks_all", "\n".join(payloads.PAYLOADS.values())))
    students.append(b.harmless_hooks())
    if different:
        students.append(b.replaced_solutions("different", different, zero_if_blocked=False))
    if calls_reference:
        students.append(b.replaced_solutions("calls_reference", calls_reference, zero_if_blocked=True))
    return students
