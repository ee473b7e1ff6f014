r"""What 2025–2026 checkpoints ship around RoPE: each field of a model's configuration, as the formula it computes.

Plain RoPE and the context-extension methods are in :mod:`posenc.rope` and :mod:`posenc.scaling`; this module holds
the pieces today's models add around them:

* **per-layer position schemes**: local sliding-window layers and global layers with different RoPE bases
  (Gemma 2/3: :func:`layer_types`), layers without RoPE at all with a position-dependent attention temperature
  (Llama 4: :func:`llama4_attention_scale`);
* **partial rotation**: only part of each head rotates (:func:`proportional_frequencies`, the p-RoPE of
  Barbero et al. 2024 as Gemma 4 configures it; GPT-NeoX's ``rotary_pct`` is :func:`posenc.apply_rope`'s
  ``rotary_dim``), and MLA's decoupled RoPE key beside an unrotated latent key (DeepSeek-V2/V3:
  :func:`mla_scores`);
* **positions that are not a line**: Qwen2-VL's multimodal RoPE, M-RoPE (:func:`mrope_positions`,
  :func:`mrope_angles`), and Qwen3-VL's interleaved M-RoPE (:func:`mrope_interleaved_pair_axes`);
* **training-free remapping and length-dependent temperature**: Self-Extend's grouped positions
  (:func:`self_extend_distances`), Qwen's log-n query scaling (:func:`logn_attention_scale`).

Where Hugging Face transformers implements a scheme, these functions match it (tests/test_deployed.py compares
them with transformers' own classes and functions); where it does not, the paper's or the model's own code's
equation, with a loop oracle in the tests.
"""

from __future__ import annotations

import math

import numpy as np

from . import _validate
from .rope import apply_rope, rope_frequencies

AXES = ("temporal", "height", "width")


def _positive_int(name, value) -> int:
    return _validate.integer(name, value, minimum=1)


