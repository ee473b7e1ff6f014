r"""Learned absolute position embeddings: one trainable vector per position, added to the token embedding.

Used by BERT (Devlin et al. 2019, arXiv:1810.04805) and GPT-2; Vaswani et al. 2017 (arXiv:1706.03762,
§3.5) report it performs nearly identically to the sinusoidal encoding at the lengths they trained on.
"""

from __future__ import annotations

import torch
from torch import nn

from . import _validate


def learned_parameter_count(max_len, d) -> int:
    r"""Number of trainable parameters of a learned position table: :math:`\mathrm{max\_len} \times d`."""
    return _validate.integer("max_len", max_len, minimum=1) * _validate.integer("d", d, minimum=1)


class LearnedPositionalEmbedding(nn.Module):
    r"""A table :math:`P \in \mathbb{R}^{\mathrm{max\_len} \times d}`; ``forward(x)`` returns :math:`x_p + P_p`.

    Devlin et al. 2019 (arXiv:1810.04805). Row p receives gradient only from tokens at position p.
    There is no row for p >= max_len: asking for one raises ``ValueError`` naming max_len and the position,
    instead of the bare index error of ``nn.Embedding``.

    Args: max_len: number of rows (positions 0..max_len-1). d: embedding width.
    Shapes: ``x`` is ``(..., seq, d)``; ``positions`` (optional, integer, default ``0..seq-1``) is ``(seq,)``.
    """

    def __init__(self, max_len, d):
        super().__init__()
        self.max_len = _validate.integer("max_len", max_len, minimum=1)
        self.d = _validate.integer("d", d, minimum=1)
        self.weight = nn.Parameter(torch.randn(self.max_len, self.d) * 0.02)  # initializer_range of BERT in transformers

    def rows(self, positions) -> torch.Tensor:
        """The embedding rows for integer positions, shape ``(len(positions), d)``."""
        p = _validate.positions("positions", positions, integer_only=True, non_negative=True)
        if p.size and p.max() >= self.max_len:
            raise ValueError(
                f"position {int(p.max())} is beyond this learned table: max_len={self.max_len} covers positions "
                f"0..{self.max_len - 1} only; a learned embedding cannot extrapolate"
            )
        return self.weight[torch.as_tensor(p, dtype=torch.long, device=self.weight.device)]

    def forward(self, x: torch.Tensor, positions=None) -> torch.Tensor:
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"x must be a torch.Tensor of shape (..., seq, d), got {type(x).__name__}")
        if x.ndim < 2 or x.shape[-1] != self.d:
            raise ValueError(f"x must have shape (..., seq, {self.d}), got {tuple(x.shape)}")
        seq = x.shape[-2]
        if positions is None:
            positions = range(seq)
        rows = self.rows(positions)  # (seq, d)
        if rows.shape[0] != seq:
            raise ValueError(f"positions must have one entry per token ({seq}), got {rows.shape[0]}")
        return x + rows.to(x.dtype)
