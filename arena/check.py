"""A rerun compared number by number with the committed results (``python -m arena --check``).

One row per number (per matrix for the learned table's weights): exit status 1 if any differs by more than
:data:`TOLERANCE`, or if any other number (parameter counts, scales, positions, configuration, corpus) is not
equal. With fixed seeds, deterministic kernels and one thread per model, the same torch build on the same CPU
reproduces the file bit for bit (every difference is 0). The tolerances are for another x86 CPU: torch, MKL and
oneDNN pick float32 kernels by instruction set (AVX2, AVX-512), which sum in another order, and differences of
1e-7 per operation pass through every training step. They are set by what the numbers are for: 0.02 nats is
about 1 % of a loss of 2 nats per character; the learned table's statistics get 0.02, its single weights 0.05.
Every per-window loss is compared too, with the loss tolerance; :mod:`arena.stats` calls a difference only when
it exceeds twice that tolerance, so no verdict can change sign on a rerun that passes this check.
"""

from __future__ import annotations

import json

import numpy as np

TOLERANCE = {
    "loss": 0.02,  # nats per character: every loss, curve point, spread and standard error
    "statistic": 0.02,  # the learned table's statistics and their nulls
    "table": 0.05,  # entries of the learned position table itself
}
NOT_COMPARED = ("versions", "machine", "timing", "check", "wall_seconds", "cpu_seconds")  # facts about the run


def kind(path) -> str | None:
    """How a number at this path is compared: a key of TOLERANCE, "exact", or None (not compared)."""
    if path[0] in NOT_COMPARED or path[-1].endswith("seconds"):
        return None
    if path[0] == "learned_table_weights":
        return "table"
    if "table" in path:
        return "exact" if path[-1] == "null_draws" else "statistic"
    if path[-1] in ("parameters", "scale", "positions", "distance") or path[0] in (
            "schema", "config", "config_key", "corpus", "eval_lengths", "bucket_edges", "models", "model_specs"):
        return "exact"
    return "loss"


def _leaves(value, path=()):
    """(path, value) for every leaf of nested dicts; lists of numbers are split into entries, except the table."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _leaves(item, path + (str(key),))
    elif isinstance(value, list) and path and kind(path) == "loss":
        for i, item in enumerate(value):
            yield from _leaves(item, path + (str(i),))
    else:
        yield path, value


def compare(committed: dict, rerun: dict, tolerance=None) -> list[dict]:
    """Every number of two results files side by side: rows with ``name``, ``kind``, ``committed``, ``rerun``,
    ``diff`` (absolute, where numeric), ``tolerance`` and ``ok``. A number present in one file only, a None
    against a number, or an exact number that differs is a mismatch."""
    tolerance = TOLERANCE if tolerance is None else tolerance
    committed, rerun = (json.loads(json.dumps(r)) for r in (committed, rerun))  # as stored: tuples become lists
    ours, theirs = dict(_leaves(committed)), dict(_leaves(rerun))
    rows = []
    for path in list(ours) + [p for p in theirs if p not in ours]:
        k = kind(path)
        if k is None:
            continue
        a, b = ours.get(path, "(missing)"), theirs.get(path, "(missing)")
        row = {"name": ".".join(path), "kind": k, "committed": a, "rerun": b, "diff": None,
               "tolerance": 0.0 if k == "exact" else tolerance[k]}
        numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (a, b))
        if numeric:
            row["diff"] = abs(float(b) - float(a))
            row["ok"] = a == b if k == "exact" else row["diff"] <= row["tolerance"]
        elif k == "table" and isinstance(a, list) and isinstance(b, list):
            x, y = np.array(a, dtype=float), np.array(b, dtype=float)
            if x.shape != y.shape:
                row.update(committed=f"shape {x.shape}", rerun=f"shape {y.shape}", ok=False)
            else:
                gap = np.abs(y - x)
                worst = np.unravel_index(np.argmax(gap), gap.shape)
                row.update(committed=f"{x.size} entries", rerun=f"{int((gap > row['tolerance']).sum())} outside",
                           diff=float(gap[worst]), worst=[int(i) for i in worst],
                           ok=bool(gap.max() <= row["tolerance"]))
        else:
            row["ok"] = a == b
        rows.append(row)
    return rows


def report(rows, out=print) -> int:
    """Print the rows of :func:`compare` (mismatches in full, the rest summarised); return the mismatch count."""
    def show(value):
        return f"{value:.6f}" if isinstance(value, float) else str(value)[:40]

    bad = [r for r in rows if not r["ok"]]
    worst = {}
    for r in rows:
        if r["diff"] is not None:
            worst[r["kind"]] = max(worst.get(r["kind"], 0.0), r["diff"])
    for r in rows:
        diff = "" if r["diff"] is None else f"{r['diff']:.2e}"
        name = r["name"] + (f" (max at {r['worst']})" if "worst" in r else "")
        out(f"{name}  {show(r['committed'])}  {show(r['rerun'])}  {diff}  {r['tolerance']:g}  "
            f"{'ok' if r['ok'] else 'MISMATCH'}")
    out(f"\n{len(rows)} numbers compared; largest |diff| by kind: "
        + ", ".join(f"{k} {v:.2e}" for k, v in worst.items()))
    if bad:
        out(f"{len(bad)} MISMATCH(ES):")
        for r in bad:
            gap = "" if r["diff"] is None else f" (|diff| {r['diff']:.2e} > {r['tolerance']:g})"
            out(f"  {r['name']}: committed {show(r['committed'])}, rerun {show(r['rerun'])}{gap}")
    else:
        out("every number reproduces within its tolerance")
    return len(bad)
