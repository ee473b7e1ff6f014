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
