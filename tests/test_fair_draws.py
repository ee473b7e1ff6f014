"""Fair on every draw of the hidden cases.

A submission's hidden cases are drawn from a salt fixed per submission (``checks.rng``), so a test that is fair
on the draw its author ran can be unfair on the next student's. Here every chapter's differently-correct
students (tests/differently_correct.py: loops, lists, math instead of numpy, prints; the ones that print
warnings; and a float32 student for every exercise whose prompt does not pin float64) are judged on DRAWS
random salts each, through ``tests/process_channel.py`` (a plain process standing in for the kernel, the
same verdicts as the sandboxed grading of tests/test_autograder_class.py); every test cell must pass on every
draw. Students whose answers are wrong must fail on every draw.

DRAWS = 30: a student who loses points on one draw in six (chapter 6's float32 ``short_of_a_turn`` did, on 2
of 12) passes all 30 with probability (5/6)**30 = 0.0042, under 0.5 %.
"""

from __future__ import annotations

import ast

import nbformat
import numpy as np
import pytest
from nbgrader.utils import is_grade, is_solution

import synthetic
from autograder import checks, course, verdict
from autograder.liveness import demo_cells_to_skip
from autograder.preprocessors.instructor_tests import setup_imports
from process_channel import ProcessChannel  # tests/process_channel.py
from differently_correct import DIFFERENT, FLOAT32_BY_HAND, FLOAT64_PINNED, PLAUSIBLY_WRONG, WARNING_VARIANTS
from synthetic.student_code import float32, pasted, wrong

CHAPTERS = course.assignments()
DRAWS = 30
assert (5 / 6) ** DRAWS < 0.005


def salts(n: int) -> list[int]:
    """n fresh random salts (a failure names its salt, so it can be repeated)."""
    return [int(s) for s in np.random.default_rng().integers(0, 2**62, size=n)]


def notebook(name: str, replacements: dict[str, str]):
    """(setup imports, the code cells a student with these solution cells runs, {test grade_id: source},
    {solution grade_id: the test grade_ids of its exercise})."""
    nb = nbformat.read(course.source_notebook(name), as_version=4)
    skip = demo_cells_to_skip(nb)
    setup = [c.source for c in nb.cells if course.grade_id(c) == "setup"]
    sources, tests = [], {}
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code" or index in skip:
            continue
        gid = course.grade_id(cell)
        if is_grade(cell) and not is_solution(cell):
            tests[gid] = cell.source
        elif is_solution(cell) and gid in replacements:
            sources.append(replacements[gid])
        else:
            sources.append(cell.source)
    return setup_imports(setup), sources, tests


def exercise_tests(name: str, solution_ids) -> set[str]:
    """The test cells of the exercises these solution cells belong to."""
    a = synthetic.Assignment.load(name)
    return {t for ex in a.exercises if set(ex.solutions) & set(solution_ids) for t in ex.tests}


def in_float32(name: str) -> dict[str, str]:
    """The float32 student: every exercise whose prompt does not pin float64, either written by hand in float32
    (FLOAT32_BY_HAND) or the model solution with every function and answer in float32 (float32 copies of the
    float arguments in, float32 out)."""
    a = synthetic.Assignment.load(name)
    pinned = FLOAT64_PINNED.get(name, {})
    out = {}
    for sid, source in a.solution_source.items():
        if sid in pinned:
            continue
        if sid in FLOAT32_BY_HAND.get(name, {}):
            out[sid] = FLOAT32_BY_HAND[name][sid]
            continue
        functions, values = a.function_names(sid), a.value_names(sid)
        if not functions and not values:
            continue
        out[sid] = (synthetic.strip_markers(source) + "\n\n" + pasted(float32)
                    + "".join(f"{f} = _float32({f})\n" for f in functions)
                    + "".join(f"{v} = _to32({v})\n" for v in values if not functions))
    return out


