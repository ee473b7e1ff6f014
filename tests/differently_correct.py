"""Correct solutions written differently from the model solutions, one per exercise of every chapter: loops
instead of vectorised code, Python lists and tuples, math instead of numpy, other but equivalent formulas,
helpers and prints, autograd imported by name. The synthetic class (tests/test_autograder_class.py) grades
them with the real pipeline: every one must score full marks. WARNING_VARIANTS are correct solutions that
print a numpy RuntimeWarning on stderr (a branch np.where throws away), which must not cost a point."""

DIFFERENT = {
    '01_why_position': {
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
    },
    '02_sinusoidal': {
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
    },
    '03_learned': {
        'interpolate_table': r'''def interpolate_table(table, new_len):
    rows = [list(map(float, row)) for row in table]
    old_len = len(rows)
    out = []
    for t in range(new_len):
        x = t * (old_len - 1) / (new_len - 1)
        p = min(int(x), old_len - 2)
        w = x - p
        out.append([(1 - w) * a + w * b for a, b in zip(rows[p], rows[p + 1])])
    print("stretched", old_len, "rows to", new_len)
    return out
''',
        'my_learned_pe': r'''class MyLearnedPE(torch.nn.Module):
    def __init__(self, max_len, d):
        super().__init__()
        self.limit = max_len
        self.emb = torch.nn.Embedding(max_len, d)
        torch.nn.init.zeros_(self.emb.weight)

    def forward(self, x):
        seq = x.size(1)
        if seq > self.limit:
            raise ValueError(f"sequence of length {seq} exceeds max_len={self.limit}")
        idx = torch.arange(seq)
        rows = self.emb(idx).unsqueeze(0).to(x.dtype)
        return torch.add(x, rows)
''',
        'rows_with_gradient': r'''from torch.autograd import grad

def rows_with_gradient(max_len, d, L):
    layer = MyLearnedPE(max_len, d)
    out = layer(torch.randn(1, L, d))
    loss = out.pow(2).sum()
    (g,) = grad(loss, layer.emb.weight)
    per_row = g.abs().sum(dim=1)
    return np.array([bool(v > 0) for v in per_row.tolist()])
''',
    },
    '04_relative': {
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
    },
    '05_alibi': {
        'my_alibi_slopes': r'''import math

def my_alibi_slopes(n_heads):
    H = int(n_heads)
    c = 2 ** int(math.floor(math.log2(H)))
    slopes = [2.0 ** (-8.0 * h / c) for h in range(1, c + 1)]
    for k in range(1, H - c + 1):
        slopes.append(2.0 ** (-8.0 * (2 * k - 1) / (2 * c)))
    return np.array(slopes, dtype=np.float64)


slopes_8 = my_alibi_slopes(8)
slopes_12 = my_alibi_slopes(12)
''',
        'last_token_weights': r'''def last_token_weights(scores, m):
    s = [float(x) for x in scores]
    L = len(s)
    logits = [s[j] - m * (L - 1 - j) for j in range(L)]
    top = max(logits)
    e = [math.exp(z - top) for z in logits]
    tot = math.fsum(e)
    return [x / tot for x in e]
''',
        'causal_alibi': r'''def causal_alibi(n_heads, L):
    slopes = my_alibi_slopes(n_heads)
    out = np.full((n_heads, L, L), -np.inf)
    for h in range(n_heads):
        for i in range(L):
            for j in range(i + 1):
                out[h, i, j] = -slopes[h] * (i - j)
    return out
''',
        'fixed_alibi_logits': r'''def fixed_alibi_logits(scores, m, past):
    rows = [[float(x) for x in row] for row in scores]
    out = []
    for r, row in enumerate(rows):
        i = past + r  # where this query really sits
        out.append([x - m * (i - j) if j <= i else -math.inf for j, x in enumerate(row)])
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
        'scheme_table': r'''def scheme_table(results):
    cfg = results["config"]
    top = sorted(results["eval_lengths"])[-1]
    seeds = sorted(results["seeds"])
    out = {}
    for name in results["models"]:
        total, count = 0.0, 0
        for s in seeds:
            numbers = results["seeds"][s][name]
            last = numbers["loss_beyond_train"].get(str(top))
            if last is None:
                total = math.nan
            else:
                total += last - numbers["loss"][str(cfg["train_len"])]
            count += 1
        extra = results["seeds"][seeds[0]][name]["parameters"] - results["seeds"][seeds[0]]["none"]["parameters"]
        out[name] = [extra, total / count]
    return out


arena_table = scheme_table(json.loads(posenc.ARENA_RESULTS.read_text()))
''',
        'attention_span': r'''def attention_span(m, L, mass=0.9):
    denom = -math.expm1(-m * L)
    for D in range(L):
        if -math.expm1(-m * (D + 1)) / denom >= mass:
            return D
    return L
''',
    },
    '06_rope': {
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
    },
    '07_context_extension': {
        'ntk_reach': r'''import math

def ntk_reach(d, base, s, L_train):
    theta = [base ** (-2.0 * i / d) for i in range(d // 2)]
    theta_new = [t * s ** (-2.0 * i / (d - 2)) for i, t in enumerate(theta)]
    reach = [s * L_train * t for t in theta_new]
    unseen = [(L_train * t < 2 * math.pi) and (r > L_train * t * (1 + 1e-9)) for t, r in zip(theta, reach)]
    return np.array(theta_new), np.array(reach), np.array(unseen)
''',
        'dynamic_cache': r'''import math

class DynamicRope:
    # no cache at all: recompute from the rule every time, remembering only the longest length
    def __init__(self, d, base, s, L0):
        self.d, self.base, self.s, self.L0 = d, base, s, L0
        self.longest = L0

    def _for(self, length):
        if length <= self.L0:
            b = self.base
        else:
            b = self.base * (self.s * length / self.L0 - (self.s - 1)) ** (self.d / (self.d - 2))
        return [b ** (-2.0 * i / self.d) for i in range(self.d // 2)]

    def frequencies(self, seq_len):
        if seq_len > self.longest:
            self.longest = seq_len
        elif seq_len < self.L0:
            self.longest = self.L0
        return self._for(self.longest)
''',
        'yarn': r'''import math

def my_yarn(d, base, s, L0, beta_fast=32.0, beta_slow=1.0):
    def pair_index(rho):
        return d * math.log(L0 / (2 * math.pi * rho)) / (2 * math.log(base))
    low = max(math.floor(pair_index(beta_fast)), 0)
    high = min(math.ceil(pair_index(beta_slow)), d - 1)
    if low == high:
        high = high + 0.001
    freqs = []
    for i in range(d // 2):
        theta = base ** (-2.0 * i / d)
        ramp = min(max((i - low) / (high - low), 0.0), 1.0)
        gamma = 1.0 - ramp
        freqs.append(theta * (gamma + (1.0 - gamma) / s))
    return np.array(freqs), 1.0 + 0.1 * math.log(s)
''',
        'matching_length': r'''def matching_length(s, sigma, L0):
    # bisection on the bracket s L / L0 - (s - 1), which grows with L
    lo, hi = float(L0), float(L0) * (1.0 + sigma)
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if s * mid / L0 - (s - 1) < sigma:
            lo = mid
        else:
            hi = mid
    print("bisection finished at", hi)
    return hi


nominal_length = matching_length(2, 2, 4096)
''',
        'first_negative': r'''import math

def first_negative_offset(d, base, max_offset):
    thetas = [base ** (-2.0 * i / d) for i in range(d // 2)]
    for m in range(1, max_offset + 1):
        if math.fsum(math.cos(m * t) for t in thetas) < 0:
            return m
    return None


bound_llama2 = first_negative_offset(128, 10000.0, 10000)
''',
        'longrope': r'''import math

def my_longrope(d, base, s, L0, seq_len, short_factor, long_factor):
    use_long = seq_len is not None and seq_len > L0
    factors = list(long_factor) if use_long else list(short_factor)
    freqs = [1.0 / (factors[k] * base ** (2.0 * k / d)) for k in range(d // 2)]
    factor = math.sqrt(1 + math.log(s) / math.log(L0)) if s > 1 else 1.0
    return freqs, factor
''',
    },
    '08_arena': {
        'seed_verdict': r'''def seed_verdict(a, b):
    a = [float(x) for x in a]
    b = [float(x) for x in b]
    if all(x < y for x in a for y in b):
        return "lower"
    if all(x > y for x in a for y in b):
        return "higher"
    return "tie"


def tied_with_best(results, length):
    table = {}
    for name in results["models"]:
        entry = results["summary"][name]["loss"].get(str(length))
        if entry is not None:
            table[name] = list(entry["values"])
    means = {name: sum(v) / len(v) for name, v in table.items()}
    best = sorted(means.items(), key=lambda item: item[1])[0][0]
    print(f"lowest mean loss at {length}: {best}")
    out = []
    for name in table:
        if seed_verdict(table[name], table[best]) in ("lower", "tie"):
            out.append(name)
    out.sort()
    return out


best_at_longest = tied_with_best(result, max(lengths))
''',
        'false_alarm': r'''def false_alarm(n_a, n_b):
    # 2 / C(n_a + n_b, n_a), with the binomial coefficient as a product of n_a ratios
    p = 2.0
    for k in range(1, int(n_a) + 1):
        p *= k / (int(n_b) + k)
    return p
''',
        'shortest_training_length': r'''def shortest_training_length(num_buckets, max_distance):
    everything = posenc.t5_bucket(-np.arange(max_distance + 1), bidirectional=False,
                                  num_buckets=num_buckets, max_distance=max_distance).tolist()
    wanted = len(set(everything))
    seen = set()
    for L, bucket in enumerate(everything, start=1):
        seen.add(bucket)
        if len(seen) == wanted:
            return L


t5_default = shortest_training_length(32, 128)
print("shortest:", t5_default)
''',
    },
    '09_choosing': {
        'unbeaten': r'''def unbeaten(results, length):
    key = str(int(length))
    extensions = results["summary"]["rope"]["extensions"]
    table = dict(extensions["same_positions"])  # every setting on the sample of positions dynamic NTK used
    table["dynamic_ntk"] = extensions["dynamic_ntk"]
    lowest = {name: entry["loss"][key]["min"] for name, entry in table.items()}
    highest = {name: entry["loss"][key]["max"] for name, entry in table.items()}
    # a setting is beaten iff some other setting's worst seed is below its best seed
    best_worst = min(highest.values())
    keep = [name for name in table if not lowest[name] > best_worst]
    print("unbeaten at", key, ":", keep)
    return sorted(keep)
''',
    },
}

WARNING_VARIANTS = {
    '05_alibi': {
        'causal_alibi': r'''def causal_alibi(n_heads, L):
    i = np.arange(L)[:, None]; j = np.arange(L)[None, :]
    dist = (i - j).astype(float)
    # log of a mask: log(1) = 0 where allowed, log(0) = -inf in the future (a RuntimeWarning)
    mask = np.log((j <= i).astype(float))
    return -my_alibi_slopes(n_heads)[:, None, None] * dist + mask
''',
    },
    '07_context_extension': {
        'ntk_reach': r'''def ntk_reach(d, base, s, L_train):
    old_theta = posenc.rope_frequencies(d, base)
    theta_new = posenc.rope_frequencies(d, base * s ** (d / (d - 2)))
    reach = s * L_train * theta_new
    trained = L_train * old_theta
    # log of what is left of the first turn: NaN (a RuntimeWarning) for the pairs that completed one
    left = np.log(2 * np.pi - trained)
    return theta_new, reach, np.isfinite(left) & (reach > trained * (1 + 1e-9))
''',
    },
}

# Correct solutions computed in float32 throughout (tests/test_fair_draws.py judges them on many draws, with the
# model solutions wrapped to work in float32 for the exercises not listed here). An exercise whose prompt pins
# float64 is in FLOAT64_PINNED instead, with the reason its prompt gives.
FLOAT32_BY_HAND = {
    '01_why_position': {
        'ex_attention': r'''import torch


def my_attention(q, k, v):
    # torch's default dtype, float32, from lists
    q, k, v = (torch.tensor(np.asarray(a).tolist()) for a in (q, k, v))
    logits = q @ k.T / q.shape[1] ** 0.5
    return torch.softmax(logits, dim=-1) @ v
''',
    },
    '03_learned': {
        'interpolate_table': r'''def interpolate_table(table, new_len):
    table = np.asarray(table, dtype=np.float32)
    x = np.linspace(0, len(table) - 1, new_len, dtype=np.float32)
    left = np.minimum(np.floor(x).astype(int), len(table) - 2)
    w = (x - left)[:, None]
    return (1 - w) * table[left] + w * table[left + 1]
''',
    },
    '06_rope': {
        # issue 33's student: the fraction of pairs, in float32
        'short_of_a_turn': r'''def short_of_a_turn(d, base, L):
    theta = np.float32(base) ** (-np.arange(0, d, 2, dtype=np.float32) / np.float32(d))
    return np.float32(np.mean(L * theta < 2 * np.pi))


llama2_fraction = short_of_a_turn(128, 10000.0, 4096)
llama3_fraction = short_of_a_turn(128, 500000.0, 8192)
''',
    },
    '07_context_extension': {
        'dynamic_cache': r'''class DynamicRope(StaleDynamicRope):
    # the rule, with the frequencies held in float32
    def frequencies(self, seq_len):
        d, s, L0 = self.d, np.float32(self.s), self.L0
        grown = getattr(self, "_longest", L0)
        if seq_len > grown:
            grown = seq_len
        elif seq_len < L0:
            grown = L0
        self._longest = grown
        base = np.float32(self.base)
        if grown > L0:
            base = base * (s * np.float32(grown) / np.float32(L0) - (s - 1)) ** np.float32(d / (d - 2))
        return base ** (-np.arange(0, d, 2, dtype=np.float32) / np.float32(d))
''',
    },
}

# Exercises whose prompt pins float64, with the reason the prompt gives: no float32 student is owed there.
FLOAT64_PINNED = {
    '02_sinusoidal': {
        sid: "positions up to 20 000: a float32 angle is off by up to about 1e-3 radians"
        for sid in ('pe_table', 'pe_dot', 'shift', 'beyond_measure')},
    '05_alibi': {
        'slopes_for_spans': "the prompt asks for a relative accuracy of 1e-8, beyond float32's 7 digits"},
    '06_rope': {
        sid: "angles in float64, the chapter's precision rule: a float32 angle at position m is off by about m·1e-7"
        for sid in ('my_rope_matrix', 'my_rope_2d', 'decode_step', 'fixed_rope')},
    '07_context_extension': {
        'ntk_reach': "unseen's margin of one part in 1e9 is below float32's rounding (about 1e-7)",
        'first_negative': "the sign of B_m near 0 at offsets in the thousands: float32 angles are off by ~1e-3"},
}
