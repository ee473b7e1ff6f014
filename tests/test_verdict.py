"""Verdicts decided in the grading process (autograder/verdict.py, wire.py, agent.py; tests/process_channel.py).

The wire carries values only and refuses anything else; a test cell's verdict comes from running its source
here against what the notebook returns; a channel that forges replies (any value, garbage, nothing) fails
every test cell of every chapter; the model solutions pass every test cell with hidden cases drawn from
random salts. The same machinery through a real sandboxed kernel is in tests/test_autograder_class.py.
"""

from __future__ import annotations

import json

import nbformat
import numpy as np
import pytest
from nbgrader.utils import is_grade, is_solution

from autograder import checks, course, verdict, wire
from autograder.liveness import demo_cells_to_skip
from autograder.preprocessors.instructor_tests import setup_imports
from process_channel import ProcessChannel  # tests/process_channel.py
from support import DescribesThenForges

CHAPTERS = course.assignments()


def chapter_parts(name):
    """(setup imports, notebook cell sources a model student runs, {grade_id: test source})."""
    nb = nbformat.read(course.source_notebook(name), as_version=4)
    skip = demo_cells_to_skip(nb)
    setup = [c.source for c in nb.cells if course.grade_id(c) == "setup"]
    sources, tests = [], {}
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code" or index in skip:
            continue
        if is_grade(cell) and not is_solution(cell):
            tests[course.grade_id(cell)] = cell.source
        else:
            sources.append(cell.source)
    return setup_imports(setup), sources, tests


# -- the wire ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("value", [
    None, True, False, 0, -7, 10**40, 1.5, float("inf"), 2 - 3j, "text", [1, [2.0, None]], (1, (2,)),
    {"a": 1, 2: (3,)}, np.arange(6).reshape(2, 3), np.zeros((0, 4)), np.array([True, False]),
    np.float32(1.25), np.int64(3), np.bool_(True), np.array(2.0), np.ones(3, dtype=np.complex128),
    range(2, 9, 3), np.longdouble(0.5)])
def test_wire_round_trip_keeps_value_and_type(value):
    back = wire.loads(wire.dumps(value))
    assert type(back) is type(value)
    if isinstance(value, (np.ndarray, np.generic)):
        assert back.dtype == value.dtype and back.shape == np.shape(value)
        np.testing.assert_array_equal(back, value)
    elif isinstance(value, float) and np.isnan(value):
        assert np.isnan(back)
    else:
        assert back == value


def test_wire_reads_back_an_array_of_either_byte_order_by_its_values():
    for value in (np.arange(5, dtype=">f8") / 3, np.array(7, dtype=">i4"), np.arange(4, dtype="<u2")):
        back = wire.loads(wire.dumps(value))
        np.testing.assert_array_equal(back, value)
        assert back.dtype == value.dtype.newbyteorder("=") and back.shape == value.shape


@pytest.mark.parametrize("value", [
    {"a": [1.0, 2, None, True, "x"], "b": {"c": []}}, [[0.5] * 3] * 2, {"k": {"nested": {"deeper": [float("inf")]}}}])
def test_plain_json_values_come_back_equal(value):
    assert wire.loads(wire.dumps(value)) == value


def _types(value) -> list:
    """Every type inside ``value``, in order (keys included)."""
    if isinstance(value, dict):
        return [type(value)] + [t for k, v in value.items() for t in _types(k) + _types(v)]
    if isinstance(value, (list, tuple)):
        return [type(value)] + [t for v in value for t in _types(v)]
    return [type(value)]


@pytest.mark.parametrize("value", [
    {"a": (1, 2)}, {1: "int key"}, [np.float64(0.5)], [np.int64(3)], {"a": [1, {"b": range(3)}]},
    [True, 2 - 1j], [[0.5], np.zeros(2)]])
def test_values_json_would_change_go_tagged_and_keep_their_types(value):
    """A tuple, a non-str key or a NumPy value anywhere inside makes the value go tagged, so it arrives with
    every type it had (json.dumps would have turned them into lists, str keys and plain floats)."""
    tree = wire.encode(value)
    assert not (isinstance(tree, dict) and tree.get("$") == "json"), tree
    back = wire.loads(wire.dumps(value))
    assert _types(back) == _types(value)


