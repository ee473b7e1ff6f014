"""The arena's settings: every number that determines the results, and a key that changes with any of them.

Why these values (chapter 8 states them too):

- ``train_len`` 256 and ``rope_base`` 200 with 16-dimensional heads put RoPE in the regime of real models: the
  fastest pair turns about 41 times in the training window, so YaRN's beta_fast = 32 boundary lies inside the
  spectrum and its ramp is the paper's, not transformers' clipping of it (which needs a window shorter than
  2 pi 32 ~ 201); 2 of the 8 pairs (25 %) never complete a turn in training, against 28 % in Llama 2
  (d_head 128, base 10^4, 4096 tokens). With base 10^4 and these heads the fraction would be 50 %.
- ``t5_max_distance`` 128 is below ``train_len``, so every bucket is trained (T5's own setting, 32 buckets up to
  128), and the table starts as T5's does (see :class:`posenc.models.TinyDecoder`).
- ``batch`` 8 windows of 256 characters: 2048 characters per step. The ceiling model trains on windows 4 times
  longer with a quarter of the batch, so it sees the same characters in the same number of steps.
- Several ``seeds``: every model is trained once per seed; within a seed every scheme sees the same batches.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass

from posenc.models import SCHEMES

TRAIN_MODULES = ("argparse", "ast", "asyncio/base_events", "calendar", "collections/__init__", "configparser",
                 "csv", "dataclasses", "datetime", "decimal", "difflib", "email/message", "enum", "fractions",
                 "functools", "inspect", "logging/__init__", "pathlib", "pickle", "pydoc", "random", "shutil",
                 "statistics", "string", "subprocess", "tarfile", "textwrap", "threading", "typing",
                 "unittest/case", "zipfile")
HELD_OUT_MODULES = ("contextlib", "gettext", "heapq", "ipaddress", "tokenize", "traceback")


@dataclass(frozen=True)
class Config:
    train_modules: tuple = TRAIN_MODULES
    held_out_modules: tuple = HELD_OUT_MODULES  # none of them is in train_modules
    max_chars: int = 1_500_000  # of training text
    train_len: int = 256
    eval_multiples: tuple = (0.5, 1, 2, 4, 8, 16)
    eval_windows: int = 32  # windows of max(eval_multiples) * train_len characters, spread over the held-out text
    bucket_width: tuple = (32, 128)  # per-position losses averaged in buckets this wide before / after train_len
    fixed_scales: tuple = (2, 4, 8, 16)  # the deployed setting: one s for every length
    static_extensions: tuple = ("position_interpolation", "ntk_aware", "yarn")
    dynamic_ntk_scale: float = 1.0  # s in transformers' dynamic base (1: the NTK-aware base for the prefix length)
    ceiling_multiple: int = 4  # the ceiling model trains at this multiple of train_len
    d_model: int = 64
    n_heads: int = 4
    n_layers: int = 4
    sinusoidal_base: float = 10000.0
    rope_base: float = 200.0
    t5_buckets: int = 32
    t5_max_distance: int = 128
    steps: int = 1000
    batch: int = 8
    lr: float = 3e-3
    warmup: int = 100
    weight_decay: float = 0.01  # AdamW, on every parameter
    betas: tuple = (0.9, 0.999)  # AdamW
    grad_clip: float = 1.0  # maximum global gradient norm
    seeds: tuple = (0, 1, 2)
    threads: int = 1  # per worker process: OpenMP spin-waits make two threads far slower on a busy 2-core machine
    schemes: tuple = SCHEMES
    table_null_draws: int = 200  # random tables per null of the learned-table analysis

    def __post_init__(self):
        overlap = set(self.train_modules) & set(self.held_out_modules)
        if overlap:
            raise ValueError(f"held_out_modules must not be trained on, got {sorted(overlap)} in both")
        if len(self.seeds) < 1 or len(set(self.seeds)) != len(self.seeds):
            raise ValueError(f"seeds must be distinct and at least one, got {self.seeds}")
        if self.t5_max_distance > self.train_len:
            raise ValueError(f"t5_max_distance must be at most train_len ({self.train_len}) so that every bucket "
                             f"is trained, got {self.t5_max_distance}")

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_heads

    @property
    def eval_lengths(self) -> list[int]:
        return [int(self.train_len * m) for m in self.eval_multiples]

    @property
    def window(self) -> int:
        """The length of every evaluation window: the longest evaluation length."""
        return max(self.eval_lengths)

    def key(self) -> str:
        """A hash of everything that determines the numbers."""
        return hashlib.sha256(json.dumps(asdict(self), sort_keys=True).encode()).hexdigest()[:16]


SMOKE = dict(max_chars=60_000, train_len=16, eval_multiples=(1, 2, 4), eval_windows=3, bucket_width=(4, 8),
             fixed_scales=(2, 4), t5_buckets=8, t5_max_distance=16, d_model=16, n_heads=2, n_layers=1, steps=3, batch=4, warmup=1,
             seeds=(0, 1), table_null_draws=5)
