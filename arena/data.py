"""The arena's text: source files of the running Python's standard library, read offline on every machine.

Training text and held-out text come from different files (:data:`arena.config.TRAIN_MODULES`,
:data:`arena.config.HELD_OUT_MODULES`), so no held-out window shares a file with the training text. Non-ASCII
characters become '?'. The SHA-256 of both texts is recorded, so that another Python cannot silently produce
other results.
"""

from __future__ import annotations

import hashlib
import sysconfig
from pathlib import Path

import numpy as np

from .config import Config


def read_modules(names) -> str:
    root = Path(sysconfig.get_paths()["stdlib"])
    parts = []
    for name in names:
        path = root / f"{name}.py"
        if not path.is_file():
            raise FileNotFoundError(f"corpus file {path} is missing from this Python's standard library")
        parts.append(path.read_text(encoding="utf-8"))
    return "".join(ch if (ch == "\n" or 32 <= ord(ch) < 127) else "?" for ch in "\n".join(parts))


def corpus(config: Config) -> dict:
    """``{"train": text, "held_out": text, "sha256": ...}``; the training text cut to ``max_chars``."""
    train = read_modules(config.train_modules)[: config.max_chars]
    held_out = read_modules(config.held_out_modules)
    return {"train": train, "held_out": held_out,
            "sha256": hashlib.sha256((train + "\0" + held_out).encode()).hexdigest()}


def encode(texts, vocab=None) -> tuple[list[np.ndarray], list[str]]:
    """Every text as int64 character ids over one vocabulary (by default the sorted characters of all texts)."""
    vocab = sorted(set("".join(texts))) if vocab is None else list(vocab)
    index = {ch: i for i, ch in enumerate(vocab)}
    return [np.fromiter((index[ch] for ch in t), dtype=np.int64, count=len(t)) for t in texts], vocab


def window_starts(text_len: int, length: int, count: int) -> np.ndarray:
    """``count`` starts of non-overlapping windows of ``length`` + 1 characters, spread evenly over the text."""
    if count * (length + 1) > text_len:
        raise ValueError(f"the held-out text ({text_len} characters) is too short for {count} windows of "
                         f"{length} + 1 characters")
    return np.linspace(0, text_len - (length + 1), count).round().astype(np.int64)


def eval_windows(held_out: np.ndarray, config: Config) -> np.ndarray:
    """The evaluation windows: ``(eval_windows, window + 1)`` int64. Every evaluation length reads the first
    L + 1 characters of the same windows, so every number in the results is scored on the same text."""
    starts = window_starts(len(held_out), config.window, config.eval_windows)
    return np.stack([held_out[s:s + config.window + 1] for s in starts])
