"""The students of chapter 05_alibi: correct answers written differently from the model solutions, and
plausible wrong ones. Assembled for the whole course by tests/differently_correct.py (read its docstring)."""


CHAPTER = '05_alibi'

_ARENA_LINES = r'''

runs = ArenaResults()  # the arena's results: keep these lines as they are
edges = np.array(runs.data["bucket_edges"])
L_train = runs.train_len
far_change = {}
for name in ("alibi", "rope"):
    curve = np.array([b["values"] for b in runs.summary[name]["curve"]])
    far_change[name] = (range_loss(curve, edges, 4 * L_train, 16 * L_train)
                        - range_loss(curve, edges, L_train // 2, L_train))
'''

_SLOPES_LINES = r'''

slopes_8 = my_alibi_slopes(8)
slopes_12 = my_alibi_slopes(12)
'''

_SOFTMAX = r'''
def _softmax_rows(logits):
    top = logits.max(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore"):
        e = np.exp(logits - top)
        return e / e.sum(axis=-1, keepdims=True)
'''

_KEYS_LINES = r'''

keys_8 = np.array([effective_keys(m, 2048) for m in posenc.alibi_slopes(8)])
'''


# Correct, written differently (loops, lists, math instead of numpy, other formulas, prints): full marks.
DIFFERENT = {
    'my_alibi_slopes': r'''import math

def my_alibi_slopes(n_heads):
    H = int(n_heads)
    c = 2 ** int(math.floor(math.log2(H)))
    slopes = [2.0 ** (-8.0 * h / c) for h in range(1, c + 1)]
    for k in range(1, H - c + 1):
        slopes.append(2.0 ** (-8.0 * (2 * k - 1) / (2 * c)))
    return np.array(slopes, dtype=np.float64)
''' + _SLOPES_LINES,
    'effective_keys': r'''import math

def effective_keys(m, L):
    if m == 0:
        return L  # an int: L equal weights
    x = m * L
    log_z = math.log(-math.expm1(-x)) - math.log(-math.expm1(-m))
    mean = 1 / math.expm1(m) - (L / math.expm1(x) if x < 700 else 0.0)
    print("H =", log_z + m * mean)
    return math.exp(log_z + m * mean)
''' + _KEYS_LINES,
    'fixed_key_only_weights': r'''def fixed_key_only_weights(scores, key_mask, m):
    # the relative form -m (p_i - p_j), in loops, as nested lists
    out = []
    for b, rows in enumerate(scores):
        mask = [bool(x) for x in key_mask[b]]
        S = len(mask)
        pos, count = [], 0
        for ok in mask:
            pos.append(count)  # real tokens before this slot
            count += ok
        q_len = len(rows)
        block = []
        for r, row in enumerate(rows):
            i = S - q_len + r
            logits = [float(row[j]) - m * (pos[i] - pos[j])
                      for j in range(S) if mask[j] and j <= i]
            if not mask[i] or not logits:
                block.append([0.0] * S)  # a padding query: not checked
                continue
            top = max(logits)
            e = [math.exp(float(row[j]) - m * (pos[i] - pos[j]) - top)
                 if mask[j] and j <= i else 0.0 for j in range(S)]
            total = math.fsum(e)
            block.append([x / total for x in e])
        out.append(block)
    return out
''',
    'slopes_for_spans': r'''def slopes_for_spans(spans, L, mass=0.9):
    # fixed-point iteration of m = -ln(1 - mass (1 - e^{-mL})) / (D + 1), then Newton polishing
    def share(m, D):
        return -math.expm1(-m * (D + 1)) / -math.expm1(-m * L)

    result = []
    for D in spans:
        D = int(D)
        m = -math.log1p(-mass) / (D + 1)
        for _ in range(100000):
            new = -math.log1p(-mass * -math.expm1(-m * L)) / (D + 1)
            if abs(new - m) <= 1e-15 * m:
                m = new
                break
            m = new
        for _ in range(5):
            h = 1e-7 * m
            slope = (share(m + h, D) - share(m - h, D)) / (2 * h)
            if slope <= 0:
                break
            m -= (share(m, D) - mass) / slope
        result.append(m)
    return np.array(result)


designed = slopes_for_spans([15, 127, 1023, 3000], 4096)
''',
    'window_change': r'''def window_change(q, k, v, m, L_train):
    q = [float(x) for x in q]
    k = [[float(x) for x in row] for row in k]
    v = [[float(x) for x in row] for row in v]
    L, d = len(k), len(q)

    def head(start):
        logits = [sum(a * b for a, b in zip(q, k[j])) / math.sqrt(d) - m * (L - 1 - j)
                  for j in range(start, L)]
        top = max(logits)
        e = [math.exp(z - top) for z in logits]
        tot = math.fsum(e)
        return [math.fsum(e[n] * v[start + n][c] for n in range(len(e))) / tot for c in range(len(v[0]))]

    return max(abs(a - b) for a, b in zip(head(0), head(L - L_train)))


draw = np.random.default_rng(2022)  # the data of the measurement: keep it
q_demo = draw.normal(size=16)
k_demo, v_demo = draw.normal(size=(2, 4096, 16))
arena_change = [window_change(q_demo, k_demo, v_demo, m, 256) for m in posenc.alibi_slopes(4)]
''',
    'range_loss': r'''def range_loss(curve, edges, start, stop):
    # one row per position, then the plain mean over the positions asked for
    curve = np.asarray(curve, dtype=float)
    widths = np.diff(np.asarray(edges)).astype(int)
    per_position = np.repeat(curve, widths, axis=0)
    first = int(edges[0])
    return per_position[int(start) - first: int(stop) - first].mean(axis=0)
''' + _ARENA_LINES,
    'attention_span': r'''def attention_span(m, L, mass=0.9):
    denom = -math.expm1(-m * L)
    for D in range(L):
        if -math.expm1(-m * (D + 1)) / denom >= mass:
            return D
    return L
''',
}


