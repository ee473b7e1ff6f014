"""Numbers over seeds: mean, standard deviation and range; and the rule chapters 8 and 9 use for every
comparative word.

The rule (:func:`verdict`): with n seeds per scheme, A is *lower* than B when every seed of A is below every seed
of B (their ranges do not overlap), *higher* when every seed of A is above every seed of B, and a *tie*
otherwise. With 3 seeds each, two schemes that do not differ give non-overlapping ranges in 2 of the 20 ways of
splitting six runs into two groups of three (a 10 % false-alarm rate at most), so "lower" means "lower in every
run we made", not a significance test; closer calls are ties.
"""

from __future__ import annotations

import numpy as np


def spread(values) -> dict | None:
    """``{"mean", "sd", "min", "max", "values"}`` of the seeds' values (sd with n - 1; 0 for one seed), or None
    when any seed has no value (a learned table past its rows)."""
    if any(v is None for v in values):
        return None
    x = np.asarray(values, dtype=np.float64)
    return {"mean": float(x.mean()), "sd": float(x.std(ddof=1)) if x.size > 1 else 0.0, "min": float(x.min()),
            "max": float(x.max()), "values": [float(v) for v in x]}


def verdict(a, b) -> str:
    """"lower", "higher" or "tie": ``a`` and ``b`` are the seeds' values of two schemes (or two spreads)."""
    a = a["values"] if isinstance(a, dict) else a
    b = b["values"] if isinstance(b, dict) else b
    if max(a) < min(b):
        return "lower"
    if min(a) > max(b):
        return "higher"
    return "tie"


SETTINGS = ("scale", "positions", "parameters")  # keys whose values are settings, the same in every seed


def combine(per_seed: list, key: str | None = None):
    """Nested dicts with the same keys, one per seed, into one nested dict whose numeric leaves are spreads;
    lists of numbers (curves) become a spread per entry; settings (:data:`SETTINGS`) must agree."""
    first = per_seed[0]
    if key in SETTINGS:
        if any(s != first for s in per_seed):
            raise ValueError(f"{key} differs between seeds: {per_seed}")
        return first
    if isinstance(first, dict):
        return {k: combine([s[k] for s in per_seed], k) for k in first}
    if isinstance(first, list) and first and all(isinstance(v, (int, float)) or v is None for v in first):
        return [spread([s[i] for s in per_seed]) for i in range(len(first))]
    if first is None or isinstance(first, float):
        return spread(per_seed)
    if any(s != first for s in per_seed):
        raise ValueError(f"a setting differs between seeds: {per_seed}")
    return first
