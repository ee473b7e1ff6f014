"""posenc.rope: RoPE against the explicit matrix and the complex form, both layouts, torch and numpy."""

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import posenc

dims = st.integers(1, 16).map(lambda h: 2 * h)
bases = st.floats(2.0, 1e6)
seeds = st.integers(0, 2**32 - 1)


def naive_rope_interleaved(x, m, base):
    """RoFormer eq. 15 written out pair by pair for one vector."""
    d = len(x)
    out = list(x)
    for i in range(d // 2):
        theta = base ** (-2 * i / d)
        c, s = math.cos(m * theta), math.sin(m * theta)
        out[2 * i] = x[2 * i] * c - x[2 * i + 1] * s
        out[2 * i + 1] = x[2 * i] * s + x[2 * i + 1] * c
    return np.array(out)


def naive_rotate_half(x, positions, base):
    """The GPT-NeoX / Hugging Face Llama form: x * cos + rotate_half(x) * sin with duplicated angles."""
    d = x.shape[-1]
    inv_freq = base ** (-np.arange(0, d, 2) / d)
    angles = np.outer(positions, inv_freq)
    emb = np.concatenate([angles, angles], axis=-1)
    x1, x2 = x[..., : d // 2], x[..., d // 2:]
    rotated = np.concatenate([-x2, x1], axis=-1)
    return x * np.cos(emb) + rotated * np.sin(emb)


@settings(max_examples=50, deadline=None)
@given(d=dims, base=bases, seed=seeds, m=st.integers(-3000, 3000))
def test_interleaved_matches_naive_and_matrix_and_complex(d, base, seed, m):
    x = np.random.default_rng(seed).normal(size=(1, d))
    out = posenc.apply_rope(x, [m], base)[0]
    np.testing.assert_allclose(out, naive_rope_interleaved(x[0], m, base), atol=1e-9)
    np.testing.assert_allclose(out, posenc.rope_matrix(m, d, base) @ x[0], atol=1e-9)
    np.testing.assert_allclose(out, posenc.apply_rope_complex(x, [m], base)[0], atol=1e-9)


@settings(max_examples=50, deadline=None)
@given(d=dims, base=bases, seed=seeds)
def test_half_layout_matches_rotate_half_and_its_matrix(d, base, seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(3, 5, d))
    pos = rng.integers(-100, 5000, size=5)
    out = posenc.apply_rope(x, pos, base, layout="half")
    np.testing.assert_allclose(out, naive_rotate_half(x, pos, base), atol=1e-9)
    np.testing.assert_allclose(out[1, 2], posenc.rope_matrix(pos[2], d, base, layout="half") @ x[1, 2], atol=1e-9)


@settings(max_examples=50, deadline=None)
@given(d=dims, base=bases, seed=seeds, layout=st.sampled_from(["interleaved", "half"]))
def test_norms_preserved_and_score_depends_only_on_offset(d, base, seed, layout):
    rng = np.random.default_rng(seed)
    q, k = rng.normal(size=(2, 1, d))
    m, n, shift = rng.integers(-2000, 2000, size=3)
    rq = posenc.apply_rope(np.stack([q[0], q[0]]), [m, m + shift], base, layout=layout)
    rk = posenc.apply_rope(np.stack([k[0], k[0]]), [n, n + shift], base, layout=layout)
    np.testing.assert_allclose(np.linalg.norm(rq, axis=-1), np.linalg.norm(q), rtol=1e-12)
    assert rq[0] @ rk[0] == pytest.approx(rq[1] @ rk[1], abs=1e-8)
    # and equals q^T R_{n-m} k
    expected = q[0] @ posenc.rope_matrix(n - m, d, base, layout) @ k[0]
    assert rq[0] @ rk[0] == pytest.approx(expected, abs=1e-8)


@settings(max_examples=50, deadline=None)
@given(d=dims, base=bases, seed=seeds)
def test_layouts_are_one_rotation_up_to_a_permutation(d, base, seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(4, d))
    pos = np.arange(4) * 37
    p = posenc.layout_permutation(d, "half", "interleaved")
    # interleaved(P x) = P half(x)
    np.testing.assert_allclose(posenc.apply_rope(x[:, p], pos, base, layout="interleaved"),
                               posenc.apply_rope(x, pos, base, layout="half")[:, p], atol=1e-10)
    back = posenc.layout_permutation(d, "interleaved", "half")
    np.testing.assert_array_equal(p[back], np.arange(d))


def test_layouts_differ_on_the_same_raw_vectors():
    rng = np.random.default_rng(0)
    q, k = rng.normal(size=(2, 1, 8))
    inter = posenc.apply_rope(q, [5], layout="interleaved")[0] @ posenc.apply_rope(k, [2], layout="interleaved")[0]
    half = posenc.apply_rope(q, [5], layout="half")[0] @ posenc.apply_rope(k, [2], layout="half")[0]
    assert abs(inter - half) > 1e-3
    assert not np.allclose(posenc.apply_rope(q, [5], layout="interleaved"), posenc.apply_rope(q, [5], layout="half"))


@pytest.mark.parametrize("layout", ["interleaved", "half"])
def test_partial_rotary_leaves_the_tail_alone(layout):
    x = np.random.default_rng(1).normal(size=(6, 12))
    out = posenc.apply_rope(x, np.arange(6), layout=layout, rotary_dim=8)
    np.testing.assert_array_equal(out[:, 8:], x[:, 8:])
    np.testing.assert_allclose(out[:, :8], posenc.apply_rope(x[:, :8], np.arange(6), layout=layout), atol=1e-12)
    np.testing.assert_allclose(out[3], posenc.rope_matrix(3, 12, layout=layout, rotary_dim=8) @ x[3], atol=1e-12)


@pytest.mark.parametrize("layout", ["interleaved", "half"])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_torch_agrees_with_numpy(layout, dtype):
    x = np.random.default_rng(2).normal(size=(2, 3, 7, 16))
    pos = np.arange(7) + 100
    out_t = posenc.apply_rope(torch.tensor(x, dtype=dtype), pos, layout=layout, rotary_dim=12)
    assert out_t.dtype == dtype and out_t.shape == x.shape
    tol = 1e-12 if dtype == torch.float64 else 1e-5
    np.testing.assert_allclose(out_t.double().numpy(), posenc.apply_rope(x, pos, layout=layout, rotary_dim=12),
                               atol=tol)


@pytest.mark.parametrize("layout", ["interleaved", "half"])
def test_torch_backward_is_the_inverse_rotation(layout):
    d, m = 8, 11
    x = torch.randn(1, d, dtype=torch.float64, requires_grad=True)
    upstream = torch.randn(1, d, dtype=torch.float64)
    posenc.apply_rope(x, [m], layout=layout).backward(upstream)
    expected = posenc.rope_matrix(m, d, layout=layout).T @ upstream[0].numpy()
    np.testing.assert_allclose(x.grad[0].numpy(), expected, atol=1e-12)
    assert torch.autograd.gradcheck(lambda t: posenc.apply_rope(t, [3, 4], layout=layout),
                                    (torch.randn(2, d, dtype=torch.float64, requires_grad=True),))


def test_torch_works_on_non_contiguous_input():
    x = torch.randn(3, 8, 16).transpose(0, 1)  # (8, 3, 16), non-contiguous
    out = posenc.apply_rope(x, np.arange(3))
    np.testing.assert_allclose(out.numpy(), posenc.apply_rope(x.numpy().astype(np.float64), np.arange(3)), atol=1e-5)


def test_frequencies_and_attention_factor_overrides():
    x = np.random.default_rng(3).normal(size=(5, 8))
    theta, factor = posenc.position_interpolation(8, 10000.0, 4.0)
    out = posenc.apply_rope(x, np.arange(5), frequencies=theta, attention_factor=1.5)
    # interpolation by 4 = positions divided by 4; the factor scales the rotated vector
    np.testing.assert_allclose(out, 1.5 * posenc.apply_rope(x, np.arange(5) / 4), atol=1e-12)


def test_score_bound_decays():
    bound = posenc.rope_score_bound(np.array([0, 10, 100, 1000]), 128)
    assert bound[0] == pytest.approx(np.mean(np.arange(1, 65)))  # all terms aligned at offset 0
    assert bound[0] > bound[1] > bound[2] > bound[3]


def test_angles_computed_in_float64():
    angles = posenc.rope_angles([1_000_000], 4)
    assert angles.dtype == np.float64 and angles[0, 0] == 1_000_000.0


@pytest.mark.parametrize("call, exc, match", [
    (lambda: posenc.apply_rope(np.zeros((3, 7)), range(3)), ValueError, r"last dimension of x \(d\) must be a positive even"),
    (lambda: posenc.apply_rope(np.zeros((3, 8)), range(4)), ValueError, r"positions must have one entry per row of x \(3\), got 4"),
    (lambda: posenc.apply_rope(np.zeros((3, 8)), range(3), rotary_dim=10), ValueError, r"rotary_dim must be <= .* d=8, got 10"),
    (lambda: posenc.apply_rope(np.zeros((3, 8)), range(3), rotary_dim=3), ValueError, r"rotary_dim must be a positive even integer.*got 3"),
    (lambda: posenc.apply_rope(np.zeros((3, 8)), range(3), layout="neox"), ValueError, r"layout must be one of 'interleaved', 'half', got 'neox'"),
    # the arguments after base are keyword-only: a call site names its layout, scaling and rotary width
    (lambda: posenc.apply_rope(np.zeros((3, 8)), range(3), 10000.0, "half"), TypeError, r"from 2 to 3 positional"),
    (lambda: posenc.apply_rope(np.zeros((3, 8)), range(3), base=1), ValueError, r"base must be > 1"),
    (lambda: posenc.apply_rope(np.full((3, 8), np.nan), range(3)), ValueError, r"x must contain only finite values"),
    (lambda: posenc.apply_rope(torch.full((3, 8), float("nan")), range(3)), ValueError, r"x must contain only finite"),
    (lambda: posenc.apply_rope(torch.zeros(3, 8, dtype=torch.long), range(3)), TypeError, r"x must be a floating-point tensor"),
    (lambda: posenc.apply_rope(np.zeros(8), [0]), ValueError, r"x must have shape \(\.\.\., seq, d\)"),
    (lambda: posenc.apply_rope(np.zeros((2, 8)), range(2), frequencies=np.ones(3)), ValueError, r"frequencies must have shape \(4,\)"),
    (lambda: posenc.rope_matrix(float("inf"), 8), ValueError, r"position must be finite"),
    (lambda: posenc.layout_permutation(8, "half", "gptj"), ValueError, r"target must be one of"),
])
def test_bad_input(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_huge_finite_torch_values_are_not_mistaken_for_nan():
    x = torch.full((4, 8), 3e37, dtype=torch.float32)  # the fast finiteness check's sum overflows to inf here
    assert not torch.isfinite(x.sum())
    out = posenc.apply_rope(x, range(4))  # must not raise: every entry is finite
    np.testing.assert_allclose(out.double().numpy(), posenc.apply_rope(x.double().numpy(), range(4)), rtol=1e-5)
