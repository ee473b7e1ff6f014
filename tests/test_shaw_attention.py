"""posenc.shaw_attention, for chapter 04_relative: Shaw et al.'s relation-aware self-attention (arXiv:1803.02155)
against its equations written out with loops, a worked example, its properties, and bad input refused in words."""

import math

import numpy as np
import pytest

import posenc


def shaw_oracle(x, w_q, w_k, w_v, table_k, table_v, k):
    """Shaw et al. eqs. 3-4 written out with loops over (i, j)."""
    seq, d_z = x.shape[0], w_q.shape[0]
    logits = np.zeros((seq, seq))
    for i in range(seq):
        for j in range(seq):
            a_k = table_k[min(max(j - i, -k), k) + k]
            logits[i, j] = (w_q @ x[i]) @ (w_k @ x[j] + a_k) / math.sqrt(d_z)
    weights = np.exp(logits - logits.max(axis=1, keepdims=True))
    weights /= weights.sum(axis=1, keepdims=True)
    output = np.zeros((seq, d_z))
    for i in range(seq):
        for j in range(seq):
            a_v = table_v[min(max(j - i, -k), k) + k]
            output[i] += weights[i, j] * (w_v @ x[j] + a_v)
    return logits, weights, output


def _random_case(rng, seq, d_model, d_z, k):
    x = rng.normal(size=(seq, d_model))
    w_q, w_k, w_v = rng.normal(size=(3, d_z, d_model)) / math.sqrt(d_model)
    table_k, table_v = rng.normal(size=(2, 2 * k + 1, d_z))
    return x, w_q, w_k, w_v, table_k, table_v


@pytest.mark.parametrize("seq, d_model, d_z, k", [(1, 4, 2, 0), (5, 6, 4, 2), (9, 8, 3, 3), (4, 4, 4, 10)])
def test_shaw_attention_matches_loop_oracle(seq, d_model, d_z, k):
    case = _random_case(np.random.default_rng(seq + k), seq, d_model, d_z, k)
    got = posenc.shaw_attention(*case, k)
    logits, weights, output = shaw_oracle(*case, k)
    np.testing.assert_allclose(got["logits"], logits, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got["weights"], weights, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got["output"], output, rtol=1e-12, atol=1e-12)
    assert got["output"].shape == (seq, d_z)


def test_shaw_attention_worked_example():
    # One-dimensional everything: x = 1 at two positions, W = 1, k = 1, table_k = [-1, 0, 1], table_v = 0.
    got = posenc.shaw_attention(np.ones((2, 1)), [[1.0]], [[1.0]], [[1.0]], [[-1.0], [0.0], [1.0]],
                                np.zeros((3, 1)), 1)
    np.testing.assert_allclose(got["logits"], [[1.0, 2.0], [0.0, 1.0]])  # q.(k + a^K_{j-i})
    np.testing.assert_allclose(got["output"], [[1.0], [1.0]])  # every value is 1 and a^V = 0


def test_shaw_attention_properties():
    rng = np.random.default_rng(1)
    seq, d_model, d_z, k = 10, 6, 4, 3
    x, w_q, w_k, w_v, table_k, table_v = _random_case(rng, seq, d_model, d_z, k)
    # With zero tables it is plain scaled dot-product attention.
    zero = np.zeros((2 * k + 1, d_z))
    plain = posenc.shaw_attention(x, w_q, w_k, w_v, zero, zero, k)
    np.testing.assert_allclose(plain["output"], posenc.attention(x @ w_q.T, x @ w_k.T, x @ w_v.T), rtol=1e-12)
    # The same token everywhere: the logits depend on j - i only, and not at all beyond +-k.
    same = np.repeat(x[:1], seq, axis=0)
    logits = posenc.shaw_attention(same, w_q, w_k, w_v, table_k, table_v, k)["logits"]
    for offset in range(-seq + 1, seq):
        assert np.ptp(np.diagonal(logits, offset)) < 1e-12
    np.testing.assert_allclose(logits[0, k:], logits[0, k])  # clipped: one value for every offset >= k
    np.testing.assert_allclose(logits[-1, : seq - k], logits[-1, 0])
    # Rows of the attention weights sum to one.
    np.testing.assert_allclose(plain["weights"].sum(axis=1), 1.0, rtol=1e-12)


@pytest.mark.parametrize("call, exc, match", [
    (lambda: posenc.shaw_attention(np.zeros((3, 4)), np.zeros((2, 4)), np.zeros((2, 4)), np.zeros((2, 4)),
                                   np.zeros((4, 2)), np.zeros((5, 2)), 2),
     ValueError, r"table_k must have shape \(2k \+ 1, d_z\) = \(5, 2\) for max_relative_position k = 2, got \(4, 2\)"),
    (lambda: posenc.shaw_attention(np.zeros((3, 4)), np.zeros((2, 3)), np.zeros((2, 4)), np.zeros((2, 4)),
                                   np.zeros((5, 2)), np.zeros((5, 2)), 2),
     ValueError, r"w_q must have shape \(d_z, 4\), got \(2, 3\)"),
    (lambda: posenc.shaw_attention(np.zeros(4), np.zeros((2, 4)), np.zeros((2, 4)), np.zeros((2, 4)),
                                   np.zeros((5, 2)), np.zeros((5, 2)), 2),
     ValueError, r"x must have shape \(L, d_model\)"),
    (lambda: posenc.shaw_attention(np.zeros((3, 4)), np.zeros((2, 4)), np.zeros((2, 4)), np.zeros((2, 4)),
                                   np.zeros((5, 2)), np.zeros((5, 2)), -1),
     ValueError, r"max_relative_position must be an integer >= 0, got -1"),
    (lambda: posenc.shaw_attention(np.zeros((3, 4)), np.zeros((2, 4)), np.zeros((3, 4)), np.zeros((2, 4)),
                                   np.zeros((5, 2)), np.zeros((5, 2)), 2),
     ValueError, r"w_q, w_k, w_v must all have d_z rows \(the same number\), got w_q \(2, 4\), w_k \(3, 4\)"),
])
def test_shaw_attention_bad_input(call, exc, match):
    with pytest.raises(exc, match=match):
        call()
