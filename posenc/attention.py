r"""Scaled dot-product attention (Vaswani et al. 2017, arXiv:1706.03762, §3.2.1), with an optional additive
bias and causal mask, and the position ids of a padded batch: the setting in which every positional scheme of
this course acts.
"""

from __future__ import annotations

import numpy as np

from . import _validate


def softmax(scores, axis=-1) -> np.ndarray:
    r"""Numerically stable softmax, :math:`\mathrm{softmax}(s)_j = e^{s_j - \max s} / \sum_k e^{s_k - \max s}`.

    Entries equal to -inf get weight 0; a row that is entirely -inf raises (nothing to attend to).
    """
    s = np.asarray(scores, dtype=np.float64)
    if np.isnan(s).any() or np.isposinf(s).any():
        raise ValueError("scores must not contain NaN or +inf")
    top = s.max(axis=axis, keepdims=True)
    if np.isneginf(top).any():
        raise ValueError("a row of scores is entirely -inf: every key is masked")
    e = np.exp(s - top)
    return e / e.sum(axis=axis, keepdims=True)


def causal_mask(q_len, k_len=None) -> np.ndarray:
    """Boolean ``(q_len, k_len)``, True where query i may see key j (j <= i; queries aligned to the end)."""
    q_len = _validate.integer("q_len", q_len, minimum=1)
    k_len = q_len if k_len is None else _validate.integer("k_len", k_len, minimum=q_len)
    return np.arange(k_len)[None, :] <= np.arange(q_len)[:, None] + (k_len - q_len)


def positions_from_mask(mask) -> np.ndarray:
    r"""Position ids of the real tokens of a padded sequence: each real token's count of real tokens before it.

    .. math:: p_t = \Big(\sum_{s \le t} m_s\Big) - 1 \quad \text{if } m_t = 1, \qquad p_t = 0 \quad \text{if } m_t = 0

    With left padding the first real token then reads row 0 of a learned table, as it would without padding;
    ``range(seq)`` would give it row (number of pads) instead. The cumulative-sum rule is how Hugging Face
    transformers builds GPT-2's position ids from the attention mask (Wolf et al. 2020, arXiv:1910.03771);
    the value given to padding slots does not matter because they are masked (0 here, so it is always a
    valid row).

    Args: mask: 0/1 (or boolean) array, 1 for a real token, 0 for padding, shape ``(seq,)`` or ``(batch, seq)``.
    Returns: int64 array of the same shape.
    """
    if isinstance(mask, (str, bytes)):
        raise TypeError(f"mask must be an array of 0/1 values, got the text {mask!r}")
    m = _validate.finite_array("mask", mask)
    if m.ndim not in (1, 2):
        raise ValueError(f"mask must have shape (seq,) or (batch, seq), got shape {m.shape}")
    if not np.isin(m, (0.0, 1.0)).all():
        raise ValueError(f"mask must hold only 0 (padding) and 1 (real token), got values such as "
                         f"{np.unique(m[~np.isin(m, (0.0, 1.0))])[:3].tolist()}")
    real = m.astype(np.int64)
    return np.where(real == 1, np.cumsum(real, axis=-1) - 1, 0)  # (..., seq)


def attention(q, k, v, bias=None, causal=False, return_weights=False):
    r"""Softmax attention with an optional additive bias and causal mask.

    .. math:: \mathrm{Attention}(Q, K, V) = \mathrm{softmax}\!\Big(\frac{QK^\top}{\sqrt{d_k}} + B\Big)V

    Vaswani et al. 2017 (arXiv:1706.03762), eq. 1. Without bias or mask it is permutation-equivariant:
    Attention(PQ, PK, PV) = P Attention(Q, K, V) for every permutation matrix P.

    Shapes: q ``(..., q_len, d_k)``, k ``(..., k_len, d_k)``, v ``(..., k_len, d_v)``; bias broadcastable to
    ``(..., q_len, k_len)`` (e.g. ALiBi's ``(heads, q_len, k_len)``). Returns ``(..., q_len, d_v)``, and the
    weights ``(..., q_len, k_len)`` too when ``return_weights`` is true.
    """
    q, k, v = (_validate.finite_array(name, a) for name, a in (("q", q), ("k", k), ("v", v)))
    if q.ndim < 2 or k.ndim < 2 or v.ndim < 2:
        raise ValueError(f"q, k and v must be at least 2-D (seq, dim), got shapes {q.shape}, {k.shape}, {v.shape}")
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"q and k must share their last dimension d_k, got {q.shape[-1]} and {k.shape[-1]}")
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(f"k and v must have the same number of positions, got {k.shape[-2]} and {v.shape[-2]}")
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])  # (..., q_len, k_len)
    if bias is not None:
        b = np.asarray(bias, dtype=np.float64)
        if np.isnan(b).any() or np.isposinf(b).any():
            raise ValueError("bias must not contain NaN or +inf (-inf is allowed: it masks)")
        try:
            scores = scores + b
        except ValueError as exc:
            raise ValueError(f"bias of shape {b.shape} does not broadcast to the scores' shape {scores.shape}") from exc
    if causal:
        scores = np.where(causal_mask(q.shape[-2], k.shape[-2]), scores, -np.inf)
    weights = softmax(scores)
    out = weights @ v
    return (out, weights) if return_weights else out


def permutation_matrix(perm) -> np.ndarray:
    r"""The permutation matrix P that reorders the rows of a sequence: :math:`(PX)_i = X_{\pi(i)}`.

    .. math:: P_{ij} = \begin{cases} 1 & j = \pi(i) \\ 0 & \text{otherwise} \end{cases}, \qquad P P^\top = I

    so ``permutation_matrix(perm) @ x == x[perm]``: row i of the reordered sequence is row ``perm[i]`` of the
    original. It is the P of the property that makes positional encodings necessary: attention without them
    is permutation-equivariant, Attention(PQ, PK, PV) = P Attention(Q, K, V) (scaled dot-product attention of
    Vaswani et al. 2017, arXiv:1706.03762, §3.2.1).

    Args: perm: a 1-D sequence holding each of 0, 1, ..., n-1 exactly once (n >= 1).
    Returns: float64 ``(n, n)``.
    """
    if np.ndim(perm) == 0 and not isinstance(perm, (str, bytes)):
        raise TypeError(f"perm must be a 1-D sequence of indices, got the scalar {perm!r}")
    p = _validate.positions("perm", perm, integer_only=True, non_negative=True)
    n = p.size
    if n == 0:
        raise ValueError("perm must hold at least one index, got an empty sequence")
    if not np.array_equal(np.sort(p), np.arange(n)):
        raise ValueError(f"perm must hold each of 0, ..., {n - 1} exactly once, got {p.astype(np.int64).tolist()[:12]}")
    eye = np.eye(n, dtype=np.float64)
    return eye[p.astype(np.int64)]  # (n, n)
