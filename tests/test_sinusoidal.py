"""posenc.sinusoidal: worked examples, properties, and a naive oracle (Vaswani et al. 2017)."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import posenc

dims = st.integers(1, 32).map(lambda h: 2 * h)
bases = st.floats(1.5, 1e6)
positions = st.integers(-5000, 5000)


def naive_pe(p, d, base):
    """The paper's formula, one entry at a time."""
    row = []
    for i in range(d // 2):
        angle = p / base ** (2 * i / d)
        row += [math.sin(angle), math.cos(angle)]
    return row


def test_pe0_and_pe1_for_d4():
    np.testing.assert_allclose(posenc.sinusoidal([0], 4)[0], [0, 1, 0, 1], atol=1e-12)
    np.testing.assert_allclose(posenc.sinusoidal([1], 4)[0], [0.8415, 0.5403, 0.0100, 1.0000], atol=5e-5)


def test_pe100_for_d8():
    # omega = 1, 0.1, 0.01, 0.001 for d = 8: PE(100) = sin/cos of 100, 10, 1, 0.1
    expected = [math.sin(100), math.cos(100), math.sin(10), math.cos(10),
                math.sin(1), math.cos(1), math.sin(0.1), math.cos(0.1)]
    np.testing.assert_allclose(posenc.sinusoidal([100], 8)[0], expected, atol=1e-12)
    np.testing.assert_allclose(posenc.sinusoidal([100], 8)[0],
                               [-0.5064, 0.8623, -0.5440, -0.8391, 0.8415, 0.5403, 0.0998, 0.9950], atol=5e-5)


def test_dot_product_worked_example_cos4():
    pe = posenc.sinusoidal([3, 7, 10, 14], 2)
    assert pe[0] @ pe[1] == pytest.approx(math.cos(4), abs=1e-12)
    assert pe[2] @ pe[3] == pytest.approx(math.cos(4), abs=1e-12)
    assert float(posenc.sinusoidal_dot(3, 7, 2)) == pytest.approx(-0.6536, abs=5e-5)


def test_frequency_ratio_and_wavelengths_d512():
    w = posenc.frequencies(512)
    assert w[0] / w[255] == pytest.approx(10000 ** (510 / 512), rel=1e-12)
    assert w[0] / w[255] == pytest.approx(9646.616, rel=1e-6)
    lam = posenc.wavelengths(512)
    assert lam[0] == pytest.approx(2 * math.pi)
    assert lam[-1] == pytest.approx(2 * math.pi * 10000 ** (510 / 512))
    assert np.all(np.diff(lam) > 0)


@settings(max_examples=60, deadline=None)
@given(d=dims, base=bases, p=positions)
def test_table_matches_naive_formula(d, base, p):
    np.testing.assert_allclose(posenc.sinusoidal([p], d, base)[0], naive_pe(p, d, base), atol=1e-9)


@settings(max_examples=60, deadline=None)
@given(d=dims, base=bases, k=positions, p=positions)
def test_shift_matrix_moves_the_encoding(d, base, k, p):
    r = posenc.shift_matrix(k, d, base)
    np.testing.assert_allclose(r @ posenc.sinusoidal([p], d, base)[0], posenc.sinusoidal([p + k], d, base)[0],
                               atol=1e-8)


@settings(max_examples=60, deadline=None)
@given(d=dims, base=bases, a=positions, b=positions)
def test_shift_matrix_is_orthogonal_and_composes(d, base, a, b):
    ra, rb = posenc.shift_matrix(a, d, base), posenc.shift_matrix(b, d, base)
    np.testing.assert_allclose(ra @ ra.T, np.eye(d), atol=1e-10)
    np.testing.assert_allclose(ra @ rb, posenc.shift_matrix(a + b, d, base), atol=1e-8)


@settings(max_examples=60, deadline=None)
@given(d=dims, base=bases, m=positions, n=positions, shift=positions)
def test_dot_depends_only_on_offset(d, base, m, n, shift):
    pe = posenc.sinusoidal([m, n, m + shift, n + shift], d, base)
    assert pe[0] @ pe[1] == pytest.approx(pe[2] @ pe[3], abs=1e-8)
    assert pe[0] @ pe[1] == pytest.approx(float(posenc.sinusoidal_dot(m, n, d, base)), abs=1e-8)


@settings(max_examples=30, deadline=None)
@given(d=dims, base=bases)
def test_every_encoding_has_norm_sqrt_d_over_2(d, base):
    norms = np.linalg.norm(posenc.sinusoidal(np.arange(0, 3000, 7), d, base), axis=1)
    np.testing.assert_allclose(norms, math.sqrt(d / 2), rtol=1e-12)


def test_sinusoidal_dot_broadcasts():
    m = np.arange(5)[:, None]
    n = np.arange(4)[None, :]
    out = posenc.sinusoidal_dot(m, n, 8)
    assert out.shape == (5, 4)
    pe = posenc.sinusoidal(np.arange(5), 8)
    np.testing.assert_allclose(out, pe @ pe[:4].T, atol=1e-12)


@pytest.mark.parametrize("call, match", [
    (lambda: posenc.frequencies(7), r"d must be a positive even integer.*got 7"),
    (lambda: posenc.frequencies(0), r"d must be a positive even integer.*got 0"),
    (lambda: posenc.frequencies(-4), r"got -4"),
    (lambda: posenc.frequencies(8, base=1.0), r"base must be > 1, got 1"),
    (lambda: posenc.frequencies(8, base=0.5), r"base must be > 1"),
    (lambda: posenc.frequencies(8, base=float("nan")), r"base must be finite"),
    (lambda: posenc.sinusoidal([0, float("inf")], 8), r"positions must be finite"),
    (lambda: posenc.sinusoidal([[0, 1], [2, 3]], 8), r"positions must be a scalar or a 1-D sequence"),
    (lambda: posenc.shift_matrix(float("nan"), 8), r"k must be finite"),
    (lambda: posenc.sinusoidal_dot(np.zeros(3), np.zeros(4), 8), r"m and n must broadcast"),
])
def test_bad_input_value_errors_name_the_argument(call, match):
    with pytest.raises(ValueError, match=match):
        call()


@pytest.mark.parametrize("call, match", [
    (lambda: posenc.frequencies(8.5), r"d must be an integer, got 8.5"),
    (lambda: posenc.frequencies("8"), r"d must be an integer"),
    (lambda: posenc.frequencies(True), r"d must be an integer"),
    (lambda: posenc.frequencies(8, base="10000"), r"base must be a real number"),
    (lambda: posenc.sinusoidal("abc", 8), r"positions must be a number or a sequence"),
    (lambda: posenc.sinusoidal([True, False], 8), r"positions must hold integers or reals"),
])
def test_bad_input_type_errors_name_the_argument(call, match):
    with pytest.raises(TypeError, match=match):
        call()
