"""A synthetic class: student submissions generated from any assignment's notebooks, with the score each
one must get, derived from the nbgrader metadata (points of each test cell) and not typed in.

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

from . import course

# What a test cell calls that makes it refuse to run after numpy/math/posenc were replaced.
CHECKED = re.compile(r"\bchecks\.(close|equal|untampered|without)\(")
WITHOUT = re.compile(r"\bchecks\.without\(")


def _meta(cell) -> dict:
    return cell.metadata.get("nbgrader", {})


def _is_solution_code(cell) -> bool:
    return cell.cell_type == "code" and _meta(cell).get("solution") and not _meta(cell).get("grade")


def _is_test(cell) -> bool:
    return cell.cell_type == "code" and _meta(cell).get("grade") and not _meta(cell).get("solution")


def _is_written(cell) -> bool:
    return cell.cell_type == "markdown" and _meta(cell).get("grade") and _meta(cell).get("solution")


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
        source = nbformat.read(course.SOLUTIONS / name / f"{name}.ipynb", as_version=4)
        lesson = nbformat.read(course.LESSONS / name / f"{name}.ipynb", as_version=4)
        exercises, pending = [], []
        points, written, tests, solutions = {}, [], {}, {}
        for cell in source.cells:
            meta = _meta(cell)
            if meta.get("grade") or meta.get("task"):
                points[meta["grade_id"]] = float(meta.get("points", 0))
            if _is_solution_code(cell):
                pending.append(meta["grade_id"])
                solutions[meta["grade_id"]] = cell.source
            elif _is_test(cell):
                tests[meta["grade_id"]] = cell.source
                if pending:
                    exercises.append(Exercise(pending, [meta["grade_id"]]))
                    pending = []
                elif exercises:
                    exercises[-1].tests.append(meta["grade_id"])
                else:
                    exercises.append(Exercise([], [meta["grade_id"]]))
            elif _is_written(cell) or meta.get("task"):
                written.append(meta["grade_id"])
        return cls(name, source, lesson, exercises, points, written, tests, solutions)

    def setup_imports_checks(self) -> bool:
        """Whether the locked setup code imports autograder's checks (the grader then re-checks before tests)."""
        from .preprocessors import setup_imports

        setup = [c.source for c in self.source.cells if c.cell_type == "code" and _meta(c).get("locked")
                 and not _meta(c).get("grade") and not _meta(c).get("solution")]
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