def wrong_values(name: str) -> dict[str, str]:
    """Every answer of every exercise off by 0.5 (booleans negated, strings changed): wrong on any draw."""
    a = synthetic.Assignment.load(name)
    out = {}
    for sid, source in a.solution_source.items():
        functions, values = a.function_names(sid), a.value_names(sid)
        if functions or values:
            out[sid] = (synthetic.strip_markers(source) + "\n\n" + pasted(wrong)
                        + "".join(f"{f} = _wrap_wrong({f}, 'value')\n" for f in functions)
                        + "".join(f"{v} = _make_wrong({v}, 'value')\n" for v in values if not functions))
    return out


def judged(name: str, replacements: dict[str, str], draws: list[int], only: set[str] | None = None):
    """{test grade_id: [(salt, verdict) for every draw]} for the student with these solution cells."""
    setup, sources, tests = notebook(name, replacements)
    found = {}
    with ProcessChannel(sources, cwd=course.SOLUTIONS / name) as channel:
        for gid, source in tests.items():
            if only is None or gid in only:
                found[gid] = [(salt, verdict.judge(source, setup, channel, salt)) for salt in draws]
    return found


STUDENTS = {
    "different": lambda name: DIFFERENT.get(name, {}),
    "warns": lambda name: WARNING_VARIANTS.get(name, {}),
    "float32": in_float32,
}


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(STUDENTS))
@pytest.mark.parametrize("name", CHAPTERS)
def test_correct_students_pass_on_every_draw(name, kind):
    replacements = STUDENTS[kind](name)
    if not replacements:
        pytest.skip(f"no {kind} student for {name}")
    results = judged(name, replacements, salts(DRAWS), only=exercise_tests(name, replacements))
    lost = [f"{gid} with salt {salt}: {d.ename}: {d.message}"
            for gid, draws in results.items() for salt, d in draws if not d.passed]
    assert not lost, f"{name}, the {kind} student lost points on {len(lost)} of {DRAWS} draws x " \
                     f"{len(results)} cells:\n" + "\n".join(lost[:10])


@pytest.mark.slow
@pytest.mark.parametrize("name", CHAPTERS)
def test_wrong_answers_fail_on_every_draw(name):
    replacements = wrong_values(name)
    results = judged(name, replacements, salts(DRAWS), only=exercise_tests(name, replacements))
    passed = [f"{gid} with salt {salt}" for gid, draws in results.items() for salt, d in draws if d.passed]
    assert not passed, f"{name}: wrong answers passed:\n" + "\n".join(passed[:10])


PLAUSIBLE_DRAWS = 5  # a plausible mistake is a mistake on any draw: a few draws show it, the generic wrong student has 30


def plausible_students() -> list[tuple[str, str, str]]:
    return [(name, sid, label) for name, by_cell in PLAUSIBLY_WRONG.items()
            for sid, mistakes in by_cell.items() for label in mistakes]


@pytest.mark.slow
@pytest.mark.parametrize("name, sid, label", plausible_students())
def test_plausible_wrong_answers_lose_their_exercise_on_every_draw(name, sid, label):
    """The mistakes a student would make (tests/students/chNN.py, PLAUSIBLY_WRONG): on every draw, some test
    cell of the exercise fails."""
    results = judged(name, {sid: PLAUSIBLY_WRONG[name][sid][label]}, salts(PLAUSIBLE_DRAWS),
                     only=exercise_tests(name, [sid]))
    assert results, f"{name} {sid}: no test cell grades this solution cell"
    by_salt = {}
    for gid, draws in results.items():
        for salt, d in draws:
            by_salt.setdefault(salt, []).append(d.passed)
    escaped = [salt for salt, passed in by_salt.items() if all(passed)]
    assert not escaped, f"{name} {sid}, {label!r}: full marks on draws {escaped}"


def test_every_plausible_wrong_answer_names_a_solution_cell_of_its_chapter():
    for name, by_cell in PLAUSIBLY_WRONG.items():
        cells = set(synthetic.Assignment.load(name).solution_source)
        assert set(by_cell) <= cells, f"{name}: no solution cells {sorted(set(by_cell) - cells)}"
        assert all(mistakes for mistakes in by_cell.values()), f"{name}: an empty list of mistakes"


