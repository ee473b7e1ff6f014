"""The arena's settings: every number that determines the results, and a key that changes with any of them.

Why these values (chapter 8 states them too):

- ``train_len`` 256 with 16-dimensional heads (8 RoPE pairs). RoPE's base is not matched on one property only:
  the experiment trains RoPE at three bases (:attr:`Config.rope_bases`), each chosen for a different property.
  ``rope_base`` 200 (the model called ``rope``, on which every context extension runs) matches Llama 2's
  fraction of slow pairs: 2 of the 8 pairs (25 %) never complete a turn in training, against 28 % in Llama 2
  (d_head 128, base 10^4, 4096 tokens); but by the B_m criterion of Men et al. 2024 (arXiv:2405.14591,
  :func:`posenc.scaling.base_context_bound`) it resolves only 29 positions (11 % of L_train, Llama 2: 1,707 of
  4,096, 42 %). Base 10^4 resolves 91 (36 %, near Llama 2's share) and is the conventional base. Base 12,000
  is the smallest base (on a grid of 10) whose B_m stays non-negative up to L_train (to 291). At base 200 the
  fastest pair turns about 41 times in the training window, so YaRN's beta_fast = 32 boundary lies inside the
  spectrum. posenc.yarn uses transformers' ramp, linear over pair indices between rounded ends
  (:func:`posenc.scaling.yarn_ramp`), not the paper's ramp, linear in turns
  (:func:`posenc.scaling.yarn_ramp_paper`): at base 200 transformers' ramp keeps 1 pair, blends 5 and
  interpolates 2 (weights 1, .83, .67, .5, .33, .17, 0, 0; the paper's would be 1, .65, .32, .15, .06, .02, 0, 0).
- The sinusoidal model is trained at base 10^4 (Vaswani et al.) and at RoPE's base 200
  (:attr:`Config.sinusoidal_bases`): with the same base both encodings span the same wavelengths, so
  "sinusoidal against RoPE" is like for like only at the matched base.
- ``t5_max_distance`` 128 is below ``train_len``, so every bucket is trained (T5's own setting, 32 buckets up to
  128), and the table starts as T5's does (see :class:`posenc.models.TinyDecoder`).
- ``batch`` 8 windows of 256 characters: 2048 characters per step, for every model.
- The ceiling (``rope_ceiling``) is RoPE trained at ``ceiling_multiple`` x L_train = 1024 characters on 2
  windows per step (the same 2048 characters per step, so the same characters in the same steps), at
  ``ceiling_base`` 413,500, the smallest base (on a grid of 500) whose B_m stays non-negative up to 1024: the
  best a model of this size and budget does at 1024 when it is trained there, which every extension is
  measured against.
- ``seeds`` 0-4: every model is trained once per seed; within a seed every model sees the same batches, and the
  extensions are the same trained model, so every comparison is paired (:mod:`arena.stats`). With five seeds a
  difference of the same sign in all five has a chance of 2 / 2^5 = 6.25 % under no difference at all.
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
CEILING = "rope_ceiling"


@dataclass(frozen=True)
class ModelSpec:
    """One trained model: its scheme, the length and batch it trains on, and its bases."""
    name: str
    scheme: str
    train_len: int
    batch: int
    rope_base: float
    sinusoidal_base: float


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
    # s in transformers' dynamic base: 1 is the NTK-aware base for the prefix length, which has no margin (the
    # base starts growing only past L_train); deployments set s > 1, which grows it sooner and further
    # (one number, as the earlier results file records it, is read as one factor)
    dynamic_ntk_scale: tuple = (1.0, 2.0)
    ceiling_multiple: int = 4  # the ceiling model trains at this multiple of train_len
    ceiling_base: float = 413_500.0  # the smallest base (grid of 500) with B_m >= 0 up to ceiling_multiple * train_len
    d_model: int = 64
    n_heads: int = 4
    n_layers: int = 4
    sinusoidal_base: float = 10000.0
    rope_base: float = 200.0  # the model "rope", on which every extension runs
    # the base sweep: RoPE also trained at each of these ("rope_base<B>"), the sinusoidal model at each of these
    # ("sinusoidal_base<B>"); see the module's docstring for why each
    rope_sweep_bases: tuple = (12000.0, 10000.0)
    sinusoidal_sweep_bases: tuple = (200.0,)
    t5_buckets: int = 32
    t5_max_distance: int = 128
    steps: int = 1000
    batch: int = 8
    lr: float = 3e-3
    warmup: int = 100
    weight_decay: float = 0.01  # AdamW, on every parameter
    betas: tuple = (0.9, 0.999)  # AdamW
    grad_clip: float = 1.0  # maximum global gradient norm
    # the fine-tuning arm: the trained "rope" continues for finetune_steps (a tenth of its training, as YaRN's
    # 400 steps are a small share of Llama 2's) on windows finetune_multiple x train_len long (same characters
    # per step), with each method's frequencies at s = finetune_multiple; "default" (no rescaling) is the control
    # that separates what the method does from what the longer windows do
    finetune_methods: tuple = ("default", "position_interpolation", "ntk_aware", "yarn")
    finetune_multiple: int = 4
    finetune_steps: int = 100
    finetune_lr: float = 3e-4  # a tenth of the pre-training rate, with warmup finetune_steps // 10 and cosine decay
    # control 1, truncated context: every position past train_len scored with only its last train_len - stride + 1
    # to train_len characters (a sliding window moved by this stride), so a rise past L_train is told apart from
    # the encoding seeing positions it never trained on. Stride 32 costs 2.6 full evaluation passes per model,
    # 64 (a context of 193 to 256 characters) about half that
    truncated_stride: int = 64
    # control 2, the copy probe: a span of probe_span characters repeated at the end of a window of each
    # evaluation length up to probe_max_length, against the same window whose first span is other text, on
    # probe_windows windows. It stops at 2048 (a copy 2016 characters back, 8 x L_train): the 4096 probe would
    # cost a full evaluation pass per model, and T5's and ALiBi's passes at 4096 are the slowest of all
    probe_span: int = 32
    probe_windows: int = 16
    probe_max_length: int = 2048
    seeds: tuple = (0, 1, 2, 3, 4)
    threads: int = 1  # per worker process: OpenMP spin-waits make two threads far slower on a busy 2-core machine
    schemes: tuple = SCHEMES
    table_null_draws: int = 200  # random tables per null of the learned-table analysis

    def __post_init__(self):
        if isinstance(self.dynamic_ntk_scale, (int, float)):
            object.__setattr__(self, "dynamic_ntk_scale", (float(self.dynamic_ntk_scale),))
        overlap = set(self.train_modules) & set(self.held_out_modules)
        if overlap:
            raise ValueError(f"held_out_modules must not be trained on, got {sorted(overlap)} in both")
        if len(self.seeds) < 1 or len(set(self.seeds)) != len(self.seeds):
            raise ValueError(f"seeds must be distinct and at least one, got {self.seeds}")
        if self.t5_max_distance > self.train_len:
            raise ValueError(f"t5_max_distance must be at most train_len ({self.train_len}) so that every bucket "
                             f"is trained, got {self.t5_max_distance}")
        if (self.window - self.train_len) % self.truncated_stride or self.truncated_stride > self.train_len:
            raise ValueError(f"truncated_stride must divide window - train_len ({self.window - self.train_len}) "
                             f"and be at most train_len, got {self.truncated_stride}")
        if not 1 < self.probe_span <= self.train_len // 2 or not 1 < self.probe_windows <= self.eval_windows:
            raise ValueError(f"probe_span must be in 2 .. train_len / 2 and probe_windows in 2 .. eval_windows, "
                             f"got {self.probe_span}, {self.probe_windows}")
        for multiple in (self.ceiling_multiple, self.finetune_multiple):
            if self.batch % multiple:
                raise ValueError(f"batch ({self.batch}) must be a multiple of {multiple} to keep the characters "
                                 f"per step")

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

    def models(self) -> dict[str, ModelSpec]:
        """Every model the experiment trains, by name: each scheme at train_len (its own bases), the base sweep
        (``rope_base<B>``, ``sinusoidal_base<B>``) and the ceiling."""
        def spec(name, scheme, rope_base=self.rope_base, sinusoidal_base=self.sinusoidal_base, multiple=1):
            return ModelSpec(name, scheme, multiple * self.train_len, self.batch // multiple, float(rope_base),
                             float(sinusoidal_base))

        out = {s: spec(s, s) for s in self.schemes}
        if "rope" in self.schemes:
            out.update({f"rope_base{base:g}": spec(f"rope_base{base:g}", "rope", rope_base=base)
                        for base in self.rope_sweep_bases})
        if "sinusoidal" in self.schemes:
            out.update({f"sinusoidal_base{base:g}": spec(f"sinusoidal_base{base:g}", "sinusoidal",
                                                         sinusoidal_base=base)
                        for base in self.sinusoidal_sweep_bases})
        if "rope" in self.schemes:
            out[CEILING] = spec(CEILING, "rope", rope_base=self.ceiling_base, multiple=self.ceiling_multiple)
        return out

    def key(self) -> str:
        """A hash of everything that determines the numbers."""
        return hashlib.sha256(json.dumps(asdict(self), sort_keys=True).encode()).hexdigest()[:16]


SMOKE = dict(max_chars=60_000, train_len=16, eval_multiples=(1, 2, 4), eval_windows=3, bucket_width=(4, 8),
             fixed_scales=(2, 4), t5_buckets=8, t5_max_distance=16, d_model=16, n_heads=2, n_layers=1, steps=3,
             batch=4, warmup=1, seeds=(0, 1), table_null_draws=5, rope_sweep_bases=(1000.0,),
             sinusoidal_sweep_bases=(200.0,), ceiling_base=5000.0, finetune_multiple=2, finetune_steps=2,
             truncated_stride=4, probe_span=4, probe_windows=2)
