"""posenc.scaling against Hugging Face transformers, and the paper's YaRN ramp (posenc.yarn_ramp_paper).

The three ``hf_*`` functions below re-state, step by step in torch, what transformers 5.x computes in
``modeling_rope_utils`` (``_compute_dynamic_ntk_parameters``, ``_compute_yarn_parameters``,
``_compute_llama3_parameters``), config handling included (a ``factor`` of None, an explicit
``attention_factor``, ``mscale``/``mscale_all_dim``, ``truncate``), run in float64 (to compare formulas to
1e-12) and in float32 (the dtype transformers uses, to show the gap is rounding only). The functions themselves,
imported from transformers, are compared with posenc in tests/test_rope_init_transformers.py.
"""

import math
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import posenc

dims = st.integers(2, 128).map(lambda h: 2 * h)
bases = st.floats(100.0, 1e6)
scales = st.floats(1.0, 64.0)
lengths = st.integers(256, 131072)


U32 = 2.0 ** -24  # float32's unit roundoff


def float32_frequency_rtol(base):
    """Bound on the relative error of transformers' float32 ``1 / base ** (2i / d)``.

    The exponent x = 2i/d < 1 is rounded to float32 (absolute error <= U), which moves base**x by a relative
    ln(base) * U; rounding base itself moves it by x * U <= U; the power and the reciprocal add one rounding
    each. First-order terms only, so the bound is doubled.
    """
    return 2 * (math.log(base) + 3) * U32


def float32_llama3_rtol(base, s, low, high):
    """Bound on the relative error of transformers' float32 Llama 3 frequencies.

    The blend weight gamma = (L0 / wavelength - low) / (high - low) inherits the frequency's error e, amplified
    by high / (high - low) (the ratio L0 / wavelength is at most high where gamma is used), plus about five
    roundings (2 pi, two divisions, a subtraction, a division). The blended frequency theta (1/s + gamma (1 - 1/s))
    then moves by a relative delta_gamma (1 - 1/s) / (1/s + gamma (1 - 1/s)) <= (s - 1) delta_gamma, where
    gamma is near 0. Near a band edge float32 may put a pair in the neighbouring band, where gamma is 0 or 1
    within delta_gamma: the same bound. Doubled for the first-order terms left out.
    """
    e = float32_frequency_rtol(base) / 2
    delta_gamma = high / (high - low) * (e + 3 * U32) + 2 * U32
    return 2 * (e + (s - 1) * delta_gamma + 4 * U32)


def config(d, base, max_position, **rope):
    """The few fields of a transformers config these functions read."""
    return SimpleNamespace(head_dim=d, hidden_size=d, num_attention_heads=1, max_position_embeddings=max_position,
                           rope_parameters={"rope_theta": base, **rope})


def inverse_frequencies(d, base, dtype):
    return 1.0 / (base ** (torch.arange(0, d, 2, dtype=torch.int64).to(dtype) / d))


def hf_dynamic_ntk(cfg, seq_len, dtype=torch.float64):
    """_compute_dynamic_ntk_parameters: the NTK base from the current length, L0 = config.max_position_embeddings."""
    p, d = cfg.rope_parameters, cfg.head_dim
    L0 = cfg.max_position_embeddings
    seq_len = L0 if seq_len is None else max(seq_len, L0)
    base = p["rope_theta"] * ((p["factor"] * seq_len / L0) - (p["factor"] - 1)) ** (d / (d - 2))
    return inverse_frequencies(d, base, dtype), 1.0


