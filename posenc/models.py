r"""A small decoder-only transformer whose positional scheme is a constructor argument.

Every scheme comes from posenc; nothing positional is re-implemented here:

=============  =================================================================  ========================
scheme         where position enters                                              posenc
=============  =================================================================  ========================
"none"         nowhere (NoPE: only the causal mask orders the tokens)             --
"sinusoidal"   added to the token embeddings                                      :func:`sinusoidal`
"learned"      added to the token embeddings (max_len rows)                       :class:`LearnedPositionalEmbedding`
"t5"           a learned bias per (bucket, head) on the logits, shared by layers  :class:`RelativePositionBias`
"alibi"        -m_h |i - j| on the logits                                         :func:`alibi_bias`
"rope"         q and k rotated in every layer (half layout, as GPT-NeoX / Llama)  :func:`apply_rope`
=============  =================================================================  ========================

For "rope" the per-pair frequencies and attention factor can be replaced after training
(:meth:`TinyDecoder.set_rope`) to evaluate the context-extension methods of :mod:`posenc.scaling`.
Pre-LayerNorm blocks as in GPT-2 (Radford et al. 2019). A :class:`ModelConfig` holds every setting and builds the
model (``TinyDecoder(ModelConfig(...))``, nanoGPT's ``GPT(GPTConfig(...))`` pattern).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from . import _validate
from .alibi import alibi_bias
from .learned import LearnedPositionalEmbedding
from .relative_torch import RelativePositionBias
from .rope import apply_rope, rope_frequencies
from .sinusoidal import sinusoidal

SCHEMES = ("none", "sinusoidal", "learned", "t5", "alibi", "rope")


@dataclass(frozen=True)
class ModelConfig:
    """Every setting of a :class:`TinyDecoder`.

    ``max_len`` is the number of rows of the learned table (the training context); ``sinusoidal_base`` is the
    sinusoidal encoding's 10000 (Vaswani et al. 2017) and ``rope_base`` RoPE's base, kept apart so that RoPE's
    spectrum can be set against the context without changing the sinusoidal scheme. ``t5_buckets`` and
    ``t5_max_distance`` are T5's bucket settings (:func:`posenc.t5_bucket`).
    """

    vocab_size: int
    scheme: str = "rope"
    d_model: int = 64
    n_heads: int = 4
    n_layers: int = 4
    max_len: int = 64
    sinusoidal_base: float = 10000.0
    rope_base: float = 10000.0
    t5_buckets: int = 32
    t5_max_distance: int = 128

    def __post_init__(self):
        _validate.choice("scheme", self.scheme, SCHEMES)
        _validate.integer("vocab_size", self.vocab_size, minimum=2)
        _validate.integer("d_model", self.d_model, minimum=2)
        _validate.integer("n_heads", self.n_heads, minimum=1)
        _validate.integer("n_layers", self.n_layers, minimum=1)
        _validate.integer("max_len", self.max_len, minimum=1)
        _validate.base(self.sinusoidal_base)
        _validate.base(self.rope_base)
        if self.d_model % self.n_heads or (self.d_model // self.n_heads) % 2:
            raise ValueError(f"d_model / n_heads must be an even integer, got d_model={self.d_model}, "
                             f"n_heads={self.n_heads}")

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_heads


class Block(nn.Module):
    def __init__(self, d_model, n_heads):
        super().__init__()
        self.n_heads, self.d_head = n_heads, d_model // n_heads
        self.ln1, self.ln2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model))

    def forward(self, x, bias, rope):
        batch, seq, d_model = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d_model, dim=-1)
        q, k, v = (t.view(batch, seq, self.n_heads, self.d_head).transpose(1, 2) for t in (q, k, v))  # (B, H, L, dh)
        if rope is not None:
            positions, frequencies, factor = rope
            q = apply_rope(q, positions, layout="half", frequencies=frequencies, attention_factor=factor)
            k = apply_rope(k, positions, layout="half", frequencies=frequencies, attention_factor=factor)
        # bias holds the causal mask too; without one, is_causal picks torch's fused causal kernel (about 2x faster)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=bias, is_causal=bias is None)
        x = x + self.proj(out.transpose(1, 2).reshape(batch, seq, d_model))
        return x + self.mlp(self.ln2(x))


class TinyDecoder(nn.Module):
    """A character-level causal language model with a pluggable positional scheme (see the module doc).

    ``TinyDecoder(ModelConfig(vocab_size, scheme, ...))``. ``forward(tokens)`` takes int64 ``(batch, seq)`` and
    returns logits ``(batch, seq, vocab_size)``. T5's bias table starts as T5 starts it, N(0, d_model^-1/2)
    (transformers' ``T5PreTrainedModel._init_weights``), not at ``nn.Embedding``'s N(0, 1).
    """

    def __init__(self, config: ModelConfig):
        super().__init__()
        if not isinstance(config, ModelConfig):
            raise TypeError(f"config must be a posenc.models.ModelConfig, got {type(config).__name__}")
        self.config = config
        self.scheme, self.d_model, self.n_heads = config.scheme, config.d_model, config.n_heads
        self.embed = nn.Embedding(config.vocab_size, config.d_model)
        self.blocks = nn.ModuleList(Block(config.d_model, config.n_heads) for _ in range(config.n_layers))
        self.ln_f = nn.LayerNorm(config.d_model)
        self.head = nn.Linear(config.d_model, config.vocab_size, bias=False)
        self.learned = (LearnedPositionalEmbedding(config.max_len, config.d_model) if config.scheme == "learned"
                        else None)
        self.t5 = None
        if config.scheme == "t5":
            self.t5 = RelativePositionBias(config.n_heads, config.t5_buckets, config.t5_max_distance,
                                           bidirectional=False)
            nn.init.normal_(self.t5.table.weight, mean=0.0, std=config.d_model ** -0.5)
        self.set_rope(rope_frequencies(config.d_head, config.rope_base), 1.0)

    def set_rope(self, frequencies, attention_factor=1.0):
        """Replace RoPE's per-pair frequencies and attention factor (a method of posenc.scaling's output)."""
        theta = _validate.finite_array("frequencies", frequencies)
        if theta.shape != (self.d_model // self.n_heads // 2,):
            raise ValueError(f"frequencies must have shape ({self.d_model // self.n_heads // 2},), got {theta.shape}")
        self.rope_frequencies, self.rope_factor = theta, _validate.real("attention_factor", attention_factor, greater_than=0)

    def _bias(self, seq, device):
        """Additive logits bias (H, L, L) with -inf above the diagonal, or None: only the causal mask."""
        if self.scheme == "alibi":
            return torch.as_tensor(alibi_bias(self.n_heads, seq), dtype=torch.float32, device=device)
        if self.scheme == "t5":
            return self.t5(seq) + torch.full((seq, seq), float("-inf"), device=device).triu(1)
        return None

    def forward(self, tokens):
        batch, seq = tokens.shape
        x = self.embed(tokens)  # (B, L, d_model)
        if self.scheme == "sinusoidal":
            table = sinusoidal(np.arange(seq), self.d_model, self.config.sinusoidal_base)
            x = x + torch.as_tensor(table, dtype=x.dtype, device=x.device)
        elif self.scheme == "learned":
            x = self.learned(x)
        bias = self._bias(seq, tokens.device)
        rope = (np.arange(seq), self.rope_frequencies, self.rope_factor) if self.scheme == "rope" else None
        for block in self.blocks:
            x = block(x, bias, rope)
        return self.head(self.ln_f(x))


def lm_loss(model, tokens):
    """Mean next-character cross-entropy (nats) of a batch ``(batch, seq + 1)``."""
    logits = model(tokens[:, :-1])
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tokens[:, 1:].reshape(-1))


def parameter_count(model) -> int:
    return sum(p.numel() for p in model.parameters())

