"""posenc.scaling: the context-extension methods against their definitions and Hugging Face's code, and the
context a base supports (Men et al. 2024)."""

import inspect
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import posenc

dims = st.integers(2, 64).map(lambda h: 2 * h)
bases = st.floats(100.0, 1e6)
scales = st.floats(1.0, 64.0)


def test_ntk_base_worked_examples():
    assert posenc.ntk_base(64, 10000, 2) == pytest.approx(10000 * 2 ** (64 / 62), rel=1e-15)
    assert posenc.ntk_base(64, 10000, 2) == pytest.approx(20452.23, abs=0.01)  # not 20,226
    assert posenc.ntk_base(64, 10000, 8) == pytest.approx(85550.38, abs=0.01)
    assert posenc.ntk_base(128, 10000, 2) == pytest.approx(10000 * 2 ** (128 / 126), rel=1e-15)


@settings(max_examples=60, deadline=None)
@given(d=dims, base=bases, s=scales)
def test_ntk_keeps_the_fastest_pair_and_slows_the_slowest_by_exactly_s(d, base, s):
    theta, factor = posenc.ntk_aware(d, base, s)
    original = posenc.rope_frequencies(d, base)
    assert theta[0] == original[0] == 1.0
    assert original[-1] / theta[-1] == pytest.approx(s, rel=1e-10)
    assert factor == 1.0
    assert (theta <= original * (1 + 1e-12)).all()


@settings(max_examples=60, deadline=None)
@given(d=dims, base=bases, s=scales)
def test_position_interpolation_divides_every_frequency(d, base, s):
    theta, factor = posenc.position_interpolation(d, base, s)
    np.testing.assert_allclose(theta, posenc.rope_frequencies(d, base) / s, rtol=1e-15)
    assert factor == 1.0


def hf_dynamic_ntk(d, base, factor, seq_len, original):
    """transformers' _compute_dynamic_ntk_parameters, written out."""
    seq_len = max(seq_len, original)
    base = base * ((factor * seq_len / original) - (factor - 1)) ** (d / (d - 2))
    return 1.0 / (base ** (np.arange(0, d, 2) / d))


@settings(max_examples=60, deadline=None)
@given(d=dims, base=bases, s=scales, seq=st.integers(1, 100_000), original=st.integers(16, 8192))
def test_dynamic_ntk_matches_transformers(d, base, s, seq, original):
    theta, factor = posenc.dynamic_ntk(d, base, s, original, seq)
    np.testing.assert_allclose(theta, hf_dynamic_ntk(d, base, s, seq, original), rtol=1e-12)
    if seq <= original:
        np.testing.assert_allclose(theta, posenc.rope_frequencies(d, base), rtol=1e-12)


def test_dynamic_ntk_with_factor_one_is_ntk_at_the_length_ratio():
    theta, _ = posenc.dynamic_ntk(64, 10000.0, 1.0, 2048, 8192)
    np.testing.assert_allclose(theta, posenc.ntk_aware(64, 10000.0, 4.0)[0], rtol=1e-12)


