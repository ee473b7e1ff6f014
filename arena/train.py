"""One model of one scheme, trained with one seed: AdamW, linear warm-up then cosine decay, clipped gradients;
and the fine-tuning arm, which continues a trained RoPE model at a longer length under an extension method.

Within a seed every model sees the same batches in the same order (one numpy generator per seed, and one per
seed for fine-tuning, the same for every method); the model's initial weights come from
``torch.manual_seed(seed)``.
"""

from __future__ import annotations

import copy
import math

import numpy as np
import torch

from posenc.models import ModelConfig, TinyDecoder, lm_loss
from posenc.scaling import METHODS

from .config import Config, ModelSpec

FINETUNE_SEED = 10_000  # added to the seed: the fine-tuning batches are not the pre-training ones


def model_config(spec: ModelSpec, vocab_size: int, config: Config) -> ModelConfig:
    return ModelConfig(vocab_size=vocab_size, scheme=spec.scheme, d_model=config.d_model, n_heads=config.n_heads,
                       n_layers=config.n_layers, max_len=spec.train_len, sinusoidal_base=spec.sinusoidal_base,
                       rope_base=spec.rope_base, t5_buckets=config.t5_buckets, t5_max_distance=config.t5_max_distance)


def fit(model, data: np.ndarray, config: Config, rng, length: int, batch: int, steps: int, lr: float,
        warmup: int, on_step=None):
    """``steps`` AdamW steps on ``batch`` random windows of ``length`` characters (warm-up, then cosine decay
    to 0). ``on_step(step, loss)`` is called after every step (progress reporting)."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, betas=config.betas, weight_decay=config.weight_decay)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: min(1.0, (step + 1) / warmup) *
                                                 0.5 * (1 + math.cos(math.pi * min(step, steps) / steps)))
    model.train()
    for step in range(steps):
        starts = rng.integers(0, len(data) - length - 1, size=batch)
        tokens = torch.as_tensor(np.stack([data[s:s + length + 1] for s in starts]))
        loss = lm_loss(model, tokens)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
        optimizer.step()
        schedule.step()
        if on_step is not None:
            on_step(step, loss.item())
    return model.eval()


def train(spec: ModelSpec, data: np.ndarray, vocab_size: int, config: Config, seed: int, on_step=None) -> TinyDecoder:
    """Train the model ``spec`` describes on windows of ``spec.train_len`` characters, ``spec.batch`` per step."""
    torch.manual_seed(seed)
    model = TinyDecoder(model_config(spec, vocab_size, config))
    return fit(model, data, config, np.random.default_rng(seed), spec.train_len, spec.batch, config.steps,
               config.lr, config.warmup, on_step)


def finetune(model: TinyDecoder, method: str, base: float, data: np.ndarray, config: Config, seed: int,
             on_step=None) -> TinyDecoder:
    """A copy of the trained RoPE ``model`` (of ``base``, trained at config.train_len) given ``method``'s
    frequencies at s = finetune_multiple, then trained ``finetune_steps`` on windows that long (the same
    characters per step as pre-training) at ``finetune_lr``. Every method sees the same batches."""
    tuned = copy.deepcopy(model)
    scale = float(config.finetune_multiple)
    frequencies, factor = METHODS[method](config.d_head, base, scale=scale, original_max_position=config.train_len)
    tuned.set_rope(frequencies, factor)
    torch.manual_seed(seed + FINETUNE_SEED)
    return fit(tuned, data, config, np.random.default_rng(seed + FINETUNE_SEED),
               config.finetune_multiple * config.train_len, config.batch // config.finetune_multiple,
               config.finetune_steps, config.finetune_lr, max(1, config.finetune_steps // 10), on_step)
