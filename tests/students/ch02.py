"""The students of chapter 02_sinusoidal: correct answers written differently from the model solutions, and
plausible wrong ones. Assembled for the whole course by tests/differently_correct.py (read its docstring)."""


CHAPTER = '02_sinusoidal'


# Correct, written differently (loops, lists, math instead of numpy, other formulas, prints): full marks.
DIFFERENT = {
    't2t_signal': r'''import math

def t2t_signal(positions, d, max_timescale=1e4):
    n = d // 2
    # the log of the timescales is evenly spaced from log 1 = 0 to log max_timescale
    step = math.log(max_timescale) / (n - 1)
    inv = [math.exp(-i * step) for i in range(n)]
    rows = []
    for p in positions:
        p = float(p)
        rows.append([math.sin(p * w) for w in inv] + [math.cos(p * w) for w in inv])
    print("t2t_signal:", len(rows), "rows of", d)
    return rows
''',
    'layout_fix': r'''def layout_fix(d):
    # The colleague paired dimension i with i + d/2 (all sines, then all cosines);
    # the encoding pairs 2i with 2i + 1, so take i and i + d/2 pair by pair.
    half = d // 2
    order = []
    for i in range(half):
        order += [i, i + half]
    return order
''',
    'keeps_relative': r'''def keeps_relative(a, base=10000.0):
    # From the derivation (section 13): block-diagonal 2 x 2 blocks [[a, -b], [b, a]].
    a = [[float(x) for x in row] for row in np.asarray(a)]
    d = len(a)
    tol = 1e-9 * (1 + max(abs(x) for row in a for x in row))
    for r in range(d):
        for c in range(d):
            if r // 2 != c // 2 and abs(a[r][c]) > tol:
                return False
    for i in range(0, d, 2):
        if abs(a[i][i] - a[i + 1][i + 1]) > tol or abs(a[i][i + 1] + a[i + 1][i]) > tol:
            return False
    return True
''',
    'beyond_measure': r'''import math
omegas = [math.pow(10000.0, -2.0 * i / 128) for i in range(64)]
lag = np.arange(2048)
# cosine similarity at each offset, from the closed form: (2048,)
profile = sum(np.cos(lag * w) for w in omegas) / 64.0
nearest_position, nearest_similarity = [], []
for p in range(512, 2048):
    window = profile[p - 511:p + 1][::-1]      # offsets p - j for j = 0 .. 511
    j = int(np.argmax(window))
    nearest_position.append(j)
    nearest_similarity.append(float(window[j]))
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
    't2t_signal': 'positions up to 20 000: a float32 angle is off by up to about 1e-3 radians',
    'beyond_measure': 'positions up to 20 000: a float32 angle is off by up to about 1e-3 radians',
}


# Plausible wrong answers, each a solution cell's source with a mistake a student would make: each must lose
# its exercise's points on every draw ({solution id: {what is wrong: source}}).
PLAUSIBLY_WRONG = {
    't2t_signal': {
        "the paper's frequencies base^(-2i/d) in the half layout (the last timescale falls short of the maximum)": r'''def t2t_signal(positions, d, max_timescale=1e4):
    p = np.asarray(positions, dtype=np.float64)[:, None]
    angle = p * max_timescale ** (-2.0 * np.arange(d // 2) / d)
    return np.concatenate([np.sin(angle), np.cos(angle)], axis=1)
''',
        "the right timescales, interleaved as in the paper": r'''def t2t_signal(positions, d, max_timescale=1e4):
    n = d // 2
    angle = np.asarray(positions, dtype=np.float64)[:, None] / max_timescale ** (np.arange(n) / (n - 1))
    out = np.empty((angle.shape[0], d))
    out[:, 0::2], out[:, 1::2] = np.sin(angle), np.cos(angle)
    return out
''',
        "d/2 steps instead of d/2 - 1 (the last timescale short of the maximum)": r'''def t2t_signal(positions, d, max_timescale=1e4):
    n = d // 2
    angle = np.asarray(positions, dtype=np.float64)[:, None] / max_timescale ** (np.arange(n) / n)
    return np.concatenate([np.sin(angle), np.cos(angle)], axis=1)
''',
    },
    'layout_fix': {
        "the inverse permutation (sines' places, then cosines'), equal to the right one only for d = 4": r'''def layout_fix(d):
    return np.concatenate([np.arange(0, d, 2), np.arange(1, d, 2)])
''',
        "blames the frequencies and keeps the layout: the identity": r'''def layout_fix(d):
    return np.arange(d)
''',
    },
    'keeps_relative': {
        "checks only that the matrix is block-diagonal, not the form of the blocks": r'''def keeps_relative(a, base=10000.0):
    a = np.asarray(a, dtype=float)
    pair = np.arange(a.shape[0]) // 2
    return bool(np.abs(a[pair[:, None] != pair[None, :]]).max(initial=0) < 1e-9)
''',
        "measures at positions below 10 only, where the slow pairs have not turned": r'''def keeps_relative(a, base=10000.0):
    a = np.asarray(a, dtype=float)
    d = a.shape[0]
    for k in range(5):
        scores = [posenc.sinusoidal([m], d, base)[0] @ a @ posenc.sinusoidal([m + k], d, base)[0]
                  for m in range(10)]
        if np.ptp(scores) > 1e-6:
            return False
    return True
''',
        "takes relative to mean symmetric: A must equal its transpose": r'''def keeps_relative(a, base=10000.0):
    a = np.asarray(a, dtype=float)
    pair = np.arange(a.shape[0]) // 2
    block_diagonal = np.abs(a[pair[:, None] != pair[None, :]]).max(initial=0) < 1e-9
    return bool(block_diagonal and np.abs(a - a.T).max() < 1e-9)
''',
    },
}