def hf_yarn(d, base, factor, original, beta_fast=32, beta_slow=1):
    """transformers' _compute_yarn_parameters (truncate=True, default mscale), written out."""
    def find_correction_dim(num_rotations):
        return (d * math.log(original / (num_rotations * 2 * math.pi))) / (2 * math.log(base))
    low = max(math.floor(find_correction_dim(beta_fast)), 0)
    high = min(math.ceil(find_correction_dim(beta_slow)), d - 1)
    if low == high:
        high += 0.001
    ramp = np.clip((np.arange(d // 2) - low) / (high - low), 0, 1)
    extrapolation_factor = 1 - ramp
    pos_freqs = base ** (np.arange(0, d, 2) / d)
    inv_freq = (1.0 / (factor * pos_freqs)) * (1 - extrapolation_factor) + (1.0 / pos_freqs) * extrapolation_factor
    mscale = 0.1 * math.log(factor) + 1.0 if factor > 1 else 1.0
    return inv_freq, mscale


@settings(max_examples=60, deadline=None)
@given(d=dims, base=bases, s=scales, original=st.integers(64, 32768))
def test_yarn_matches_transformers(d, base, s, original):
    theta, factor = posenc.yarn(d, base, s, original)
    ref_theta, ref_factor = hf_yarn(d, base, s, original)
    np.testing.assert_allclose(theta, ref_theta, rtol=1e-12)
    assert factor == pytest.approx(ref_factor, rel=1e-15)


def test_yarn_ends_extrapolate_fast_pairs_and_interpolate_slow_ones():
    theta, factor = posenc.yarn(128, 10000.0, 16.0, 4096)
    original = posenc.rope_frequencies(128, 10000.0)
    assert theta[0] == original[0]
    assert theta[-1] == pytest.approx(original[-1] / 16)
    assert factor == pytest.approx(0.1 * math.log(16) + 1)


def hf_llama3(d, base, factor, original, low_freq_factor, high_freq_factor):
    """transformers' _compute_llama3_parameters, written out with numpy."""
    inv_freq = 1.0 / (base ** (np.arange(0, d, 2) / d))
    low_freq_wavelen = original / low_freq_factor
    high_freq_wavelen = original / high_freq_factor
    wavelen = 2 * math.pi / inv_freq
    inv_freq_llama = np.where(wavelen > low_freq_wavelen, inv_freq / factor, inv_freq)
    smooth = (original / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor)
    smoothed = (1 - smooth) * inv_freq_llama / factor + smooth * inv_freq_llama
    is_medium = ~(wavelen < high_freq_wavelen) & ~(wavelen > low_freq_wavelen)
    return np.where(is_medium, smoothed, inv_freq_llama)


@settings(max_examples=60, deadline=None)
@given(d=dims, base=bases, s=scales, original=st.integers(64, 32768), low=st.floats(0.5, 2.0), gap=st.floats(0.5, 8))
def test_llama3_matches_transformers(d, base, s, original, low, gap):
    theta, factor = posenc.llama3(d, base, s, original, low_freq_factor=low, high_freq_factor=low + gap)
    np.testing.assert_allclose(theta, hf_llama3(d, base, s, original, low, low + gap), rtol=1e-12)
    assert factor == 1.0


def test_llama31_defaults_have_three_bands():
    theta, _ = posenc.llama3(128)
    ratio = theta / posenc.rope_frequencies(128, 500000.0)
    assert (ratio == 1).any() and np.isclose(ratio, 1 / 8).any()
    assert ((ratio > 1 / 8 + 1e-9) & (ratio < 1 - 1e-9)).any()


def test_methods_share_one_contract():
    """One signature for every method (and the base helpers' leading arguments), called positionally: what
    transformers' ROPE_INIT_FUNCTIONS does with (config, device, seq_len)."""
    common = ["d", "base", "scale", "original_max_position", "seq_len"]
    for method in (*posenc.METHODS.values(), posenc.longrope):
        parameters = inspect.signature(method).parameters
        assert list(parameters)[:5] == common, method.__name__
        assert all(p.kind is p.KEYWORD_ONLY for p in list(parameters.values())[5:]), method.__name__
    assert list(inspect.signature(posenc.ntk_base).parameters) == common[:3]
    assert list(inspect.signature(posenc.dynamic_ntk_base).parameters) == common
    for name, method in posenc.METHODS.items():
        assert name == method.__name__
        theta, factor = method(64, 10000.0, 4.0, 2048, 8192)
        assert theta.shape == (32,) and theta.dtype == np.float64, name
        assert factor >= 1.0, name
    np.testing.assert_allclose(posenc.dynamic_ntk(64, 10000.0, 4.0, 2048, 8192)[0],
                               posenc.rope_frequencies(64, posenc.dynamic_ntk_base(64, 10000.0, 4.0, 2048, 8192)))


@pytest.mark.parametrize("call, exc, match", [
    (lambda: posenc.ntk_base(64, 10000, 0.5), ValueError, r"scale must be >= 1, got 0.5"),
    (lambda: posenc.ntk_base(64, 1.0, 2), ValueError, r"base must be > 1"),
    (lambda: posenc.ntk_base(2, 10000, 2), ValueError, r"d must be >= 4"),
    (lambda: posenc.position_interpolation(63, 10000, 2), ValueError, r"d must be a positive even integer"),
    (lambda: posenc.yarn(64, 10000, 2), TypeError, r"yarn needs original_max_position"),
    (lambda: posenc.yarn(64, 10000, 2, 4096, beta_fast=1, beta_slow=32), ValueError, r"beta_fast must be > beta_slow"),
    (lambda: posenc.dynamic_ntk(64, 10000, 2), TypeError, r"dynamic_ntk needs original_max_position and seq_len"),
    (lambda: posenc.dynamic_ntk(64, 10000, 2, 4096, 0), ValueError, r"seq_len must be an integer >= 1, got 0"),
    (lambda: posenc.llama3(64, 10000, 8, 8192, low_freq_factor=4, high_freq_factor=1), ValueError, r"high_freq_factor must be > low_freq_factor"),
    (lambda: posenc.ntk_aware(64, 10000, float("inf")), ValueError, r"scale must be finite"),
])
def test_bad_input(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


# --- the base bounds the context (Men et al. 2024) -------------------------------------------------------

def naive_first_negative(d, base, max_offset):
    for m in range(1, max_offset + 1):
        if sum(math.cos(m * base ** (-2 * i / d)) for i in range(d // 2)) < 0:
            return m
    return None


@settings(max_examples=25, deadline=None)
@given(d=st.integers(2, 32).map(lambda h: 2 * h), base=st.floats(10.0, 5000.0))
def test_base_context_bound_matches_a_loop(d, base):
    assert posenc.base_context_bound(d, base, 3000) == naive_first_negative(d, base, 3000)


def test_base_context_bound_grows_with_the_base():
    """d = 128: base 10000 already fails before 4096; 500000 (Llama 3) and 1e6 reach further."""
    bounds = [posenc.base_context_bound(128, b) for b in (1e4, 5e5, 1e6)]
    assert bounds == [1707, 18438, 27115]
    assert posenc.base_context_bound(128, 1e4, 1000) is None
