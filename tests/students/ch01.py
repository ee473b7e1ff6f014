"""The students of chapter 01_why_position: correct answers written differently from the model solutions, and
plausible wrong ones. Assembled for the whole course by tests/differently_correct.py (read its docstring)."""


CHAPTER = '01_why_position'


# Correct, written differently (loops, lists, math instead of numpy, other formulas, prints): full marks.
DIFFERENT = {
    'ex_attention': r'''import math

def _row_softmax(logits):
    # stable softmax of a Python list
    top = max(logits)
    exps = [math.exp(z - top) for z in logits]
    total = sum(exps)
    return [e / total for e in exps]


def my_attention(q, k, v):
    q, k, v = [[list(map(float, row)) for row in a] for a in (q, k, v)]
    dk = len(q[0])
    out = []
    for qi in q:
        logits = [sum(a * b for a, b in zip(qi, kj)) / math.sqrt(dk) for kj in k]
        w = _row_softmax(logits)
        out.append([sum(w[j] * v[j][c] for j in range(len(v))) for c in range(len(v[0]))])
    print("my_attention: computed", len(out), "rows")
    return out
''',
    'ex_attention_diagnosis': r'''import math

# One query cannot expose it (its row maximum is the maximum of the matrix);
# two queries and a single key can.
fewest = [2, 1]
# np.exp(x) is 0 once x is below ln(2**-1075), half the smallest float64
nan_gap = 1075 * math.log(2)
print("predicted", 1074 * math.log(2), "measured", nan_gap)
''',
    'ex_causal_diagnosis': r'''def positions_at_risk(length):
    # every position that has at least one future key
    at_risk = []
    for i in range(length):
        if length - 1 - i > 0:
            at_risk.append(i)
    return np.array(at_risk, dtype=int)
''',
    'ex_equivariant': r'''def is_permutation_equivariant(f, x, perm):
    x = np.asarray(x, dtype=float)
    order = [int(p) for p in perm]
    permuted_input = np.stack([x[p] for p in order])
    lhs = np.asarray(f(permuted_input), dtype=float)
    fx = np.asarray(f(x), dtype=float)
    rhs = np.stack([fx[p] for p in order])
    if lhs.shape != rhs.shape:
        return False
    for a, b in zip(lhs.ravel().tolist(), rhs.ravel().tolist()):
        if abs(a - b) > 1e-9:
            return False
    return True
''',
    'ex_causal': r'''def my_causal_attention(q, k, v):
    q = np.asarray(q, dtype=float); k = np.asarray(k, dtype=float); v = np.asarray(v, dtype=float)
    L = len(q)
    weights = []
    for i in range(L):
        logits = [float(q[i] @ k[j]) / math.sqrt(q.shape[1]) for j in range(i + 1)]
        row = _row_softmax(logits) + [0.0] * (L - i - 1)
        weights.append(row)
    outputs = [[sum(weights[i][j] * v[j, c] for j in range(L)) for c in range(v.shape[1])] for i in range(L)]
    return np.array(outputs), weights
''',
    'ex_keeps': r'''def keeps_output(perm):
    perm = [int(p) for p in perm]
    answer = []
    for i, p in enumerate(perm):
        seen_now = set(perm[: i + 1])
        seen_before = set(range(p + 1))
        answer.append(seen_now == seen_before)
    return answer
''',
}


# Correct, and printing a numpy RuntimeWarning on the way: full marks.
WARNING_VARIANTS = {
}


# Correct in float32 throughout, written by hand (the others: the model solution wrapped in float32).
FLOAT32_BY_HAND = {
    'ex_attention': r'''import torch


def my_attention(q, k, v):
    # torch's default dtype, float32, from lists
    q, k, v = (torch.tensor(np.asarray(a).tolist()) for a in (q, k, v))
    logits = q @ k.T / q.shape[1] ** 0.5
    return torch.softmax(logits, dim=-1) @ v
''',
}


# Exercises whose prompt pins float64, with the reason the prompt gives: no float32 student is owed there.
FLOAT64_PINNED = {
}


