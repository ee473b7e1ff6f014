r"""Extending a RoPE model's context: new per-pair frequencies for a scale factor s = new length / old length.

Every method has one signature, ``(d, base, scale, original_max_position, seq_len)``, followed by its own
options as keywords, and returns the same pair ``(frequencies, attention_factor)``: ``frequencies`` is float64
``(d/2,)`` to pass to :func:`posenc.apply_rope` (``frequencies=``), and ``attention_factor`` multiplies cos
and sin (1.0 except for YaRN and LongRoPE). A method ignores the arguments its formula does not use, as each
entry of transformers' ``ROPE_INIT_FUNCTIONS`` takes the whole configuration; so :data:`METHODS` maps names to
the functions themselves. The helpers that compute a base (:func:`ntk_base`, :func:`dynamic_ntk_base`) take
the same leading arguments. Where Hugging Face transformers (``modeling_rope_utils``), the code people run,
differs from the paper, these functions match transformers and the docstring says how.
"""

from __future__ import annotations

import math

import numpy as np

from . import _validate
from .rope import rope_frequencies


def default(d, base=10000.0, scale=1.0, original_max_position=None, seq_len=None):
    r"""Plain RoPE: :math:`\theta_i = \mathrm{base}^{-2i/d}`, attention factor 1 (Su et al. 2021, arXiv:2104.09864).
    No extension: scale, original_max_position and seq_len are not used."""
    return rope_frequencies(d, base), 1.0


def position_interpolation(d, base=10000.0, scale=1.0, original_max_position=None, seq_len=None):
    r"""Position interpolation: :math:`\theta'_i = \theta_i / s`, i.e. positions are divided by s.

    Chen et al. 2023 (arXiv:2306.15595). Every pair slows down by the same factor, so no angle exceeds
    what was seen in training; nearby positions get harder to tell apart (fine-tuning recovers it).
    original_max_position and seq_len are not used.
    """
    s = _validate.scale(scale)
    theta, factor = default(d, base)
    return theta / s, factor


def ntk_base(d, base, scale) -> float:
    r"""The NTK-aware base: :math:`\mathrm{base}' = \mathrm{base}\cdot s^{d/(d-2)}`.

    bloc97 2023 ("NTK-Aware Scaled RoPE", reddit r/LocalLLaMA), as written up by Peng et al. 2023
    (arXiv:2309.00071, §3.1). The exponent is chosen so that the slowest pair, :math:`i = d/2 - 1`, is
    slowed by exactly s while pair 0 is untouched.
    """
    b = _validate.base(base)
    d = _validate.even_dim("d", d)
    if d < 4:
        raise ValueError(f"d must be >= 4 for the NTK-aware base (the exponent d/(d-2) needs d > 2), got {d}")
    return b * _validate.scale(scale) ** (d / (d - 2))


def ntk_aware(d, base=10000.0, scale=1.0, original_max_position=None, seq_len=None):
    r"""NTK-aware scaling: RoPE with the base :func:`ntk_base`, :math:`\theta'_i = (\mathrm{base}\,s^{d/(d-2)})^{-2i/d}`.

    Interpolates the slow pairs and extrapolates the fast ones; usable without fine-tuning
    (Peng et al. 2023, arXiv:2309.00071, §3.1). original_max_position and seq_len are not used.
    """
    return rope_frequencies(d, ntk_base(d, base, scale)), 1.0


def dynamic_ntk_base(d, base, scale, original_max_position, seq_len) -> float:
    r"""The base dynamic NTK uses for a sequence of length L (Hugging Face's formula):

    .. math:: \mathrm{base}' = \mathrm{base}\,\Big(\frac{s\,\max(L, L_0)}{L_0} - (s - 1)\Big)^{d/(d-2)}

    It equals the base for L <= L_0 and grows with L. The paper's description (Peng et al. 2023,
    arXiv:2309.00071, §3.3) uses the factor max(1, L/L_0) in place of the bracket; the two agree when s = 1,
    and transformers (``_compute_dynamic_ntk_parameters``) uses the bracket, which is what runs in practice.
    """
    b = _validate.base(base)
    d = _validate.even_dim("d", d)
    s = _validate.scale(scale)
    length = _validate.integer("seq_len", seq_len, minimum=1)
    original = _validate.integer("original_max_position", original_max_position, minimum=1)
    length = max(length, original)
    return b * (s * length / original - (s - 1)) ** (d / (d - 2))


