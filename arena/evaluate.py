r"""Per-position held-out losses, and the window means and buckets the results report.

Every evaluation scores the same windows (:func:`arena.data.eval_windows`). A model's loss at position t of a
window depends only on the t + 1 characters before it (the models are causal, and every scheme but the
per-length RoPE extensions treats a position the same whatever the window's length), so one pass over the
longest windows gives the loss at every evaluation length: :math:`\mathcal{L}(L)` is the mean of the first L
positions. The per-length ("oracle") extensions set s = L / L_train for each L, so they need a pass per length.

Dynamic NTK changes the base with the prefix length, so the loss at position t needs its own pass over t + 1
characters. It is scored at one position per bucket past L_train (the bucket's middle) and at every position
before L_train (where it is plain RoPE); :func:`sampled_estimate` turns those into window means, and the same
estimator applied to plain RoPE and to every fixed-scale extension puts them on exactly the same positions.

Every window mean is also stored per window (``"windows"``, rounded to :data:`DECIMALS`), so that two models are
compared on paired differences (:func:`arena.stats.paired_verdict`). Two controls: :func:`truncated_losses`
(every position scored with only its last L_train characters or nearly) and :func:`copy_probe` (does a model
use a copy of the text it is reading when the copy lies further back than L_train?).
"""

from __future__ import annotations

import numpy as np
import torch
from torch.nn import functional as F

from posenc.scaling import METHODS

from .config import Config

CHUNK = 2  # windows per forward pass: bounds the (windows, heads, L, L) attention weights of a 4096-long window
DECIMALS = 4  # per-window losses are stored to 1e-4 nats, far below the check's tolerance


def rounded(values) -> list:
    return [round(float(v), DECIMALS) for v in np.asarray(values).ravel()]


@torch.no_grad()
def position_losses(model, windows: np.ndarray, length: int) -> np.ndarray:
    """Cross-entropy (nats) at each of the first ``length`` positions of every window: ``(windows, length)``."""
    out = []
    for i in range(0, len(windows), CHUNK):
        batch = torch.as_tensor(windows[i:i + CHUNK, : length + 1])
        logits = model(batch[:, :-1])
        out.append(F.cross_entropy(logits.transpose(1, 2), batch[:, 1:], reduction="none").double().numpy())
    return np.concatenate(out)


def bucket_edges(config: Config, upto: int | None = None) -> np.ndarray:
    """Bucket boundaries over positions 0 .. upto (default: the window): ``bucket_width[0]`` wide before
    train_len, ``bucket_width[1]`` after. Every evaluation length is a boundary."""
    upto = config.window if upto is None else upto
    before, after = config.bucket_width
    edges = np.unique(np.concatenate([np.arange(0, min(config.train_len, upto), before),
                                      np.arange(config.train_len, upto, after), [upto]]))
    missing = [L for L in config.eval_lengths if L <= upto and L not in edges]
    if missing:
        raise ValueError(f"evaluation lengths {missing} do not fall on bucket boundaries {edges.tolist()}: "
                         f"choose bucket_width dividing train_len and every length past it")
    return edges


def summary(losses: np.ndarray, config: Config) -> dict:
    r"""From per-position losses ``(windows, n)``: the window mean :math:`\mathcal{L}(L)`, the mean past
    L_train, the standard error of :math:`\mathcal{L}(L)` over windows (how much the text moves it), for every
    evaluation length L <= n; and the bucket means of the mean over windows (the loss-against-position curve)."""
    n = losses.shape[1]
    curve = losses.mean(0)
    result = {"loss": {}, "loss_beyond_train": {}, "text_se": {}, "windows": {}}
    for L in config.eval_lengths:
        if L > n:
            continue
        per_window = losses[:, :L].mean(1)
        result["loss"][str(L)] = float(per_window.mean())
        result["text_se"][str(L)] = float(per_window.std(ddof=1) / np.sqrt(len(per_window))) if len(per_window) > 1 else 0.0
        result["loss_beyond_train"][str(L)] = float(curve[config.train_len:L].mean()) if L > config.train_len else None
        result["windows"][str(L)] = rounded(per_window)
    edges = bucket_edges(config, upto=n)
    result["curve"] = [float(curve[a:b].mean()) for a, b in zip(edges[:-1], edges[1:])]
    return result


