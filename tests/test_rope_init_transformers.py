"""posenc.scaling against the code people run: transformers' own ``ROPE_INIT_FUNCTIONS`` (modeling_rope_utils),
imported and called on drawn configurations. transformers computes in float32, so each comparison is at the
float32 bound of tests/test_scaling_transformers.py (which also checks posenc, to 1e-12, against float64
transcriptions of the same functions: together they show the gap is float32's rounding and nothing else)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS
from test_scaling_transformers import bases, dims, float32_frequency_rtol, float32_llama3_rtol, lengths, scales

import posenc


def config(d, base, max_position, **rope):
    """What transformers' rope functions read of a model's configuration."""
    return SimpleNamespace(head_dim=d, hidden_size=d, num_attention_heads=1, max_position_embeddings=max_position,
                           standardize_rope_params=lambda: None, rope_parameters={"rope_theta": base, **rope})


def theirs(kind, cfg, seq_len=None):
    inv_freq, factor = ROPE_INIT_FUNCTIONS[kind](cfg, None, seq_len)
    return inv_freq.double().numpy(), factor


@settings(max_examples=40, deadline=None)
@given(d=dims, base=bases, s=scales)
def test_position_interpolation_is_transformers_linear(d, base, s):
    theta, factor = posenc.position_interpolation(d, base, s)
    ref, ref_factor = theirs("linear", config(d, base, 4096, rope_type="linear", factor=s))
    np.testing.assert_allclose(theta, ref, rtol=float32_frequency_rtol(base))
    assert factor == ref_factor == 1.0


@settings(max_examples=40, deadline=None)
@given(d=dims, base=bases, s=scales, L0=lengths, seq=st.integers(1, 400_000))
def test_dynamic_ntk_is_transformers_dynamic(d, base, s, L0, seq):
    theta, factor = posenc.dynamic_ntk(d, base, s, L0, seq)
    ref, ref_factor = theirs("dynamic", config(d, base, L0, rope_type="dynamic", factor=s), seq)
    np.testing.assert_allclose(theta, ref, rtol=float32_frequency_rtol(posenc.dynamic_ntk_base(d, base, s, L0, seq)))
    assert factor == ref_factor == 1.0


@settings(max_examples=40, deadline=None)
@given(d=dims, base=bases, s=scales, L0=lengths, fast=st.floats(4.0, 64.0), slow=st.floats(0.25, 2.0))
def test_yarn_is_transformers_yarn(d, base, s, L0, fast, slow):
    theta, factor = posenc.yarn(d, base, s, L0, beta_fast=fast, beta_slow=slow)
    ref, ref_factor = theirs("yarn", config(d, base, int(L0 * s), rope_type="yarn", factor=s,
                                            original_max_position_embeddings=L0, beta_fast=fast, beta_slow=slow))
    np.testing.assert_allclose(theta, ref, rtol=float32_frequency_rtol(base))
    assert factor == pytest.approx(ref_factor, rel=1e-15)


@settings(max_examples=40, deadline=None)
@given(d=dims, base=st.floats(1e3, 1e7), s=scales, L0=lengths, low=st.floats(0.5, 2.0), gap=st.floats(0.5, 8.0))
def test_llama3_is_transformers_llama3(d, base, s, L0, low, gap):
    theta, factor = posenc.llama3(d, base, s, L0, low_freq_factor=low, high_freq_factor=low + gap)
    ref, ref_factor = theirs("llama3", config(d, base, L0 * 16, rope_type="llama3", factor=s, low_freq_factor=low,
                                              high_freq_factor=low + gap, original_max_position_embeddings=L0))
    np.testing.assert_allclose(theta, ref, rtol=float32_llama3_rtol(base, s, low, low + gap))
    assert factor == ref_factor == 1.0


@settings(max_examples=40, deadline=None)
@given(d=dims, base=bases, s=scales, L0=lengths, seq=st.integers(1, 400_000), data=st.data())
def test_longrope_is_transformers_longrope(d, base, s, L0, seq, data):
    factor_lists = st.lists(st.floats(0.5, 64.0), min_size=d // 2, max_size=d // 2)
    short, long = data.draw(factor_lists), data.draw(factor_lists)
    theta, factor = posenc.longrope(d, base, s, L0, seq, short_factor=short, long_factor=long)
    ref, ref_factor = theirs("longrope", config(d, base, int(L0 * s), rope_type="longrope", factor=s,
                                                original_max_position_embeddings=L0, short_factor=short,
                                                long_factor=long), seq)
    # (the list entries are float32 in transformers: one more rounding on top of the frequency's)
    np.testing.assert_allclose(theta, ref, rtol=float32_frequency_rtol(base) + 2.0 ** -23)
    assert factor == pytest.approx(ref_factor, rel=1e-14)


def test_every_rope_type_transformers_implements_is_compared_here():
    """A rope type transformers adds (a new release) fails this until posenc has it and a test above compares it.
    ``proportional`` is posenc.deployed.proportional_frequencies, compared in tests/test_deployed.py."""
    compared = {"linear", "dynamic", "yarn", "llama3", "longrope", "proportional"}
    assert set(ROPE_INIT_FUNCTIONS) == compared, set(ROPE_INIT_FUNCTIONS) ^ compared