def dynamic_ntk(d, base=10000.0, scale=1.0, original_max_position=None, seq_len=None):
    r"""Dynamic NTK: the NTK-aware base recomputed from the current sequence length (:func:`dynamic_ntk_base`).

    emozilla 2023 ("Dynamically Scaled RoPE"), Peng et al. 2023 (arXiv:2309.00071, §3.3). Short sequences
    keep the original frequencies exactly.
    """
    if seq_len is None or original_max_position is None:
        raise TypeError("dynamic_ntk needs original_max_position and seq_len (integers)")
    return rope_frequencies(d, dynamic_ntk_base(d, base, scale, original_max_position, seq_len)), 1.0


def yarn_attention_factor(scale, mscale=None, mscale_all_dim=None) -> float:
    r"""YaRN's attention factor :math:`0.1 \ln s + 1` (1 for s <= 1), applied to both q and k, so the logits
    are multiplied by its square, i.e. divided by the temperature t with :math:`\sqrt{1/t} = 0.1\ln s + 1`
    (Peng et al. 2023, arXiv:2309.00071, §3.4).

    DeepSeek's configurations (DeepSeek-V2, arXiv:2405.04434; V3) give two coefficients, ``mscale`` and
    ``mscale_all_dim``, and the factor becomes the ratio :math:`(0.1\,m\ln s + 1) / (0.1\,m_{all}\ln s + 1)`
    (1 when they are equal, as in V3's released configuration, where DeepSeek's attention instead multiplies
    its softmax scale by :math:`(0.1\,m_{all}\ln s + 1)^2`). As in transformers' ``_compute_yarn_parameters``,
    the ratio is used only when both are given (and non-zero); otherwise the plain factor."""
    s = _validate.scale(scale)

    def get_mscale(m):
        return 0.1 * m * math.log(s) + 1.0

    if mscale and mscale_all_dim:
        return get_mscale(float(mscale)) / get_mscale(float(mscale_all_dim))
    return get_mscale(1.0)


def _yarn_arguments(d, base, original_max_position, beta_fast, beta_slow):
    """Checked (d, base, L_0, beta_fast, beta_slow) for the YaRN ramp functions."""
    d = _validate.even_dim("d", d)
    b = _validate.base(base)
    original = _validate.integer("original_max_position", original_max_position, minimum=1)
    fast = _validate.real("beta_fast", beta_fast, greater_than=0.0)
    slow = _validate.real("beta_slow", beta_slow, greater_than=0.0)
    if not fast > slow:
        raise ValueError(f"beta_fast must be > beta_slow (turns of the fast boundary), got {fast:g} <= {slow:g}")
    return d, b, original, fast, slow


def yarn_correction_range(d, base, original_max_position, beta_fast=32.0, beta_slow=1.0):
    r"""The pair indices (low, high) between which YaRN's ramp runs, as Hugging Face computes them.

    Pair i makes :math:`L_0\theta_i / 2\pi` turns over the training length; it makes exactly r turns at
    :math:`i(r) = \frac{d \ln(L_0 / 2\pi r)}{2 \ln \mathrm{base}}`. low = floor(i(beta_fast)),
    high = ceil(i(beta_slow)), clipped to [0, d - 1].
    """
    d, b, original, fast, slow = _yarn_arguments(d, base, original_max_position, beta_fast, beta_slow)

    def pair_with_turns(turns):
        return d * math.log(original / (turns * 2 * math.pi)) / (2 * math.log(b))

    return max(math.floor(pair_with_turns(fast)), 0), min(math.ceil(pair_with_turns(slow)), d - 1)


