"""posenc.relative, for chapter 04_relative: T5 buckets against the Hugging Face algorithm written out in torch
(float32, every offset in -1000..1000, boundary-sensitive settings included), and posenc.shaw_attention."""

import math

import numpy as np
import pytest
import torch

import posenc
from test_relative import t5_bucket_reference as hf_relative_position_bucket  # T5's code, written out once


# The chapter's exercise settings, T5's own, and settings whose bucket edges fall exactly on an integer offset
# (18/128: offsets 8, 16, 64; 20/160; 38/288), where float64 and float32 round the logarithm differently.
SETTINGS = [(32, 128), (16, 64), (64, 256), (32, 64), (16, 256), (64, 128), (18, 128), (20, 160), (38, 288),
            (4, 8)]
CASES = [(True, nb, md) for nb, md in SETTINGS] + [(False, nb, md) for nb, md in SETTINGS] + [(False, 2, 2)]


@pytest.mark.parametrize("bidirectional, num_buckets, max_distance", CASES)
def test_t5_bucket_equals_hugging_face_for_every_offset(bidirectional, num_buckets, max_distance):
    rel = torch.arange(-1000, 1001)
    expected = hf_relative_position_bucket(rel, bidirectional, num_buckets, max_distance).numpy()
    got = posenc.t5_bucket(rel.numpy(), bidirectional, num_buckets, max_distance)
    np.testing.assert_array_equal(got, expected)
    assert got.dtype == np.int64


def test_t5_bucket_boundary_is_float32_like_t5():
    # 18 buckets, bidirectional: 9 per side, max_exact 4; offset -8 is mathematically the first offset of
    # bucket 4 + log(2)/log(32)*5 = 5. float32 (T5's code) gives 5; the same formula in float64 gives 4.
    assert posenc.t5_bucket(-8, True, 18, 128) == 5
    assert int(np.log(np.float32(8 / 4)) / np.float32(math.log(128 / 4)) * np.float32(5)) == 1
    assert int(math.log(8 / 4) / math.log(128 / 4) * 5) == 0  # float64: 0.999..., the pitfall the chapter shows


def test_t5_bucket_grid_keeps_shape():
    rel = posenc.relative_positions(7, 11)
    got = posenc.t5_bucket(rel, False, 16, 64)
    assert got.shape == (7, 11)
    expected = hf_relative_position_bucket(torch.as_tensor(rel), False, 16, 64).numpy()
    np.testing.assert_array_equal(got, expected)


# --- shaw_attention ---------------------------------------------------------------------------------------------

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
    (lambda: posenc.transformer_xl_terms(np.zeros((3, 4)), np.zeros((2, 4)), np.zeros((2, 4)), np.zeros((3, 4)),
                                         np.zeros(2), np.zeros(2)),
     ValueError, r"w_q, w_ke, w_kr must all have d_head rows \(the same number\), got .*w_kr \(3, 4\)"),
])
def test_shaw_attention_bad_input(call, exc, match):
    with pytest.raises(exc, match=match):
        call()