def test_a_plain_value_nested_too_deep_is_refused_both_ways():
    deep = []
    for _ in range(wire.MAX_DEPTH + 5):
        deep = [deep]
    with pytest.raises(wire.WireError, match="nested"):
        wire.dumps(deep)
    with pytest.raises(wire.WireError, match="nested"):
        wire.loads(json.dumps(deep))


def test_close_fails_against_an_expected_value_that_is_nan_or_inf():
    """A test may derive its expected value from another answer of the notebook (a student's table): NaN there
    made every comparison false, so the check passed whatever the answer was."""
    for expected in (float("nan"), [1.0, float("inf")]):
        with pytest.raises(AssertionError, match="compared with is NaN or inf"):
            checks.close(np.zeros(np.shape(expected)) + 123.0, expected, "x")


def test_wire_carries_tensors_with_their_dtype():
    torch = pytest.importorskip("torch")
    for t in (torch.arange(4.0), torch.zeros(2, 3, dtype=torch.float64), torch.tensor([1, 2]),
              torch.ones(2, dtype=torch.bfloat16)):
        back = wire.loads(wire.dumps(t))
        assert isinstance(back, torch.Tensor) and back.dtype == t.dtype and torch.equal(back, t)


def test_wire_turns_other_objects_into_inert_stand_ins():
    back = wire.loads(wire.dumps([print, object(), np.array(["a"], dtype=object)]))
    assert all(isinstance(b, wire.Unsupported) for b in back)
    assert back[0].type_name == "builtin_function_or_method"
    with pytest.raises(AssertionError, match="should be numbers.*builtin_function_or_method"):
        checks.close(back[0], 1.0, "the answer")


@pytest.mark.parametrize("payload, words", [
    ("[" * 5000 + "]" * 5000, "not JSON|nested"),
    (json.dumps({"$": "ndarray", "dtype": "object", "shape": [1], "data": ""}), "dtype"),
    (json.dumps({"$": "ndarray", "dtype": "float64", "shape": [3], "data": "AAAA"}), "does not match"),
    (json.dumps({"$": "ndarray", "dtype": "float64", "shape": [1], "data": "!!"}), "malformed"),
    (json.dumps({"$": "pickle", "data": "gASVBQAAAAAAAACMAWGULg=="}), "unknown tag"),
    (json.dumps({"$": "complex", "re": "1" * 10000, "im": "0"}), "malformed"),
    (json.dumps({"$": "dict", "items": [[[1], 2]]}), "hashable"),
    ("{not json", "not JSON"),
])
def test_wire_refuses_malformed_payloads_with_a_reason(payload, words):
    with pytest.raises(wire.WireError, match=words):
        wire.loads(payload)


def test_wire_refuses_payloads_past_its_limits(monkeypatch):
    monkeypatch.setattr(wire, "MAX_BYTES", 1000)
    with pytest.raises(wire.WireError, match="larger than"):
        wire.loads("[" + "1," * 600 + "1]")
    with pytest.raises(wire.WireError, match="nested"):
        wire.dumps(eval("[" * 70 + "]" * 70))


# -- reading a test cell ------------------------------------------------------------------------------------

CELL = '''def helper(x):
    return x + 1


@checks.kernel
def probe(n):
    return helper(student_fn(n)) + other_student_value


got = probe(2)
assert student_value == 3, "message"
### BEGIN HIDDEN TESTS
r = checks.rng(5)
assert hidden_name(r.integers(9)) > 0
### END HIDDEN TESTS
'''


def test_a_test_cell_splits_into_visible_and_hidden_tests():
    visible, hidden = verdict.split_hidden(CELL)
    assert "HIDDEN" not in visible + hidden
    assert "hidden_name" in hidden and "hidden_name" not in visible and "student_value" in visible


def test_kernel_functions_ship_with_the_helpers_they_call():
    shipped = verdict.kernel_functions(CELL)
    assert list(shipped) == ["probe"]
    assert shipped["probe"].index("def helper") < shipped["probe"].index("def probe")
    assert "@checks.kernel" not in shipped["probe"]


