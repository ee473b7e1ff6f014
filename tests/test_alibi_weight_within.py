"""posenc.alibi_weight_within: the closed-form share of attention within a distance (chapter 05_alibi)."""

import numpy as np
import pytest

import posenc


def oracle_weight_within(m, length, distance):
    """Naive: the last query's weights from an explicit loop over keys, then a running sum."""
    logits = [-m * (length - 1 - j) for j in range(length)]  # key j sits length-1-j positions back
    top = max(logits)
    e = [np.exp(x - top) for x in logits]
    total = sum(e)
    weights_by_distance = [e[length - 1 - d] / total for d in range(length)]
    return sum(weights_by_distance[: distance + 1])


def test_worked_example_last_of_five_tokens():
    # m = 1/2, L = 5: the newest key alone holds 1 / (1 + e^-0.5 + e^-1 + e^-1.5 + e^-2) of the weight.
    got = posenc.alibi_weight_within(0.5, 5, [0, 4])
    expected0 = 1 / sum(np.exp(-0.5 * k) for k in range(5))
    np.testing.assert_allclose(got, [[expected0, 1.0]], rtol=1e-14)
    assert got.shape == (1, 2)
    assert abs(expected0 - 0.42865553) < 1e-8


@pytest.mark.parametrize("m", [2.0, 0.5, 1 / 256, 1e-9, 0.0, -0.25, -3.0])
@pytest.mark.parametrize("length", [1, 2, 7, 300])
def test_matches_loop_oracle_and_posenc_softmax(m, length):
    distances = np.arange(length)
    got = posenc.alibi_weight_within([m], length, distances)[0]
    oracle = [oracle_weight_within(m, length, int(d)) for d in distances]
    np.testing.assert_allclose(got, oracle, rtol=1e-10, atol=1e-14)
    if m >= 0:  # the same numbers through the package's own bias and softmax
        row = posenc.softmax(posenc.alibi_bias(1, length, slopes=[m])[0, -1])  # (length,) by key position
        np.testing.assert_allclose(got, np.cumsum(row[::-1]), rtol=1e-10, atol=1e-14)


def test_properties_monotone_ends_at_one_and_steeper_is_more_local():
    slopes = posenc.alibi_slopes(8)
    share = posenc.alibi_weight_within(slopes, 2048, np.arange(2048))  # (8, 2048)
    assert np.all(np.diff(share, axis=1) >= 0)
    np.testing.assert_allclose(share[:, -1], 1.0, rtol=1e-14)
    span90 = (share < 0.9).sum(axis=1)  # smallest distance holding 90 %
    assert np.all(np.diff(span90) > 0), "a shallower slope must look further back"
    # For long sequences the span approaches ln(10)/m - 1 (the infinite geometric series).
    np.testing.assert_allclose(span90, np.ceil(np.log(10) / slopes) - 1, atol=1)


def test_zero_slope_is_uniform_and_large_negative_slopes_do_not_overflow():
    np.testing.assert_allclose(posenc.alibi_weight_within(0, 4, [0, 1, 2, 3]), [[0.25, 0.5, 0.75, 1.0]])
    wrong_sign = posenc.alibi_weight_within(-5.0, 3000, [0, 2998, 2999])[0]
    assert np.isfinite(wrong_sign).all()
    assert wrong_sign[0] == 0.0 and wrong_sign[2] == 1.0
    np.testing.assert_allclose(wrong_sign[1], 1 - (1 - np.exp(-5.0)), rtol=1e-12)  # all but the farthest key


@pytest.mark.parametrize("call, exc, match", [
    (lambda: posenc.alibi_weight_within(0.5, 0, 0), ValueError, r"length must be an integer >= 1, got 0"),
    (lambda: posenc.alibi_weight_within(0.5, 5, 5), ValueError, r"distance must be at most length - 1 = 4"),
    (lambda: posenc.alibi_weight_within(0.5, 5, -1), ValueError, r"distance must be >= 0"),
    (lambda: posenc.alibi_weight_within(0.5, 5, 1.5), ValueError, r"distance must be integers"),
    (lambda: posenc.alibi_weight_within(np.inf, 5, 1), ValueError, r"slopes must be finite"),
    (lambda: posenc.alibi_weight_within("steep", 5, 1), TypeError, r"slopes must be a number"),
    (lambda: posenc.alibi_weight_within([[0.5]], 5, 1), ValueError, r"slopes must be a scalar or a 1-D"),
])
def test_bad_input(call, exc, match):
    with pytest.raises(exc, match=match):
        call()
