"""The students of chapter 04_relative: correct answers written differently from the model solutions, and
plausible wrong ones. Assembled for the whole course by tests/differently_correct.py (read its docstring)."""


CHAPTER = '04_relative'


# Correct, written differently (loops, lists, math instead of numpy, other formulas, prints): full marks.
DIFFERENT = {
    'shaw_skew': r'''def skew_recipe(L):
    # no padding at all: rows stay 2L - 1 long, so m[i, j - i + L - 1] sits at
    # flat index (2L - 1) i + j - i + L - 1 = (L - 1) + (2L - 2) i + j
    print("recipe for L =", L)
    return [0, L - 1, 2 * L - 2]


def skew(m):
    m = np.asarray(m)
    L = m.shape[0]
    pad, start, width = skew_recipe(L)
    flat = np.pad(m, ((0, 0), (0, pad))).reshape(-1)
    return flat[start:start + L * width].reshape(L, width)[:, :L]


def shaw_key_term(q, table_k, c):
    # one query at a time: the query against every offset's row, then its window
    q = np.asarray(q, dtype=float)
    table_k = np.asarray(table_k, dtype=float)
    L = len(q)
    out = np.empty((L, L))
    rows = [min(max(off, -c), c) + c for off in range(-(L - 1), L)]
    per_offset = table_k[rows]  # (2L - 1, d_z)
    for i in range(L):
        scores = per_offset @ q[i]  # (2L - 1,)
        out[i] = scores[L - 1 - i:2 * L - 1 - i]
    return out
''',
    'my_t5_bucket': r'''def my_t5_bucket(relative_position, bidirectional=True, num_buckets=32, max_distance=128):
    r = np.asarray(relative_position).astype(np.int64)
    nb = num_buckets // 2 if bidirectional else num_buckets
    offset = (r > 0).astype(np.int64) * nb if bidirectional else 0
    n = np.abs(r) if bidirectional else -np.minimum(r, 0)
    ne = nb // 2
    # log(0) on the discarded branch: a RuntimeWarning, harmless
    big = np.log(n.astype(np.float32) / np.float32(ne))
    big = big / np.float32(math.log(max_distance / ne)) * np.float32(nb - ne)
    big = ne + big.astype(np.int64)
    big = np.minimum(big, nb - 1)
    return offset + np.where(n < ne, n, big)
''',
    'bias_from_table': r'''def bias_from_table(table, q_len, k_len, bidirectional=True, max_distance=128):
    T = np.asarray(table, dtype=float)
    nbk, heads = T.shape
    start = k_len - q_len
    rel = np.array([[j - (start + r) for j in range(k_len)] for r in range(q_len)])
    b = posenc.t5_bucket(rel, bidirectional, nbk, max_distance)
    onehot = (b[..., None] == np.arange(nbk)).astype(float)   # (q, k, nb)
    return np.einsum("qkb,bh->hqk", onehot, T)
''',
}


# Correct, and printing a numpy RuntimeWarning on the way: full marks.
WARNING_VARIANTS = {
}


# Correct in float32 throughout, written by hand (the others: the model solution wrapped in float32).
FLOAT32_BY_HAND = {
}


# Exercises whose prompt pins float64, with the reason the prompt gives: no float32 student is owed there.
FLOAT64_PINNED = {
}


# Plausible wrong answers, each a solution cell's source with a mistake a student would make: each must lose
# its exercise's points on every draw ({solution id: {what is wrong: source}}).
PLAUSIBLY_WRONG = {
    'bias_from_table': {
        'queries at positions 0..q_len - 1 (not aligned to the end of the keys)': r'''def bias_from_table(table, q_len, k_len, bidirectional=True, max_distance=128):
    table = np.asarray(table, dtype=np.float64)
    query_positions = np.arange(q_len)
    offsets = np.arange(k_len)[None, :] - query_positions[:, None]
    buckets = posenc.t5_bucket(offsets, bidirectional, table.shape[0], max_distance)
    return np.moveaxis(table[buckets], -1, 0)
''',
        'the offset i - j (query minus key)': r'''def bias_from_table(table, q_len, k_len, bidirectional=True, max_distance=128):
    table = np.asarray(table, dtype=np.float64)
    query_positions = np.arange(q_len) + (k_len - q_len)
    offsets = query_positions[:, None] - np.arange(k_len)[None, :]
    buckets = posenc.t5_bucket(offsets, bidirectional, table.shape[0], max_distance)
    return np.moveaxis(table[buckets], -1, 0)
''',
        'reshape instead of moving the heads axis': r'''def bias_from_table(table, q_len, k_len, bidirectional=True, max_distance=128):
    table = np.asarray(table, dtype=np.float64)
    query_positions = np.arange(q_len) + (k_len - q_len)
    offsets = np.arange(k_len)[None, :] - query_positions[:, None]
    buckets = posenc.t5_bucket(offsets, bidirectional, table.shape[0], max_distance)
    return table[buckets].reshape(table.shape[1], q_len, k_len)
''',
    },
    'shaw_skew': {
        'starts one entry late (drops L entries)': r'''def skew_recipe(L):
    return 1, L, 2 * L - 1


def skew(m):
    m = np.asarray(m)
    L = m.shape[0]
    pad, start, width = skew_recipe(L)
    flat = np.pad(m, ((0, 0), (0, pad))).reshape(-1)
    return flat[start:start + L * width].reshape(L, width)[:, :L]


def shaw_key_term(q, table_k, c):
    q = np.asarray(q, dtype=np.float64)
    L = q.shape[0]
    rows = np.clip(np.arange(-(L - 1), L), -c, c) + c
    return skew(q @ np.asarray(table_k, dtype=np.float64)[rows].T)
''',
        "reads rows as long as the padded ones (Huang's causal width)": r'''def skew_recipe(L):
    return 1, L - 1, 2 * L


def skew(m):
    m = np.asarray(m)
    L = m.shape[0]
    pad, start, width = skew_recipe(L)
    flat = np.pad(m, ((0, 0), (0, pad))).reshape(-1)
    flat = np.pad(flat, (0, L))  # so that the read fits
    return flat[start:start + L * width].reshape(L, width)[:, :L]


def shaw_key_term(q, table_k, c):
    q = np.asarray(q, dtype=np.float64)
    L = q.shape[0]
    rows = np.clip(np.arange(-(L - 1), L), -c, c) + c
    return skew(q @ np.asarray(table_k, dtype=np.float64)[rows].T)
''',
        'builds the (L, L, d_z) tensor (right values, forbidden memory)': r'''def skew_recipe(L):
    return 1, L - 1, 2 * L - 1


def skew(m):
    m = np.asarray(m)
    L = m.shape[0]
    pad, start, width = skew_recipe(L)
    flat = np.pad(m, ((0, 0), (0, pad))).reshape(-1)
    return flat[start:start + L * width].reshape(L, width)[:, :L]


def shaw_key_term(q, table_k, c):
    q = np.asarray(q, dtype=np.float64)
    L = q.shape[0]
    ids = np.clip(np.arange(L)[None, :] - np.arange(L)[:, None], -c, c) + c
    a_k = np.asarray(table_k, dtype=np.float64)[ids]  # (L, L, d_z)
    return np.einsum("id,ijd->ij", q, a_k)
''',
    },
}
