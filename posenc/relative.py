r"""Relative position: Shaw et al. clipped ids, T5 buckets and bias, the Transformer-XL score decomposition.

Convention: the relative position of key j seen from query i is ``j - i`` (negative = in the past), as in
Shaw et al. 2018 (arXiv:1803.02155) and the T5 code (``memory_position - context_position``).
"""

from __future__ import annotations

import math

import numpy as np

from . import _validate
from .attention import softmax
from .sinusoidal import sinusoidal


def relative_positions(q_len, k_len) -> np.ndarray:
    r"""The grid of offsets :math:`j - i`, shape ``(q_len, k_len)`` (int64). Queries and keys both start at 0."""
    q_len = _validate.integer("q_len", q_len, minimum=1)
    k_len = _validate.integer("k_len", k_len, minimum=1)
    return np.arange(k_len, dtype=np.int64)[None, :] - np.arange(q_len, dtype=np.int64)[:, None]


def shaw_relative_ids(q_len, k_len, max_relative_position) -> np.ndarray:
    r"""Index into Shaw et al.'s table of relative embeddings for each (query, key) pair.

    .. math:: \mathrm{id}_{ij} = \mathrm{clip}(j - i, -k, k) + k \in \{0, \dots, 2k\}

    Shaw, Uszkoreit & Vaswani 2018 (arXiv:1803.02155), §3.2: offsets beyond ±k share the embedding of ±k.
    Shifted by k so the ids index a table of 2k + 1 rows (as in tensor2tensor).

    Args: q_len, k_len: positive integers. max_relative_position: the clipping distance k >= 0.
    Returns: int64 array ``(q_len, k_len)``.
    """
    k = _validate.integer("max_relative_position", max_relative_position, minimum=0)
    return np.clip(relative_positions(q_len, k_len), -k, k) + k


def t5_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128) -> np.ndarray:
    r"""T5's bucket for each relative position (key minus query), as published.

    Half the buckets (all of them if causal) cover small distances one per offset; the rest cover distances
    from ``max_exact = n/2`` to ``max_distance`` logarithmically; every distance beyond shares the last
    bucket. Bidirectional: the second half of the buckets is for keys after the query (j - i > 0).

    .. math:: b(n) = n \;\; (n < n_e), \qquad
              b(n) = \min\!\Big(n_b - 1,\; n_e + \Big\lfloor \frac{\ln(n / n_e)}{\ln(\mathrm{max\_distance}/n_e)}
              (n_b - n_e) \Big\rfloor\Big)

    Raffel et al. 2020 (arXiv:1910.10683), §2.1; computed in float32 exactly as the Mesh TensorFlow and
    Hugging Face ``_relative_position_bucket`` code does, so the buckets agree at every boundary.

    Args: relative_position: integers, any shape. bidirectional: encoder (True) or causal decoder (False).
    num_buckets: even integer >= 2 (>= 4 if bidirectional). max_distance: integer > num_buckets' exact range.
    Returns: int64 array of the same shape.
    """
    rel = np.asarray(relative_position)
    if rel.dtype == bool or not (np.issubdtype(rel.dtype, np.integer) or np.issubdtype(rel.dtype, np.floating)):
        raise TypeError(f"relative_position must hold integers, got dtype {rel.dtype}")
    if not np.isfinite(rel).all() or (rel != np.round(rel)).any():
        raise ValueError("relative_position must hold finite integers (key position minus query position)")
    rel = rel.astype(np.int64)
    if not isinstance(bidirectional, (bool, np.bool_)):
        raise TypeError(f"bidirectional must be True or False, got {bidirectional!r}")
    num_buckets = _validate.integer("num_buckets", num_buckets, minimum=4 if bidirectional else 2)
    if num_buckets % 2:
        raise ValueError(f"num_buckets must be even, got {num_buckets}")
    max_distance = _validate.integer("max_distance", max_distance, minimum=1)

    buckets = np.zeros_like(rel)
    if bidirectional:
        num_buckets //= 2
        buckets += (rel > 0).astype(np.int64) * num_buckets
        n = np.abs(rel)
    else:
        n = -np.minimum(rel, 0)
    max_exact = num_buckets // 2
    if max_distance <= max_exact:
        raise ValueError(
            f"max_distance must exceed the exact range {max_exact} (num_buckets={num_buckets * (2 if bidirectional else 1)}), "
            f"got {max_distance}"
        )
    n_safe = np.maximum(n, max_exact).astype(np.float32)  # small n take the exact branch below anyway
    ratio = np.log(n_safe / np.float32(max_exact)) / np.float32(math.log(max_distance / max_exact))
    large = max_exact + (ratio * np.float32(num_buckets - max_exact)).astype(np.int64)
    large = np.minimum(large, num_buckets - 1)
    return buckets + np.where(n < max_exact, n, large)


