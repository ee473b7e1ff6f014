"""The students of chapter 07_context_extension: correct answers written differently from the model solutions, and
plausible wrong ones. Assembled for the whole course by tests/differently_correct.py (read its docstring)."""


CHAPTER = '07_context_extension'


# Correct, written differently (loops, lists, math instead of numpy, other formulas, prints): full marks.
DIFFERENT = {
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
}


# Correct, and printing a numpy RuntimeWarning on the way: full marks.
WARNING_VARIANTS = {
    'ntk_reach': r'''def ntk_reach(d, base, s, L_train):
    old_theta = posenc.rope_frequencies(d, base)
    theta_new = posenc.rope_frequencies(d, base * s ** (d / (d - 2)))
    reach = s * L_train * theta_new
    trained = L_train * old_theta
    # log of what is left of the first turn: NaN (a RuntimeWarning) for the pairs that completed one
    left = np.log(2 * np.pi - trained)
    return theta_new, reach, np.isfinite(left) & (reach > trained * (1 + 1e-9))
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
    'ntk_reach': "unseen's margin of one part in 1e9 is below float32's rounding (about 1e-7)",
    'first_negative': 'the sign of B_m near 0 at offsets in the thousands: float32 angles are off by ~1e-3',
}


# Plausible wrong answers, each a solution cell's source with a mistake a student would make: each must lose
# its exercise's points on every draw ({solution id: {what is wrong: source}}).
PLAUSIBLY_WRONG = {
}