def _cell(nb, grade_id):
    for cell in nb.cells:
        if _meta(cell).get("grade_id") == grade_id:
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
                    _cell(nb, sid).source = strip_markers(self.a.solution_source[sid])
        if answer_written:
            for wid in self.a.written:
                cell = _cell(nb, wid)
                if _meta(cell).get("solution"):
                    cell.source = strip_markers(_cell(self.a.source, wid).source)
        return nb

    def _expect(self, passing_tests, answer_written: bool):
        expected = {t: (self.a.points[t] if t in passing_tests else 0.0) for t in self.a.test_ids()}
        expected.update({w: 0.0 for w in self.a.written})
        manual = set(w for w in self.a.written if answer_written and _meta(_cell(self.a.source, w)).get("solution"))
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
            cell = _cell(nb, first)
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
                cell = _cell(nb, sid)
                functions, values = self.a.function_names(sid), self.a.value_names(sid)
                if kind == "raises" or functions or values:
                    changed.add(i)
                if kind == "raises":
                    if functions:
                        cell.source += "\n\n" + "".join(
                            f"def {f}(*args, **kwargs):\n    raise ValueError('a bug in {f}')\n\n\n" for f in functions)
                    else:
                        cell.source = "raise ValueError('a bug before the answers are assigned')\n" + cell.source
                else:
                    cell.source += "\n\n" + _WRONG_HELPERS + "".join(
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
        cell = _cell(nb, self.a.exercises[first].solutions[0])
        cell.source = FAKE_CHECKS[cheat] + "\n" + cell.source
        expected, manual = self._expect(self._all_but(changed), True)
        return Student(student, self.a.name, nb, expected, manual)

    def replaced_solutions(self, student, replacements: dict[str, str], zero_if_blocked: bool) -> Student:
        """Solution cells replaced by given code (keyed by grade_id). With zero_if_blocked, every exercise
        whose cells were replaced and whose test calls checks.without() expects 0 (the code calls posenc's
        reference); otherwise the replacements are correct and every test expects full points."""
        nb = self._base(set(range(len(self.a.exercises))), True)
        failing = set()
        for sid, code in replacements.items():
            _cell(nb, sid).source = code
            for ex in self.a.exercises:
                if sid in ex.solutions and zero_if_blocked:
                    failing |= {t for t in ex.tests if WITHOUT.search(self.a.test_source[t])}
        expected, manual = self._expect(set(self.a.test_ids()) - failing, True)
        return Student(student, self.a.name, nb, expected, manual)

    def patched(self, student, patch: str) -> Student:
        """Correct solutions, plus a monkeypatch at the top of the first solution cell. The patch runs in the
        student's kernel only, where the notebook's own run of the visible tests refuses it
        (checks.untampered()); the grader decides every test in its own process from the values the
        correct code returns: full marks, and the score table marks the disagreement for review."""
        first = next(i for i, ex in enumerate(self.a.exercises) if ex.solutions)
        return self._perfect_with(student, {first: patch + "\n"}, set(self.a.test_ids()))

    def payload(self, student, code: str) -> Student:
        """The untouched lesson (every stub raises) with an IPython payload at the top of the first solution
        cell: hooks that make later cells look passed to nbgrader. Every test must score 0."""
        nb = copy.deepcopy(self.a.lesson)
        first = next(ex for ex in self.a.exercises if ex.solutions)
        cell = _cell(nb, first.solutions[0])
        cell.source = code + "\n" + cell.source
        expected, manual = self._expect(set(), False)
        return Student(student, self.a.name, nb, expected, manual)

    def harmless_hooks(self, student="harmless_hooks") -> Student:
        """Correct solutions that also register IPython hooks doing nothing wrong (an identity input
        transformer, a timing callback, a custom exception handler that re-raises): full marks."""
        first = next(i for i, ex in enumerate(self.a.exercises) if ex.solutions)
        return self._perfect_with(student, {first: HARMLESS_HOOKS}, set(self.a.test_ids()))

    def tampered_tests(self, student="edits_tests") -> Student:
        """The partial student, who also replaced every test cell by `pass`, raised a test's points and
        unlocked it, deleted the first test cell (of a solved exercise: restored, it passes) and deleted the
        last exercise whole, solution and test cells (restored, its test fails). nbgrader restores the
        tests, so the score is the partial one."""
        base = self.partial(student)
        nb = base.notebook
        tests = self.a.test_ids()
        for tid in tests:
            _cell(nb, tid).source = "pass  # the tests are gone"
        if len(tests) > 1:
            meta = _meta(_cell(nb, tests[1]))
            meta["points"], meta["locked"] = 100, False
        nb.cells.remove(_cell(nb, tests[0]))
        last = self.a.exercises[-1]
        if len(self.a.exercises) >= 2:  # the partial student left it unsolved: deleting it costs nothing
            for gid in last.solutions + last.tests:
                nb.cells.remove(_cell(nb, gid))
        return Student(student, self.a.name, nb, base.expected, base.needs_manual)

    def disruptive(self, student="disruptive") -> Student:
        """Correct code, disturbed. In the exercises with code, in order: the first prints 30 MB on one line
        and 100 000 short lines (full marks, small files); the second starts with `while True: pass` (the
        timeout interrupts it: 0 for it alone); the third is left alone (full marks: grading went on); the
        fourth starts with sys.exit() (IPython makes it an error in that cell: 0 for it alone); a fifth, if
        any, with os._exit() (the kernel dies: 0 for it and everything after)."""
        code = [i for i, ex in enumerate(self.a.exercises) if ex.solutions]
        prefixes = {code[0]: "print('x' * 30_000_000)\nfor _line in range(100_000):\n    print(_line)\n"}
        failing = set()
        for index, prefix in [(1, "while True:\n    pass\n"), (3 if len(code) > 3 else 2, "import sys\nsys.exit(0)\n")]:
            if index < len(code):
                prefixes[code[index]] = prefix
                failing |= set(self.a.exercises[code[index]].tests)
        if len(code) > 4:
            prefixes[code[4]] = "import os\nos._exit(1)\n"
            failing |= self._tests_of(range(code[4], len(self.a.exercises)))
        return self._perfect_with(student, prefixes, set(self.a.test_ids()) - failing)

    def stubborn_loop(self, student="stubborn_loop") -> Student:
        """A loop that swallows the timeout's interrupt: the kernel is shut down, the exercises before it
        keep their points, that one and every later one score 0."""
        t = self._target()
        passing = self._tests_of(range(t))
        loop = ("import time\nwhile True:\n    try:\n        time.sleep(1)\n"
                "    except KeyboardInterrupt:\n        pass\n")
        return self._perfect_with(student, {t: loop}, passing)

    def os_exit(self, student="os_exit") -> Student:
        """os._exit() kills the kernel: the exercises before keep their points, the rest score 0."""
        t = self._target()
        return self._perfect_with(student, {t: "import os\nos._exit(1)\n"}, self._tests_of(range(t)))

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
                body = _LOOKUP_HELPERS + "".join(
                    f"_TABLE_{f} = _json.loads({json.dumps(json.dumps(visible.get(f, {})))})\n\n\n"
                    f"def {f}(*args, **kwargs):\n    return _lookup(_TABLE_{f}, args, kwargs)\n\n\n"
                    for f in functions)
                _cell(nb, sid).source = body
                hardcoded_functions |= set(functions)
        passing = set(self.a.test_ids())
        for (tid, phase, fn, key), _ in calls["calls"].items():
            if fn in hardcoded_functions and key not in visible.get(fn, {}):
                passing.discard(tid)
        expected, manual = self._expect(passing, True)
        return Student(student, self.a.name, nb, expected, manual)


# Code pasted into generated submissions (the student's side): keep it self-contained.
_WRONG_HELPERS = '''import numpy as _np


def _make_wrong(value, kind):
    if kind == "type":
        return "not a number"
    if kind == "shape":
        if isinstance(value, tuple):
            return tuple(_make_wrong(v, kind) for v in value)
        return _np.append(_np.ravel(_np.asarray(value, dtype=float)), 0.5)
    if isinstance(value, (bool, _np.bool_)):
        return not value
    if isinstance(value, _np.ndarray) and value.dtype == bool:
        return ~value
    if isinstance(value, tuple):
        return tuple(_make_wrong(v, kind) for v in value)
    if isinstance(value, str):
        return value + "?"
    if hasattr(value, "detach"):
        return value + 0.5
    return _np.asarray(value, dtype=float) + 0.5


def _wrap_wrong(function, kind):
    def wrong(*args, **kwargs):
        return _make_wrong(function(*args, **kwargs), kind)
    return wrong


'''

_KEY_CODE = '''
def _norm(x):
    if hasattr(x, "detach") and hasattr(x, "numpy"):
        x = x.detach().cpu().numpy()
    if isinstance(x, _np.ndarray):
        return ["nd", str(x.dtype), list(x.shape), x.tolist()]
    if isinstance(x, _np.generic):
        return ["np", str(x.dtype), x.item()]
    if isinstance(x, (bool, int, float, str)) or x is None:
        return x
    if isinstance(x, range):
        return ["range", x.start, x.stop, x.step]
    if isinstance(x, (list, tuple)):
        return [type(x).__name__, [_norm(i) for i in x]]
    if isinstance(x, dict):
        return ["dict", [[_norm(k), _norm(v)] for k, v in sorted(x.items(), key=repr)]]
    if callable(x):
        return ["fn", getattr(x, "__qualname__", repr(x))]
    return ["repr", repr(x)]


def _key(args, kwargs):
    return _json.dumps([_norm(list(args)), _norm(dict(kwargs))])
'''

_LOOKUP_HELPERS = '''import json as _json
import numpy as _np
''' + _KEY_CODE + '''

def _decode(v):
    if isinstance(v, dict):
        if "nd" in v:
            return _np.array(v["nd"], dtype=v["dtype"]).reshape(v["shape"])
        if "np" in v:
            return _np.dtype(v["dtype"]).type(v["np"])
        if "tuple" in v:
            return tuple(_decode(i) for i in v["tuple"])
        if "list" in v:
            return [_decode(i) for i in v["list"]]
    return v


def _lookup(table, args, kwargs):
    found = table.get(_key(args, kwargs))
    return None if found is None else _decode(found)


'''

_RECORDER = '''import json as _json
import numpy as _np
''' + _KEY_CODE + '''

class _Unencodable(Exception):
    pass


def _encode(v):
    if isinstance(v, _np.ndarray):
        return {"nd": v.tolist(), "dtype": str(v.dtype), "shape": list(v.shape)}
    if isinstance(v, _np.generic):
        return {"np": v.item(), "dtype": str(v.dtype)}
    if isinstance(v, (bool, int, float, str)) or v is None:
        return v
    if isinstance(v, tuple):
        return {"tuple": [_encode(i) for i in v]}
    if isinstance(v, list):
        return {"list": [_encode(i) for i in v]}
    raise _Unencodable(type(v).__name__)


class _Recorder:
    def __init__(self):
        self.phase, self.depth, self.calls, self.unencodable = None, 0, [], set()

    def wrap(self, name, function):
        def recorded(*args, **kwargs):
            key = _key(args, kwargs) if self.phase and self.depth == 0 else None
            self.depth += 1
            try:
                result = function(*args, **kwargs)
            finally:
                self.depth -= 1
            if key is not None:
                try:
                    self.calls.append([self.phase[0], self.phase[1], name, key, _encode(result)])
                except _Unencodable:
                    self.unencodable.add(name)
            return result
        return recorded

    def dump(self, path):
        with open(path, "w") as f:
            _json.dump({"calls": self.calls, "unencodable": sorted(self.unencodable)}, f)


_posenc_rec = _Recorder()
'''


def record_calls(a: Assignment, workdir: Path | None = None) -> dict:
    """Run the source notebook with every solution function wrapped by a recorder: which calls each test
    cell makes, in its visible part and its hidden part, and what the reference solution returned."""
    from nbclient import NotebookClient

    nb = copy.deepcopy(a.source)
    for cell in nb.cells:
        meta = _meta(cell)
        if _is_solution_code(cell):
            functions = a.function_names(meta["grade_id"])
            cell.source += "\n" + "".join(f"\n{f} = _posenc_rec.wrap({f!r}, {f})" for f in functions)
        elif _is_test(cell):
            tid = meta["grade_id"]
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
        nb.cells.insert(0, nbformat.v4.new_code_cell(_RECORDER))
        nb.cells.append(nbformat.v4.new_code_cell(f"_posenc_rec.dump({str(out)!r})"))
        NotebookClient(nb, timeout=300, kernel_name="python3", allow_errors=False,
                       skip_cells_with_tag="posenc-grading-never-skips",
                       resources={"metadata": {"path": str(course.ROOT)}}).execute()
        data = json.loads(out.read_text())
    calls = {}
    for tid, phase, fn, key, value in data["calls"]:
        calls[(tid, phase, fn, key)] = value
    return {"calls": calls, "unencodable": data["unencodable"]}


PATCHES = {
    "patch_allclose": "import numpy\nnumpy.allclose = lambda *args, **kwargs: True\n"
                      "numpy.isclose = lambda *args, **kwargs: True",
    "patch_testing": "import numpy.testing\nnumpy.testing.assert_allclose = lambda *args, **kwargs: None\n"
                     "numpy.testing.assert_array_equal = lambda *args, **kwargs: None",
    "patch_isclose": "import math\nmath.isclose = lambda *args, **kwargs: True",
    # Replace every posenc function by a pass-through: behaviour unchanged, identity changed.
    "patch_posenc": "import posenc as _p\nfor _name in list(_p.__all__):\n"
                    "    _f = getattr(_p, _name)\n"
                    "    if callable(_f) and not isinstance(_f, type):\n"
                    "        setattr(_p, _name, (lambda g: lambda *args, **kwargs: g(*args, **kwargs))(_f))",
}


# IPython payloads that made nbgrader score full marks while it read the verdict from the kernel's own outputs:
# each registers machinery that runs for every later cell (input and AST transformers, custom exception
# handlers, run-cell events, the display hook, a thread publishing through the kernel's session), one only
# when it detects it is being graded. On the untouched lesson every test must still score 0.
PAYLOADS = {
    "hook_transform_pass": 'get_ipython().input_transformers_post.append(lambda lines: ["pass\\n"])',
    "hook_transform_try": ('def _wrap(lines):\n'
                           '    return ["try:\\n"] + ["    " + l for l in lines] + ["\\nexcept BaseException:\\n    pass\\n"]\n'
                           'get_ipython().input_transformers_cleanup.append(_wrap)'),
    "hook_ast_asserts": ('import ast\n'
                         'class _Drop(ast.NodeTransformer):\n'
                         '    def visit_Assert(self, node):\n        return ast.Pass()\n'
                         '    def visit_Raise(self, node):\n        return ast.Pass()\n'
                         'get_ipython().ast_transformers.append(_Drop())'),
    "hook_custom_exc": ('_ip = get_ipython()\n'
                        '_ip.set_custom_exc((BaseException,), lambda *args, **kwargs: None)\n'
                        'def _clear(result):\n    result.error_in_exec = None\n'
                        '_ip.events.register("post_run_cell", _clear)'),
    "hook_showtraceback": ('_ip = get_ipython()\n'
                           '_ip.showtraceback = lambda *args, **kwargs: None\n'
                           'def _clear(result):\n    result.error_in_exec = None\n'
                           '_ip.events.register("post_run_cell", _clear)'),
    "hook_displayhook": ('_ip = get_ipython()\n'
                         '_ip.events.register("pre_run_cell", lambda info: _ip.displayhook("full marks"))'),
    "hook_thread": ('import threading, time\n'
                    '_k = get_ipython().kernel\n'
                    'def _publish():\n'
                    '    while True:\n'
                    '        _k.session.send(_k.iopub_socket, "execute_result", {"data": {"text/plain": "1.0"}, '
                    '"metadata": {}, "execution_count": 1}, parent=_k.get_parent("shell"))\n'
                    '        time.sleep(0.01)\n'
                    'threading.Thread(target=_publish, daemon=True).start()'),
    "hook_when_graded": ('import os, socket\n'
                         'if socket.gethostname() == "sandbox" or not os.path.exists(os.path.expanduser("~/.bashrc")):\n'
                         '    _ip = get_ipython()\n'
                         '    _ip.kernel.do_execute = type(_ip.kernel).do_execute.__get__(_ip.kernel)  # undo the guard\n'
                         '    _ip.input_transformers_post.append(lambda lines: ["pass\\n"])'),
    # The grader's own agent in the kernel replaced: every name "is a function", every call "returns" 0.
    "forge_replies": ('import autograder.agent as _agent, autograder.wire as _wire\n'
                      'def _forged(text, namespace=None):\n'
                      '    request = _wire.loads(text)\n'
                      '    if request["op"] == "describe":\n'
                      '        return {"ok": True, "value": {n: {"kind": "callable"} for n in request["names"]}}\n'
                      '    return {"ok": True, "value": 0.0}\n'
                      '_agent.handle = _forged'),
}

# Hooks a correct solution may carry for its own reasons: the grade must not change.
HARMLESS_HOOKS = ("import time\n"
                  "_ip = get_ipython()\n"
                  "_ip.input_transformers_post.append(lambda lines: lines)\n"
                  "_ip.events.register('pre_run_cell', lambda info: setattr(_ip, '_cell_started', time.time()))\n"
                  "_ip.set_custom_exc((ZeroDivisionError,), lambda shell, etype, value, tb, tb_offset=None: "
                  "shell.showtraceback((etype, value, tb), tb_offset=tb_offset))\n"
                  "import warnings\nwarnings.warn('a harmless warning on stderr')\n")

# Checks that accept anything: the two ways a solution cell can put them in the tests' way.
_ACCEPTING = ("    close = equal = untampered = staticmethod(lambda *args, **kwargs: None)\n"
              "    rng = staticmethod(lambda seed: __import__('numpy').random.default_rng(seed))\n"
              "    without = staticmethod(lambda *args, **kwargs: __import__('contextlib').nullcontext())\n")
FAKE_CHECKS = {
    "rebinds_checks": "class checks:\n" + _ACCEPTING,
    # (replacing checks.untampered as well gets past this: see the instructor guide's limitations)
    "patches_checks": "from autograder import checks as _real\n"
                      "for _name in ('close', 'equal'):\n"
                      "    setattr(_real, _name, lambda *args, **kwargs: None)\n"
                      "_real.without = lambda *args, **kwargs: __import__('contextlib').nullcontext()",
}


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
        students += [b.patched(kind, code) for kind, code in PATCHES.items()]
        students += [b.fake_checks(kind, kind) for kind in FAKE_CHECKS]
        students += [b.payload(kind, code) for kind, code in PAYLOADS.items()]
    else:
        students.append(b.patched("patch_all", "\n".join(PATCHES.values())))
        students.append(b.payload("hooks_all", "\n".join(PAYLOADS.values())))
    students.append(b.harmless_hooks())
    if different:
        students.append(b.replaced_solutions("different", different, zero_if_blocked=False))
    if calls_reference:
        students.append(b.replaced_solutions("calls_reference", calls_reference, zero_if_blocked=True))
    return students
