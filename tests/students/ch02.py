"""The students of chapter 02_sinusoidal: correct answers written differently from the model solutions, and
plausible wrong ones. Assembled for the whole course by tests/differently_correct.py (read its docstring)."""


CHAPTER = '02_sinusoidal'


# Correct, written differently (loops, lists, math instead of numpy, other formulas, prints): full marks.
DIFFERENT = {
    'pe_table': r'''def pe_table(positions, d, base=10000.0):
    p = np.array(list(positions), dtype=np.float64)[:, np.newaxis]
    freqs = np.exp(-np.log(base) * np.arange(d // 2) * 2.0 / d)[np.newaxis, :]
    ang = p * freqs
    return np.stack([np.sin(ang), np.cos(ang)], axis=-1).reshape(len(p), d)
''',
    'pe_dot': r'''def pe_dot(m, n, d, base=10000.0):
    m = np.asarray(m, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    total = np.zeros(np.broadcast(m, n).shape)
    for i in range(d // 2):
        w = base ** (-(2.0 * i) / d)
        total = total + np.sin(m * w) * np.sin(n * w) + np.cos(m * w) * np.cos(n * w)
    return total


starts = np.array([0, 10, 250, 4000])
print("offset 4 at different places:", pe_dot(starts, starts + 4, 64))
''',
    'shift': r'''import math

def shift(k, d, base=10000.0):
    rows = [[0.0] * d for _ in range(d)]
    for i in range(d // 2):
        a = float(k) * math.pow(base, -2.0 * i / d)
        c, s = math.cos(a), math.sin(a)
        rows[2 * i][2 * i], rows[2 * i][2 * i + 1] = c, s
        rows[2 * i + 1][2 * i], rows[2 * i + 1][2 * i + 1] = -s, c
    return rows
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
    'pe_table': 'positions up to 20 000: a float32 angle is off by up to about 1e-3 radians',
    'pe_dot': 'positions up to 20 000: a float32 angle is off by up to about 1e-3 radians',
    'shift': 'positions up to 20 000: a float32 angle is off by up to about 1e-3 radians',
    'beyond_measure': 'positions up to 20 000: a float32 angle is off by up to about 1e-3 radians',
}


# Plausible wrong answers, each a solution cell's source with a mistake a student would make: each must lose
# its exercise's points on every draw ({solution id: {what is wrong: source}}).
PLAUSIBLY_WRONG = {
    'pe_table': {
        "half layout (all sines, then all cosines), as tensor2tensor writes it": r'''def pe_table(positions, d, base=10000.0):
    p = np.asarray(positions, dtype=np.float64)[:, None]
    angle = p * base ** (-2.0 * np.arange(d // 2) / d)
    return np.concatenate([np.sin(angle), np.cos(angle)], axis=1)
''',
        "exponent i / d instead of 2i / d": r'''def pe_table(positions, d, base=10000.0):
    p = np.asarray(positions, dtype=np.float64)[:, None]
    angle = p * base ** (-np.arange(d // 2) / d)
    out = np.empty((len(p), d))
    out[:, 0::2], out[:, 1::2] = np.sin(angle), np.cos(angle)
    return out
''',
    },
}