def yarn_ramp(d, base, original_max_position, beta_fast=32.0, beta_slow=1.0) -> np.ndarray:
    r"""YaRN's per-pair blend :math:`\gamma_i \in [0, 1]`: 1 keeps pair i's frequency (extrapolate), 0
    divides it by s (interpolate).

    Hugging Face's form: :math:`\gamma_i = 1 - \mathrm{clip}\big((i - \mathrm{low}) / (\mathrm{high} - \mathrm{low}), 0, 1\big)`
    over the pair index i, with (low, high) from :func:`yarn_correction_range`. The paper
    (Peng et al. 2023, arXiv:2309.00071, §3.2) ramps linearly in the number of turns
    :math:`r = L_0/\lambda_i` between alpha = beta_slow and beta = beta_fast, without rounding; since r is
    exponential in i, the two ramps coincide at the ends and differ in shape between them.
    """
    low, high = yarn_correction_range(d, base, original_max_position, beta_fast, beta_slow)
    if low == high:
        high += 0.001  # transformers' guard against a zero-width ramp
    i = np.arange(d // 2, dtype=np.float64)
    return 1.0 - np.clip((i - low) / (high - low), 0.0, 1.0)


def yarn_ramp_paper(d, base, original_max_position, beta_fast=32.0, beta_slow=1.0) -> np.ndarray:
    r"""YaRN's per-pair blend :math:`\gamma_i \in [0, 1]` as the paper writes it: linear in the number of turns.

    Pair i makes :math:`r_i = L_0 / \lambda_i = L_0\,\theta_i / 2\pi` turns over the training length
    :math:`L_0`; with :math:`\alpha` = beta_slow and :math:`\beta` = beta_fast,

    .. math:: \gamma_i = \mathrm{clip}\Big(\frac{r_i - \alpha}{\beta - \alpha},\ 0,\ 1\Big)

    Peng et al. 2023 (arXiv:2309.00071), "NTK-by-parts" interpolation: 1 keeps :math:`\theta_i`
    (extrapolate), 0 divides it by s (interpolate). Pairs with at least beta_fast turns get 1 and pairs with at
    most beta_slow turns get 0, as in :func:`yarn_ramp` (Hugging Face's ramp over pair indices, whose rounded
    ends give the same 1s and 0s unless all pairs lie on one side of the band); in between the two shapes
    differ, because r is exponential in i. Returns float64 ``(d/2,)``.
    """
    d, b, original, fast, slow = _yarn_arguments(d, base, original_max_position, beta_fast, beta_slow)
    turns = original * rope_frequencies(d, b) / (2 * np.pi)  # (d/2,)
    return np.clip((turns - slow) / (fast - slow), 0.0, 1.0)


def yarn(d, base=10000.0, scale=1.0, original_max_position=None, seq_len=None, *, beta_fast=32.0, beta_slow=1.0):
    r"""YaRN: per-pair blend of interpolation and extrapolation, plus an attention temperature.

    .. math:: \theta'_i = (1 - \gamma_i)\,\frac{\theta_i}{s} + \gamma_i\,\theta_i, \qquad
              \text{attention factor} = 0.1 \ln s + 1

    Peng et al. 2023 (arXiv:2309.00071): §3.2 ("NTK-by-parts") and §3.4 (the temperature); γ from :func:`yarn_ramp`
    (Hugging Face's ramp over pair indices; see there how it differs from the paper's). seq_len is not used
    (transformers' YaRN is static; Dynamic-YaRN would recompute s from it).
    """
    if original_max_position is None:
        raise TypeError("yarn needs original_max_position (the training context length, an integer)")
    s = _validate.scale(scale)
    theta = rope_frequencies(d, base)
    gamma = yarn_ramp(d, base, original_max_position, beta_fast, beta_slow)
    return (1.0 - gamma) * theta / s + gamma * theta, yarn_attention_factor(s)


def llama3(d, base=500000.0, scale=8.0, original_max_position=8192, seq_len=None, *, low_freq_factor=1.0,
           high_freq_factor=4.0):
    r"""Llama 3.1's frequency bands (Meta 2024, "The Llama 3 Herd of Models", arXiv:2407.21783; the
    formula is in Meta's reference code and transformers' ``_compute_llama3_parameters``).

    With :math:`\lambda_i = 2\pi/\theta_i`: pairs with :math:`\lambda_i < L_0/\mathrm{high}` keep
    :math:`\theta_i`; pairs with :math:`\lambda_i > L_0/\mathrm{low}` get :math:`\theta_i / s`; in between,

    .. math:: \theta'_i = (1 - \gamma_i)\frac{\theta_i}{s} + \gamma_i\theta_i, \qquad
              \gamma_i = \frac{L_0/\lambda_i - \mathrm{low}}{\mathrm{high} - \mathrm{low}}

    Defaults are Llama 3.1's: base 500000, s = 8, L_0 = 8192, low = 1, high = 4. Attention factor 1;
    seq_len is not used.
    """
    s = _validate.scale(scale)
    original = _validate.integer("original_max_position", original_max_position, minimum=1)
    low = _validate.real("low_freq_factor", low_freq_factor, greater_than=0.0)
    high = _validate.real("high_freq_factor", high_freq_factor, greater_than=0.0)
    if not high > low:
        raise ValueError(f"high_freq_factor must be > low_freq_factor, got {high:g} <= {low:g}")
    theta = rope_frequencies(d, base)
    wavelength = 2 * np.pi / theta
    gamma = np.clip((original / wavelength - low) / (high - low), 0.0, 1.0)
    return (1.0 - gamma) * theta / s + gamma * theta, 1.0


def longrope_attention_factor(scale, original_max_position) -> float:
    r"""LongRoPE's attention factor :math:`\sqrt{1 + \ln s / \ln L_0}` (1 for s <= 1), applied to both q and k.

    Ding et al. 2024 (arXiv:2402.13753); the default of transformers' ``_compute_longrope_parameters``
    when the configuration gives no ``attention_factor``.
    """
    s = _validate.scale(scale)
    original = _validate.integer("original_max_position", original_max_position, minimum=2)
    return 1.0 if s <= 1.0 else math.sqrt(1.0 + math.log(s) / math.log(original))


def longrope(d, base=10000.0, scale=1.0, original_max_position=None, seq_len=None, *, short_factor=None,
             long_factor=None):
    r"""LongRoPE: every pair's frequency divided by its own rescale factor, from one of two searched lists.

    .. math:: \theta'_i = \frac{\theta_i}{\lambda_i}, \qquad
              \lambda = \begin{cases} \texttt{long\_factor} & \text{if } L > L_0 \\
                                      \texttt{short\_factor} & \text{otherwise} \end{cases}, \qquad
              \text{attention factor} = \sqrt{1 + \ln s / \ln L_0}

    Ding et al. 2024 (arXiv:2402.13753) find the per-pair factors by an evolutionary search; Phi-3's
    configurations ship them as ``short_factor`` and ``long_factor`` (each ``(d/2,)``). This is transformers'
    ``_compute_longrope_parameters`` (``rope_type="longrope"``): the long list is used when the current
    length ``seq_len`` (transformers: largest position id + 1) exceeds ``original_max_position``, the short
    one otherwise (also when seq_len is None), and the attention factor depends on s only
    (:func:`longrope_attention_factor`). Not in :data:`METHODS`: its factors are data, not a formula.
    Returns (float64 ``(d/2,)``, float).
    """
    if original_max_position is None or short_factor is None or long_factor is None:
        raise TypeError("longrope needs original_max_position, short_factor and long_factor")
    d = _validate.even_dim("d", d)
    original = _validate.integer("original_max_position", original_max_position, minimum=2)
    factors = {}
    for name, value in (("short_factor", short_factor), ("long_factor", long_factor)):
        arr = _validate.finite_array(name, value)
        if arr.shape != (d // 2,):
            raise ValueError(f"{name} must hold d/2 = {d // 2} numbers, one per pair, got shape {arr.shape}")
        if (arr <= 0).any():
            raise ValueError(f"{name} must be > 0 (each divides a frequency), got {arr[arr <= 0][:3].tolist()}")
        factors[name] = arr
    long = seq_len is not None and _validate.integer("seq_len", seq_len, minimum=1) > original
    chosen = factors["long_factor"] if long else factors["short_factor"]  # (d/2,)
    return rope_frequencies(d, base) / chosen, longrope_attention_factor(scale, original)


def base_context_bound(d, base, max_offset=1_000_000) -> int | None:
    r"""The first relative distance m >= 1 at which :math:`B_m = \sum_{i} \cos(m\theta_i)` is negative.

    Men et al. 2024 ("Base of RoPE Bounds Context Length", arXiv:2405.14591): with q and k drawn so that
    k is q plus independent noise, the expected score with a similar key exceeds that with a random key by a
    positive multiple of :math:`B_m`; a model can tell a similar token from a random one at every distance
    up to L only if :math:`B_m \ge 0` for all m <= L. The returned m is the first distance where the base
    cannot (None if :math:`B_m \ge 0` up to ``max_offset``). Computed in blocks of distances, float64.
    """
    theta = rope_frequencies(d, base)  # (d/2,)
    top = _validate.integer("max_offset", max_offset, minimum=1)
    block = max(1, 2_000_000 // theta.size)
    for start in range(1, top + 1, block):
        m = np.arange(start, min(start + block, top + 1), dtype=np.float64)  # (block,)
        negative = np.flatnonzero(np.cos(np.outer(m, theta)).sum(axis=1) < 0)
        if negative.size:
            return int(m[negative[0]])
    return None


#: Name -> method; every method has the signature ``(d, base, scale, original_max_position, seq_len)``.
METHODS = {method.__name__: method
           for method in (default, position_interpolation, ntk_aware, dynamic_ntk, yarn, llama3)}