def hf_yarn(cfg, dtype=torch.float64):
    """_compute_yarn_parameters: ramp over pair indices between the pairs with beta_fast and beta_slow turns."""
    p, d = cfg.rope_parameters, cfg.head_dim
    base, L0 = p["rope_theta"], p["original_max_position_embeddings"]
    factor = p.get("factor")
    if factor is None:
        factor = cfg.max_position_embeddings / L0

    def mscale_of(scale, mscale=1.0):
        return 1.0 if scale <= 1 else 0.1 * mscale * math.log(scale) + 1.0

    attention_factor = p.get("attention_factor")
    if attention_factor is None:
        if p.get("mscale") and p.get("mscale_all_dim"):
            attention_factor = mscale_of(factor, p["mscale"]) / mscale_of(factor, p["mscale_all_dim"])
        else:
            attention_factor = mscale_of(factor)
    beta_fast = p.get("beta_fast") or 32
    beta_slow = p.get("beta_slow") or 1

    def pair_with_turns(turns):
        return d * math.log(L0 / (turns * 2 * math.pi)) / (2 * math.log(base))

    low, high = pair_with_turns(beta_fast), pair_with_turns(beta_slow)
    if p.get("truncate", True):
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, d - 1)  # d - 1, not d/2 - 1: as transformers writes it
    if low == high:
        high += 0.001
    ramp = torch.clamp((torch.arange(d // 2, dtype=dtype) - low) / (high - low), 0, 1)
    keep = 1 - ramp  # 1: extrapolate (keep theta), 0: interpolate (theta / factor)
    theta = inverse_frequencies(d, base, dtype)
    return theta / factor * (1 - keep) + theta * keep, attention_factor


def hf_llama3(cfg, dtype=torch.float64):
    """_compute_llama3_parameters: keep short wavelengths, divide long ones by factor, blend in between."""
    p, d = cfg.rope_parameters, cfg.head_dim
    factor, low, high = p["factor"], p["low_freq_factor"], p["high_freq_factor"]
    L0 = p["original_max_position_embeddings"]
    theta = inverse_frequencies(d, p["rope_theta"], dtype)
    wavelength = 2 * math.pi / theta
    out = torch.where(wavelength > L0 / low, theta / factor, theta)
    smooth = (L0 / wavelength - low) / (high - low)
    blended = (1 - smooth) * out / factor + smooth * out
    medium = ~(wavelength < L0 / high) & ~(wavelength > L0 / low)
    return torch.where(medium, blended, out), 1.0


# --- posenc equals the transcriptions --------------------------------------------------------------------

@settings(max_examples=80, deadline=None)
@given(d=dims, base=bases, s=scales, L0=lengths, seq=st.integers(1, 400_000))
def test_dynamic_ntk_base_is_transformers_formula(d, base, s, L0, seq):
    theta, factor = hf_dynamic_ntk(config(d, base, L0, factor=s), seq)
    np.testing.assert_allclose(posenc.dynamic_ntk(d, base, s, L0, seq)[0], theta.numpy(), rtol=1e-12)
    expected_base = base * (s * max(seq, L0) / L0 - (s - 1)) ** (d / (d - 2))
    assert posenc.dynamic_ntk_base(d, base, s, L0, seq) == pytest.approx(expected_base, rel=1e-13)
    theta32, _ = hf_dynamic_ntk(config(d, base, L0, factor=s), seq, torch.float32)
    np.testing.assert_allclose(posenc.dynamic_ntk(d, base, s, L0, seq)[0], theta32.double().numpy(),
                               rtol=float32_frequency_rtol(posenc.dynamic_ntk_base(d, base, s, L0, seq)))


@settings(max_examples=80, deadline=None)
@given(d=dims, base=bases, s=scales, L0=lengths, fast=st.floats(4.0, 64.0), slow=st.floats(0.25, 2.0))
def test_yarn_is_transformers_yarn_with_truncate(d, base, s, L0, fast, slow):
    cfg = config(d, base, int(L0 * s), factor=s, original_max_position_embeddings=L0, beta_fast=fast, beta_slow=slow)
    theta, factor = posenc.yarn(d, base, s, L0, beta_fast=fast, beta_slow=slow)
    ref, ref_factor = hf_yarn(cfg)
    np.testing.assert_allclose(theta, ref.numpy(), rtol=1e-12)
    assert factor == pytest.approx(ref_factor, rel=1e-15)
    assert factor == posenc.yarn_attention_factor(s)
    ref32, _ = hf_yarn(cfg, torch.float32)
    np.testing.assert_allclose(theta, ref32.double().numpy(), rtol=float32_frequency_rtol(base))


def test_yarn_differs_from_transformers_only_in_options_posenc_does_not_model():
    """transformers' options beyond the paper: posenc.yarn is the default (truncate=True, factor given,
    attention factor 0.1 ln s + 1). Each option below changes the result; posenc has no flag for them."""
    d, base, s, L0 = 128, 10000.0, 8.0, 4096
    theta, factor = posenc.yarn(d, base, s, L0)
    no_truncate, _ = hf_yarn(config(d, base, L0 * 8, factor=s, original_max_position_embeddings=L0, truncate=False))
    assert not np.allclose(theta, no_truncate.numpy(), rtol=1e-9)
    _, deepseek = hf_yarn(config(d, base, L0 * 8, factor=s, original_max_position_embeddings=L0,
                                 mscale=1.0, mscale_all_dim=0.707))
    assert deepseek != pytest.approx(factor)
    from_lengths, f2 = hf_yarn(config(d, base, L0 * 8, factor=None, original_max_position_embeddings=L0))
    np.testing.assert_allclose(theta, from_lengths.numpy(), rtol=1e-12)  # factor None: the length ratio, here s
    assert f2 == pytest.approx(factor)


@settings(max_examples=80, deadline=None)
@given(d=dims, base=st.floats(1e3, 1e7), s=scales, L0=lengths, low=st.floats(0.5, 2.0), gap=st.floats(0.5, 8.0))
def test_llama3_is_transformers_llama3(d, base, s, L0, low, gap):
    cfg = config(d, base, L0 * 16, factor=s, low_freq_factor=low, high_freq_factor=low + gap,
                 original_max_position_embeddings=L0)
    theta, factor = posenc.llama3(d, base, s, L0, low_freq_factor=low, high_freq_factor=low + gap)
    np.testing.assert_allclose(theta, hf_llama3(cfg)[0].numpy(), rtol=1e-12)
    np.testing.assert_allclose(theta, hf_llama3(cfg, torch.float32)[0].double().numpy(),
                               rtol=float32_llama3_rtol(base, s, low, low + gap))
    assert factor == 1.0


def test_llama31_config_in_transformers_terms():
    """Llama 3.1's published rope_scaling: factor 8, low 1, high 4, original 8192, rope_theta 500000, head 128."""
    cfg = config(128, 500000.0, 131072, factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
                 original_max_position_embeddings=8192)
    np.testing.assert_allclose(posenc.llama3(128)[0], hf_llama3(cfg)[0].numpy(), rtol=1e-12)


# --- where transformers' index ramp and the paper's ramp in turns part ways -----------------------------

def test_degenerate_band_transformers_and_paper_disagree():
    """If every pair turns more than beta_fast times in L0, the paper keeps every frequency; transformers
    (whose high end is clipped to d - 1 while low is not clipped) interpolates every pair. posenc follows
    transformers here; the configuration (tiny base, huge L0) is far from any released model."""
    d, base, L0 = 8, 10.0, 10**6
    assert (L0 * posenc.rope_frequencies(d, base) / (2 * np.pi) > 32).all()
    np.testing.assert_array_equal(posenc.yarn_ramp_paper(d, base, L0), np.ones(4))
    np.testing.assert_array_equal(posenc.yarn_ramp(d, base, L0), np.zeros(4))
    ref, _ = hf_yarn(config(d, base, L0 * 4, factor=4.0, original_max_position_embeddings=L0))
    np.testing.assert_allclose(posenc.yarn(d, base, 4.0, L0)[0], ref.numpy(), rtol=1e-12)
    np.testing.assert_allclose(ref.numpy(), posenc.rope_frequencies(d, base) / 4, rtol=1e-12)


@settings(max_examples=80, deadline=None)
@given(d=dims, base=bases, L0=lengths, fast=st.floats(4.0, 64.0), slow=st.floats(0.25, 2.0))
def test_both_ramps_agree_outside_the_band(d, base, L0, fast, slow):
    turns = L0 * posenc.rope_frequencies(d, base) / (2 * np.pi)
    assume(turns[0] >= fast and turns[-1] <= slow)  # the band lies inside the spectrum: the usual case
    hf, paper = posenc.yarn_ramp(d, base, L0, fast, slow), posenc.yarn_ramp_paper(d, base, L0, fast, slow)
    outside = (turns >= fast) | (turns <= slow)
    np.testing.assert_array_equal(hf[outside], paper[outside])
    np.testing.assert_array_equal(paper[turns >= fast], 1.0)
    np.testing.assert_array_equal(paper[turns <= slow], 0.0)


# --- yarn_ramp_paper on its own --------------------------------------------------------------------------

def naive_paper_ramp(d, base, L0, fast, slow):
    out = []
    for i in range(d // 2):
        r = L0 / (2 * math.pi * base ** (2 * i / d))
        out.append(0.0 if r < slow else 1.0 if r > fast else (r - slow) / (fast - slow))
    return out


def test_paper_ramp_worked_example_d128():
    gamma = posenc.yarn_ramp_paper(128, 10000.0, 4096)
    r22 = 4096 / (2 * math.pi * 10000 ** (44 / 128))
    assert gamma[22] == pytest.approx((r22 - 1) / 31, rel=1e-13)
    assert gamma[22] == pytest.approx(0.8545, abs=5e-5)
    assert gamma[20] == 1.0 and gamma[46] == 0.0  # pair 20 turns >= 32 times, pair 46 < once
    assert posenc.yarn_ramp(128, 10000.0, 4096)[22] == pytest.approx(1 - 2 / 26, rel=1e-13)  # low 20, high 46


@settings(max_examples=80, deadline=None)
@given(d=dims, base=bases, L0=lengths, fast=st.floats(4.0, 64.0), slow=st.floats(0.25, 2.0))
def test_paper_ramp_matches_naive_and_is_monotone(d, base, L0, fast, slow):
    gamma = posenc.yarn_ramp_paper(d, base, L0, fast, slow)
    np.testing.assert_allclose(gamma, naive_paper_ramp(d, base, L0, fast, slow), atol=1e-12)
    assert gamma.shape == (d // 2,) and gamma.dtype == np.float64
    assert (np.diff(gamma) <= 1e-15).all(), "slower pairs must not be kept more than faster ones"


@pytest.mark.parametrize("call, exc, match", [
    (lambda: posenc.yarn_ramp_paper(63, 10000, 4096), ValueError, r"d must be a positive even integer \(dimensions come in pairs\), got 63"),
    (lambda: posenc.yarn_ramp_paper(64, 1.0, 4096), ValueError, r"base must be > 1, got 1"),
    (lambda: posenc.yarn_ramp_paper(64, 10000, 0), ValueError, r"original_max_position must be an integer >= 1, got 0"),
    (lambda: posenc.yarn_ramp_paper(64, 10000, 4096.5), TypeError, r"original_max_position must be an integer"),
    (lambda: posenc.yarn_ramp_paper(64, 10000, 4096, 1, 32), ValueError, r"beta_fast must be > beta_slow"),
    (lambda: posenc.yarn_ramp_paper(64, 10000, 4096, 32, -1), ValueError, r"beta_slow must be > 0, got -1"),
])
def test_paper_ramp_bad_input(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


# --- LongRoPE (transformers' rope_type="longrope") -------------------------------------------------------

def hf_longrope_loop(d, base, L0, seq_len, short_factor, long_factor, factor=None, max_position=None):
    """transformers 5.x ``_compute_longrope_parameters``, written out as a loop over the pairs. Its code:

        if factor is None:
            factor = config.max_position_embeddings / original_max_position_embeddings
        if attention_factor is None:
            if factor <= 1.0:
                attention_factor = 1.0
            else:
                attention_factor = math.sqrt(1 + math.log(factor) / math.log(original_max_position_embeddings))
        if seq_len and seq_len > original_max_position_embeddings:
            ext_factors = torch.tensor(long_factor, dtype=torch.float32, device=device)
        else:
            ext_factors = torch.tensor(short_factor, dtype=torch.float32, device=device)
        inv_freq_shape = torch.arange(0, dim, 2, dtype=torch.int64, device=device).float() / dim
        inv_freq = 1.0 / (ext_factors * base**inv_freq_shape)
    """
    if factor is None:
        factor = max_position / L0
    attention = 1.0 if factor <= 1.0 else math.sqrt(1 + math.log(factor) / math.log(L0))
    ext = long_factor if (seq_len and seq_len > L0) else short_factor
    inv = []
    for k, i in enumerate(range(0, d, 2)):
        inv.append(1.0 / (ext[k] * base ** (i / d)))
    return np.array(inv), attention


@settings(max_examples=80, deadline=None)
@given(d=dims, base=bases, s=scales, L0=lengths, seq=st.integers(1, 400_000), data=st.data())
def test_longrope_is_transformers_longrope(d, base, s, L0, seq, data):
    factor_lists = st.lists(st.floats(0.5, 64.0), min_size=d // 2, max_size=d // 2)
    short, long = data.draw(factor_lists), data.draw(factor_lists)
    theta, factor = posenc.longrope(d, base, s, L0, seq, short_factor=short, long_factor=long)
    ref, ref_factor = hf_longrope_loop(d, base, L0, seq, short, long, factor=s)
    np.testing.assert_allclose(theta, ref, rtol=1e-12)
    assert factor == pytest.approx(ref_factor, rel=1e-14)
    chosen = np.asarray(long if seq > L0 else short)
    np.testing.assert_allclose(theta * chosen, posenc.rope_frequencies(d, base), rtol=1e-12)


def test_longrope_switches_lists_at_the_original_length():
    """The short list up to L0 (and when no length is given), the long list past it; the factor does not
    depend on the length. Phi-3-mini-128k's setting: L0 = 4096, max_position_embeddings = 131072, so
    factor = 32 and the attention factor sqrt(1 + ln 32 / ln 4096)."""
    d, L0 = 96, 4096
    short, long = np.linspace(1.0, 1.5, d // 2), np.linspace(1.0, 40.0, d // 2)
    theta = posenc.rope_frequencies(d, 10000.0)
    for seq, chosen in ((None, short), (1, short), (L0, short), (L0 + 1, long), (131072, long)):
        new, factor = posenc.longrope(d, 10000.0, 32.0, L0, seq, short_factor=short, long_factor=long)
        np.testing.assert_allclose(new, theta / chosen, rtol=1e-15)
        assert factor == pytest.approx(math.sqrt(1 + math.log(32) / math.log(4096)), rel=1e-15)
    _, f = hf_longrope_loop(d, 10000.0, L0, 5000, short, long, factor=None, max_position=131072)
    assert f == pytest.approx(posenc.longrope_attention_factor(32.0, L0), rel=1e-15)
    assert posenc.longrope_attention_factor(1.0, L0) == 1.0


@pytest.mark.parametrize("call, exc, match", [
    (lambda: posenc.longrope(8, 1e4, 2.0, 4096, 10, short_factor=[1, 1, 1], long_factor=[1, 1, 1, 1]), ValueError, r"short_factor must hold d/2 = 4"),
    (lambda: posenc.longrope(8, 1e4, 2.0, 4096, 10, short_factor=[1, 1, 1, 1], long_factor=[1, 0, 1, 1]), ValueError, r"long_factor must be > 0"),
    (lambda: posenc.longrope(8, 1e4, 2.0, None, 10, short_factor=[1] * 4, long_factor=[1] * 4), TypeError, r"needs original_max_position"),
    (lambda: posenc.longrope(8, 1e4, 0.5, 4096, 10, short_factor=[1] * 4, long_factor=[1] * 4), ValueError, r"scale must be >= 1"),
])
def test_longrope_bad_input(call, exc, match):
    with pytest.raises(exc, match=match):
        call()