def test_every_pinned_exercise_says_float64_in_its_prompt():
    """An exercise left without a float32 student must say float64 (and why) in its prompt: in the practice
    problems' text between the section's heading and its solution cell."""
    for name, pinned in FLOAT64_PINNED.items():
        cells = synthetic.Assignment.load(name).source.cells
        for sid in pinned:
            index = next(i for i, c in enumerate(cells) if course.grade_id(c) == sid)
            start = max(i for i in range(index) if cells[i].cell_type == "markdown"
                        and "Practice problems" in cells[i].source)
            prompt = " ".join(c.source for c in cells[start:index] if c.cell_type == "markdown")
            assert "float64" in prompt, f"{name} {sid}: pinned to float64, but its prompt does not say so"


def test_float32_students_are_float32():
    """The float32 wrapper really hands back float32 (a student of this file is what it claims to be)."""
    namespace = {}
    exec(pasted(float32) + "\ndef f(x, base=2.0):\n    return x * base, [base], {'k': (x,)}\n"
                           "g = _float32(f)\n", namespace)
    out = namespace["g"](np.arange(3.0), base=10000.0)
    assert out[0].dtype == np.float32 and isinstance(out[1][0], np.float32)
    assert out[2]["k"][0].dtype == np.float32


# -- the tolerances checks.close derives from what is compared ----------------------------------------------

def test_a_count_over_n_passes_in_any_float_type_and_fails_one_count_off():
    n = 126
    for k in (0, 1, 33, 125, 126):
        checks.close(np.float32(k / n), k / n, "fraction", count=n)
        checks.close([k / n], [np.float16(k / n)], "fraction", count=n)
        for wrong_k in (k - 1, k + 1):
            with pytest.raises(AssertionError):
                checks.close(wrong_k / n, k / n, "fraction", count=n)


def test_the_issue_case_fails_at_the_default_tolerance_and_passes_as_a_count():
    """short_of_a_turn(252, 925831.8, 157791) in float32: 33 of 126 pairs (issue 33)."""
    theta = posenc_frequencies(252, 925831.8)
    exact = float(np.mean(157791 * theta < 2 * np.pi))
    in32 = np.float32(np.mean(np.float32(157791) * theta.astype(np.float32) < np.float32(2 * np.pi)))
    with pytest.raises(AssertionError, match="should be"):
        checks.close(in32, exact, "short_of_a_turn")
    checks.close(in32, exact, "short_of_a_turn", count=126)


def posenc_frequencies(d, base):
    import posenc
    return posenc.rope_frequencies(d, base)


def test_float32_tolerance_is_relative_to_the_scale_it_is_given():
    x = np.random.default_rng(0).normal(size=50) * 3
    checks.close(x.astype(np.float32), x, "x", float32=True)
    with pytest.raises(AssertionError):
        checks.close(x.astype(np.float32), x, "x")
    with pytest.raises(AssertionError):  # a real mistake is far above float32's rounding
        checks.close(x * (1 + 1e-3), x, "x", float32=True)
    tiny = np.array([1.0, 1e-6, 1e-9])  # frequencies over decades: only relative error counts
    with pytest.raises(AssertionError):
        checks.close(tiny * [1, 2, 1], tiny, "theta", float32=True, scale=0)
    checks.close(tiny.astype(np.float32), tiny, "theta", float32=True, scale=0)
    big = np.array([1000.0, 0.0])  # an entry near 0 of an array of large numbers: absolute error counts
    checks.close(big + [0, 5e-3], big, "logits", float32=True)
    with pytest.raises(AssertionError):
        checks.close(big + [0, 5e-3], big, "logits", float32=True, scale=1.0)


def test_the_pinned_list_names_real_cells():
    for name, pinned in FLOAT64_PINNED.items():
        assert name in CHAPTERS
        tree_ids = synthetic.Assignment.load(name).solution_source
        assert set(pinned) <= set(tree_ids), (name, set(pinned) - set(tree_ids))
        for reason in pinned.values():
            assert isinstance(reason, str) and reason
    for name, by_hand in FLOAT32_BY_HAND.items():
        for sid, source in by_hand.items():
            ast.parse(source)
            assert sid not in FLOAT64_PINNED.get(name, {}), f"{name} {sid}: pinned and written in float32"