def test_hidden_tests_send_no_code_to_the_kernel():
    """A @checks.kernel function in the hidden tests fails the cell, saying why, and its code never reaches
    the student's kernel (which could read it, or answer for it)."""
    cell = ("assert twice(2) == 4\n"
            "### BEGIN HIDDEN TESTS\n"
            "@checks.kernel\n"
            "def secret_probe(n):\n"
            "    return twice(n) + 12345\n"
            "assert secret_probe(1) == 12347\n"
            "### END HIDDEN TESTS\n")
    with ProcessChannel(["def twice(x):\n    return 2 * x\n"]) as process:
        channel = Counting(process)
        decided = verdict.judge(cell, EACH_SETUP, channel, salt=1)
    assert not decided.passed and decided.stage == "hidden"
    assert "only visible tests may run code in the student's kernel" in decided.message
    assert not any("secret_probe" in p or "12345" in p for p in channel.payloads)


@pytest.mark.parametrize("name", CHAPTERS)
def test_no_chapter_hides_kernel_code(name):
    _, _, tests = chapter_parts(name)
    for gid, source in tests.items():
        assert not verdict.kernel_functions(verdict.split_hidden(source)[1]), (
            f"{name} {gid}: a @checks.kernel function in the hidden tests (use checks.each)")


def test_notebook_names_skip_what_runs_in_the_kernel():
    names = verdict.notebook_names(CELL, {"np", "checks"})
    assert names == ["hidden_name", "student_value"]


def test_hidden_cases_are_salted_per_submission():
    draws = {salt: checks.Checks(checks.Grading(ship=None, salt=salt)).rng(7).integers(10**9)
             for salt in (None, 1, 2)}
    assert checks.rng(7).integers(10**9) == draws[None]
    assert draws[None] == np.random.default_rng(7).integers(10**9)
    assert len(set(draws.values())) == 3
    key = b"k" * 32
    assert verdict.salt_for(key, "ada", "01", "t") == verdict.salt_for(key, "ada", "01", "t")
    assert verdict.salt_for(key, "ada", "01", "t") != verdict.salt_for(key, "bob", "01", "t")