def relative_bias(table, buckets) -> np.ndarray:
    r"""Look up a per-head bias table: :math:`B_{h,i,j} = T[b_{ij}, h]`.

    Args: table: ``(num_buckets, heads)`` learned scalars, as in T5. buckets: integer ``(q_len, k_len)``.
    Returns: float64 ``(heads, q_len, k_len)``, the bias added to the attention logits (Raffel et al. 2020).
    """
    table = _validate.finite_array("table", table)
    if table.ndim != 2:
        raise ValueError(f"table must have shape (num_buckets, heads), got {table.shape}")
    b = np.asarray(buckets)
    if not np.issubdtype(b.dtype, np.integer):
        raise TypeError(f"buckets must be integers, got dtype {b.dtype}")
    if b.size and (b.min() < 0 or b.max() >= table.shape[0]):
        raise ValueError(f"buckets must lie in 0..{table.shape[0] - 1} (rows of table), got {b.min()}..{b.max()}")
    return np.moveaxis(table[b], -1, 0)


def _inputs_and_projections(x, weights: dict, rows: str):
    """Check x ``(L, d_model)`` and projection matrices ``(rows, d_model)`` that share their number of rows."""
    x = _validate.finite_array("x", x)
    if x.ndim != 2:
        raise ValueError(f"x must have shape (L, d_model), got {x.shape}")
    d_model = x.shape[1]
    mats = {}
    for name, w in weights.items():
        w = _validate.finite_array(name, w)
        if w.ndim != 2 or w.shape[1] != d_model:
            raise ValueError(f"{name} must have shape ({rows}, {d_model}), got {w.shape}")
        mats[name] = w
    if len({w.shape[0] for w in mats.values()}) > 1:
        shapes = ", ".join(f"{name} {w.shape}" for name, w in mats.items())
        raise ValueError(f"{', '.join(mats)} must all have {rows} rows (the same number), got {shapes}")
    return x, mats


def transformer_xl_terms(x, w_q, w_ke, w_kr, u, v, base=10000.0) -> dict:
    r"""The four terms of the Transformer-XL attention score (Dai et al. 2019, arXiv:1901.02860, §3.3).

    .. math:: A_{ij} = \underbrace{q_i^\top W_{k,E} x_j}_{(a)} + \underbrace{q_i^\top W_{k,R} R_{i-j}}_{(b)}
              + \underbrace{u^\top W_{k,E} x_j}_{(c)} + \underbrace{v^\top W_{k,R} R_{i-j}}_{(d)},
              \qquad q_i = W_q x_i

    (a) content-content, (b) content-position, (c) global content bias, (d) global position bias. R is the
    sinusoidal table of the offset i - j (posenc's interleaved layout; the paper concatenates sines and
    cosines, a fixed permutation absorbed by the learned :math:`W_{k,R}`).

    Shapes: x ``(L, d_model)``; w_q, w_ke ``(d_head, d_model)``; w_kr ``(d_head, d_model)``; u, v ``(d_head,)``.
    Returns: dict with keys ``content_content``, ``content_position``, ``global_content``,
    ``global_position``, ``total``, each ``(L, L)``.
    """
    x, mats = _inputs_and_projections(x, {"w_q": w_q, "w_ke": w_ke, "w_kr": w_kr}, "d_head")
    seq, d_model = x.shape
    d_head = mats["w_q"].shape[0]
    vecs = {}
    for name, vec in (("u", u), ("v", v)):
        vec = _validate.finite_array(name, vec)
        if vec.shape != (d_head,):
            raise ValueError(f"{name} must have shape ({d_head},), got {vec.shape}")
        vecs[name] = vec

    offsets = np.arange(-(seq - 1), seq)  # every i - j that occurs
    r = sinusoidal(offsets, d_model, base)  # (2L-1, d_model)
    index = (np.arange(seq)[:, None] - np.arange(seq)[None, :]) + (seq - 1)  # (L, L): row of i - j in r
    q = x @ mats["w_q"].T  # (L, d_head)
    k_e = x @ mats["w_ke"].T  # (L, d_head)
    k_r = r @ mats["w_kr"].T  # (2L-1, d_head)
    terms = {
        "content_content": q @ k_e.T,
        "content_position": (q @ k_r.T)[np.arange(seq)[:, None], index],
        "global_content": np.broadcast_to(k_e @ vecs["u"], (seq, seq)).copy(),
        "global_position": (k_r @ vecs["v"])[index],
    }
    terms["total"] = sum(terms.values())
    return terms


