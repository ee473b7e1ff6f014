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
"""

from __future__ import annotations

import numpy as np
import torch
from torch.nn import functional as F

from posenc.scaling import METHODS

from .config import Config

CHUNK = 2  # windows per forward pass: bounds the (windows, heads, L, L) attention weights of a 4096-long window


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
    result = {"loss": {}, "loss_beyond_train": {}, "text_se": {}}
    for L in config.eval_lengths:
        if L > n:
            continue
        per_window = losses[:, :L].mean(1)
        result["loss"][str(L)] = float(per_window.mean())
        result["text_se"][str(L)] = float(per_window.std(ddof=1) / np.sqrt(len(per_window))) if len(per_window) > 1 else 0.0
        result["loss_beyond_train"][str(L)] = float(curve[config.train_len:L].mean()) if L > config.train_len else None
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
    \ell_{t_b}) / L`. ``curve_at`` maps a position to its loss (mean over windows)."""
    edges = bucket_edges(config)
    before = sum(curve_at[t] for t in range(config.train_len))
    out = {"loss": {}, "loss_beyond_train": {}}
    for L in config.eval_lengths:
        if L <= config.train_len:
            out["loss"][str(L)] = float(sum(curve_at[t] for t in range(L)) / L)
            out["loss_beyond_train"][str(L)] = None
            continue
        inside = [(a, b) for a, b in zip(edges[:-1], edges[1:]) if a >= config.train_len and b <= L]
        beyond = sum((b - a) * curve_at[int((a + b) // 2)] for a, b in inside)
        out["loss"][str(L)] = float((before + beyond) / L)
        out["loss_beyond_train"][str(L)] = float(beyond / (L - config.train_len))
    return out


def at_positions(losses: np.ndarray, config: Config) -> dict:
    """The mean over windows at every position before train_len and at :func:`dynamic_positions`."""
    curve = losses.mean(0)
    keep = list(range(min(config.train_len, len(curve)))) + [int(t) for t in dynamic_positions(config) if t < len(curve)]
    return {t: float(curve[t]) for t in keep}


def set_method(model, method: str, config: Config, scale: float = 1.0, seq_len: int | None = None):
    frequencies, factor = METHODS[method](config.d_head, config.rope_base, scale=scale,
                                          original_max_position=config.train_len, seq_len=seq_len)
    model.set_rope(frequencies, factor)


@torch.no_grad()
def dynamic_ntk_losses(model, windows: np.ndarray, plain_at: dict, config: Config) -> dict:
    """Dynamic NTK as seen without a KV cache: the loss at position t comes from a pass over the first t + 1
    characters with the base for that length (transformers recomputes it from seq_len). Before train_len the
    base is unchanged, so those positions are plain RoPE's, taken from ``plain_at`` (:func:`at_positions` of
    plain RoPE). Returns ``{position: mean loss over windows}`` at every position before train_len and at
    :func:`dynamic_positions`."""
    out = {t: loss for t, loss in plain_at.items() if t < config.train_len}
    for t in dynamic_positions(config):
        set_method(model, "dynamic_ntk", config, scale=config.dynamic_ntk_scale, seq_len=int(t) + 1)
        losses = []
        for i in range(0, len(windows), CHUNK):
            batch = torch.as_tensor(windows[i:i + CHUNK, : t + 2])
            logits = model(batch[:, :-1])[:, -1]
            losses.append(F.cross_entropy(logits, batch[:, -1], reduction="none").double().numpy())
        out[int(t)] = float(np.concatenate(losses).mean())
    set_method(model, "default", config)
    return out


def rope_extensions(model, windows: np.ndarray, plain: np.ndarray, config: Config) -> dict:
    """Every RoPE extension on the trained RoPE model, without retraining; ``plain`` is the model's own
    per-position losses over the whole windows (:func:`position_losses`), which the caller already has.

    ``per_length``: each static method at s = max(1, L / L_train) for each L (an oracle that knows the length);
    ``fixed``: each static method at each of ``fixed_scales`` for every length (the deployed setting);
    ``dynamic_ntk``: window means estimated at the sampled positions, beside plain RoPE and every fixed-scale
    method estimated at exactly the same positions (``same_positions``).
    """
    out = {"per_length": {}, "fixed": {}, "same_positions": {}}
    plain_at = at_positions(plain, config)
    out["same_positions"]["rope"] = sampled_estimate(plain_at, config)
    for method in config.static_extensions:
        per_length = {}
        for L in config.eval_lengths:
            scale = max(1.0, L / config.train_len)
            set_method(model, method, config, scale=scale)
            s = summary(position_losses(model, windows, L), config)
            per_length[str(L)] = {"loss": s["loss"][str(L)], "loss_beyond_train": s["loss_beyond_train"][str(L)],
                                  "text_se": s["text_se"][str(L)], "scale": scale}
        out["per_length"][method] = per_length
        out["fixed"][method] = {}
        for scale in config.fixed_scales:
            set_method(model, method, config, scale=float(scale))
            losses = position_losses(model, windows, config.window)
            out["fixed"][method][str(scale)] = summary(losses, config)
            out["same_positions"][f"{method}@{scale}"] = sampled_estimate(at_positions(losses, config), config)
    dynamic = dynamic_ntk_losses(model, windows, plain_at, config)
    out["dynamic_ntk"] = {**sampled_estimate(dynamic, config), "positions": dynamic_positions(config).tolist(),
                          "at_positions": [dynamic[int(t)] for t in dynamic_positions(config)],
                          "scale": config.dynamic_ntk_scale}
    set_method(model, "default", config)
    return out
