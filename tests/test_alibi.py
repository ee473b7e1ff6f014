"""posenc.alibi: the authors' slopes (Press et al. 2022), the bias tensor, and its effect after softmax."""

import math

import numpy as np
import pytest

import posenc


def authors_get_slopes(n):
    """The ALiBi authors' published get_slopes, written out as in their repository."""
    def power_of_2(n):
        start = 2 ** (-2 ** -(math.log2(n) - 3))
        return [start * start ** i for i in range(n)]
    if math.log2(n).is_integer():
        return power_of_2(n)
    closest = 2 ** math.floor(math.log2(n))
    return power_of_2(closest) + authors_get_slopes(2 * closest)[0::2][: n - closest]


@pytest.mark.parametrize("n", range(1, 129))
def test_slopes_match_the_authors_code(n):
    np.testing.assert_allclose(posenc.alibi_slopes(n), authors_get_slopes(n), rtol=1e-14)


def test_eight_heads_are_powers_of_one_half():
    np.testing.assert_allclose(posenc.alibi_slopes(8), 0.5 ** np.arange(1, 9), rtol=1e-15)


def test_slopes_are_geometric_for_powers_of_two():
    for n in (2, 4, 16, 32, 64):
        s = posenc.alibi_slopes(n)
        np.testing.assert_allclose(s[1:] / s[:-1], s[0], rtol=1e-12)


def test_twelve_heads_interleave_the_sixteen_head_sequence():
    np.testing.assert_allclose(posenc.alibi_slopes(12)[8:], posenc.alibi_slopes(16)[0::2][:4], rtol=1e-15)


@pytest.mark.parametrize("m, expected", [
    (0.5, [0.0580, 0.0956, 0.1577, 0.2600, 0.4287]),
    (0.1, [0.1621, 0.1792, 0.1980, 0.2188, 0.2419]),
])
def test_last_of_five_tokens_with_equal_content_scores(m, expected):
    bias = posenc.alibi_bias(1, 5, slopes=[m])  # (1, 5, 5)
    scores = np.zeros((1, 5, 5))  # equal content scores
    weights = posenc.softmax(scores + bias)[0, -1]
    np.testing.assert_allclose(weights, expected, atol=5e-5)
    np.testing.assert_allclose(weights, np.exp(-m * np.arange(4, -1, -1)) / np.exp(-m * np.arange(5)).sum(), rtol=1e-12)


def test_bias_values_and_causal_mask():
    b = posenc.alibi_bias(2, 4)
    m = posenc.alibi_slopes(2)
    for h in range(2):
        for i in range(4):
            for j in range(4):
                if j > i:
                    assert b[h, i, j] == -np.inf
                else:
                    assert b[h, i, j] == pytest.approx(-m[h] * (i - j))
    sym = posenc.alibi_bias(2, 4, causal=False)
    np.testing.assert_allclose(sym, np.transpose(sym, (0, 2, 1)))
    assert np.isfinite(sym).all()


def test_kv_cache_alignment():
    full = posenc.alibi_bias(4, 10)
    np.testing.assert_array_equal(posenc.alibi_bias(4, 1, 10), full[:, -1:, :])
    np.testing.assert_array_equal(posenc.alibi_bias(4, 3, 10), full[:, -3:, :])


def test_zero_slope_gives_back_permutation_equivariance():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(6, 4))
    perm = rng.permutation(6)
    bias0 = posenc.alibi_bias(1, 6, causal=False, slopes=[0.0])[0]
    out = posenc.attention(x, x, x, bias=bias0)
    np.testing.assert_allclose(posenc.attention(x[perm], x[perm], x[perm], bias=bias0), out[perm], atol=1e-12)
    biased = posenc.alibi_bias(1, 6, causal=False, slopes=[0.5])[0]
    assert not np.allclose(posenc.attention(x[perm], x[perm], x[perm], bias=biased),
                           posenc.attention(x, x, x, bias=biased)[perm])


@pytest.mark.parametrize("call, exc, match", [
    (lambda: posenc.alibi_slopes(0), ValueError, r"n_heads must be an integer >= 1, got 0"),
    (lambda: posenc.alibi_slopes(2.5), TypeError, r"n_heads must be an integer, got 2.5"),
    (lambda: posenc.alibi_bias(4, 0), ValueError, r"q_len must be an integer >= 1, got 0"),
    (lambda: posenc.alibi_bias(4, 5, 3), ValueError, r"k_len must be an integer >= 5, got 3"),
    (lambda: posenc.alibi_bias(4, 5, slopes=[1, 2]), ValueError, r"slopes must have shape \(4,\)"),
    (lambda: posenc.alibi_bias(4, 5, causal="yes"), TypeError, r"causal must be True or False"),
])
def test_bad_input(call, exc, match):
    with pytest.raises(exc, match=match):
        call()
