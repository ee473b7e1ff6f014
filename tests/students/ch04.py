"""The students of chapter 04_relative: correct answers written differently from the model solutions, and
plausible wrong ones. Assembled for the whole course by tests/differently_correct.py (read its docstring)."""


CHAPTER = '04_relative'


# Correct, written differently (loops, lists, math instead of numpy, other formulas, prints): full marks.
DIFFERENT = {
    'shaw_skew': r'''import torch


def skew(m):
    # torch, and an index per entry instead of pad and reshape
    m = torch.as_tensor(np.asarray(m, dtype=float))
    L = m.shape[0]
    cols = torch.arange(L)[None, :] - torch.arange(L)[:, None] + (L - 1)
    return torch.gather(m, 1, cols)


def shaw_key_term(q, table_k, c):
    # multiply by the (2c + 1)-row table first, then widen to one column per offset
    q = np.asarray(q, dtype=float)
    small = q @ np.asarray(table_k, dtype=float).T  # (L, 2c + 1)
    L = len(q)
    cols = [min(max(off, -c), c) + c for off in range(-(L - 1), L)]
    return skew(small[:, cols]).numpy()
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
}