def shaw_attention(x, w_q, w_k, w_v, table_k, table_v, max_relative_position) -> dict:
    r"""One head of Shaw et al.'s relation-aware self-attention: relative embeddings enter the keys and the values.

    .. math:: e_{ij} = \frac{q_i^\top (k_j + a^K_{ij})}{\sqrt{d_z}}, \qquad
              \alpha_{ij} = \mathrm{softmax}_j(e_{ij}), \qquad
              z_i = \sum_j \alpha_{ij}\,(v_j + a^V_{ij}),

    with :math:`q_i = W_Q x_i`, :math:`k_j = W_K x_j`, :math:`v_j = W_V x_j` and the two learned tables read at
    the clipped offset, :math:`a^K_{ij} = w^K_{\mathrm{clip}(j-i,-k,k)}`, :math:`a^V_{ij} = w^V_{\mathrm{clip}(j-i,-k,k)}`.

    Shaw, Uszkoreit & Vaswani 2018 (arXiv:1803.02155), eqs. 3-4 and §3.2 (the paper writes row vectors,
    :math:`x_i W^Q`; here :math:`W_Q` is ``(d_z, d_model)`` and acts on columns, as in ``transformer_xl_terms``).
    Row r of a table holds the embedding of offset r - k: the ids of ``shaw_relative_ids``. No mask.

    Shapes: x ``(L, d_model)``; w_q, w_k, w_v ``(d_z, d_model)``; table_k, table_v ``(2k + 1, d_z)``.
    Returns: dict with ``logits`` and ``weights`` ``(L, L)`` (:math:`e` and :math:`\alpha`) and ``output``
    ``(L, d_z)`` (:math:`z`).
    """
    x, mats = _inputs_and_projections(x, {"w_q": w_q, "w_k": w_k, "w_v": w_v}, "d_z")
    seq, d_model = x.shape
    k = _validate.integer("max_relative_position", max_relative_position, minimum=0)
    d_z = mats["w_q"].shape[0]
    tables = {}
    for name, t in (("table_k", table_k), ("table_v", table_v)):
        t = _validate.finite_array(name, t)
        if t.shape != (2 * k + 1, d_z):
            raise ValueError(f"{name} must have shape (2k + 1, d_z) = ({2 * k + 1}, {d_z}) for "
                             f"max_relative_position k = {k}, got {t.shape}")
        tables[name] = t

    ids = shaw_relative_ids(seq, seq, k)  # (L, L) rows of the tables
    rows = np.arange(seq)[:, None]  # (L, 1)
    q = x @ mats["w_q"].T  # (L, d_z)
    keys = x @ mats["w_k"].T  # (L, d_z)
    values = x @ mats["w_v"].T  # (L, d_z)
    q_dot_a = (q @ tables["table_k"].T)[rows, ids]  # (L, L): q_i . a^K_ij, one product per table row
    logits = (q @ keys.T + q_dot_a) / math.sqrt(d_z)  # (L, L)
    weights = softmax(logits)  # (L, L)
    per_row = np.zeros((seq, 2 * k + 1))  # (L, 2k+1): the weight each query puts on each table row
    np.add.at(per_row, (np.broadcast_to(rows, ids.shape), ids), weights)
    output = weights @ values + per_row @ tables["table_v"]  # (L, d_z)
    return {"logits": logits, "weights": weights, "output": output}

