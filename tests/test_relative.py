"""posenc.relative: Shaw ids, T5 buckets against T5's code, the bias module, Transformer-XL's four terms."""

import math

import numpy as np
import pytest
import torch

import posenc


def t5_bucket_reference(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    """T5's `_relative_position_bucket` as in Hugging Face transformers (modeling_t5.py), in torch."""
    relative_buckets = 0
    if bidirectional:
        num_buckets //= 2
        relative_buckets += (relative_position > 0).to(torch.long) * num_buckets
        relative_position = torch.abs(relative_position)
    else:
        relative_position = -torch.min(relative_position, torch.zeros_like(relative_position))
    max_exact = num_buckets // 2
    is_small = relative_position < max_exact
    relative_position_if_large = max_exact + (
        torch.log(relative_position.float() / max_exact) / math.log(max_distance / max_exact) * (num_buckets - max_exact)
    ).to(torch.long)
    relative_position_if_large = torch.min(relative_position_if_large,
                                           torch.full_like(relative_position_if_large, num_buckets - 1))
    relative_buckets += torch.where(is_small, relative_position, relative_position_if_large)
    return relative_buckets


@pytest.mark.parametrize("bidirectional", [True, False])
@pytest.mark.parametrize("num_buckets, max_distance", [(32, 128), (16, 64), (64, 256), (8, 20), (32, 33)])
def test_t5_bucket_matches_t5_code_for_every_offset(bidirectional, num_buckets, max_distance):
    rel = torch.arange(-1000, 1001)
    expected = t5_bucket_reference(rel, bidirectional, num_buckets, max_distance).numpy()
    np.testing.assert_array_equal(posenc.t5_bucket(rel.numpy(), bidirectional, num_buckets, max_distance), expected)


def test_t5_bucket_shape_of_the_map():
    b = posenc.t5_bucket(np.arange(-300, 301))
    past, future = b[:300][::-1], b[301:]
    np.testing.assert_array_equal(past[:7], np.arange(1, 8))  # exact for small distances (max_exact = 8)
    assert (np.diff(past) >= 0).all() and past.max() == 15  # monotone, capped
    assert (past[128 - 1:] == 15).all()  # one bucket from max_distance on
    assert (future >= 16).all()  # the other half for keys after the query
    assert b[300] == 0


def test_shaw_ids_clip():
    ids = posenc.shaw_relative_ids(4, 6, 2)
    rel = np.arange(6)[None, :] - np.arange(4)[:, None]
    np.testing.assert_array_equal(ids, np.clip(rel, -2, 2) + 2)
    assert ids.min() == 0 and ids.max() == 4


def test_relative_position_bias_module_uses_t5_buckets():
    torch.manual_seed(0)
    module = posenc.RelativePositionBias(n_heads=3, num_buckets=16, max_distance=32, bidirectional=False)
    bias = module(5, 9)  # queries are the last 5 of 9 positions
    assert bias.shape == (3, 5, 9)
    rel = (np.arange(9)[None, :] - (np.arange(5)[:, None] + 4))
    expected = posenc.relative_bias(module.table.weight.detach().numpy(), posenc.t5_bucket(rel, False, 16, 32))
    np.testing.assert_allclose(bias.detach().numpy(), expected, rtol=1e-6)


def test_transformer_xl_terms_sum_to_the_naive_score():
    rng = np.random.default_rng(0)
    seq, d_model, d_head = 5, 8, 4
    x = rng.normal(size=(seq, d_model))
    w_q, w_ke, w_kr = rng.normal(size=(3, d_head, d_model))
    u, v = rng.normal(size=(2, d_head))
    t = posenc.transformer_xl_terms(x, w_q, w_ke, w_kr, u, v)
    for i in range(seq):
        for j in range(seq):
            r = posenc.sinusoidal([i - j], d_model)[0]
            q = w_q @ x[i]
            naive = q @ (w_ke @ x[j]) + q @ (w_kr @ r) + u @ (w_ke @ x[j]) + v @ (w_kr @ r)
            assert t["total"][i, j] == pytest.approx(naive, abs=1e-10)
            assert t["global_position"][i, j] == pytest.approx(v @ (w_kr @ r), abs=1e-10)
    # the position terms depend on i - j only: constant along diagonals
    for k in range(-seq + 1, seq):
        assert np.ptp(np.diagonal(t["global_position"], k)) < 1e-12


@pytest.mark.parametrize("call, exc, match", [
    (lambda: posenc.t5_bucket([0.5]), ValueError, r"relative_position must hold finite integers"),
    (lambda: posenc.t5_bucket(["a"]), TypeError, r"relative_position must hold integers"),
    (lambda: posenc.t5_bucket([1], num_buckets=31), ValueError, r"num_buckets must be even, got 31"),
    (lambda: posenc.t5_bucket([1], num_buckets=32, max_distance=8), ValueError, r"max_distance must exceed"),
    (lambda: posenc.shaw_relative_ids(3, 3, -1), ValueError, r"max_relative_position must be an integer >= 0, got -1"),
    (lambda: posenc.relative_bias(np.zeros((4, 2)), np.array([[5]])), ValueError, r"buckets must lie in 0..3"),
    (lambda: posenc.transformer_xl_terms(np.zeros((3, 4)), np.zeros((2, 5)), np.zeros((2, 4)), np.zeros((2, 4)),
                                         np.zeros(2), np.zeros(2)), ValueError, r"w_q must have shape \(d_head, 4\)"),
    (lambda: posenc.transformer_xl_terms(np.zeros((3, 4)), np.zeros((2, 4)), np.zeros((2, 4)), np.zeros((3, 4)),
                                         np.zeros(2), np.zeros(2)),
     ValueError, r"w_q, w_ke, w_kr must all have d_head rows \(the same number\), got .*w_kr \(3, 4\)"),
])
def test_bad_input(call, exc, match):
    with pytest.raises(exc, match=match):
        call()
