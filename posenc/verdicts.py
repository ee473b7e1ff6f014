r"""Verdicts between two models' measured losses: the rules the arena's chapters use for every comparative word,
here so that an exercise's hidden test can hold the reference (the experiment's own settings, the margin and z,
are the arena's: ``arena.stats.MARGIN``, ``arena.stats.Z``, whose docstring argues the rule and its false alarms).

* :func:`paired_verdict`: two models scored on the same windows in the same seeds (the arena's design), compared
  on per-seed paired differences: "lower" when in every seed the mean difference is below
  :math:`-\max(z\,\mathrm{SE}_s, m)`, "higher" when above the opposite, "unresolved" otherwise.
* :func:`verdict`: the earlier rule, from the seeds' values alone (non-overlapping seed ranges), which ignores
  the pairing.
"""

from __future__ import annotations

import numpy as np


def verdict(a, b) -> str:
    """The earlier rule: "lower", "higher" or "tie" from the seeds' values of two schemes (or two spreads),
    "lower" when every seed of ``a`` is below every seed of ``b``. It ignores the pairing: use
    :func:`paired_verdict`."""
    a = a["values"] if isinstance(a, dict) else a
    b = b["values"] if isinstance(b, dict) else b
    if max(a) < min(b):
        return "lower"
    if min(a) > max(b):
        return "higher"
    return "tie"


def paired_difference(a, b) -> dict:
    """Per-seed paired differences of ``a`` - ``b``, each ``(seeds, windows)`` (the same windows in the same
    order): ``{"difference"`` (mean over seeds), ``"per_seed"`` (each seed's mean over windows), ``"se"`` (each
    seed's standard error over windows)``}``."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 2:
        raise ValueError(f"a and b must be (seeds, windows) arrays of one shape, got {a.shape} and {b.shape}")
    d = a - b  # (seeds, windows)
    se = d.std(axis=1, ddof=1) / np.sqrt(d.shape[1]) if d.shape[1] > 1 else np.zeros(len(d))
    return {"difference": float(d.mean()), "per_seed": d.mean(axis=1).tolist(), "se": se.tolist()}


def paired_verdict(a, b, margin: float, z: float) -> dict:
    """The paired rule (see the module; the arena's ``margin`` and ``z``: ``arena.stats``): ``a`` and ``b`` are ``(seeds, windows)`` losses of two models on the
    same windows. Returns :func:`paired_difference`'s numbers with ``"verdict"`` ("lower", "higher",
    "unresolved": of ``a`` against ``b``), ``"smallest"`` (the seed difference nearest 0, signed),
    ``"threshold"`` (each seed's max(z SE, margin)) and ``"margin"``."""
    out = paired_difference(a, b)
    d, se = np.array(out["per_seed"]), np.array(out["se"])
    threshold = np.maximum(z * se, margin)
    if np.all(d < -threshold):
        word = "lower"
    elif np.all(d > threshold):
        word = "higher"
    else:
        word = "unresolved"
    return {**out, "verdict": word, "smallest": float(d[np.argmin(np.abs(d))]), "threshold": threshold.tolist(),
            "margin": margin}
