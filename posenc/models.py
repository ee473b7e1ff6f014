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
Pre-LayerNorm blocks as in GPT-2 (Radford et al. 2019).
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from . import _checks
from .alibi import alibi_bias
from .learned import LearnedPositionalEmbedding
from .relative import RelativePositionBias
from .rope import apply_rope, rope_frequencies
from .sinusoidal import sinusoidal

SCHEMES = ("none", "sinusoidal", "learned", "t5", "alibi", "rope")


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

    Args: vocab_size; scheme (one of SCHEMES); d_model, n_heads, n_layers; max_len (rows of the learned
    table, i.e. the training context); base (sinusoidal and RoPE); t5_buckets, t5_max_distance.
    ``forward(tokens)`` takes int64 ``(batch, seq)`` and returns logits ``(batch, seq, vocab_size)``.
    """

    def __init__(self, vocab_size, scheme="rope", d_model=64, n_heads=4, n_layers=4, max_len=64, base=10000.0,
                 t5_buckets=32, t5_max_distance=128):
        super().__init__()
        self.scheme = _checks.choice("scheme", scheme, SCHEMES)
        vocab_size = _checks.integer("vocab_size", vocab_size, minimum=2)
        d_model = _checks.integer("d_model", d_model, minimum=2)
        n_heads = _checks.integer("n_heads", n_heads, minimum=1)
        if d_model % n_heads or (d_model // n_heads) % 2:
            raise ValueError(f"d_model / n_heads must be an even integer, got d_model={d_model}, n_heads={n_heads}")
        self.d_model, self.n_heads, self.base = d_model, n_heads, _checks.base(base)
        self.embed = nn.Embedding(vocab_size, d_model)
        self.blocks = nn.ModuleList(Block(d_model, n_heads) for _ in range(_checks.integer("n_layers", n_layers, minimum=1)))
        self.ln_f = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab_size, bias=False)
        self.learned = LearnedPositionalEmbedding(max_len, d_model) if scheme == "learned" else None
        self.t5 = RelativePositionBias(n_heads, t5_buckets, t5_max_distance, bidirectional=False) if scheme == "t5" else None
        self.set_rope(rope_frequencies(d_model // n_heads, base), 1.0)

    def set_rope(self, frequencies, attention_factor=1.0):
        """Replace RoPE's per-pair frequencies and attention factor (a method of posenc.scaling's output)."""
        theta = _checks.finite_array("frequencies", frequencies)
        if theta.shape != (self.d_model // self.n_heads // 2,):
            raise ValueError(f"frequencies must have shape ({self.d_model // self.n_heads // 2},), got {theta.shape}")
        self.rope_frequencies, self.rope_factor = theta, _checks.real("attention_factor", attention_factor, greater_than=0)

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
            x = x + torch.as_tensor(sinusoidal(np.arange(seq), self.d_model, self.base), dtype=x.dtype)
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


def perplexity(loss_nats: float) -> float:
    return math.exp(loss_nats)
