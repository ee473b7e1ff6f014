"""The students of chapter 07_context_extension: correct answers written differently from the model solutions, and
plausible wrong ones. Assembled for the whole course by tests/differently_correct.py (read its docstring)."""


CHAPTER = '07_context_extension'


# Correct, written differently (loops, lists, math instead of numpy, other formulas, prints): full marks.
DIFFERENT = {
    'ntk_scale_needed': r'''import math

def ntk_scale_needed(d, base, s, L0):
    # the first slow pair from the closed form: 2i/d > ln(L0 / 2 pi) / ln(base)
    sigma = 1.0
    for i in range(d // 2):
        if L0 * base ** (-2.0 * i / d) < 2 * math.pi:
            # pair i reaches s * sigma^(-2i/(d-2)) times its range; later pairs need less
            sigma = math.exp((d - 2) * math.log(s) / (2 * i))
            break
    return sigma


sigma_64 = ntk_scale_needed(64, 10000.0, 2.0, 4096)
print("sigma_64 =", sigma_64, "> s = 2")
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
    'smallest_base': r'''def smallest_base(d, L, grid):
    # B_m for all m at once per base, with the cosines summed pair by pair (no (L, d/2) array)
    m = np.arange(1, L + 1)
    for b in list(grid):
        total = np.zeros(L)
        for i in range(d // 2):
            total += np.cos(m * b ** (-2.0 * i / d))
        if total.min() >= 0:
            return float(b)
    return None


grid = 10 ** (np.arange(20, 71) / 10)
base_for_4096 = smallest_base(128, 4096, grid)
''',
    'longrope_switch': r'''import math

def switch_scores(q, k, n, d, base, L0, short_factor, long_factor):
    # pair by pair in complex form: Re(q~ conj(k~) e^{i (L0 theta_q - n theta_k)})
    cached = fresh = 0.0
    for i in range(d // 2):
        theta = base ** (-2.0 * i / d)
        th_long, th_short = theta / long_factor[i], theta / short_factor[i]
        zq = complex(float(q[2 * i]), float(q[2 * i + 1]))
        zk = complex(float(k[2 * i]), float(k[2 * i + 1]))
        prod = zq * zk.conjugate()
        cached += (prod * complex(math.cos(L0 * th_long - n * th_short), math.sin(L0 * th_long - n * th_short))).real
        fresh += (prod * complex(math.cos((L0 - n) * th_long), math.sin((L0 - n) * th_long))).real
    return cached, fresh
''',
}


# Correct, and printing a numpy RuntimeWarning on the way: full marks.
WARNING_VARIANTS = {
    'ntk_scale_needed': r'''def ntk_scale_needed(d, base, s, L0):
    i = np.arange(d // 2)
    slow = L0 * posenc.rope_frequencies(d, base) < 2 * np.pi
    # s^((d-2)/(2i)) for every pair: a division by zero (RuntimeWarning) at i = 0, never slow
    need = s ** ((d - 2) / (2 * i))
    return float(need[slow].max()) if slow.any() else 1.0


sigma_64 = ntk_scale_needed(64, 10000.0, 2.0, 4096)
''',
}


# Correct in float32 throughout, written by hand (the others: the model solution wrapped in float32).
FLOAT32_BY_HAND = {
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
}


# Exercises whose prompt pins float64, with the reason the prompt gives: no float32 student is owed there.
FLOAT64_PINNED = {
    'smallest_base': 'the sign of B_m near 0 at offsets in the thousands: float32 angles are off by ~1e-3',
    'longrope_switch': 'angles at positions in the tens of thousands: float32 loses about 1e-3 radians',
}


# Plausible wrong answers, each a solution cell's source with a mistake a student would make: each must lose
# its exercise's points on every draw ({solution id: {what is wrong: source}}).
PLAUSIBLY_WRONG = {
    'ntk_scale_needed': {
        "the slowest pair decides (it is slowed by exactly sigma): returns s": r'''def ntk_scale_needed(d, base, s, L0):
    slow = L0 * posenc.rope_frequencies(d, base) < 2 * np.pi
    return float(s) if slow.any() else 1.0
''',
        "the base's multiplier s^(d/(d-2)) in place of the scale": r'''def ntk_scale_needed(d, base, s, L0):
    slow = L0 * posenc.rope_frequencies(d, base) < 2 * np.pi
    return float(s ** (d / (d - 2))) if slow.any() else 1.0
''',
        "the last pair that completes a turn decides, one pair too early": r'''def ntk_scale_needed(d, base, s, L0):
    slow = np.flatnonzero(L0 * posenc.rope_frequencies(d, base) < 2 * np.pi)
    if slow.size == 0:
        return 1.0
    return float(s ** ((d - 2) / (2 * max(slow[0] - 1, 1))))
''',
    },
    'dynamic_cache': {
        "resets at seq_len <= L0 (transformers resets only below L0)": r'''class DynamicRope(StaleDynamicRope):
    def frequencies(self, n):
        if n > self.longest:
            grown = self.base * (self.s * n / self.L0 - self.s + 1) ** (self.d / (self.d - 2))
            self.freqs, self.longest = posenc.rope_frequencies(self.d, grown), n
        elif n <= self.L0 < self.longest:
            self.freqs, self.longest = self.original, self.L0
        return self.freqs
''',
        "never resets to the original frequencies": r'''class DynamicRope(StaleDynamicRope):
    def frequencies(self, n):
        if n > self.longest:
            grown = self.base * (self.s * n / self.L0 - self.s + 1) ** (self.d / (self.d - 2))
            self.freqs, self.longest = posenc.rope_frequencies(self.d, grown), n
        return self.freqs
''',
    },
    'yarn': {
        "no guard for low == high (0/0 in the ramp)": r'''def my_yarn(d, base, s, L0, beta_fast=32.0, beta_slow=1.0):
    def pair_with_turns(turns):
        return d * np.log(L0 / (turns * 2 * np.pi)) / (2 * np.log(base))

    low = max(int(np.floor(pair_with_turns(beta_fast))), 0)
    high = min(int(np.ceil(pair_with_turns(beta_slow))), d - 1)
    gamma = 1.0 - np.clip((np.arange(d // 2) - low) / (high - low), 0.0, 1.0)
    kept = posenc.rope_frequencies(d, base)
    return (1 - gamma) * kept / s + gamma * kept, 0.1 * np.log(s) + 1.0
''',
        "the paper's ramp, linear in the turns": r'''def my_yarn(d, base, s, L0, beta_fast=32.0, beta_slow=1.0):
    theta = posenc.rope_frequencies(d, base)
    turns = L0 * theta / (2 * np.pi)
    keep = np.clip((turns - beta_slow) / (beta_fast - beta_slow), 0.0, 1.0)
    return (1 - keep) * theta / s + keep * theta, 0.1 * np.log(s) + 1.0
''',
    },
    'smallest_base': {
        "bisection over the grid (the bound is not monotone in the base)": r'''def smallest_base(d, L, grid):
    grid = list(grid)
    m = np.arange(1, L + 1, dtype=np.float64)

    def ok(b):
        return bool(np.all(np.cos(np.outer(m, posenc.rope_frequencies(d, b))).sum(axis=1) >= 0))

    if not ok(grid[-1]):
        return None
    lo, hi = -1, len(grid) - 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(grid[mid]):
            hi = mid
        else:
            lo = mid
    return grid[hi]


grid = 10 ** (np.arange(20, 71) / 10)
base_for_4096 = smallest_base(128, 4096, grid)
''',
        "checks only the farthest distance m = L": r'''def smallest_base(d, L, grid):
    for b in grid:
        if np.cos(L * posenc.rope_frequencies(d, b)).sum() >= 0:
            return b
    return None


grid = 10 ** (np.arange(20, 71) / 10)
base_for_4096 = smallest_base(128, 4096, grid)
''',
    },
    'longrope_switch': {
        "the cached key taken with the long list too (no stale cache)": r'''def switch_scores(q, k, n, d, base, L0, short_factor, long_factor):
    long = posenc.rope_frequencies(d, base) / np.asarray(long_factor, dtype=float)
    q_rot = posenc.apply_rope(np.asarray(q, dtype=float)[None], [L0], frequencies=long)[0]
    k_rot = posenc.apply_rope(np.asarray(k, dtype=float)[None], [n], frequencies=long)[0]
    return float(q_rot @ k_rot), float(q_rot @ k_rot)
''',
        "the new token's call taken as length L0 (short list for the query)": r'''def switch_scores(q, k, n, d, base, L0, short_factor, long_factor):
    theta = posenc.rope_frequencies(d, base)
    short = theta / np.asarray(short_factor, dtype=float)
    long = theta / np.asarray(long_factor, dtype=float)
    q_rot = posenc.apply_rope(np.asarray(q, dtype=float)[None], [L0], frequencies=short)[0]
    k_short = posenc.apply_rope(np.asarray(k, dtype=float)[None], [n], frequencies=short)[0]
    k_long = posenc.apply_rope(np.asarray(k, dtype=float)[None], [n], frequencies=long)[0]
    return float(q_rot @ k_short), float(q_rot @ k_long)
''',
    },
}