def dynamic_positions(config: Config) -> np.ndarray:
    """Where dynamic NTK is scored past train_len: the middle of every bucket past train_len."""
    edges = bucket_edges(config)
    edges = edges[edges >= config.train_len]
    return ((edges[:-1] + edges[1:]) // 2).astype(np.int64)


def sampled_estimate(curve_at: dict, config: Config) -> dict:
    r"""Window means estimated from the loss at every position before train_len and at
    :func:`dynamic_positions` after it: each sampled position stands for its bucket,
    :math:`\hat{\mathcal{L}}(L) = (\sum_{t < L_\text{train}} \ell_t + \sum_{b \subset [L_\text{train}, L)} w_b\,
    \ell_{t_b}) / L`. ``curve_at`` maps a position to its losses, one per window (:func:`at_positions`); the
    estimate is made per window (``"windows"``) and averaged."""
    edges = bucket_edges(config)
    before = sum(np.asarray(curve_at[t], dtype=np.float64) for t in range(config.train_len))
    out = {"loss": {}, "loss_beyond_train": {}, "windows": {}}
    for L in config.eval_lengths:
        if L <= config.train_len:
            per_window = sum(np.asarray(curve_at[t], dtype=np.float64) for t in range(L)) / L
            out["loss"][str(L)] = float(np.mean(per_window))
            out["loss_beyond_train"][str(L)] = None
            out["windows"][str(L)] = rounded(per_window)
            continue
        inside = [(a, b) for a, b in zip(edges[:-1], edges[1:]) if a >= config.train_len and b <= L]
        beyond = sum((b - a) * np.asarray(curve_at[int((a + b) // 2)], dtype=np.float64) for a, b in inside)
        out["loss"][str(L)] = float(np.mean((before + beyond) / L))
        out["loss_beyond_train"][str(L)] = float(np.mean(beyond / (L - config.train_len)))
        out["windows"][str(L)] = rounded((before + beyond) / L)
    return out


def at_positions(losses: np.ndarray, config: Config) -> dict:
    """Every window's loss ``(windows,)`` at every position before train_len and at :func:`dynamic_positions`."""
    n = losses.shape[1]
    keep = list(range(min(config.train_len, n))) + [int(t) for t in dynamic_positions(config) if t < n]
    return {t: losses[:, t] for t in keep}


def set_method(model, method: str, config: Config, base: float, scale: float = 1.0, seq_len: int | None = None):
    """Give the RoPE model of ``base`` (trained at config.train_len) the frequencies of an extension method."""
    frequencies, factor = METHODS[method](config.d_head, base, scale=scale,
                                          original_max_position=config.train_len, seq_len=seq_len)
    model.set_rope(frequencies, factor)


@torch.no_grad()
def dynamic_ntk_losses(model, windows: np.ndarray, plain_at: dict, config: Config, base: float,
                       scale: float) -> dict:
    """Dynamic NTK as seen without a KV cache: the loss at position t comes from a pass over the first t + 1
    characters with the base for that length (transformers recomputes it from seq_len). Before train_len the
    base is unchanged, so those positions are plain RoPE's, taken from ``plain_at`` (:func:`at_positions` of
    plain RoPE). ``scale`` is transformers' factor s. Returns ``{position: losses (windows,)}`` at every
    position before train_len and at :func:`dynamic_positions`."""
    out = {t: loss for t, loss in plain_at.items() if t < config.train_len}
    for t in dynamic_positions(config):
        set_method(model, "dynamic_ntk", config, base, scale=scale, seq_len=int(t) + 1)
        losses = []
        for i in range(0, len(windows), CHUNK):
            batch = torch.as_tensor(windows[i:i + CHUNK, : t + 2])
            logits = model(batch[:, :-1])[:, -1]
            losses.append(F.cross_entropy(logits, batch[:, -1], reduction="none").double().numpy())
        out[int(t)] = np.concatenate(losses)
    set_method(model, "default", config, base)
    return out


def rope_extensions(model, windows: np.ndarray, plain: np.ndarray, config: Config, base: float) -> dict:
    """Every RoPE extension on the trained RoPE model, without retraining; ``plain`` is the model's own
    per-position losses over the whole windows (:func:`position_losses`), which the caller already has.

    ``per_length``: each static method at s = max(1, L / L_train) for each L (an oracle that knows the length);
    ``fixed``: each static method at each of ``fixed_scales`` for every length (the deployed setting);
    ``dynamic_ntk``: for each factor of ``dynamic_ntk_scale``, window means estimated at the sampled
    positions, beside plain RoPE and every fixed-scale method estimated at exactly the same positions
    (``same_positions``).
    """
    out = {"per_length": {}, "fixed": {}, "same_positions": {}}
    plain_at = at_positions(plain, config)
    out["same_positions"]["rope"] = sampled_estimate(plain_at, config)
    for method in config.static_extensions:
        per_length = {}
        for L in config.eval_lengths:
            scale = max(1.0, L / config.train_len)
            set_method(model, method, config, base, scale=scale)
            s = summary(position_losses(model, windows, L), config)
            per_length[str(L)] = {"loss": s["loss"][str(L)], "loss_beyond_train": s["loss_beyond_train"][str(L)],
                                  "text_se": s["text_se"][str(L)], "windows": s["windows"][str(L)],
                                  "scale": scale}
        out["per_length"][method] = per_length
        out["fixed"][method] = {}
        for scale in config.fixed_scales:
            set_method(model, method, config, base, scale=float(scale))
            losses = position_losses(model, windows, config.window)
            out["fixed"][method][str(scale)] = summary(losses, config)
            out["same_positions"][f"{method}@{scale}"] = sampled_estimate(at_positions(losses, config), config)
    out["dynamic_ntk"] = {}
    for scale in config.dynamic_ntk_scale:
        dynamic = dynamic_ntk_losses(model, windows, plain_at, config, base, float(scale))
        out["dynamic_ntk"][f"{scale:g}"] = {
            **sampled_estimate(dynamic, config), "positions": dynamic_positions(config).tolist(),
            "at_positions": [float(dynamic[int(t)].mean()) for t in dynamic_positions(config)],
            "scale": float(scale)}
    set_method(model, "default", config, base)
    return out


@torch.no_grad()
def truncated_losses(model, windows: np.ndarray, config: Config, batch: int = 16) -> np.ndarray:
    """Control 1: per-position losses ``(windows, window)`` with the context cut to about L_train. Positions
    before train_len are scored as usual (their whole context is shorter than L_train); past it, a window of
    train_len characters slides by ``truncated_stride`` and scores only its last ``truncated_stride`` positions,
    so position t is predicted from its last train_len - stride + 1 to train_len characters, at positions the
    model trained on. A loss that rises past L_train with the whole context but not here rises because of the
    far context (the encoding at unseen positions, or attention spread over more tokens), not because later
    text is harder."""
    L, stride = config.train_len, config.truncated_stride
    head = position_losses(model, windows, L)  # (windows, L)
    starts = np.arange(stride, config.window - L + 1, stride)  # each slice covers [start, start + L)
    pieces = np.stack([windows[:, s:s + L + 1] for s in starts], axis=1)  # (windows, slices, L + 1)
    flat = pieces.reshape(-1, L + 1)
    scored = []
    for i in range(0, len(flat), batch):
        chunk = torch.as_tensor(flat[i:i + batch])
        logits = model(chunk[:, :-1])[:, -stride:]
        scored.append(F.cross_entropy(logits.transpose(1, 2), chunk[:, -stride:],
                                      reduction="none").double().numpy())
    tail = np.concatenate(scored).reshape(len(windows), -1)  # (windows, window - L)
    return np.concatenate([head, tail], axis=1)


@torch.no_grad()
def copy_probe(model, windows: np.ndarray, config: Config, upto: int) -> dict:
    """Control 2: does the model use text further back than L_train? For each evaluation length L (up to
    ``upto`` and ``probe_max_length``, at least twice the span), the last ``probe_span`` characters of the first L + 1 of each of the
    first ``probe_windows`` windows are replaced by a copy of characters 1 .. span (``copy``), and, in the
    control, characters 1 .. span are themselves replaced by another window's (``control``): the same text at
    the same positions, except that the control's end has no earlier copy. The loss is taken over the copy's
    positions but its first (which no copy can predict). ``gain`` = control - copy, per window: clearly
    positive at a distance (L - span, from a character to its copy) beyond L_train means the model reads that
    far; near 0 means it does not, whatever its loss does."""
    span, n = config.probe_span, config.probe_windows
    out = {}
    for L in config.eval_lengths:
        if L > min(upto, config.probe_max_length) or L < 2 * span:
            continue
        copy = windows[:n, : L + 1].copy()
        copy[:, L + 1 - span:] = copy[:, 1:1 + span]
        control = copy.copy()
        control[:, 1:1 + span] = np.roll(windows[:n, 1:1 + span], 1, axis=0)
        losses = {}
        for name, batch in (("copy", copy), ("control", control)):
            tail = position_losses(model, batch, L)[:, L - span + 1:]  # (n, span - 1): targets 2 .. span of the copy
            losses[name] = tail.mean(1)
        out[str(L)] = {"distance": L - span, "gain": float((losses["control"] - losses["copy"]).mean()),
                       "copy": rounded(losses["copy"]), "control": rounded(losses["control"])}
    return out
