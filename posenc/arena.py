"""The extrapolation arena: train one tiny causal LM per positional scheme, then measure past L_train.

``python -m posenc.arena`` (``make arena``) trains every scheme of :mod:`posenc.models` with the same
budget on the same characters, evaluates held-out loss at 0.5x ... 16x the training length, evaluates the
RoPE model with each context-extension method of :mod:`posenc.scaling` without retraining, and writes
every number, the configuration, seeds, versions and wall time to ``book/data/arena.json``.

Corpus: the source files of the running Python's standard library (a fixed list, read in sorted order);
its SHA-256 is recorded and checked, so a different Python cannot silently produce different results.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import platform
import sys
import sysconfig
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch.nn import functional as F
from tqdm import tqdm

from .models import SCHEMES, TinyDecoder, lm_loss, parameter_count
from .scaling import METHODS
from .sinusoidal import sinusoidal

RESULTS = Path(__file__).resolve().parent.parent / "book" / "data" / "arena.json"
EXTENSIONS = ("position_interpolation", "ntk_aware", "dynamic_ntk", "yarn")


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
    dynamic_windows: int = 4  # windows scored position by position for dynamic NTK
    d_model: int = 64
    n_heads: int = 4
    n_layers: int = 4
    base: float = 10000.0
    steps: int = 1200
    batch: int = 32
    lr: float = 3e-3
    warmup: int = 100
    seed: int = 0
    threads: int = 1  # one thread: OpenMP spin-waits make two threads far slower on a busy 2-core machine
    schemes: tuple = SCHEMES

    def key(self) -> str:
        """A hash of everything that determines the numbers."""
        return hashlib.sha256(json.dumps(asdict(self), sort_keys=True).encode()).hexdigest()[:16]


SMOKE = dict(max_chars=60_000, train_len=16, eval_multiples=(1, 2), eval_tokens=512, dynamic_windows=1,
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


def train(scheme, data, vocab_size, config: Config, progress) -> TinyDecoder:
    torch.manual_seed(config.seed)
    rng = np.random.default_rng(config.seed)  # same batches for every scheme
    model = TinyDecoder(vocab_size, scheme, config.d_model, config.n_heads, config.n_layers,
                        max_len=config.train_len, base=config.base)
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=0.01)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: min(1.0, (step + 1) / config.warmup) *
                                                 0.5 * (1 + math.cos(math.pi * min(step, config.steps) / config.steps)))
    model.train()
    for _ in range(config.steps):
        starts = rng.integers(0, len(data) - config.train_len - 1, size=config.batch)
        batch = torch.as_tensor(np.stack([data[s:s + config.train_len + 1] for s in starts]))
        loss = lm_loss(model, batch)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        progress.update(1)
        progress.set_postfix(scheme=scheme, loss=f"{loss.item():.3f}")
    return model.eval()


def windows(data, length, config: Config, limit=None) -> torch.Tensor:
    count = max(1, config.eval_tokens // length)
    if limit is not None:
        count = min(count, limit)
    if count * (length + 1) > len(data):
        raise ValueError(f"the validation text ({len(data)} characters) is too short for {count} windows of {length}")
    return torch.as_tensor(np.stack([data[i * (length + 1):(i + 1) * (length + 1)] for i in range(count)]))


@torch.no_grad()
def position_losses(model, batch) -> np.ndarray:
    """Cross-entropy at every position, averaged over the windows: (length,)."""
    logits = model(batch[:, :-1])
    loss = F.cross_entropy(logits.transpose(1, 2), batch[:, 1:], reduction="none")  # (windows, length)
    return loss.mean(0).numpy()


def summarise(losses: np.ndarray, train_len: int) -> dict:
    beyond = losses[train_len:]
    return {"loss": float(losses.mean()), "loss_beyond_train": float(beyond.mean()) if beyond.size else None}


@torch.no_grad()
def dynamic_ntk_losses(model, batch, train_len, config: Config) -> np.ndarray:
    """Dynamic NTK as seen without a KV cache: the loss at position t comes from a forward pass over the
    first t + 1 tokens with the base for that length (transformers recomputes it from seq_len)."""
    d_head = config.d_model // config.n_heads
    length = batch.shape[1] - 1
    losses = np.empty(length)
    model.set_rope(*METHODS["default"](d_head, config.base))
    losses[:train_len] = position_losses(model, batch[:, : min(train_len, length) + 1])[:train_len]
    for t in range(train_len, length):
        model.set_rope(*METHODS["dynamic_ntk"](d_head, config.base, 1.0, original_max_position=train_len, seq_len=t + 1))
        logits = model(batch[:, : t + 1])[:, -1]
        losses[t] = F.cross_entropy(logits, batch[:, t + 1]).item()
    model.set_rope(*METHODS["default"](d_head, config.base))
    return losses


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


def run(config: Config, show_progress=True) -> dict:
    torch.set_num_threads(config.threads)
    torch.use_deterministic_algorithms(True)
    start = time.perf_counter()
    text, checksum = corpus(config)
    data, vocab = encode(text)
    split = int(len(data) * (1 - config.validation_fraction))
    train_data, valid_data = data[:split], data[split:]
    lengths = [int(config.train_len * m) for m in config.eval_multiples]
    d_head = config.d_model // config.n_heads
    results = {"schemes": {}, "rope_extensions": {}}
    progress = tqdm(total=config.steps * len(config.schemes), desc="arena", disable=not show_progress)
    models = {}
    for scheme in config.schemes:
        t0 = time.perf_counter()
        model = train(scheme, train_data, len(vocab), config, progress)
        models[scheme] = model
        entry = {"parameters": parameter_count(model), "train_seconds": time.perf_counter() - t0, "by_length": {}}
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
            for length in tqdm(lengths, desc=f"rope + {method}", disable=not show_progress):
                scale = max(1.0, length / config.train_len)
                if method == "dynamic_ntk":  # scored on fewer windows: keep plain RoPE on the same ones beside it
                    batch = windows(valid_data, length, config, limit=config.dynamic_windows)
                    losses = dynamic_ntk_losses(rope, batch, config.train_len, config)
                    by_length[str(length)] = {**summarise(losses, config.train_len), "scale": scale,
                                              "rope_same_windows": summarise(position_losses(rope, batch),
                                                                             config.train_len)}
                    continue
                rope.set_rope(*METHODS[method](d_head, config.base, scale, original_max_position=config.train_len))
                losses = position_losses(rope, windows(valid_data, length, config))
                rope.set_rope(*METHODS["default"](d_head, config.base))
                by_length[str(length)] = {**summarise(losses, config.train_len), "scale": scale}
            results["rope_extensions"][method] = by_length
    if "learned" in models:
        results["learned_table"] = learned_table_analysis(models["learned"], config)
    return {
        "config": asdict(config),
        "config_key": config.key(),
        "corpus": {"characters": len(text), "sha256": checksum, "vocab_size": len(vocab),
                   "train_characters": int(split), "validation_characters": int(len(data) - split),
                   "source": f"Python {platform.python_version()} standard library (PSF licence)"},
        "versions": {"python": platform.python_version(), "torch": torch.__version__, "numpy": np.__version__},
        "eval_lengths": lengths,
        "wall_seconds": time.perf_counter() - start,
        **results,
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--smoke", action="store_true", help="a few steps at tiny sizes (the test suite's run)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    config = Config(**SMOKE) if args.smoke else Config()
    result = run(config)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {args.out} in {result['wall_seconds']:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