# Correct, and printing a numpy RuntimeWarning on the way: full marks.
WARNING_VARIANTS = {
    'effective_keys': r'''def effective_keys(m, L):
    if m == 0:
        return float(L)
    # np.expm1(m * L) overflows to inf past m L = 710 (a RuntimeWarning): L / inf = 0
    mean = 1 / np.expm1(m) - L / np.expm1(np.float64(m) * L)
    log_z = np.log(-np.expm1(-m * L)) - np.log(-np.expm1(-m))
    return float(np.exp(m * mean + log_z))
''' + _KEYS_LINES,
}


# Correct in float32 throughout, written by hand (the others: the model solution wrapped in float32).
FLOAT32_BY_HAND = {
}


# Exercises whose prompt pins float64, with the reason the prompt gives: no float32 student is owed there.
FLOAT64_PINNED = {
    'slopes_for_spans': "the prompt asks for a relative accuracy of 1e-8, beyond float32's 7 digits",
    'effective_keys': "slopes down to 1e-9, where e^{-m} rounds to exactly 1 in float32",
}


# Plausible wrong answers, each a solution cell's source with a mistake a student would make: each must lose
# its exercise's points on every draw ({solution id: {what is wrong: source}}).
PLAUSIBLY_WRONG = {
    'my_alibi_slopes': {
        "the power-of-two formula for every head count": r'''def my_alibi_slopes(n_heads):
    h = np.arange(1, n_heads + 1)
    return 2.0 ** (-8.0 * h / n_heads)
''' + _SLOPES_LINES,
        "geometric means of the c slopes without 1 in front": r'''def my_alibi_slopes(n_heads):
    c = 1 << (int(n_heads).bit_length() - 1)
    base = 2.0 ** (-8.0 * np.arange(1, c + 1) / c)
    means = np.sqrt(base[:-1] * base[1:])
    return np.concatenate([base, means[: n_heads - c]])
''' + _SLOPES_LINES,
        "the first H slopes of the next power of two": r'''def my_alibi_slopes(n_heads):
    c = 1 << (int(n_heads) - 1).bit_length()  # smallest 2^k >= n_heads
    return (2.0 ** (-8.0 * np.arange(1, c + 1) / c))[:n_heads]
''' + _SLOPES_LINES,
    },
    'effective_keys': {
        "the infinite-length formula for every L": r'''def effective_keys(m, L):
    m = max(float(m), 1e-300)
    entropy = m / np.expm1(m) - np.log(-np.expm1(-m))
    return float(np.exp(entropy))
''' + _KEYS_LINES,
        "the entropy, not its exponential": r'''def effective_keys(m, L):
    m, L = float(m), int(L)
    if m == 0.0:
        return float(np.log(L))
    tail = -np.expm1(-m * L)
    mean = 1.0 / np.expm1(m) - L * np.exp(-m * L) / tail
    return float(m * mean + np.log(tail) - np.log(-np.expm1(-m)))
''' + _KEYS_LINES,
        "the mean distance of the untruncated weights": r'''def effective_keys(m, L):
    m, L = float(m), int(L)
    if m == 0.0:
        return float(L)
    mean = 1.0 / np.expm1(m)
    log_z = np.log(-np.expm1(-m * L)) - np.log(-np.expm1(-m))
    return float(np.exp(m * mean + log_z))
''' + _KEYS_LINES,
    },
    'fixed_key_only_weights': {
        "the slot index as the position (the colleague's version)": r'''def fixed_key_only_weights(scores, key_mask, m):
    batch, q_len, S = np.shape(scores)
    slot = np.arange(S)
    seen = slot[None, :] <= slot[S - q_len:][:, None]
    allowed = np.asarray(key_mask)[:, None, :] & seen[None]
    return _softmax_rows(np.where(allowed, np.asarray(scores) + m * slot, -np.inf))
''' + _SOFTMAX,
        "the key-only bias subtracted": r'''def fixed_key_only_weights(scores, key_mask, m):
    key_mask = np.asarray(key_mask, dtype=bool)
    batch, q_len, S = np.shape(scores)
    position = np.cumsum(key_mask, axis=-1) - 1
    slot = np.arange(S)
    seen = slot[None, :] <= slot[S - q_len:][:, None]
    allowed = key_mask[:, None, :] & seen[None]
    return _softmax_rows(np.where(allowed, np.asarray(scores) - m * position[:, None, :], -np.inf))
''' + _SOFTMAX,
        "positions counted, padding keys left unmasked": r'''def fixed_key_only_weights(scores, key_mask, m):
    key_mask = np.asarray(key_mask, dtype=bool)
    batch, q_len, S = np.shape(scores)
    position = np.cumsum(key_mask, axis=-1) - 1
    slot = np.arange(S)
    seen = slot[None, :] <= slot[S - q_len:][:, None]
    return _softmax_rows(np.where(seen[None], np.asarray(scores) + m * position[:, None, :], -np.inf))
''' + _SOFTMAX,
    },
    'attention_span': {
        "the long-sequence approximation ln(1/(1 - mass))/m - 1": r'''def attention_span(m, L, mass=0.9):
    return int(max(np.ceil(-np.log1p(-mass) / m) - 1, 0))
''',
        "rounded to the nearest distance instead of up": r'''def attention_span(m, L, mass=0.9):
    need = -np.log1p(-mass * -np.expm1(-m * L)) / m
    return int(min(max(np.round(need) - 1, 0), L - 1))
''',
    },
    'range_loss': {
        "the buckets' plain mean, ignoring their widths": r'''def range_loss(curve, edges, start, stop):
    curve, edges = np.asarray(curve, dtype=float), np.asarray(edges)
    inside = (edges[:-1] >= start) & (edges[1:] <= stop)
    return curve[inside].mean(axis=0)
''' + _ARENA_LINES,
        "the bucket that starts at stop included": r'''def range_loss(curve, edges, start, stop):
    curve, edges = np.asarray(curve, dtype=float), np.asarray(edges)
    inside = (edges[:-1] >= start) & (edges[:-1] <= stop)
    inside &= np.arange(len(inside)) < len(curve)
    widths = np.diff(edges)[inside]
    return widths @ curve[inside] / widths.sum()
''' + _ARENA_LINES,
    },
}
