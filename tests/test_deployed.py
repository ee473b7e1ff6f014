"""posenc.deployed (and YaRN's DeepSeek coefficients) against Hugging Face transformers' own code: its configuration
classes, rope initialisation functions, rotary embedding modules and attention modules, imported and run here,
over many configurations. Where transformers has no implementation (Self-Extend, Qwen's log-n), the paper's or the
model's equation written as a loop."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest
import torch
import transformers
from transformers import modeling_rope_utils as rope_utils

import posenc
from posenc import deployed

RNG = np.random.default_rng(20261127)


# -- partial rotation: transformers' "proportional" rope type --------------------------------------------------

@pytest.mark.parametrize("head_dim, fraction, base, factor", [
    (64, 0.25, 10000.0, 1.0), (128, 0.5, 1e6, 8.0), (256, 1.0, 10000.0, 1.0), (96, 0.0, 500000.0, 2.0),
    (128, 0.75, 1e4, 1.0), (32, 0.3, 10.0, 1.5)])
def test_proportional_frequencies_match_transformers(head_dim, fraction, base, factor):
    config = SimpleNamespace(head_dim=head_dim, hidden_size=head_dim * 4, num_attention_heads=4,
                             standardize_rope_params=lambda: None,
                             rope_parameters={"rope_type": "proportional", "rope_theta": base, "factor": factor,
                                              "partial_rotary_factor": fraction})
    theirs, attention = rope_utils._compute_proportional_rope_parameters(config)
    ours = deployed.proportional_frequencies(head_dim, base, fraction, factor)
    assert attention == 1.0
    np.testing.assert_allclose(ours, theirs.double().numpy(), rtol=2e-6)  # (theirs: float32)
    rotated = int(fraction * head_dim // 2)
    assert np.all(ours[rotated:] == 0) and np.all(ours[:rotated] > 0)


def test_proportional_rotation_keeps_the_full_heads_fast_end_unlike_neox_partial_rotation():
    d, base = 128, 10000.0
    p = deployed.proportional_frequencies(d, base, 0.25)
    neox = posenc.rope_frequencies(32, base)  # rotary_pct = 0.25: the rotated width is the denominator
    assert np.allclose(p[:16], posenc.rope_frequencies(d, base)[:16])
    assert p[15] > neox[15]  # the slowest rotated pair turns faster than NeoX's slowest


# -- per-layer bases (Gemma 3) -----------------------------------------------------------------------------------

@pytest.mark.parametrize("n_layers", [1, 6, 26, 34, 62])
def test_layer_types_match_gemma3s_configuration(n_layers):
    config = transformers.Gemma3TextConfig(num_hidden_layers=n_layers)
    assert deployed.layer_types(n_layers, 6) == list(config.layer_types)


@pytest.mark.slow  # (2 to 4 s: the fast tier stays under a minute)
def test_gemma3s_local_and_global_bases_are_posencs_frequencies():
    config = transformers.Gemma3TextConfig(num_hidden_layers=6, head_dim=64, num_attention_heads=2,
                                           rope_scaling={"rope_type": "linear", "factor": 8.0})
    from transformers.models.gemma3.modeling_gemma3 import Gemma3RotaryEmbedding

    rotary = Gemma3RotaryEmbedding(config)
    local = rotary.sliding_attention_inv_freq.double().numpy()
    full = rotary.full_attention_inv_freq.double().numpy()
    np.testing.assert_allclose(local, posenc.rope_frequencies(64, 10_000.0), rtol=2e-6)
    pi, _ = posenc.position_interpolation(64, 1_000_000.0, 8.0)
    np.testing.assert_allclose(full, pi, rtol=2e-6)


# -- Llama 4's temperature in its layers without RoPE --------------------------------------------------------------

@pytest.mark.parametrize("floor_scale, attn_scale", [(4, 0.1), (8192, 0.1), (3, 0.5)])
def test_llama4_attention_scale_is_what_llama4s_attention_multiplies_queries_by(monkeypatch, floor_scale, attn_scale):
    from transformers.models.llama4 import modeling_llama4

    config = transformers.Llama4TextConfig(hidden_size=8, num_attention_heads=1, num_key_value_heads=1, head_dim=8,
                                           num_hidden_layers=1, no_rope_layers=[0], attn_temperature_tuning=True,
                                           floor_scale=floor_scale, attn_scale=attn_scale, use_qk_norm=False)
    config._attn_implementation = "eager"
    attention = modeling_llama4.Llama4TextAttention(config, layer_idx=0)
    assert not attention.use_rope
    with torch.no_grad():
        attention.q_proj.weight.copy_(torch.eye(8))
    seen = {}

    class Recorded(Exception):
        pass

    def record(module, query, key, value, mask, **kwargs):
        seen["query"] = query
        raise Recorded  # (what attention does with the query afterwards is not the point)

    monkeypatch.setattr(modeling_llama4, "eager_attention_forward", record)
    length = 3 * floor_scale + 2
    hidden = torch.ones(1, length, 8, dtype=torch.float64)
    attention.double()
    with pytest.raises(Recorded):
        attention(hidden, position_embeddings=None, attention_mask=None)
    theirs = seen["query"][0, 0, :, 0].detach().numpy()  # query of ones, each multiplied by its position's scale
    ours = deployed.llama4_attention_scale(np.arange(length), floor_scale, attn_scale)
    np.testing.assert_allclose(ours, theirs, rtol=1e-6)  # (transformers computes the scale in float32)
    assert ours[floor_scale - 2] == 1.0 and ours[floor_scale - 1] > 1.0  # the first step, at p + 1 = F


# -- M-RoPE (Qwen2-VL, Qwen2.5-VL, Qwen3-VL) --------------------------------------------------------------------

def _rope_index(segments, merge, model="qwen2_vl", tokens_per_second=1, seconds_per_grid=1.0):
    """transformers' own get_rope_index (Qwen2-VL's, or Qwen2.5-VL's with its video time spacing) on a sequence of
    text, images and videos, run with the model's own methods (only the configuration they read is given).
    Returns the (3, L) positions and transformers' rope delta (generation continues at L + delta)."""
    if model == "qwen2_vl":
        from transformers.models.qwen2_vl.modeling_qwen2_vl import Qwen2VLModel as Model
    else:
        from transformers.models.qwen2_5_vl.modeling_qwen2_5_vl import Qwen2_5_VLModel as Model

    vision = SimpleNamespace(spatial_merge_size=merge, tokens_per_second=tokens_per_second)
    model = SimpleNamespace(config=SimpleNamespace(vision_config=vision))
    model.get_vision_position_ids = lambda *a, **k: Model.get_vision_position_ids(model, *a, **k)
    types, grids = [], {"image": [], "video": []}
    for kind, size in segments:
        if kind == "text":
            types += [0] * size
        else:
            t, h, w = size
            types += [1 if kind == "image" else 2] * (t * (h // merge) * (w // merge))
            grids[kind].append(list(size))
    as_tensor = {k: torch.tensor(v) if v else None for k, v in grids.items()}
    kwargs = {}
    if Model.__name__ == "Qwen2_5_VLModel" and grids["video"]:
        kwargs["second_per_grid_ts"] = torch.tensor([seconds_per_grid] * len(grids["video"]))
    ids = torch.zeros(1, len(types), dtype=torch.long)
    positions, delta = Model.get_rope_index(model, ids, torch.tensor([types]), image_grid_thw=as_tensor["image"],
                                            video_grid_thw=as_tensor["video"], **kwargs)
    return positions[:, 0].numpy(), int(delta[0, 0])


def _qwen_reference_positions(segments, merge, interval=1.0):
    """Qwen's reference rule written as a loop, token by token (Qwen2-VL, arXiv:2409.12191, §2.1; Qwen's code
    and transformers 4.x: ``st_idx = llm_pos_ids_list[-1].max() + 1``): text continues from the largest id used
    so far plus one; a vision block's ids are offset by that start."""
    t_ids, h_ids, w_ids, nxt = [], [], [], 0
    for kind, size in segments:
        if kind == "text":
            for k in range(size):
                t_ids.append(nxt + k), h_ids.append(nxt + k), w_ids.append(nxt + k)
        else:
            t, h, w = size
            step = interval if kind == "video" else 1.0
            for f in range(t):
                for r in range(h // merge):
                    for c in range(w // merge):
                        t_ids.append(nxt + int(f * step)), h_ids.append(nxt + r), w_ids.append(nxt + c)
        nxt = max(t_ids + h_ids + w_ids) + 1 if t_ids else 0
    return np.array([t_ids, h_ids, w_ids], dtype=np.int64).reshape(3, -1)


def _draw_segments(rng, n_blocks, videos=True):
    segments = [("text", int(rng.integers(0, 6)))]
    for _ in range(n_blocks):
        merge_side = lambda: int(rng.integers(1, 5))
        kind = "video" if videos and rng.random() < 0.5 else "image"
        t = int(rng.integers(1, 12)) if kind == "video" else 1
        segments.append((kind, (t, 2 * merge_side(), 2 * merge_side())))
        segments.append(("text", int(rng.integers(1, 6))))
    return [s for s in segments if s != ("text", 0)]


def _video_extent(segments, merge, interval=1.0):
    """Per vision block, (temporal extent floor((T-1) tau) + 1, larger merged side)."""
    return [(int((s[1][0] - 1) * (interval if s[0] == "video" else 1.0)) + 1, max(s[1][1], s[1][2]) // merge)
            for s in segments if s[0] != "text"]


@pytest.mark.parametrize("segments, merge", [
    ([("text", 5), ("image", (1, 4, 6)), ("text", 3)], 2),
    ([("image", (1, 8, 4)), ("text", 7)], 2),
    ([("text", 2), ("image", (1, 3, 3)), ("text", 1), ("image", (1, 2, 5)), ("text", 4)], 1),
    ([("text", 11)], 2),
    ([("text", 3), ("video", (2, 8, 8)), ("text", 2)], 2),      # T = 2 < H/m = W/m = 4
    ([("text", 1), ("video", (4, 8, 4)), ("text", 2)], 2)])     # T = H/m = 4 > W/m = 2: still equal
def test_mrope_positions_match_qwen2vls_rope_index_when_a_side_is_the_largest_extent(segments, merge):
    theirs, _ = _rope_index(segments, merge)
    np.testing.assert_array_equal(deployed.mrope_positions(segments, merge), theirs)
    np.testing.assert_array_equal(deployed.mrope_positions(segments, merge), _qwen_reference_positions(segments, merge))


@pytest.mark.parametrize("seed", range(40))
def test_mrope_positions_follow_qwens_reference_rule_and_transformers_where_it_agrees(seed):
    """Random sequences of text, images and videos (T from 1 to 11, merged sides from 1 to 4): posenc always
    equals the reference loop; transformers' pinned get_rope_index equals it exactly when no video's temporal
    extent exceeds its larger merged side."""
    rng = np.random.default_rng(seed)
    merge = int(rng.choice([1, 2]))
    segments = _draw_segments(rng, int(rng.integers(1, 4)))
    ours = deployed.mrope_positions(segments, merge)
    np.testing.assert_array_equal(ours, _qwen_reference_positions(segments, merge))
    theirs, delta = _rope_index(segments, merge)
    time_dominates = any(t > side for t, side in _video_extent(segments, merge))
    assert np.array_equal(ours, theirs) == (not time_dominates), segments
    assert ours.shape[1] + delta == theirs.max() + 1  # transformers continues generation at its largest id + 1


@pytest.mark.parametrize("t, h, w", [(8, 4, 4), (6, 8, 4), (5, 4, 8), (12, 2, 2)])
def test_transformers_pinned_rope_index_ignores_a_videos_temporal_extent(t, h, w):
    """The case where the pinned transformers departs from the reference: a video with T > H/m and T > W/m.
    Reference (and posenc): the text after it starts at start + T. transformers 5.x: at start + max(H, W)/m, on
    ids the video's temporal axis already used; its rope delta continues generation from its largest id plus
    one."""
    merge, before = 2, 3
    segments = [("text", before), ("video", (t, h, w)), ("text", 4)]
    ours = deployed.mrope_positions(segments, merge)
    theirs, delta = _rope_index(segments, merge)
    n_video = t * (h // merge) * (w // merge)
    first_text_after = before + n_video
    assert ours[0, first_text_after] == before + t                               # reference: past the last frame
    assert theirs[0, first_text_after] == before + max(h, w) // merge            # transformers: T ignored
    assert theirs[0, first_text_after] <= theirs[0, before:first_text_after].max()  # reuses a time id of the video
    np.testing.assert_array_equal(ours[:, :first_text_after], theirs[:, :first_text_after])  # the same before
    assert ours.shape[1] + delta == theirs.max() + 1  # generation: its own largest id plus one


@pytest.mark.parametrize("seed", range(12))
def test_mrope_positions_with_qwen25vls_time_spacing(seed):
    """Qwen2.5-VL spaces a video's temporal ids by tokens_per_second x seconds per temporal patch (images are not
    spaced): posenc with time_interval equals the reference loop always, and transformers' Qwen2.5-VL
    get_rope_index exactly when no video's spaced extent exceeds its larger merged side."""
    rng = np.random.default_rng(100 + seed)
    merge = 2
    tokens_per_second, seconds = int(rng.choice([1, 2, 25])), float(rng.choice([0.5, 1.0, 2.0]))
    interval = tokens_per_second * seconds
    segments = _draw_segments(rng, int(rng.integers(1, 3)))
    ours = deployed.mrope_positions(segments, merge, time_interval=interval)
    np.testing.assert_array_equal(ours, _qwen_reference_positions(segments, merge, interval))
    theirs, delta = _rope_index(segments, merge, "qwen2_5_vl", tokens_per_second, seconds)
    time_dominates = any(t > side for t, side in _video_extent(segments, merge, interval))
    assert np.array_equal(ours, theirs) == (not time_dominates), (segments, interval)
    assert ours.shape[1] + delta == theirs.max() + 1


def test_the_random_configurations_cover_both_cases():
    departs = []
    for seed in range(40):  # the draws of test_mrope_positions_follow_qwens_reference_rule_...
        rng = np.random.default_rng(seed)
        merge = int(rng.choice([1, 2]))
        segments = _draw_segments(rng, int(rng.integers(1, 4)))
        departs.append(any(t > side for t, side in _video_extent(segments, merge)))
    assert 5 <= sum(departs) <= 35


@pytest.mark.parametrize("d, sections", [(128, [16, 24, 24]), (64, [8, 12, 12]), (16, [2, 3, 3])])
def test_mrope_angles_match_qwen2vls_rotary_embedding(d, sections):
    from transformers.models.qwen2_vl.modeling_qwen2_vl import Qwen2VLRotaryEmbedding

    config = transformers.Qwen2VLConfig(text_config={"hidden_size": d * 2, "num_attention_heads": 2,
                                                     "rope_parameters": {"rope_type": "default",
                                                                         "rope_theta": 10000.0,
                                                                         "mrope_section": sections}})
    rotary = Qwen2VLRotaryEmbedding(config.text_config)
    positions = deployed.mrope_positions([("text", 3), ("image", (2, 4, 6)), ("text", 2)], spatial_merge=2)
    cos, sin = rotary(torch.zeros(1, dtype=torch.float32), torch.tensor(positions)[:, None, :])
    angles = deployed.mrope_angles(positions, d, 10000.0, sections)
    half = np.concatenate([angles, angles], axis=1)  # transformers' half layout
    np.testing.assert_allclose(cos[0].double().numpy(), np.cos(half), atol=2e-6)
    np.testing.assert_allclose(sin[0].double().numpy(), np.sin(half), atol=2e-6)


@pytest.mark.parametrize("d, sections", [(128, [24, 20, 20]), (64, [12, 10, 10]), (32, [6, 5, 5]),
                                         (128, [22, 21, 21]), (96, [16, 16, 16])])
def test_interleaved_mrope_angles_match_qwen3vls_rotary_embedding(d, sections):
    from transformers.models.qwen3_vl.modeling_qwen3_vl import Qwen3VLTextRotaryEmbedding

    config = transformers.Qwen3VLConfig(text_config={"hidden_size": d * 2, "num_attention_heads": 2, "head_dim": d,
                                                     "rope_parameters": {"rope_type": "default",
                                                                         "rope_theta": 5_000_000.0,
                                                                         "mrope_section": sections,
                                                                         "mrope_interleaved": True}})
    rotary = Qwen3VLTextRotaryEmbedding(config.text_config)
    positions = deployed.mrope_positions([("text", 3), ("image", (1, 6, 4)), ("text", 2), ("video", (3, 4, 4))],
                                         spatial_merge=2)
    cos, sin = rotary(torch.zeros(1, dtype=torch.float32), torch.tensor(positions)[:, None, :])
    angles = deployed.mrope_angles(positions, d, 5_000_000.0, sections, interleaved=True)
    half = np.concatenate([angles, angles], axis=1)
    np.testing.assert_allclose(cos[0].double().numpy(), np.cos(half), atol=3e-5)
    np.testing.assert_allclose(sin[0].double().numpy(), np.sin(half), atol=3e-5)


@pytest.mark.parametrize("d, sections", [(128, [24, 20, 20]), (64, [12, 10, 10]), (30, [5, 5, 5]),
                                         (128, [22, 21, 21])])
def test_interleaved_pair_axes_against_a_loop(d, sections):
    """Qwen3-VL's rule read off its model card and code, as a loop: deal the pairs out T, H, W, T, H, W, ... and
    let an axis that has all its pairs drop out (only height and width can run out first)."""
    want, left = [], list(sections)
    for i in range(d // 2):
        axis = i % 3
        if axis and left[axis] == 0:
            axis = 0
        left[axis] -= 1
        want.append(axis)
    assert left == [0, 0, 0]
    np.testing.assert_array_equal(deployed.mrope_interleaved_pair_axes(d, sections), want)
    counts = np.bincount(deployed.mrope_interleaved_pair_axes(d, sections), minlength=3)
    assert counts.tolist() == list(sections)
    contiguous = deployed.mrope_pair_axes(d, sections)
    for axis in (0, 1, 2):  # interleaved, every axis has one of the three fastest pairs; contiguous, width does not
        assert np.flatnonzero(deployed.mrope_interleaved_pair_axes(d, sections) == axis).min() <= 2
    assert np.flatnonzero(contiguous == 2).min() >= d // 4


def test_interleaving_needs_room_for_height_and_width():
    with pytest.raises(ValueError, match="interleaved"):
        deployed.mrope_interleaved_pair_axes(128, [16, 24, 24])  # Qwen2-VL's sections: 3 x 24 > 64 pairs


def test_mrope_on_text_alone_is_plain_rope():
    p = np.arange(40)
    np.testing.assert_allclose(deployed.mrope_angles(np.stack([p, p, p]), 32, 500.0, [4, 6, 6]),
                               posenc.rope_angles(p, 32, 500.0))


# -- DeepSeek's YaRN coefficients -----------------------------------------------------------------------------------

@pytest.mark.parametrize("factor, mscale, mscale_all_dim", [
    (40.0, 1.0, 1.0), (40.0, 0.707, 1.0), (4.0, 1.0, 0.707), (16.0, None, None), (1.0, 1.0, 1.0), (8.0, 0.5, None)])
def test_yarn_attention_factor_with_deepseeks_coefficients_matches_transformers(factor, mscale, mscale_all_dim):
    params = {"rope_type": "yarn", "rope_theta": 10000.0, "factor": factor,
              "original_max_position_embeddings": 4096}
    params.update({k: v for k, v in (("mscale", mscale), ("mscale_all_dim", mscale_all_dim)) if v is not None})
    config = SimpleNamespace(head_dim=64, hidden_size=256, num_attention_heads=4, max_position_embeddings=4096 * 40,
                             standardize_rope_params=lambda: None, rope_parameters=params)
    _, theirs = rope_utils._compute_yarn_parameters(config)
    assert posenc.yarn_attention_factor(factor, mscale, mscale_all_dim) == pytest.approx(theirs, rel=1e-12)


@pytest.mark.parametrize("factor, mscale_all_dim", [(40.0, 1.0), (4.0, 0.707), (1.0, 1.0), (16.0, 0)])
def test_deepseek_softmax_scale_matches_transformers(factor, mscale_all_dim):
    from transformers.models.deepseek_v3.modeling_deepseek_v3 import yarn_apply_mscale

    head_dim = 192
    theirs = yarn_apply_mscale({"rope_type": "yarn", "factor": factor, "mscale_all_dim": mscale_all_dim},
                               head_dim ** -0.5)
    assert deployed.deepseek_softmax_scale(head_dim, factor, mscale_all_dim) == pytest.approx(theirs, rel=1e-12)


# -- no transformers implementation: the equation, as a loop ---------------------------------------------------------

def test_self_extend_distances_follow_the_papers_equation():
    for length, g, w in [(40, 4, 8), (33, 3, 5), (17, 1, 4), (25, 8, 2)]:
        got = deployed.self_extend_distances(length, g, w)
        for i in range(length):
            for j in range(length):
                if j > i:
                    want = -1
                elif i - j < w:
                    want = i - j
                else:
                    want = i // g - j // g + w - w // g
                assert got[i, j] == want, (length, g, w, i, j)
        # the regimes meet without a gap or a jump back, and grouping with G = 1 is plain RoPE
        assert np.all(np.diff(got[length - 1, ::-1][: length]) >= 0)
    plain = deployed.self_extend_distances(20, 1, 4)
    i, j = np.tril_indices(20)
    assert np.array_equal(plain[i, j], i - j)


def test_self_extend_keeps_the_largest_distance_within_the_trained_range():
    trained, g, w = 512, 4, 128
    length = g * (trained - w) + w  # the longest text the paper's bound allows
    assert deployed.self_extend_distances(length, g, w).max() <= trained


def test_logn_attention_scale_is_qwens_list():
    length = 16
    qwen = [math.log(i, length) if i > length else 1 for i in range(1, 100)]  # modeling_qwen.py, 1-based i
    np.testing.assert_allclose(deployed.logn_attention_scale(np.arange(99), length), qwen, rtol=1e-14)


def test_mla_scores_are_the_materialised_keys_scores():
    """The absorbed form equals, query by query and key by key, the dot product of the full query
    [q^C; R_m q^R] with the full key [W_UK c_n; R_n k^R] built as a loop (DeepSeek-V2, eq. 14-19)."""
    rng = np.random.default_rng(7)
    for lq, lk, d_h, d_c, d_r, base in [(3, 5, 8, 6, 4, 10000.0), (1, 9, 16, 4, 8, 500.0), (4, 4, 4, 12, 2, 1e6)]:
        q_nope, q_rope = rng.normal(size=(lq, d_h)), rng.normal(size=(lq, d_r))
        latents, k_rope = rng.normal(size=(lk, d_c)), rng.normal(size=(lk, d_r))
        w_uk = rng.normal(size=(d_h, d_c))
        qpos, kpos = rng.integers(0, 3000, size=lq), rng.integers(0, 3000, size=lk)
        got = deployed.mla_scores(q_nope, q_rope, latents, w_uk, k_rope, qpos, kpos, base)
        for m in range(lq):
            query = np.concatenate([q_nope[m], posenc.rope_matrix(qpos[m], d_r, base) @ q_rope[m]])
            for n in range(lk):
                key = np.concatenate([w_uk @ latents[n], posenc.rope_matrix(kpos[n], d_r, base) @ k_rope[n]])
                assert got[m, n] == pytest.approx(float(query @ key), rel=1e-10, abs=1e-10), (m, n)


def test_a_rotated_latent_key_leaves_no_fixed_matrix_to_absorb():
    """Rotating the up-projected key puts R_{n-m} between query and latent: the matrix a query would have to
    absorb, R_m^T R_n W_UK, changes with the offset, while the decoupled scores depend on
    the offset alone."""
    rng = np.random.default_rng(8)
    d_h, d_c = 8, 6
    w_uk = rng.normal(size=(d_h, d_c))
    through = [posenc.rope_matrix(m, d_h).T @ posenc.rope_matrix(n, d_h) @ w_uk for m, n in [(2, 5), (10, 13), (2, 9)]]
    np.testing.assert_allclose(through[0], through[1], atol=1e-12)      # the same offset: the same matrix
    assert np.abs(through[0] - through[2]).max() > 0.1                    # another offset: another matrix
    q_nope, q_rope = rng.normal(size=(1, d_h)), rng.normal(size=(1, 4))
    latents, k_rope = rng.normal(size=(1, d_c)), rng.normal(size=(1, 4))
    shifted = [deployed.mla_scores(q_nope, q_rope, latents, w_uk, k_rope, [m], [n])[0, 0]
               for m, n in [(2, 5), (40, 43)]]
    assert shifted[0] == pytest.approx(shifted[1], rel=1e-10)


@pytest.mark.parametrize("call, words", [
    (lambda: deployed.proportional_frequencies(64, 1e4, 1.5), "rotary_fraction"),
    (lambda: deployed.layer_types(0), "n_layers"),
    (lambda: deployed.mrope_pair_axes(16, [2, 3, 4]), "sum"),
    (lambda: deployed.mrope_angles(np.zeros((2, 4)), 16), "(3, L)"),
    (lambda: deployed.self_extend_distances(10, 0, 4), "group_size"),
    (lambda: deployed.logn_attention_scale([0, 1], 1), "original_max_position"),
    (lambda: deployed.mrope_positions([("audio", 3)]), "segment"),
    (lambda: deployed.mla_scores(np.ones((1, 4)), np.ones((1, 2)), np.ones((1, 3)), np.ones((3, 4)),
                                 np.ones((1, 2)), [0], [0]), "w_uk"),
])
def test_bad_arguments_are_named(call, words):
    with pytest.raises((ValueError, TypeError), match=words):
        call()