# Plausible wrong answers, each a solution cell's source with a mistake a student would make: each must lose
# its exercise's points on every draw ({solution id: {what is wrong: source}}).
PLAUSIBLY_WRONG = {
    'ex_attention_diagnosis': {
        "reads the mistake as an overflow: one query, and exp's overflow point ln(max float64)": r'''fewest = (1, 1)
nan_gap = 709.78
''',
        "the prediction from 2**-1074, not measured (exp rounds to nearest: the threshold is 1075 ln 2)": r'''fewest = (2, 1)
nan_gap = 1074 * np.log(2.0)
''',
        "two keys, believing a single key always gets weight 1": r'''fewest = (2, 2)
nan_gap = 745.1332
''',
        "the smallest normal float64, 2**-1022, taken as the point where exp gives 0": r'''fewest = (2, 1)
nan_gap = 1022 * np.log(2.0)
''',
    },
    'ex_attention': {
        "the colleague's code unchanged: the maximum of the whole matrix": r'''def my_attention(q, k, v):
    q, k, v = (np.asarray(a, dtype=float) for a in (q, k, v))
    s = q @ k.T / np.sqrt(q.shape[1])
    e = np.exp(s - s.max())
    return e / e.sum(axis=1, keepdims=True) @ v
''',
        "no maximum subtracted at all: np.exp overflows for logits in the thousands": r'''def my_attention(q, k, v):
    q, k, v = (np.asarray(a, dtype=float) for a in (q, k, v))
    e = np.exp(q @ k.T / np.sqrt(q.shape[1]))
    return e / e.sum(axis=1, keepdims=True) @ v
''',
        "the maximum of each column (each key) instead of each row": r'''def my_attention(q, k, v):
    q, k, v = (np.asarray(a, dtype=float) for a in (q, k, v))
    s = q @ k.T / np.sqrt(q.shape[1])
    e = np.exp(s - s.max(axis=0, keepdims=True))
    return e / e.sum(axis=1, keepdims=True) @ v
''',
    },
    'ex_causal_diagnosis': {
        "only the first position, as in the pitfall's leak": r'''def positions_at_risk(length):
    return [0] if length > 1 else []
''',
        "every position, the last one too": r'''def positions_at_risk(length):
    return list(range(length))
''',
        "every position but the first (it has a single visible key)": r'''def positions_at_risk(length):
    return list(range(1, length))
''',
    },
    'ex_causal': {
        "the colleague's code unchanged: the row maximum taken over future keys too": r'''def my_causal_attention(q, k, v):
    q, k, v = (np.asarray(a, dtype=float) for a in (q, k, v))
    s = q @ k.T / np.sqrt(q.shape[1])
    e = np.exp(s - s.max(axis=1, keepdims=True)) * np.tril(np.ones(s.shape))
    w = e / e.sum(axis=1, keepdims=True)
    return w @ v, w
''',
        "np.triu(k=0): the diagonal masked too, so a query cannot see itself": r'''def my_causal_attention(q, k, v):
    q, k, v = (np.asarray(a, dtype=float) for a in (q, k, v))
    s = q @ k.T / np.sqrt(q.shape[1])
    s = np.where(np.triu(np.ones(s.shape, dtype=bool)), -np.inf, s)
    s = np.where(np.isneginf(s).all(axis=1, keepdims=True), 0.0, s)
    e = np.exp(s - s.max(axis=1, keepdims=True))
    w = e / e.sum(axis=1, keepdims=True)
    return w @ v, w
''',
        "future logits set to 0 (np.tril of the logits) instead of -inf": r'''def my_causal_attention(q, k, v):
    q, k, v = (np.asarray(a, dtype=float) for a in (q, k, v))
    s = np.tril(q @ k.T / np.sqrt(q.shape[1]))
    e = np.exp(s - s.max(axis=1, keepdims=True))
    w = e / e.sum(axis=1, keepdims=True)
    return w @ v, w
''',
    },
    'ex_equivariant': {
        "np.allclose with its default tolerances (rtol 1e-5), not the 1e-9 asked for": r'''def is_permutation_equivariant(f, x, perm):
    x = np.asarray(x, dtype=float)
    return bool(np.allclose(f(x[perm]), np.asarray(f(x))[perm]))
''',
        "the inverse permutation on the output side (argsort), which only agrees for swaps": r'''def is_permutation_equivariant(f, x, perm):
    x = np.asarray(x, dtype=float)
    gap = np.abs(np.asarray(f(x[perm])) - np.asarray(f(x))[np.argsort(perm)])
    return bool(gap.max() <= 1e-9)
''',
        "tests invariance: compares f(x[perm]) with f(x) row by row": r'''def is_permutation_equivariant(f, x, perm):
    x = np.asarray(x, dtype=float)
    return bool(np.abs(np.asarray(f(x[perm])) - np.asarray(f(x))).max() <= 1e-9)
''',
    },
}
