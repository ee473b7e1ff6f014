r"""Numbers over seeds (mean, spread), and the rule chapters 8 and 9 use for every comparative word.

**The paired rule** (:func:`paired_verdict`). Within a seed every model sees the same training batches, every
model is scored on the same held-out windows, and the extension methods are the same trained model; so two
models A and B are compared on paired differences, never on their separate spreads. For seed s and window w,
:math:`d_{sw} = \ell^A_{sw} - \ell^B_{sw}` (each :math:`\ell` a window's mean loss over its first L characters);
per seed, :math:`\bar d_s` is the mean over the W windows and
:math:`\mathrm{SE}_s = \mathrm{sd}_w(d_{sw}) / \sqrt{W}` its standard error over the text. The verdict is

- *lower* when in every seed :math:`\bar d_s < -\max(z\,\mathrm{SE}_s,\ m)`,
- *higher* when in every seed :math:`\bar d_s > +\max(z\,\mathrm{SE}_s,\ m)`,
- *unresolved* otherwise, reported with its size (the mean of :math:`\bar d_s` and their range).

Three requirements, each for a reason: the same sign in every seed (the training noise: a new seed is a new
model); each seed's difference beyond z = 2 standard errors of its windows (the text: another sample of
held-out windows would not reverse it); and beyond the margin m = :data:`MARGIN`, twice the loss tolerance of
``python -m arena --check`` (:data:`arena.check.TOLERANCE`): a rerun on another machine that passes the check
may move each of the two losses by the tolerance, so a difference smaller than twice it could change sign
on a rerun that the check accepts.

**Its false-alarm rate.** When A and B do not differ (every :math:`\bar d_s` symmetric about 0 and independent
across seeds), the chance that all n seeds share a sign is :math:`2 \cdot 2^{-n}`: 6.25 % for the arena's 5
seeds, whatever the noise. The two thresholds only lower it: :func:`false_alarm_rate` simulates the rule, and
with 5 seeds of 32 windows (window noise sd 0.1 nats, 20,000 draws) it gives 0.00 % when the seeds' own
differences scatter with sd 0.01 nats, 0.10 % at 0.05, 0.94 % at 0.1, 2.5 % at 0.2 and 5.3 % at 1 nat: the
bound is approached only when seeds scatter far more than the margin. A verdict is therefore "lower in every
seed, by more than the text's noise and the check's tolerance", not "lower with 95 % confidence"; closer calls
are unresolved and are stated with their size.

:func:`verdict` is the earlier rule (non-overlapping seed ranges, which ignores the pairing), kept for the
chapters that still call it. Both rules live in :mod:`posenc.verdicts`, where an exercise's hidden test reads its
reference; this module holds the arena's settings of them.
"""

from __future__ import annotations

import numpy as np

from posenc import verdicts
from posenc.verdicts import paired_difference, verdict  # noqa: F401 (the chapters call them from here)

from .check import TOLERANCE

Z = 2.0  # standard errors of the window mean a seed's difference must clear
MARGIN = 2 * TOLERANCE["loss"]  # nats: twice what --check lets one loss move


def spread(values) -> dict | None:
    """``{"mean", "sd", "min", "max", "values"}`` of the seeds' values (sd with n - 1; 0 for one seed), or None
    when any seed has no value (a learned table past its rows)."""
    if any(v is None for v in values):
        return None
    x = np.asarray(values, dtype=np.float64)
    return {"mean": float(x.mean()), "sd": float(x.std(ddof=1)) if x.size > 1 else 0.0, "min": float(x.min()),
            "max": float(x.max()), "values": [float(v) for v in x]}


def paired_verdict(a, b, margin: float = MARGIN, z: float = Z) -> dict:
    """:func:`posenc.verdicts.paired_verdict` with the arena's margin and z."""
    return verdicts.paired_verdict(a, b, margin=margin, z=z)


def false_alarm_rate(seeds: int = 5, windows: int = 32, seed_sd: float = 0.05, window_sd: float = 0.1,
                     margin: float = MARGIN, z: float = Z, draws: int = 20000, rng=0) -> float:
    """The share of ``draws`` simulated comparisons of two models that do not differ in which
    :func:`paired_verdict` says "lower" or "higher": each seed's differences are a seed effect
    N(0, seed_sd^2) plus independent window noise N(0, window_sd^2)."""
    rng = np.random.default_rng(rng)
    d = rng.normal(0, seed_sd, (draws, seeds, 1)) + rng.normal(0, window_sd, (draws, seeds, windows))
    mean, se = d.mean(axis=2), d.std(axis=2, ddof=1) / np.sqrt(windows)
    threshold = np.maximum(z * se, margin)
    return float(np.mean(np.all(mean < -threshold, axis=1) | np.all(mean > threshold, axis=1)))


def windows(result: dict, *path) -> np.ndarray:
    """``(seeds, windows)`` per-window losses from a results file: ``path`` leads from each seed's entry to a
    list, e.g. ``windows(result, "rope", "windows", "1024")``."""
    rows = []
    for seed in result["seeds"].values():
        for key in path:
            seed = seed[key]
        rows.append(seed)
    return np.asarray(rows, dtype=np.float64)


SETTINGS = ("scale", "positions", "parameters", "distance")  # keys whose values are settings, the same in every seed
PER_WINDOW = ("windows", "copy", "control")  # per-window lists: stay per seed, not summarised


def combine(per_seed: list, key: str | None = None):
    """Nested dicts with the same keys, one per seed, into one nested dict whose numeric leaves are spreads;
    lists of numbers (curves) become a spread per entry; settings (:data:`SETTINGS`) must agree; per-window
    lists (:data:`PER_WINDOW`) are left out (they stay in each seed's entry)."""
    first = per_seed[0]
    if key in SETTINGS:
        if any(s != first for s in per_seed):
            raise ValueError(f"{key} differs between seeds: {per_seed}")
        return first
    if isinstance(first, dict):
        return {k: combine([s[k] for s in per_seed], k) for k in first if k not in PER_WINDOW}
    if isinstance(first, list) and first and all(isinstance(v, (int, float)) or v is None for v in first):
        return [spread([s[i] for s in per_seed]) for i in range(len(first))]
    if first is None or isinstance(first, float):
        return spread(per_seed)
    if any(s != first for s in per_seed):
        raise ValueError(f"a setting differs between seeds: {per_seed}")
    return first
