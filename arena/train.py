"""One model of one scheme, trained with one seed: AdamW, linear warm-up then cosine decay, clipped gradients.

Within a seed every scheme sees the same batches in the same order (one numpy generator per seed); the model's
initial weights come from ``torch.manual_seed(seed)``.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from posenc.models import ModelConfig, TinyDecoder, lm_loss

from .config import Config


def model_config(scheme: str, vocab_size: int, config: Config, max_len: int | None = None) -> ModelConfig:
    return ModelConfig(vocab_size=vocab_size, scheme=scheme, d_model=config.d_model, n_heads=config.n_heads,
                       n_layers=config.n_layers, max_len=max_len or config.train_len,
                       sinusoidal_base=config.sinusoidal_base, rope_base=config.rope_base,
                       t5_buckets=config.t5_buckets, t5_max_distance=config.t5_max_distance)


def train(scheme: str, data: np.ndarray, vocab_size: int, config: Config, seed: int, train_len: int | None = None,
          batch: int | None = None, on_step=None) -> TinyDecoder:
    """Train a model of ``scheme`` on windows of ``train_len`` (default ``config.train_len``) characters.

    ``on_step(step, loss)`` is called after every step (progress reporting).
    """
    train_len = train_len or config.train_len
    batch = batch or config.batch
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    model = TinyDecoder(model_config(scheme, vocab_size, config, max_len=train_len))
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr, betas=config.betas,
                                  weight_decay=config.weight_decay)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: min(1.0, (step + 1) / config.warmup) *
                                                 0.5 * (1 + math.cos(math.pi * min(step, config.steps) / config.steps)))
    model.train()
    for step in range(config.steps):
        starts = rng.integers(0, len(data) - train_len - 1, size=batch)
        tokens = torch.as_tensor(np.stack([data[s:s + train_len + 1] for s in starts]))
        loss = lm_loss(model, tokens)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
        optimizer.step()
        schedule.step()
        if on_step is not None:
            on_step(step, loss.item())
    return model.eval()
