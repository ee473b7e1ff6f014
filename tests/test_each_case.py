"""checks.each_case, the hidden tests' one way to run the student's function on many cases: every case in one
request to the kernel, references blocked there, each result judged in the grading process, and the failing case
named in the message. Every chapter's hidden tests go through it (no hand-written loop over checks.each)."""

from __future__ import annotations

import re

import nbformat
import pytest

from autograder import checks, course, verdict
from process_channel import ProcessChannel  # tests/process_channel.py
from test_verdict import EACH_NOTEBOOK, EACH_SETUP, Counting

import posenc


def judge_table(p, d, have):
    checks.close(have, posenc.sinusoidal(p, d), f"table(p, d={d})")


CASES = [([1, 2, 3], 4), ([0], 8), ([5, 6], 2)]


def test_a_right_function_passes_every_case():
    checks.each_case(posenc.sinusoidal, CASES, judge_table)


def test_the_failing_case_is_named_by_its_place_or_its_name():
    def wrong(p, d):  # right except for d = 8
        return posenc.sinusoidal(p, d) + (d == 8)

    with pytest.raises(AssertionError, match=r"^case 2 of 3: table\(p, d=8\)"):
        checks.each_case(wrong, CASES, judge_table)
    with pytest.raises(AssertionError, match=r"^positions \[0\], d = 8: "):
        checks.each_case(wrong, CASES, judge_table, name=lambda p, d: f"positions {p}, d = {d}")


def test_call_sends_part_of_a_case_and_calls_sends_several_judged_together():
    seen = []

    def spy(p, d):
        seen.append((tuple(p), d))
        return posenc.sinusoidal(p, d)

    expected = [posenc.sinusoidal(p, d) for p, d in CASES]
    cases = [(p, d, e) for (p, d), e in zip(CASES, expected)]
    checks.each_case(spy, cases, lambda p, d, e, got: checks.close(got, e, "spy"),
                     call=lambda p, d, e: (p, d))
    assert seen == [(tuple(p), d) for p, d in CASES]

    def judge_shift(d, results):  # PE(p + 1) from the same table: one judgement on two calls
        now, later = results
        checks.close(now[1:], later[:-1], f"d = {d}")

    checks.each_case(posenc.sinusoidal, [(2,), (4,)], judge_shift,
                     calls=lambda d: [(range(5), d), (range(1, 6), d)])
    with pytest.raises(AssertionError, match=r"^case 1 of 2: d = 2"):
        checks.each_case(posenc.sinusoidal, [(2,), (4,)], judge_shift,
                         calls=lambda d: [(range(5), d), (range(2, 7), d)])


HIDDEN = ("### BEGIN HIDDEN TESTS\n"
          "r = checks.rng(5)\n"
          "cases = [(r.integers(0, 50, 4), 2 * int(r.integers(1, 5))) for _ in range(6)]\n"
          "def judge(p, d, have):\n"
          "    checks.close(have, posenc.sinusoidal(p, d), f'table(p, d={d})')\n"
          "checks.each_case(table, cases, judge, blocked=(posenc.sinusoidal,))\n"
          "### END HIDDEN TESTS\n")


def test_while_grading_every_case_goes_in_one_request_with_the_references_blocked():
    with ProcessChannel(EACH_NOTEBOOK) as process:
        channel = Counting(process)
        decided = verdict.judge("x = 1\n" + HIDDEN, EACH_SETUP, channel, salt=1)
    # the notebook's table calls posenc.sinusoidal, blocked in the kernel during the request
    assert not decided.passed and decided.stage == "hidden" and "posenc.sinusoidal" in decided.message
    assert channel.ops == ["describe", "each"]
    own = ["import posenc\nimport numpy as np\n"
           "def table(p, d):\n"
           "    p = np.asarray(p, dtype=float)[:, None]\n"
           "    i = np.arange(d // 2)\n"
           "    angle = p / 10000.0 ** (2 * i / d)\n"
           "    out = np.empty((len(p), d))\n"
           "    out[:, 0::2], out[:, 1::2] = np.sin(angle), np.cos(angle)\n"
           "    return out\n"]
    with ProcessChannel(own) as process:
        assert verdict.judge("x = 1\n" + HIDDEN, EACH_SETUP, process, salt=1).passed
    off = [own[0].replace("np.cos(angle)", "np.cos(angle) + (d == 4)")]
    with ProcessChannel(off) as process:
        decided = verdict.judge("x = 1\n" + HIDDEN.replace("range(6)", "range(40)"), EACH_SETUP, process, salt=1)
    assert not decided.passed and re.match(r"case \d+ of 40: table\(p, d=4\)", decided.message), decided


@pytest.mark.parametrize("name", course.assignments())
def test_no_hidden_test_hand_writes_the_case_loop(name):
    """The student's function on many cases goes through checks.each_case, which names the failing case."""
    nb = nbformat.read(course.source_notebook(name), as_version=4)
    for cell in nb.cells:
        hidden = verdict.split_hidden(cell.source)[1] if "### BEGIN HIDDEN TESTS" in cell.source else ""
        assert "checks.each(" not in hidden, (
            f"{name} {course.grade_id(cell)}: a hidden test loops over checks.each's results by hand: "
            "use checks.each_case")


BIG = ["import numpy as np\n"
       "calls = []\n"
       "def ramp(n, shift):\n"
       "    calls.append(shift)\n"
       "    return np.arange(n, dtype=np.float64) + shift\n"]


@pytest.mark.slow  # (2 to 4 s: the fast tier stays under a minute)
def test_results_too_large_for_one_reply_come_in_several():
    """Hidden cases whose results add up to more than one reply may carry (wire.MAX_BYTES) are answered in
    several replies, in order (the case that did not fit runs again at the start of the next); a single result too large to send fails alone, in words
    (a correct student lost chapter 4's points on 13 of 30 draws when the kernel's reply was refused)."""
    n = 1_000_000  # 8 MB of float64 a result, about 10.7 MB once encoded: two do not fit in one reply
    cell = ("cases = [(N, s) for s in range(5)]\n"
            "def judge(n, s, have):\n"
            "    checks.close(have, np.arange(n) + s, f'ramp({n}, {s})')\n"
            "checks.each_case(ramp, cases, judge)\n").replace("N", str(n))
    with ProcessChannel(BIG) as process:
        channel = Counting(process)
        decided = verdict.judge("x = 1\n### BEGIN HIDDEN TESTS\n" + cell + "### END HIDDEN TESTS\n",
                                EACH_SETUP, channel, salt=1)
        assert decided.passed, decided
        assert channel.ops == ["describe"] + ["each"] * 5
        assert verdict.ask(process, {"op": "describe", "names": ["calls"]})["calls"]["value"] == [0, 1, 1, 2, 2, 3, 3, 4, 4]
    too_big = cell.replace(str(n), str(3 * n))  # 24 MB of float64: one result larger than any reply
    with ProcessChannel(BIG) as process:
        decided = verdict.judge("x = 1\n### BEGIN HIDDEN TESTS\n" + too_big + "### END HIDDEN TESTS\n",
                                EACH_SETUP, process, salt=1)
    assert not decided.passed and "cannot be sent to the grader" in decided.message \
        and "larger than 16 MB" in decided.message, decided
