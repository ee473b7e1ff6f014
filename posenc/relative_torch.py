"""T5's relative position bias as a torch module: a thin wrapper over :func:`posenc.relative.t5_bucket`.

Kept apart from :mod:`posenc.relative` so that the numpy formulas load without importing torch.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from . import _validate
from .relative import relative_positions, t5_bucket


class RelativePositionBias(nn.Module):
    r"""T5's learned relative position bias: one scalar per (bucket, head), added to every attention logit.

    Raffel et al. 2020 (arXiv:1910.10683), §2.1. ``forward(q_len, k_len)`` returns the bias
    ``(heads, q_len, k_len)`` with :math:`B_{h,i,j} = T[\mathrm{t5\_bucket}(j - i), h]`; keys and queries
    are aligned at their ends (the queries are the last q_len of the k_len positions, as with a KV cache).
    """

    def __init__(self, n_heads, num_buckets=32, max_distance=128, bidirectional=True):
        super().__init__()
        self.n_heads = _validate.integer("n_heads", n_heads, minimum=1)
        t5_bucket(np.zeros(1, dtype=np.int64), bidirectional, num_buckets, max_distance)  # validates settings
        self.num_buckets, self.max_distance, self.bidirectional = int(num_buckets), int(max_distance), bidirectional
        self.table = nn.Embedding(self.num_buckets, self.n_heads)

    def buckets(self, q_len, k_len) -> np.ndarray:
        q_len = _validate.integer("q_len", q_len, minimum=1)
        k_len = _validate.integer("k_len", k_len, minimum=q_len)
        rel = relative_positions(q_len, k_len) - (k_len - q_len)  # queries sit at the end of the keys
        return t5_bucket(rel, self.bidirectional, self.num_buckets, self.max_distance)

    def forward(self, q_len, k_len=None) -> torch.Tensor:
        k_len = q_len if k_len is None else k_len
        b = torch.as_tensor(self.buckets(q_len, k_len), device=self.table.weight.device)
        return self.table(b).permute(2, 0, 1)  # (heads, q_len, k_len)
