"""The extrapolation arena: train one tiny causal LM per positional scheme, then measure past L_train.

``python -m posenc.arena`` (``make arena``) trains every scheme of :mod:`posenc.models` with the same
budget on the same characters, evaluates held-out loss at 0.5x ... 16x the training length, evaluates the
RoPE model with each context-extension method of :mod:`posenc.scaling` without retraining, and writes
every number, the configuration, seeds, versions, wall and CPU time to ``book/data/arena.json``.

``python -m posenc.arena --check`` (``make arena-check``) runs the same experiment again, writes nothing, and
compares every number with the committed file (:func:`compare`): one line per number, exit status 1 if any
differs by more than :data:`TOLERANCE` (0.02 nats on every loss; 0.02 on the learned table's two summary
statistics; 0.05 on the entries of the table and of its similarity matrices), or if any other number (parameter
counts, scales, sampled positions, configuration, corpus) is not equal. With fixed seeds, deterministic kernels
and one thread, the same torch build on the same CPU reproduces the file bit for bit (every difference is 0).
The tolerances are for another x86 CPU: torch, MKL and oneDNN pick float32 kernels by instruction set (AVX2,
AVX-512), which sum in another order, and differences of 1e-7 per operation pass through every training step.
Forcing torch's AVX2 kernels on the AVX-512 machine that wrote the file (``ATEN_CPU_CAPABILITY=avx2``) moved the
losses of a run of two schemes (learned, rope) at full size and steps by at most 1e-6 and the stored table by one
rounding unit (1e-5), so the margins are wide; they are set by what the numbers are for: 0.02 nats is 1 % of a
loss of about 2 nats per character, the margin below which chapter 8 calls a change flat, so a run within it
leaves every reading of the chapter intact. Table entries are single trained weights, not averages over thousands
of characters, hence the wider margin.

Corpus: the source files of the running Python's standard library (a fixed list, read in sorted order);
its SHA-256 is recorded and checked, so a different Python cannot silently produce different results.

Dynamic NTK changes the base with the length of the prefix, so each scored position needs its own forward
pass. The arena scores it at ``dynamic_positions`` evenly spaced positions past L_train in every window (all
positions before L_train, where it is plain RoPE), and stores plain RoPE at exactly the same windows and
positions beside it: the two numbers are comparable with each other, and estimate the window means.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import platform
import sys
import sysconfig
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np
import torch
from torch.nn import functional as F
from tqdm import tqdm

from . import ARENA_RESULTS
from .models import SCHEMES, TinyDecoder, lm_loss, parameter_count
from .scaling import METHODS
from .sinusoidal import sinusoidal

RESULTS = ARENA_RESULTS
EXTENSIONS = ("position_interpolation", "ntk_aware", "dynamic_ntk", "yarn")

# |rerun - committed| allowed per kind of number (see the module doc for why); every other number must be equal.
TOLERANCE = {
    "loss": 0.02,  # nats per character: every loss and loss_beyond_train
    "statistic": 0.02,  # the learned table's offset-explained variance and correlation with the sinusoidal one
    "similarity": 0.05,  # entries of the cosine-similarity matrices (learned table, sinusoidal) in [-1, 1]
    "table": 0.05,  # entries of the learned position table itself
}
NOT_COMPARED = ("versions", "machine", "timing", "check")  # facts about the run, not results


@dataclass(frozen=True)
class Config:
    corpus_modules: tuple = ("argparse", "ast", "asyncio/base_events", "calendar", "collections/__init__",
                             "configparser", "csv", "dataclasses", "datetime", "decimal", "difflib",
                             "email/message", "enum", "fractions", "functools", "inspect", "logging/__init__",
                             "pathlib", "pickle", "pydoc", "random", "shutil", "statistics", "string",
                             "subprocess", "tarfile", "textwrap", "threading", "typing", "unittest/case",
                             "zipfile")
    max_chars: int = 1_500_000
    validation_fraction: float = 0.1
    train_len: int = 64
    eval_multiples: tuple = (0.5, 1, 2, 4, 8, 16)
    eval_tokens: int = 16384  # characters scored per evaluation length (whole windows)
    dynamic_positions: int = 64  # dynamic NTK: positions scored per window past train_len, evenly spaced
    dynamic_ntk_scale: float = 1.0  # s in transformers' dynamic base (1: the NTK-aware base for the prefix length)
    d_model: int = 64
    n_heads: int = 4
    n_layers: int = 4
    base: float = 10000.0
    t5_buckets: int = 32
    t5_max_distance: int = 128
    steps: int = 1200
    batch: int = 32
    lr: float = 3e-3
    warmup: int = 100
    weight_decay: float = 0.01  # AdamW, on every parameter
    betas: tuple = (0.9, 0.999)  # AdamW
    grad_clip: float = 1.0  # maximum global gradient norm
    seed: int = 0
    threads: int = 1  # one thread: OpenMP spin-waits make two threads far slower on a busy 2-core machine
    schemes: tuple = SCHEMES

    def key(self) -> str:
        """A hash of everything that determines the numbers."""
        return hashlib.sha256(json.dumps(asdict(self), sort_keys=True).encode()).hexdigest()[:16]


SMOKE = dict(max_chars=60_000, train_len=16, eval_multiples=(1, 2), eval_tokens=512, dynamic_positions=4,
             d_model=16, n_heads=2, n_layers=1, steps=3, batch=4, warmup=1)


def corpus(config: Config) -> tuple[str, str]:
    """The text (non-ASCII characters replaced by '?') and its SHA-256."""
    root = Path(sysconfig.get_paths()["stdlib"])
    parts = []
    for name in config.corpus_modules:
        path = root / f"{name}.py"
        if not path.is_file():
            raise FileNotFoundError(f"corpus file {path} is missing from this Python's standard library")
        parts.append(path.read_text(encoding="utf-8"))
    text = "".join(ch if (ch == "\n" or 32 <= ord(ch) < 127) else "?" for ch in "\n".join(parts))
    text = text[: config.max_chars]
    return text, hashlib.sha256(text.encode()).hexdigest()


def encode(text: str) -> tuple[np.ndarray, list[str]]:
    vocab = sorted(set(text))
    index = {ch: i for i, ch in enumerate(vocab)}
    return np.fromiter((index[ch] for ch in text), dtype=np.int64, count=len(text)), vocab


def build(scheme, vocab_size, config: Config) -> TinyDecoder:
    return TinyDecoder(vocab_size, scheme, config.d_model, config.n_heads, config.n_layers, max_len=config.train_len,
                       base=config.base, t5_buckets=config.t5_buckets, t5_max_distance=config.t5_max_distance)


def train(scheme, data, vocab_size, config: Config, progress) -> TinyDecoder:
    torch.manual_seed(config.seed)
    rng = np.random.default_rng(config.seed)  # same batches for every scheme
    model = build(scheme, vocab_size, config)
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr, betas=config.betas,
                                  weight_decay=config.weight_decay)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: min(1.0, (step + 1) / config.warmup) *
                                                 0.5 * (1 + math.cos(math.pi * min(step, config.steps) / config.steps)))
    model.train()
    for _ in range(config.steps):
        starts = rng.integers(0, len(data) - config.train_len - 1, size=config.batch)
        batch = torch.as_tensor(np.stack([data[s:s + config.train_len + 1] for s in starts]))
        loss = lm_loss(model, batch)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
        optimizer.step()
        schedule.step()
        progress.update(1)
        progress.set_postfix(scheme=scheme, loss=f"{loss.item():.3f}")
    return model.eval()


def windows(data, length, config: Config) -> torch.Tensor:
    """``max(1, eval_tokens // length)`` consecutive windows of length + 1 characters from the start of data."""
    count = max(1, config.eval_tokens // length)
    if count * (length + 1) > len(data):
        raise ValueError(f"the validation text ({len(data)} characters) is too short for {count} windows of {length}")
    return torch.as_tensor(np.stack([data[i * (length + 1):(i + 1) * (length + 1)] for i in range(count)]))


@torch.no_grad()
def position_losses(model, batch) -> np.ndarray:
    """Cross-entropy at every position, averaged over the windows: (length,)."""
    logits = model(batch[:, :-1])
    loss = F.cross_entropy(logits.transpose(1, 2), batch[:, 1:], reduction="none")  # (windows, length)
    return loss.mean(0).numpy()


def summarise(losses: np.ndarray, train_len: int, positions=None, length=None) -> dict:
    r"""The window mean :math:`\mathcal{L}(L)` and the mean past train_len, from per-position losses.

    ``losses[k]`` is the loss at ``positions[k]`` (default: every position of the window, 0 .. len - 1). With
    every position the result is the plain mean. With a sample of the positions past train_len (all positions
    before it present), it is the estimate ``(sum before + (L - train_len) * mean of the sample) / L``.
    """
    losses = np.asarray(losses, dtype=np.float64)
    positions = np.arange(losses.size) if positions is None else np.asarray(positions)
    length = losses.size if length is None else int(length)
    if not np.array_equal(positions[positions < train_len], np.arange(min(train_len, length))):
        raise ValueError("every position before train_len must be scored")
    before, beyond = losses[positions < train_len], losses[positions >= train_len]
    if length <= train_len:
        return {"loss": float(before.mean()), "loss_beyond_train": None}
    return {"loss": float((before.sum() + (length - train_len) * beyond.mean()) / length),
            "loss_beyond_train": float(beyond.mean())}


def sampled_positions(train_len, length, count) -> np.ndarray:
    """``count`` positions evenly spaced over train_len .. length - 1 (every one if there are fewer): int64."""
    if length <= train_len:
        return np.arange(0, dtype=np.int64)
    return np.unique(np.linspace(train_len, length - 1, count).round().astype(np.int64))


@torch.no_grad()
def dynamic_ntk_losses(model, batch, positions, config: Config) -> np.ndarray:
    """Dynamic NTK as seen without a KV cache: the loss at position t comes from a forward pass over the first
    t + 1 tokens with the base for that length (transformers recomputes it from seq_len).

    Returns the loss at every position before train_len (where the base is unchanged: plain RoPE), then at each of
    ``positions``, averaged over the windows: (min(train_len, length) + len(positions),).
    """
    d_head = config.d_model // config.n_heads
    model.set_rope(*METHODS["default"](d_head, config.base))
    losses = list(position_losses(model, batch[:, : config.train_len + 1]))
    for t in positions:
        model.set_rope(*METHODS["dynamic_ntk"](d_head, config.base, config.dynamic_ntk_scale,
                                               original_max_position=config.train_len, seq_len=int(t) + 1))
        logits = model(batch[:, : t + 1])[:, -1]
        losses.append(F.cross_entropy(logits, batch[:, t + 1]).item())
    model.set_rope(*METHODS["default"](d_head, config.base))
    return np.array(losses)


def learned_table_analysis(model: TinyDecoder, config: Config) -> dict:
    """The trained position table next to the sinusoidal one: cosine similarity matrices and how much of
    the learned similarity is a function of the offset |m - n| alone (1.0 = perfectly Toeplitz)."""
    table = model.learned.weight.detach().numpy().astype(np.float64)  # (L, d)

    def cosine(t):
        unit = t / np.linalg.norm(t, axis=1, keepdims=True)
        return unit @ unit.T

    learned_sim = cosine(table)
    sinus_sim = cosine(sinusoidal(np.arange(config.train_len), config.d_model, config.base))
    offsets = np.abs(np.subtract.outer(np.arange(config.train_len), np.arange(config.train_len)))
    mean_by_offset = np.array([learned_sim[offsets == k].mean() for k in range(config.train_len)])
    explained = 1 - np.var(learned_sim - mean_by_offset[offsets]) / np.var(learned_sim)
    return {
        "table": np.round(table, 5).tolist(),
        "similarity": np.round(learned_sim, 5).tolist(),
        "sinusoidal_similarity": np.round(sinus_sim, 5).tolist(),
        "offset_explained_variance": float(explained),
        "correlation_with_sinusoidal_similarity": float(np.corrcoef(learned_sim.ravel(), sinus_sim.ravel())[0, 1]),
    }


class Stopwatch:
    """Wall (time.perf_counter) and CPU (time.process_time) seconds, accumulated per phase."""

    def __init__(self):
        self.phases = {}

    @contextmanager
    def __call__(self, phase):
        wall, cpu = time.perf_counter(), time.process_time()
        try:
            yield
        finally:
            spent = self.phases.setdefault(phase, {"wall_seconds": 0.0, "cpu_seconds": 0.0})
            spent["wall_seconds"] += time.perf_counter() - wall
            spent["cpu_seconds"] += time.process_time() - cpu


def run(config: Config, show_progress=True) -> dict:
    torch.set_num_threads(config.threads)
    torch.use_deterministic_algorithms(True)
    start_wall, start_cpu, load_start = time.perf_counter(), time.process_time(), os.getloadavg()
    clock = Stopwatch()
    with clock("corpus"):
        text, checksum = corpus(config)
        data, vocab = encode(text)
    split = int(len(data) * (1 - config.validation_fraction))
    train_data, valid_data = data[:split], data[split:]
    lengths = [int(config.train_len * m) for m in config.eval_multiples]
    d_head = config.d_model // config.n_heads
    results = {"schemes": {}, "rope_extensions": {}}
    progress = tqdm(total=config.steps * len(config.schemes), desc="arena: training", disable=not show_progress)
    models = {}
    for scheme in config.schemes:
        wall, cpu = time.perf_counter(), time.process_time()
        with clock("train"):
            model = train(scheme, train_data, len(vocab), config, progress)
        models[scheme] = model
        entry = {"parameters": parameter_count(model), "train_seconds": time.perf_counter() - wall,
                 "train_cpu_seconds": time.process_time() - cpu, "by_length": {}}
        with clock("evaluate"):
            for length in lengths:
                if scheme == "learned" and length > config.train_len:
                    entry["by_length"][str(length)] = None  # the table has no rows for these positions
                    continue
                losses = position_losses(model, windows(valid_data, length, config))
                entry["by_length"][str(length)] = summarise(losses, config.train_len)
        results["schemes"][scheme] = entry
    progress.close()
    if "rope" in models:
        rope = models["rope"]
        for method in EXTENSIONS:
            by_length = {}
            for length in tqdm(lengths, desc=f"arena: rope + {method}", disable=not show_progress):
                batch = windows(valid_data, length, config)
                if method == "dynamic_ntk":  # sampled positions: plain RoPE at exactly the same ones beside it
                    with clock("dynamic_ntk"):
                        positions = sampled_positions(config.train_len, length, config.dynamic_positions)
                        scored = np.concatenate([np.arange(min(config.train_len, length)), positions])
                        dynamic = dynamic_ntk_losses(rope, batch, positions, config)  # (scored.size,)
                        plain = position_losses(rope, batch)[scored]
                        by_length[str(length)] = {
                            **summarise(dynamic, config.train_len, scored, length), "scale": config.dynamic_ntk_scale,
                            "positions": positions.tolist(),
                            "rope_same_positions": summarise(plain, config.train_len, scored, length)}
                    continue
                with clock("rope_extensions"):
                    scale = max(1.0, length / config.train_len)
                    rope.set_rope(*METHODS[method](d_head, config.base, scale, original_max_position=config.train_len))
                    losses = position_losses(rope, batch)
                    rope.set_rope(*METHODS["default"](d_head, config.base))
                    by_length[str(length)] = {**summarise(losses, config.train_len), "scale": scale}
            results["rope_extensions"][method] = by_length
    if "learned" in models:
        with clock("learned_table"):
            results["learned_table"] = learned_table_analysis(models["learned"], config)
    return {
        "config": asdict(config),
        "config_key": config.key(),
        "check": {"tolerance": TOLERANCE, "not_compared": list(NOT_COMPARED) + ["*_seconds"],
                  "rule": "python -m posenc.arena --check: |rerun - committed| <= tolerance for each kind of number, "
                          "every other number (parameters, scales, positions, configuration, corpus) equal; "
                          "bit-identical on the same torch build and CPU"},
        "corpus": {"characters": len(text), "sha256": checksum, "vocab_size": len(vocab),
                   "train_characters": int(split), "validation_characters": int(len(data) - split),
                   "source": f"Python {platform.python_version()} standard library (PSF licence)"},
        "versions": {"python": platform.python_version(), "torch": torch.__version__, "numpy": np.__version__},
        "machine": {"cpu_capability": torch.backends.cpu.get_cpu_capability(), "cpus": os.cpu_count(),
                    "load_average_start": [round(x, 2) for x in load_start],
                    "load_average_end": [round(x, 2) for x in os.getloadavg()]},
        "eval_lengths": lengths,
        "wall_seconds": time.perf_counter() - start_wall,
        "cpu_seconds": time.process_time() - start_cpu,
        "timing": clock.phases,
        **results,
    }


def _kind(path) -> str | None:
    """How a number at this path of the results is compared: a key of TOLERANCE, "exact", or None (skipped)."""
    if path[0] in NOT_COMPARED or path[-1].endswith("_seconds"):
        return None
    if path[0] == "learned_table":
        return {"table": "table", "similarity": "similarity", "sinusoidal_similarity": "similarity"}.get(path[1],
                                                                                                       "statistic")
    return "loss" if "loss" in path[-1] else "exact"


def _leaves(value, path=()):
    """(path, value) for every leaf of nested dicts; lists are leaves."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _leaves(item, path + (str(key),))
    else:
        yield path, value


def compare(committed: dict, rerun: dict, tolerance=None) -> list[dict]:
    """Every number of two results files side by side: one row per number (per matrix for the learned table).

    Rows hold ``name``, ``kind``, ``committed``, ``rerun``, ``diff`` (absolute, where numeric), ``tolerance`` and
    ``ok``. A number present in one file only, a None against a number, or an exact number that differs is a
    mismatch. Matrix rows report the largest entry difference and its index.
    """
    tolerance = TOLERANCE if tolerance is None else tolerance
    committed, rerun = (json.loads(json.dumps(r)) for r in (committed, rerun))  # as stored: tuples become lists
    ours, theirs = dict(_leaves(committed)), dict(_leaves(rerun))
    rows = []
    for path in list(ours) + [p for p in theirs if p not in ours]:
        kind = _kind(path)
        if kind is None:
            continue
        name = ".".join(path)
        a, b = ours.get(path, "(missing)"), theirs.get(path, "(missing)")
        row = {"name": name, "kind": kind, "committed": a, "rerun": b, "diff": None,
               "tolerance": 0.0 if kind == "exact" else tolerance[kind]}
        if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
            row["diff"] = abs(float(b) - float(a))
            row["ok"] = a == b if kind == "exact" else row["diff"] <= row["tolerance"]
        elif kind in ("table", "similarity") and isinstance(a, list) and isinstance(b, list):
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


def report(rows) -> int:
    """Print the rows of :func:`compare`, then a summary; return the number of mismatches."""
    def show(value):
        return f"{value:.6f}" if isinstance(value, float) else str(value)[:40]

    names = [r["name"] + (f" (max at {r['worst']})" if "worst" in r else "") for r in rows]
    width = max(map(len, names))
    print(f"{'number':<{width}}  {'committed':>14}  {'rerun':>14}  {'|diff|':>10}  {'tolerance':>9}")
    for name, r in zip(names, rows):
        diff = "" if r["diff"] is None else f"{r['diff']:.2e}"
        print(f"{name:<{width}}  {show(r['committed']):>14}  {show(r['rerun']):>14}  {diff:>10}  "
              f"{r['tolerance']:>9g}  {'ok' if r['ok'] else 'MISMATCH'}")
    bad = [r for r in rows if not r["ok"]]
    worst = {}
    for r in rows:
        if r["diff"] is not None:
            worst[r["kind"]] = max(worst.get(r["kind"], 0.0), r["diff"])
    print(f"\n{len(rows)} numbers compared; largest |diff| by kind: "
          + ", ".join(f"{k} {v:.2e}" for k, v in worst.items()))
    if bad:
        print(f"{len(bad)} MISMATCH(ES):")
        for r in bad:
            gap = "" if r["diff"] is None else f" (|diff| {r['diff']:.2e} > {r['tolerance']:g})"
            print(f"  {r['name']}: committed {show(r['committed'])}, rerun {show(r['rerun'])}{gap}")
    else:
        print("every number reproduces within its tolerance")
    return len(bad)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--smoke", action="store_true", help="a few steps at tiny sizes (the test suite's run)")
    parser.add_argument("--out", type=Path, default=None,
                        help=f"where to write the results (default {RESULTS}; with --check, nowhere)")
    parser.add_argument("--check", action="store_true",
                        help="re-run and compare every number with the results file instead of writing it")
    parser.add_argument("--against", type=Path, default=RESULTS, help="the results file --check compares with")
    args = parser.parse_args(argv)
    config = Config(**SMOKE) if args.smoke else Config()
    if args.check:
        committed = json.loads(args.against.read_text())
        if committed.get("config_key") != config.key():
            print(f"{args.against} was produced by configuration {committed.get('config_key')}, the code's is "
                  f"{config.key()}: run the experiment (make arena) before checking it", file=sys.stderr)
            return 2
    result = run(config)
    print(f"ran in {result['wall_seconds']:.0f} s wall, {result['cpu_seconds']:.0f} s CPU "
          f"(load average {result['machine']['load_average_start']} -> {result['machine']['load_average_end']})",
          file=sys.stderr)
    out = args.out or (None if args.check else RESULTS)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=1) + "\n")
        print(f"wrote {out}", file=sys.stderr)
    if not args.check:
        return 0
    print(f"\nchecking {args.against} (torch {committed['versions']['torch']}, "
          f"{committed.get('machine', {}).get('cpu_capability', '?')}) against this run "
          f"(torch {result['versions']['torch']}, {result['machine']['cpu_capability']});\n"
          f"allowed |rerun - committed| by kind: {TOLERANCE}, every other number equal\n")
    return 1 if report(compare(committed, result)) else 0


if __name__ == "__main__":
    raise SystemExit(main())
