r"""ALiBi: attention with linear biases (Press, Smith & Lewis 2022, "Train Short, Test Long", arXiv:2108.12409).

No position is added to the tokens; each head h subtracts :math:`m_h \cdot (i - j)` from the logit of query i
for key j, with a fixed slope per head.
"""

from __future__ import annotations

import numpy as np

from . import _validate


def alibi_slopes(n_heads) -> np.ndarray:
    r"""The per-head slopes, exactly as the ALiBi authors compute them.

    For n a power of two the slopes are a geometric sequence that starts and multiplies by the same ratio:

    .. math:: m_h = 2^{-8h/n}, \qquad h = 1, \dots, n

    (8 heads: 1/2, 1/4, ..., 1/256). Otherwise, with :math:`c = 2^{\lfloor \log_2 n \rfloor}`, the slopes are
    those for c heads followed by every other slope of the sequence for 2c heads, up to n in total
    (Press et al. 2022, arXiv:2108.12409, §3 and the authors' ``get_slopes``).

    Args: n_heads: integer >= 1. Returns: float64 ``(n_heads,)``.
    """
    n = _validate.integer("n_heads", n_heads, minimum=1)
    closest = 1 << (n.bit_length() - 1)  # largest power of two <= n

    def power_of_two(count):
        return 2.0 ** (-8.0 * np.arange(1, count + 1) / count)

    if closest == n:
        return power_of_two(n)
    return np.concatenate([power_of_two(closest), power_of_two(2 * closest)[0::2][: n - closest]])


def alibi_bias(n_heads, q_len, k_len=None, causal=True, slopes=None) -> np.ndarray:
    r"""The bias ALiBi adds to the attention logits, one matrix per head.

    .. math:: B_{h,i,j} = -m_h\,|i - j| \quad (\text{and } -\infty \text{ for } j > i \text{ when causal})

    Press et al. 2022 (arXiv:2108.12409), §3. The bias is subtracted so that far keys are penalised; with
    ``causal=True`` the future is masked with -inf, so the result can be added to the logits as is. When
    ``k_len > q_len`` the queries are the last q_len positions (a KV cache): query i sits at i + k_len - q_len.

    Args: n_heads: integer >= 1. q_len, k_len: integers >= 1 (k_len defaults to q_len, must be >= q_len).
    causal: bool. slopes: optional ``(n_heads,)`` override (e.g. 0 to switch position off).
    Returns: float64 ``(n_heads, q_len, k_len)``.
    """
    n = _validate.integer("n_heads", n_heads, minimum=1)
    q_len = _validate.integer("q_len", q_len, minimum=1)
    k_len = q_len if k_len is None else _validate.integer("k_len", k_len, minimum=q_len)
    if not isinstance(causal, (bool, np.bool_)):
        raise TypeError(f"causal must be True or False, got {causal!r}")
    if slopes is None:
        m = alibi_slopes(n)
    else:
        m = _validate.finite_array("slopes", slopes)
        if m.shape != (n,):
            raise ValueError(f"slopes must have shape ({n},) (one per head), got {m.shape}")
    i = np.arange(q_len)[:, None] + (k_len - q_len)  # absolute position of each query
    j = np.arange(k_len)[None, :]
    distance = np.abs(i - j).astype(np.float64)  # (q_len, k_len)
    bias = -m[:, None, None] * distance[None]  # (heads, q_len, k_len)
    if causal:
        bias = np.where((j > i)[None], -np.inf, bias)
    return bias


def alibi_weight_within(slopes, length, distance) -> np.ndarray:
    r"""The share of its attention that the last query puts on keys at most ``distance`` positions back, when
    every content score is equal and only the ALiBi bias tells keys apart.

    The last of L causal tokens sees keys at distances :math:`d = 0, \dots, L-1` with weights
    :math:`w_d = e^{-m d} / \sum_{k=0}^{L-1} e^{-m k}` (a geometric sequence), so the weight within distance D is

    .. math:: W_m(D) = \sum_{d=0}^{D} w_d = \frac{1 - e^{-m(D+1)}}{1 - e^{-mL}} \quad (m \ne 0), \qquad
              W_0(D) = \frac{D+1}{L}.

    The bias is that of Press et al. 2022 (arXiv:2108.12409), §3, with the content term held constant; the
    closed form is the partial sum of a geometric series. The smallest D with :math:`W_m(D) \ge 0.9` is how
    far a head with slope m looks.

    Args: slopes: a scalar or 1-D sequence of finite slopes m (negative values describe a bias added with the
    wrong sign). length: integer L >= 1. distance: a scalar or 1-D sequence of integers in 0..L-1.
    Returns: float64 ``(n_slopes, n_distances)``.
    """
    m = _validate.positions("slopes", slopes)  # (n_slopes,)
    length = _validate.integer("length", length, minimum=1)
    d = _validate.positions("distance", distance, integer_only=True, non_negative=True)  # (n_distances,)
    if (d > length - 1).any():
        raise ValueError(f"distance must be at most length - 1 = {length - 1}, got {d[d > length - 1][:3].tolist()}")
    m = m[:, None]  # (n_slopes, 1)
    d = d[None, :]  # (1, n_distances)
    flat = m == 0
    a = np.where(flat, 1.0, np.abs(m))  # |m|; m = 0 takes the uniform formula below (avoids 0/0)
    share = np.expm1(-a * (d + 1)) / np.expm1(-a * length)  # (n_slopes, n_distances), exact for m > 0
    # m < 0: the same ratio written as e^{|m|(D+1-L)} (1 - e^{-|m|(D+1)}) / (1 - e^{-|m|L}), which cannot overflow
    share = np.where(m < 0, np.exp(a * (d + 1 - length)) * share, share)
    return np.where(flat, (d + 1) / length, share)