def test_the_hidden_cases_change_with_anything_the_kernel_can_read(tmp_path):
    """A resubmission whose cells are unchanged but which carries a file of answers recorded the first time
    (or hides them in the notebook's metadata) gets new cases; the same submission graded again, the same."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1")])
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "notes.txt").write_text("first")
    first = verdict.submission_digest(nb, tmp_path / "sub")
    assert verdict.submission_digest(nb, tmp_path / "sub") == first
    (tmp_path / "sub" / "notes.txt").write_text("answers: 0.25 0.125")
    assert verdict.submission_digest(nb, tmp_path / "sub") != first
    (tmp_path / "sub" / "notes.txt").write_text("first")
    (tmp_path / "sub" / "deep").mkdir()
    (tmp_path / "sub" / "deep" / "a.json").write_text("[]")
    assert verdict.submission_digest(nb, tmp_path / "sub") != first
    (tmp_path / "sub" / "deep" / "a.json").unlink()
    (tmp_path / "sub" / "deep").rmdir()
    assert verdict.submission_digest(nb, tmp_path / "sub") == first
    nb.cells[0].metadata["answers"] = [0.25]
    assert verdict.submission_digest(nb, tmp_path / "sub") != first


# -- forged replies fail every test cell ------------------------------------------------------------------

class Forger(verdict.Channel):
    """Answers every request with the same reply text, whatever was asked."""

    def __init__(self, reply: str):
        self.reply = reply

    def request(self, payload):
        return self.reply


FORGERIES = {
    "always None": wire.dumps({"ok": True, "value": None}),
    "always True": wire.dumps({"ok": True, "value": True}),
    "always 1.0": wire.dumps({"ok": True, "value": 1.0}),
    "always a string": wire.dumps({"ok": True, "value": "full marks"}),
    "always an empty list": wire.dumps({"ok": True, "value": []}),
    "always an error": wire.dumps({"ok": False, "type": "AssertionError", "module": "builtins", "message": "x"}),
    "a control exception": wire.dumps({"ok": False, "type": "SystemExit", "module": "builtins", "message": ""}),
    "garbage": "}}{{",
    "a pickle": json.dumps({"$": "pickle", "data": "gASVBQAAAAAAAACMAWGULg=="}),
    "no ok field": wire.dumps({"value": 1}),
}


@pytest.mark.parametrize("name", CHAPTERS)
def test_forged_replies_fail_every_test_cell(name):
    setup, _, tests = chapter_parts(name)
    for gid, source in tests.items():
        for forgery, text in FORGERIES.items():
            decided = verdict.judge(source, setup, Forger(text), salt=1)
            assert not decided.passed, f"{name} {gid} passed on forged replies: {forgery}"
            assert decided.message or decided.ename


@pytest.mark.parametrize("name", CHAPTERS)
def test_constant_answers_to_every_call_fail_every_test_cell(name):
    setup, _, tests = chapter_parts(name)
    for gid, source in tests.items():
        for value in (None, 0.0, 1.0, True, np.zeros(3), {"shapes": []}):
            assert not verdict.judge(source, setup, DescribesThenForges(value), salt=3).passed, (
                f"{name} {gid} passed with every call answered {value!r}")


class ForgesOneKind(verdict.Channel):
    """The model solution answers everything, except that every reply to requests of kind ``op`` (a call,
    the cases of checks.each, a test's own function run in the kernel) is replaced by ``value``: what a
    student who intercepts the grader's agent in the kernel can send (a blind one sends ``[]`` whenever the
    real answer would be an error, so that loops over the result run zero times). Every request still reaches
    the kernel, so that what it keeps between calls stays as the grader believes."""

    def __init__(self, inner, op: str, value):
        self.inner, self.op, self.forged = inner, op, wire.dumps({"ok": True, "value": value})
        self.replaced = 0

    def request(self, payload):
        reply = self.inner.request(payload)
        if wire.loads(payload)["op"] != self.op or reply == self.forged:
            return reply
        self.replaced += 1
        return self.forged


SELECTIVE_FORGERIES = [[], {}, None, 0, "", True]


@pytest.mark.slow
@pytest.mark.parametrize("name", CHAPTERS)
def test_a_forged_answer_to_any_one_kind_of_request_fails_the_cell(name):
    """Where the grader lets the kernel answer, a wrong answer fails the cell: no test counts on the length
    of something the kernel returned, or skips a check when an answer is empty or None."""
    setup, sources, tests = chapter_parts(name)
    passed = []
    with ProcessChannel(sources, cwd=course.SOLUTIONS / name) as process:
        for gid, source in tests.items():
            for op in ("call", "each", "run"):
                for value in SELECTIVE_FORGERIES:
                    channel = ForgesOneKind(process, op, value)
                    decided = verdict.judge(source, setup, channel, salt=11)
                    if channel.replaced and decided.passed:
                        passed.append(f"{gid}: every {op!r} answered {value!r}")
    assert not passed, f"{name}: cells that passed with forged answers: {passed}"


# -- the model solutions pass, whatever the salt --------------------------------------------------------------

def _model_solutions_pass(name, salts):
    setup, sources, tests = chapter_parts(name)
    with ProcessChannel(sources, cwd=course.SOLUTIONS / name) as channel:
        for gid, source in tests.items():
            for salt in salts:
                decided = verdict.judge(source, setup, channel, salt)
                assert decided.passed, f"{name} {gid} with salt {salt}: {decided.ename}: {decided.message}"


def test_model_solutions_pass_with_salted_hidden_cases_numpy_chapter():
    _model_solutions_pass("02_sinusoidal", [None, 11, 12])


@pytest.mark.slow
@pytest.mark.parametrize("name", CHAPTERS)
def test_model_solutions_pass_with_salted_hidden_cases(name):
    rng = np.random.default_rng()
    _model_solutions_pass(name, [None] + [int(s) for s in rng.integers(0, 2**62, size=3)])


def test_a_lost_process_is_a_failed_verdict_not_a_crash():
    setup, sources, tests = chapter_parts("02_sinusoidal")
    channel = ProcessChannel(sources, cwd=course.SOLUTIONS / "02_sinusoidal")
    channel.proc.kill()
    channel.proc.wait()
    decided = verdict.judge(tests["test_t2t_signal"], setup, channel, salt=1)
    assert not decided.passed and decided.lost


def test_a_blocked_class_of_a_submodule_posenc_loads_lazily_is_blocked_in_a_fresh_kernel():
    """The kernel resolves what the test blocks by its dotted path, importing a submodule posenc has not
    loaded yet (posenc.relative_torch, behind posenc.RelativePositionBias)."""
    cell = ("with checks.without(posenc.RelativePositionBias):\n"
            "    assert twice(2) == 4\n")
    setup = ["import numpy as np", "import posenc", "from autograder import checks"]
    with ProcessChannel(["import posenc\ndef twice(x):\n    return 2 * x\n"]) as channel:
        decided = verdict.judge(cell, setup, channel, salt=1)
    assert decided.passed, decided


class Counting(verdict.Channel):
    """A channel that keeps the requests it passes on (their text, and their kinds in ``ops``)."""

    def __init__(self, inner):
        self.inner, self.payloads = inner, []

    @property
    def ops(self) -> list[str]:
        return [wire.loads(payload)["op"] for payload in self.payloads]

    def request(self, payload):
        self.payloads.append(payload)
        return self.inner.request(payload)


EACH_SETUP = ["import numpy as np", "import posenc", "from autograder import checks"]
EACH_NOTEBOOK = ["import posenc\nimport numpy as np\n"
                 "def table(p, d):\n    return posenc.sinusoidal(p, d)\n"]


def test_each_sends_every_case_in_one_request_and_blocks_references_there():
    cell = ("cases = [([1, 2, 3], 4), ([0], 8), (np.arange(5), 2)]\n"
            "got = checks.each(table, cases)\n"
            "for (p, d), have in zip(cases, got):\n"
            "    checks.close(have, posenc.sinusoidal(p, d), 'table')\n"
            "with checks.without(posenc.sinusoidal):\n"
            "    checks.each(table, cases)\n")
    with ProcessChannel(EACH_NOTEBOOK) as process:
        channel = Counting(process)
        decided = verdict.judge(cell, EACH_SETUP, channel, salt=1)
    assert not decided.passed and decided.stage == "visible"  # the second call hit the blocked reference
    assert "posenc.sinusoidal" in decided.message, decided
    assert channel.ops == ["describe", "each", "each"]
    with ProcessChannel(EACH_NOTEBOOK) as process:
        assert verdict.judge(cell.split("with checks")[0], EACH_SETUP, process, salt=1).passed
    # in the notebook itself (no grader) it is the plain loop
    assert checks.each(lambda a, b: a + b, [(1, 2), [3, 4]]) == [3, 7]


@pytest.mark.parametrize("reply", [[], [1.0, 2.0, 3.0], "full marks", None, {"0": 1.0}])
def test_each_refuses_an_answer_that_is_not_one_result_per_case(reply):
    """(A shorter list is the first cases' results, when all would not fit in one reply: the grader asks again
    for the rest, tests/test_each_case.py; no results, or more than cases, is no answer.)"""
    class Replies(verdict.Channel):
        def request(self, payload):
            if wire.loads(payload)["op"] == "describe":
                return wire.dumps({"ok": True, "value": {"table": {"kind": "callable"}}})
            return wire.dumps({"ok": True, "value": reply})

    cell = "got = checks.each(table, [(1, 2), (3, 4)])\nassert got is not None\n"
    decided = verdict.judge(cell, EACH_SETUP, Replies(), salt=1)
    assert not decided.passed and decided.ename == "NoAnswer", decided


@pytest.mark.slow  # (2 to 4 s: the fast tier stays under a minute)
def test_a_blocked_reference_in_a_module_the_notebook_never_imported_is_refused_without_importing_it():
    """Blocking posenc.RelativePositionBias must not import torch into the student's kernel (a second or more
    per submission): its module's import is refused during the call instead, so a notebook function that
    reaches for it fails, and one that does not runs without torch."""
    cell = ("with checks.without(posenc.relative_bias, posenc.RelativePositionBias):\n"
            "    assert twice(2) == 4\n"
            "    assert not torch_loaded()\n"
            "with checks.without(posenc.RelativePositionBias):\n"
            "    shortcut(3)\n")
    setup = ["import numpy as np", "import posenc", "from autograder import checks"]
    notebook = ["import sys\nimport posenc\n"
                "def twice(x):\n    return 2 * x\n"
                "def torch_loaded():\n    return 'torch' in sys.modules\n"
                "def shortcut(n):\n    return posenc.RelativePositionBias(n)\n"]
    with ProcessChannel(notebook) as channel:
        decided = verdict.judge(cell, setup, channel, salt=1)
        assert not decided.passed and "posenc.relative_torch.RelativePositionBias is the reference" in decided.message, decided
        # and after the call the module imports again: the refusal lasted the call only
        assert verdict.judge("assert shortcut(2) is not None\n", setup, channel, salt=1).passed
