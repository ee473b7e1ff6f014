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
    'mixed_rope': r'''import math

def mixed_rope(x, rows, cols, freq_rows, freq_cols):
    # pairs as complex numbers, each turned by r w_row + c w_col
    out = []
    for row, r, c in zip(np.asarray(x).tolist(), rows, cols):
        new = []
        for i in range(len(row) // 2):
            angle = int(r) * float(freq_rows[i]) + int(c) * float(freq_cols[i])
            z = complex(row[2 * i], row[2 * i + 1]) * complex(math.cos(angle), math.sin(angle))
            new += [z.real, z.imag]
        out.append(new)
    print("rotated", len(out), "patches")
    return out


def axial_frequencies(d, base=10000.0):
    q = d // 4
    cols = [base ** (-2.0 * i / (d // 2)) for i in range(q)] + [0.0] * q
    rows = [0.0] * q + [base ** (-2.0 * i / (d // 2)) for i in range(q)]
    return rows, cols
''',
    'convert_rows': r'''def convert_rows(W, heads, head_dim, rotary_dim):
    # a new row order, head by head: even rotated rows, odd rotated rows, the rest
    order = []
    for h in range(heads):
        start = h * head_dim
        order += [start + j for j in range(0, rotary_dim, 2)]
        order += [start + j for j in range(1, rotary_dim, 2)]
        order += [start + j for j in range(rotary_dim, head_dim)]
    return [list(np.asarray(W)[k]) for k in order]
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
    'short_pairs': r'''import math

def short_pairs(d, base, L):
    # short iff 2i/d > log_base(L / 2 pi): count the integers i in (x, d/2) with x = (d/2) log_base(L/2pi)
    x = d / 2 * math.log(L / (2 * math.pi), base)
    first_short = math.floor(x) + 1 if x >= 0 else 0
    return max(d // 2 - first_short, 0)


llama2_fraction = short_pairs(128, 10000.0, 4096) / 64
llama3_fraction = short_pairs(128, 500000.0, 8192) / 64
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
    'my_rope_matrix': "angles in float64, the chapter's precision rule: a float32 angle at position m is off by about m·1e-7",
    'mixed_rope': "angles in float64, the chapter's precision rule: a float32 angle at position m is off by about m·1e-7",
    'short_pairs': "counts in the hundreds of billions for d up to 1e12: float32's seven digits cannot hold them",
    'decode_step': "angles in float64, the chapter's precision rule: a float32 angle at position m is off by about m·1e-7",
    'fixed_rope': "angles in float64, the chapter's precision rule: a float32 angle at position m is off by about m·1e-7",
}


# Plausible wrong answers, each a solution cell's source with a mistake a student would make: each must lose
# its exercise's points on every draw ({solution id: {what is wrong: source}}).
PLAUSIBLY_WRONG = {
    'mixed_rope': {
        "turns by the row only": r'''def mixed_rope(x, rows, cols, freq_rows, freq_cols):
    return posenc.apply_rope(np.asarray(x, dtype=float), rows, frequencies=freq_rows)
''' + '''

def axial_frequencies(d, base=10000.0):
    half, zeros = posenc.rope_frequencies(d // 2, base), np.zeros(d // 4)
    return np.concatenate([zeros, half]), np.concatenate([half, zeros])
''',
        "reading order m = r * 100 + c with one frequency list": r'''def mixed_rope(x, rows, cols, freq_rows, freq_cols):
    m = np.asarray(rows) * 100 + np.asarray(cols)
    return posenc.apply_rope(np.asarray(x, dtype=float), m, frequencies=freq_cols)


def axial_frequencies(d, base=10000.0):
    half, zeros = posenc.rope_frequencies(d // 2, base), np.zeros(d // 4)
    return np.concatenate([zeros, half]), np.concatenate([half, zeros])
''',
    },
    'convert_rows': {
        "permutes the whole head, ignoring rotary_dim": r'''def convert_rows(W, heads, head_dim, rotary_dim):
    per_head = np.r_[np.arange(0, head_dim, 2), np.arange(1, head_dim, 2)]
    rows = (np.arange(heads)[:, None] * head_dim + per_head).reshape(-1)
    return np.asarray(W)[rows]
''',
        "the inverse permutation (half to interleaved)": r'''def convert_rows(W, heads, head_dim, rotary_dim):
    r = rotary_dim
    inv = np.arange(r).reshape(2, r // 2).T.reshape(-1)
    per_head = np.r_[inv, np.arange(r, head_dim)]
    rows = (np.arange(heads)[:, None] * head_dim + per_head).reshape(-1)
    return np.asarray(W)[rows]
''',
    },
    'fixed_rope': {
        "angles in float32, as transformers computes them": r'''def fixed_rope(x, positions, base=10000.0):
    d = x.shape[-1]
    inv_freq = base ** (-torch.arange(0, d, 2, dtype=torch.float32) / d)
    angles = positions.to(torch.float32)[:, None] * inv_freq
    cos = torch.cat([angles.cos(), angles.cos()], dim=-1).to(x.dtype)
    sin = torch.cat([angles.sin(), angles.sin()], dim=-1).to(x.dtype)
    first, second = x[..., : d // 2], x[..., d // 2 :]
    return x * cos + torch.cat([-second, first], dim=-1) * sin
''',
        "precision fixed, tables still repeat_interleave'd (interleaved pairs)": r'''def fixed_rope(x, positions, base=10000.0):
    d = x.shape[-1]
    inv_freq = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    angles = positions.to(torch.float64)[:, None] * inv_freq
    cos = angles.cos().repeat_interleave(2, dim=-1).to(x.dtype)
    sin = angles.sin().repeat_interleave(2, dim=-1).to(x.dtype)
    first, second = x[..., : d // 2], x[..., d // 2 :]
    return x * cos + torch.cat([-second, first], dim=-1) * sin
''',
    },
    'short_pairs': {
        "ceil at the boundary: a pair with exactly one turn counted as short": r'''def short_pairs(d, base, L):
    x = (d / 2) * np.log(L / (2 * np.pi)) / np.log(base)
    return d // 2 - min(max(int(np.ceil(x)), 0), d // 2)


llama2_fraction = short_pairs(128, 10000.0, 4096) / 64
llama3_fraction = short_pairs(128, 500000.0, 8192) / 64
''',
        "counts an array of frequencies (the mean of the chapter's first version)": r'''def short_pairs(d, base, L):
    theta = base ** (-np.arange(0, d, 2) / d)
    return int(np.sum(L * theta < 2 * np.pi))


llama2_fraction = short_pairs(128, 10000.0, 4096) / 64
llama3_fraction = short_pairs(128, 500000.0, 8192) / 64
''',
    },
}
