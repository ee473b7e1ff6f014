"""posenc.attention: softmax attention, its permutation equivariance, bias and mask."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import posenc


def naive_attention(q, k, v):
    out = []
    for qi in q:
        scores = [qi @ kj / np.sqrt(len(qi)) for kj in k]
        e = np.exp(np.array(scores) - max(scores))
        out.append((e / e.sum()) @ v)
    return np.array(out)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 8), d=st.integers(1, 6), seed=st.integers(0, 2**32 - 1))
def test_matches_naive_and_is_permutation_equivariant(n, d, seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d))
    perm = rng.permutation(n)
    out = posenc.attention(x, x, x)
    np.testing.assert_allclose(out, naive_attention(x, x, x), atol=1e-12)
    np.testing.assert_allclose(posenc.attention(x[perm], x[perm], x[perm]), out[perm], atol=1e-12)


def test_three_token_example_and_what_breaks_the_symmetry():
    x = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    perm = np.array([2, 0, 1])
    out = posenc.attention(x, x, x)
    np.testing.assert_allclose(posenc.attention(x[perm], x[perm], x[perm]), out[perm], atol=1e-15)
    # a causal mask alone breaks it
    assert not np.allclose(posenc.attention(x[perm], x[perm], x[perm], causal=True), posenc.attention(x, x, x, causal=True)[perm])
    # so does adding a positional encoding
    pe = posenc.sinusoidal(range(3), 2)
    xp, xpp = x + pe, x[perm] + pe
    assert not np.allclose(posenc.attention(xpp, xpp, xpp), posenc.attention(xp, xp, xp)[perm])


def test_weights_rows_sum_to_one_and_mask_is_respected():
    rng = np.random.default_rng(0)
    q, k, v = rng.normal(size=(3, 2, 5, 4))
    out, w = posenc.attention(q, k, v, causal=True, return_weights=True)
    np.testing.assert_allclose(w.sum(-1), 1.0)
    assert (np.triu(w[0], 1) == 0).all()
    np.testing.assert_allclose(out, w @ v)


def test_softmax_is_stable_for_large_scores():
    w = posenc.softmax(np.array([1000.0, 1000.0, -np.inf]))
    np.testing.assert_allclose(w, [0.5, 0.5, 0.0])


@pytest.mark.parametrize("call, match", [
    (lambda: posenc.attention(np.zeros((3, 4)), np.zeros((3, 5)), np.zeros((3, 5))), r"q and k must share"),
    (lambda: posenc.attention(np.zeros((3, 4)), np.zeros((3, 4)), np.zeros((2, 4))), r"k and v must have the same number"),
    (lambda: posenc.attention(np.zeros((3, 4)), np.zeros((3, 4)), np.zeros((3, 4)), bias=np.zeros((2, 2))), r"bias of shape \(2, 2\) does not broadcast"),
    (lambda: posenc.attention(np.full((3, 4), np.nan), np.zeros((3, 4)), np.zeros((3, 4))), r"q must contain only finite"),
    (lambda: posenc.softmax(np.array([-np.inf, -np.inf])), r"entirely -inf"),
])
def test_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()