def proportional_frequencies(d, base=10000.0, rotary_fraction=1.0, factor=1.0) -> np.ndarray:
    r"""Partial rotation with the full head's spectrum (transformers' ``"proportional"`` rope type, Gemma 4):
    the first :math:`r = \lfloor \rho\, d/2 \rfloor` pairs turn at :math:`\theta_i = \mathrm{base}^{-2i/d}/\text{factor}`,
    the other :math:`d/2 - r` pairs do not turn (frequency 0: those dimensions carry no position, as in NoPE).

    Barbero et al. 2024 ("Round and Round We Go! What makes Rotary Positional Encodings useful?",
    arXiv:2410.06205) propose p-RoPE: remove the lowest frequencies, whose rotation is too slow to encode
    position and which the model uses as semantic channels. The exponent's denominator is the whole head ``d``:
    the pairs that rotate keep the fast end of the spectrum a full RoPE head would have. GPT-NeoX's
    ``rotary_pct`` (``posenc.apply_rope(..., rotary_dim=)``) divides by the rotated width instead, so its slowest
    rotated pair turns as slowly as a full head's slowest. Returns float64 ``(d/2,)``.
    """
    d = _validate.even_dim("d", d)
    rho = float(rotary_fraction)
    if not 0.0 <= rho <= 1.0:
        raise ValueError(f"rotary_fraction must be between 0 and 1, got {rotary_fraction!r}")
    factor = _validate.real("factor", factor, greater_than=0.0)
    rotated = int(rho * d // 2)
    theta = np.zeros(d // 2)
    theta[:rotated] = rope_frequencies(d, base)[:rotated]
    return theta / factor


def layer_types(n_layers, global_every=6) -> list[str]:
    r"""Which layers attend locally and which globally in an interleaved stack: every ``global_every``-th layer
    (counting from 1) is ``"full_attention"``, the others ``"sliding_attention"``.

    Gemma 2 alternates 1:1 (``global_every=2``), Gemma 3 puts five local layers before each global one
    (``global_every=6``; Gemma 3 technical report, arXiv:2503.19786, §2.1), each kind with its own RoPE base
    (Gemma 3: 10,000 for the local layers, 1,000,000 for the global ones, which a long-context checkpoint then
    interpolates linearly by 8). The names are transformers' ``config.layer_types``.
    """
    n_layers = _positive_int("n_layers", n_layers)
    global_every = _positive_int("global_every", global_every)
    return ["sliding_attention" if (i + 1) % global_every else "full_attention" for i in range(n_layers)]


def llama4_attention_scale(positions, floor_scale=8192, attn_scale=0.1) -> np.ndarray:
    r"""Llama 4's query temperature in its layers without RoPE: queries at position :math:`p` are multiplied by
    :math:`1 + \alpha \ln\!\big(1 + \lfloor (p + 1) / F \rfloor\big)`, with :math:`\alpha` = ``attn_scale`` and
    :math:`F` = ``floor_scale`` (Llama 4's configuration: 0.1 and 8192).

    A step function of the position: 1 on the first :math:`F - 1` positions, then growing like the logarithm of
    the context, so the NoPE layers' softmax does not flatten as the number of keys grows (the motivation of
    scalable softmax, Nakanishi 2025, arXiv:2501.19399, which transformers' code cites). Matches
    transformers' ``Llama4TextAttention``. Returns float64, the shape of ``positions``.
    """
    p = _validate.positions("positions", positions, non_negative=True)
    floor_scale = _positive_int("floor_scale", floor_scale)
    return np.log1p(np.floor((p + 1.0) / floor_scale)) * float(attn_scale) + 1.0


def logn_attention_scale(positions, original_max_position) -> np.ndarray:
    r"""Qwen's log-n scaling: the query at position :math:`p` (0-based) is multiplied by
    :math:`\log_{L}(p + 1)` once :math:`p + 1 > L`, and by 1 before, with :math:`L` the training length.

    So the entropy of the attention weights stays near its trained value as the number of keys grows past
    :math:`L` (Chiang and Cholak 2022, arXiv:2202.12172; Qwen-7B's ``use_logn_attn``, modeling_qwen.py:
    ``math.log(i, seq_length) if i > seq_length else 1`` for the 1-based position ``i``). Returns float64, the
    shape of ``positions``.
    """
    p = _validate.positions("positions", positions, non_negative=True)
    length = _positive_int("original_max_position", original_max_position)
    if length < 2:
        raise ValueError(f"original_max_position must be at least 2 (a logarithm's base), got {length}")
    i = p + 1.0
    return np.where(i > length, np.log(np.maximum(i, 1.0)) / math.log(length), 1.0)


def self_extend_distances(length, group_size, window) -> np.ndarray:
    r"""Self-Extend's relative distances for causal attention over ``length`` tokens (Jin et al. 2024, "LLM Maybe
    LongLM", arXiv:2401.01325, eq. 3): the query at :math:`i` sees the key at :math:`j \le i` at distance

    .. math:: D_{ij} = \begin{cases} i - j & i - j < W \\
                       \lfloor i/G \rfloor - \lfloor j/G \rfloor + W - \lfloor W/G \rfloor & \text{otherwise} \end{cases}

    with :math:`G` = ``group_size`` and :math:`W` = ``window``: neighbours keep their exact distance, far tokens
    share grouped positions, shifted so that the two regimes meet without a gap. The largest distance is about
    :math:`(L - W)/G + W`, which stays inside the training length for :math:`L` up to :math:`G` times it, with
    no training. Returns int64 ``(length, length)``, -1 above the diagonal (future keys, masked).
    """
    length = _positive_int("length", length)
    g = _positive_int("group_size", group_size)
    w = _positive_int("window", window)
    i = np.arange(length)[:, None]
    j = np.arange(length)[None, :]
    grouped = i // g - j // g + w - w // g
    distance = np.where(i - j < w, i - j, grouped)
    return np.where(j <= i, distance, -1).astype(np.int64)


def mrope_pair_axes(d, sections) -> np.ndarray:
    r"""Which position axis drives each rotated pair in M-RoPE (Qwen2-VL, Wang et al. 2024, arXiv:2409.12191,
    §2.1): ``sections`` = (temporal, height, width) pair counts, summing to d/2; the first ``sections[0]`` pairs
    (the fastest) turn with the temporal position, the next ``sections[1]`` with the height, the last with the
    width. Returns int64 ``(d/2,)`` of 0, 1, 2 (the index into :data:`AXES`). Qwen2-VL's configuration:
    ``mrope_section = [16, 24, 24]`` for d = 128."""
    d, sizes = _sections(d, sections)
    return np.repeat(np.arange(3), sizes).astype(np.int64)


def mrope_interleaved_pair_axes(d, sections) -> np.ndarray:
    r"""Qwen3-VL's interleaved M-RoPE: the axes take turns pair by pair, temporal, height, width, temporal, ...,
    until height and width have their ``sections[1]`` and ``sections[2]`` pairs; the pairs left at the slow end
    are temporal. Pair :math:`i` is height if :math:`i \equiv 1 \pmod 3` and :math:`i < 3\,s_h`, width if
    :math:`i \equiv 2 \pmod 3` and :math:`i < 3\,s_w`, temporal otherwise.

    With contiguous sections (:func:`mrope_pair_axes`) the temporal axis gets only the fastest pairs and the
    width only the slowest; interleaving gives every axis pairs from the whole spectrum (the Qwen3-VL model card,
    https://huggingface.co/Qwen/Qwen3-VL-8B-Instruct: "full-frequency allocation over time, width, and height").
    Matches transformers' ``Qwen3VLTextRotaryEmbedding.recomposition_frequencies``; Qwen3-VL's configuration:
    ``mrope_section = [24, 20, 20]``, ``mrope_interleaved = true`` for d = 128. Returns int64 ``(d/2,)``."""
    d, sizes = _sections(d, sections)
    i = np.arange(d // 2)
    axes = np.where((i % 3 == 1) & (i < 3 * sizes[1]), 1, np.where((i % 3 == 2) & (i < 3 * sizes[2]), 2, 0))
    if np.bincount(axes, minlength=3).tolist() != sizes:
        raise ValueError(f"sections {sizes} cannot be interleaved over {d // 2} pairs (height and width need "
                         f"3 x their count of pairs at most): got counts {np.bincount(axes, minlength=3).tolist()}")
    return axes.astype(np.int64)


def _sections(d, sections):
    d = _validate.even_dim("d", d)
    sizes = [int(s) for s in sections]
    if len(sizes) != 3 or any(s < 0 for s in sizes) or sum(sizes) != d // 2:
        raise ValueError(f"sections must be three non-negative pair counts summing to d/2 = {d // 2}, got "
                         f"{list(sections)!r}")
    return d, sizes


def mrope_angles(positions, d, base=10000.0, sections=None, interleaved=False) -> np.ndarray:
    r"""M-RoPE's angles: pair :math:`i` turns by :math:`p^{(a_i)}\,\theta_i`, where :math:`a_i` is its axis
    (:func:`mrope_pair_axes`, or :func:`mrope_interleaved_pair_axes` with ``interleaved=True``, Qwen3-VL's
    ``mrope_interleaved``) and :math:`p^{(a)}` the token's position on that axis.

    ``positions`` is ``(3, L)`` (temporal, height, width; :func:`mrope_positions`). A text token has the same
    position on all three axes, and then M-RoPE is plain 1-D RoPE. Returns float64 ``(L, d/2)``, in the pair
    order of :func:`posenc.rope_angles` (transformers lays them out ``half``: cos of ``cat(angles, angles)``).
    """
    d = _validate.even_dim("d", d)
    p = np.asarray(positions, dtype=np.float64)
    if p.ndim != 2 or p.shape[0] != 3 or not np.all(np.isfinite(p)):
        raise ValueError(f"positions must be a finite (3, L) array (temporal, height, width), got shape {p.shape}")
    sections = sections if sections is not None else _default_sections(d)
    axes = (mrope_interleaved_pair_axes if interleaved else mrope_pair_axes)(d, sections)
    return p[axes].T * rope_frequencies(d, base)[None, :]


def _default_sections(d: int) -> list[int]:
    """Qwen2-VL's split for its d = 128, [16, 24, 24], scaled to another head size (a quarter temporal)."""
    half = d // 2
    temporal = half // 4
    height = (half - temporal) // 2
    return [temporal, height, half - temporal - height]


def mrope_vision_positions(start, grid, spatial_merge=1, temporal_merge=1, time_interval=1.0) -> np.ndarray:
    r"""The (temporal, height, width) positions of one image's or video's tokens in M-RoPE: a grid of
    :math:`T \times H \times W` patches, merged by ``spatial_merge`` in height and width and ``temporal_merge``
    in time, numbered row by row; every axis is offset by ``start`` (the position after the text before it), and
    the temporal index is spaced by ``time_interval`` and truncated to an integer (Qwen2.5-VL ties it to seconds
    of video). Returns int64 ``(3, T'H'W')``. Matches transformers' ``Qwen2VLModel.get_vision_position_ids``."""
    start = int(start)
    t, h, w = (int(n) for n in grid)
    t, h, w = t // int(temporal_merge), h // int(spatial_merge), w // int(spatial_merge)
    temporal = (np.arange(t) * float(time_interval)).astype(np.int64) + start
    tt, hh, ww = np.meshgrid(temporal, np.arange(h) + start, np.arange(w) + start, indexing="ij")
    return np.stack([tt, hh, ww]).reshape(3, -1)


def mrope_positions(segments, spatial_merge=1, time_interval=1.0) -> np.ndarray:
    r"""M-RoPE's positions of a whole sequence of text, images and videos, by Qwen's reference rule (Qwen2-VL,
    arXiv:2409.12191, §2.1: the next modality's ids start at the largest id of the previous one plus one).

    ``segments`` is a list of ``("text", n_tokens)``, ``("image", (T, H, W))`` and ``("video", (T, H, W))`` (grids
    in patches before the ``spatial_merge``; :math:`T` in temporal patches). Text tokens count on from the
    position reached, equal on all three axes. An image's or video's tokens take :func:`mrope_vision_positions`
    from there, with the temporal ids of a video spaced by ``time_interval`` (Qwen2.5-VL: ``tokens_per_second``
    times the seconds per temporal patch; 1 in Qwen2-VL; images are never spaced). What follows a vision block
    starts at the block's largest id, on any axis, plus one:

    .. math:: p_\text{next} = p_\text{start} + \max\big(\lfloor (T-1)\,\tau \rfloor + 1,\; H/m,\; W/m\big)

    So an image advances the count by its larger merged side, not by its number of patches, and a long video by
    its temporal extent. This is the rule of the released checkpoints: Qwen's own code, and transformers before
    version 5, computes ``llm_pos_ids_list[-1].max() + 1``. The transformers pinned by this course (5.x)
    advances by :math:`\max(H, W)/m` only, ignoring :math:`T` and :math:`\tau`; it agrees whenever that is the
    largest term (every image, and every video with :math:`\lfloor (T-1)\tau \rfloor + 1 \le \max(H, W)/m`),
    and otherwise puts the following text on ids the video's temporal axis already used, while its own
    ``rope_deltas`` continue generation from the largest id plus one (tests/test_deployed.py shows both).
    Returns int64 ``(3, L)``.
    """
    merge = _positive_int("spatial_merge", spatial_merge)
    interval = _validate.real("time_interval", time_interval, greater_than=0.0)
    parts, position = [], 0
    for kind, size in segments:
        if kind == "text":
            n = int(size)
            parts.append(np.broadcast_to(np.arange(position, position + n), (3, n)))
            position += n
        elif kind in ("image", "video"):
            t, h, w = (int(s) for s in size)
            block = mrope_vision_positions(position, (t, h, w), merge,
                                           time_interval=interval if kind == "video" else 1.0)
            parts.append(block)
            position = int(block.max()) + 1 if block.size else position
        else:
            raise ValueError(f"a segment is ('text', n), ('image', (T, H, W)) or ('video', (T, H, W)), got {kind!r}")
    return np.concatenate(parts, axis=1).astype(np.int64) if parts else np.zeros((3, 0), dtype=np.int64)


def deepseek_softmax_scale(head_dim, scale=1.0, mscale_all_dim=0.0) -> float:
    r"""The logits' scale in DeepSeek's YaRN attention: :math:`d_h^{-1/2}\,(0.1\,m_{all}\ln s + 1)^2` for a
    context scale :math:`s > 1` and ``mscale_all_dim`` :math:`m_{all} \ne 0`, else :math:`d_h^{-1/2}`.

    DeepSeek-V2 (arXiv:2405.04434) and V3 apply YaRN's temperature to the softmax scale itself, on every
    dimension of the query-key product (the decoupled RoPE part and the compressed part alike), instead of to
    the rotated dimensions' cos and sin; with V3's ``mscale = mscale_all_dim`` the cos/sin factor
    (:func:`posenc.yarn_attention_factor`) is then 1. ``head_dim`` is the query-key width (V3: 128 + 64).
    Matches transformers' ``yarn_apply_mscale`` (models/deepseek_v3)."""
    head_dim = _positive_int("head_dim", head_dim)
    s = _validate.scale(scale)
    plain = head_dim ** -0.5
    if not mscale_all_dim or s <= 1.0:
        return plain
    return plain * (0.1 * float(mscale_all_dim) * math.log(s) + 1.0) ** 2


def mla_scores(q_nope, q_rope, latents, w_uk, k_rope, q_positions, k_positions, base=10000.0) -> np.ndarray:
    r"""One head's logits in multi-head latent attention (MLA) with its decoupled RoPE key, computed as it runs
    at inference, with the key up-projection absorbed into the query (DeepSeek-V2, arXiv:2405.04434, §2.1.2–2.1.3):

    .. math:: s_{mn} = \big(W_{UK}^\top q^C_m\big)^\top c_n + \big(R_m q^R_m\big)^\top \big(R_n k^R_n\big)

    The cache holds, per token, only the latent :math:`c_n` (shared by all heads) and the small decoupled key
    :math:`k^R_n` (shared by all heads, rotated once). The first term is the score with the up-projected key
    :math:`W_{UK} c_n`, which is never formed: :math:`q^\top W_{UK} c = (W_{UK}^\top q)^\top c`. Were the
    up-projected key rotated instead, :math:`q^\top R_{n-m} W_{UK} c_n`, the matrix between query and latent
    would depend on the offset, and no fixed matrix could be absorbed; so position goes to the extra
    dimensions alone.

    Shapes: ``q_nope`` ``(Lq, d_h)``, ``q_rope`` ``(Lq, d_r)``, ``latents`` ``(Lk, d_c)``, ``w_uk``
    ``(d_h, d_c)``, ``k_rope`` ``(Lk, d_r)`` (not yet rotated), positions ``(Lq,)`` and ``(Lk,)``; RoPE in the
    interleaved layout (:func:`posenc.apply_rope`). Returns the unscaled logits, float64 ``(Lq, Lk)``.
    """
    q_nope = _validate.finite_array("q_nope", q_nope)
    latents = _validate.finite_array("latents", latents)
    w_uk = _validate.finite_array("w_uk", w_uk)
    if q_nope.ndim != 2 or latents.ndim != 2 or w_uk.shape != (q_nope.shape[1], latents.shape[1]):
        raise ValueError(f"w_uk must be (d_h, d_c) = ({q_nope.shape[-1]}, {latents.shape[-1]}) for q_nope (Lq, d_h) "
                         f"and latents (Lk, d_c), got {w_uk.shape}")
    absorbed = q_nope @ w_uk                                        # (Lq, d_c): W_UK^T q for each query
    q_r = apply_rope(q_rope, q_positions, base)                     # (Lq, d_r)
    k_r = apply_rope(k_rope, k_positions, base)                     # (Lk, d_r)
    return absorbed @ latents.T + q_r @ k_r.T                       # (Lq, Lk)
