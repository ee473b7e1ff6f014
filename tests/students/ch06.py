"""The students of chapter 06_rope: correct answers written differently from the model solutions, and
plausible wrong ones. Assembled for the whole course by tests/differently_correct.py (read its docstring)."""


CHAPTER = '06_rope'


# Correct, written differently (loops, lists, math instead of numpy, other formulas, prints): full marks.
DIFFERENT = {
    'my_rope_matrix': r'''import math

def my_rope_matrix(m, d, base=10000.0):
    blocks = []
    for i in range(d // 2):
        th = math.exp(-2.0 * i / d * math.log(base))
        a = m * th
        blocks.append(np.array([[math.cos(a), -math.sin(a)], [math.sin(a), math.cos(a)]]))
    R = np.zeros((d, d))
    for i, b in enumerate(blocks):
        R[2*i:2*i+2, 2*i:2*i+2] = b
    return R
''',
    'my_rope_2d': r'''import math

def my_rope_2d(x, rows, cols, base=10000.0):
    # pairs as complex numbers; each half turns with its own coordinate, frequencies of a d/2 head
    out = []
    for row, r, c in zip(np.asarray(x).tolist(), rows, cols):
        d = len(row); h = d // 2
        new = []
        for start, pos in ((0, c), (h, r)):
            for i in range(h // 2):
                z = complex(row[start + 2 * i], row[start + 2 * i + 1])
                z *= complex(math.cos(int(pos) * base ** (-2.0 * i / h)), math.sin(int(pos) * base ** (-2.0 * i / h)))
                new += [z.real, z.imag]
        out.append(new)
    print("rotated", len(out), "patches")
    return out
''',
    'half_to_interleaved': r'''def half_to_interleaved(d):
    return [i // 2 + (i % 2) * (d // 2) for i in range(d)]
''',
    'decode_step': r'''import math

def decode_step(q_new, k_new, k_cache, mask, base=10000.0):
    d = len(q_new)
    position = 0
    for flag in mask:
        if flag == 1:
            position += 1

    def turn(v):
        # interleaved pairs (2i, 2i+1) as complex numbers times e^{i position theta_i}
        out = []
        for i in range(d // 2):
            z = complex(float(v[2 * i]), float(v[2 * i + 1]))
            z *= complex(math.cos(position * base ** (-2.0 * i / d)),
                         math.sin(position * base ** (-2.0 * i / d)))
            out += [z.real, z.imag]
        return out

    q_rot = turn(q_new)
    rows = [[float(a) for a in row] for row in np.asarray(k_cache).reshape(-1, d)]
    rows.append(turn(k_new))
    scores = [sum(a * b for a, b in zip(row, q_rot)) for row in rows]
    return scores, rows
''',
    'fixed_rope': r'''def fixed_rope(x, positions, base=10000.0):
    # float64 throughout with complex numbers on the pairs (i, i + d/2); one cast at the end
    arr = x.detach().to(torch.float64).numpy()
    d = arr.shape[-1]
    h = d // 2
    theta = np.array([base ** (-2.0 * i / d) for i in range(h)])
    angles = np.asarray(positions.tolist(), dtype=np.float64)[:, None] * theta
    z = (arr[..., :h] + 1j * arr[..., h:]) * np.exp(1j * angles)
    out = np.concatenate([z.real, z.imag], axis=-1)
    return torch.from_numpy(out).to(x.dtype)
''',
    'short_of_a_turn': r'''import math

def short_of_a_turn(d, base, L):
    # a pair is short of a turn when its wavelength 2 pi base^(2i/d) exceeds L
    short = 0
    for i in range(d // 2):
        wavelength = 2 * math.pi / (base ** (-2.0 * i / d))
        if L < wavelength:
            short += 1
    return short / (d // 2)


llama2_fraction = short_of_a_turn(128, 10000.0, 4096)
llama3_fraction = short_of_a_turn(128, 500000.0, 8192)
''',
}


# Correct, and printing a numpy RuntimeWarning on the way: full marks.
WARNING_VARIANTS = {
}


# Correct in float32 throughout, written by hand (the others: the model solution wrapped in float32).
FLOAT32_BY_HAND = {
    # issue 33's student: the fraction of pairs, in float32
    'short_of_a_turn': r'''def short_of_a_turn(d, base, L):
    theta = np.float32(base) ** (-np.arange(0, d, 2, dtype=np.float32) / np.float32(d))
    return np.float32(np.mean(L * theta < 2 * np.pi))


llama2_fraction = short_of_a_turn(128, 10000.0, 4096)
llama3_fraction = short_of_a_turn(128, 500000.0, 8192)
''',
}


# Exercises whose prompt pins float64, with the reason the prompt gives: no float32 student is owed there.
FLOAT64_PINNED = {
    'my_rope_matrix': "angles in float64, the chapter's precision rule: a float32 angle at position m is off by about m·1e-7",
    'my_rope_2d': "angles in float64, the chapter's precision rule: a float32 angle at position m is off by about m·1e-7",
    'decode_step': "angles in float64, the chapter's precision rule: a float32 angle at position m is off by about m·1e-7",
    'fixed_rope': "angles in float64, the chapter's precision rule: a float32 angle at position m is off by about m·1e-7",
}


# Plausible wrong answers, each a solution cell's source with a mistake a student would make: each must lose
# its exercise's points on every draw ({solution id: {what is wrong: source}}).
PLAUSIBLY_WRONG = {
}
