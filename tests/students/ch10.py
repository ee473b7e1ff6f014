"""The students of chapter 10_today: correct answers written differently from the model solutions, and
plausible wrong ones. Assembled for the whole course by tests/differently_correct.py (read its docstring)."""


CHAPTER = '10_today'


# Correct, written differently (loops, lists, math instead of numpy, other formulas, prints): full marks.
DIFFERENT = {
    'yarn_pair_kinds': r'''import math

def yarn_pair_kinds(config):
    # transformers' correction range by hand: pair i makes L0 theta_i / 2 pi turns in the original length
    block = config["rope_scaling"]
    d = config.get("qk_rope_head_dim") or config.get("head_dim") \
        or config["hidden_size"] // config["num_attention_heads"]
    d = int(d)
    r = int(d * config.get("partial_rotary_factor", 1))   # the rotated width: YaRN sees a head this wide
    base = float(config["rope_theta"])
    L0 = int(block["original_max_position_embeddings"])
    fast = float(block.get("beta_fast", 32))
    slow = float(block.get("beta_slow", 1))

    def pair_with(turns):
        return r * math.log(L0 / (turns * 2 * math.pi)) / (2 * math.log(base))

    low = max(math.floor(pair_with(fast)), 0)
    high = min(math.ceil(pair_with(slow)), r - 1)
    if low == high:
        high += 0.001
    kept = blended = interpolated = 0
    for i in range(r // 2):
        ramp = min(max((i - low) / (high - low), 0.0), 1.0)
        if ramp == 0.0:
            kept += 1
        elif ramp == 1.0:
            interpolated += 1
        else:
            blended += 1
    print("pairs:", kept, blended, interpolated, "and", d // 2 - r // 2, "still")
    return [kept, blended, interpolated, d // 2 - r // 2]
''',
    'needle_weights': r'''import math

def needle_weights(margin, n, L0):
    # closed form: the needle's e^(lambda a) against n - 1 keys at e^0
    lam = math.log(n, L0) if n > L0 else 1
    return [1 / (1 + (n - 1) * math.exp(-margin)), 1 / (1 + (n - 1) * math.exp(-lam * margin))]
''',
    'colleague_error': r'''def colleague_error(length, group_size, window):
    # loops: the paper's distance pair by pair, against the colleague's matrix
    theirs = colleague_self_extend(length, group_size, window)
    out = [[0] * length for _ in range(length)]
    for i in range(length):
        for j in range(i + 1):
            if i - j < window:
                paper = i - j
            else:
                paper = (i // group_size - j // group_size) + (window - window // group_size)
            out[i][j] = int(theirs[i][j]) - paper
    return out
''',
    'self_extend_logits': r'''import math

def self_extend_logits(q, k, group_size, window, base):
    # the two passes written as explicit position ids, merged row by row in float32
    q = np.asarray(q, dtype=np.float32)
    k = np.asarray(k, dtype=np.float32)
    n = q.shape[0]
    ids = np.arange(n)
    shift = window - math.floor(window / group_size)
    passes = {
        "neighbour": (ids, ids),
        "grouped": (ids // group_size + shift, ids // group_size),
    }
    logits = {}
    for name, (qi, ki) in passes.items():
        rq = posenc.apply_rope(q, qi, base).astype(np.float32)
        rk = posenc.apply_rope(k, ki, base).astype(np.float32)
        logits[name] = rq @ rk.T
    out = np.full((n, n), -np.inf, dtype=np.float32)
    for i in range(n):
        for j in range(i + 1):
            out[i, j] = logits["neighbour" if i - j < window else "grouped"][i, j]
    return out
''',
}


# Correct, and printing a numpy RuntimeWarning on the way: full marks.
WARNING_VARIANTS = {
    'needle_weights': r'''def needle_weights(margin, n, L0):
    # the entropy-per-key ratio is computed for n = 1 too and thrown away there: divide by zero warning
    per_key = np.where(n > 1, 1.0 / np.log(np.float64(n)), 0.0)
    scale = np.where(n > L0, np.log(np.float64(n)) / np.log(np.float64(L0)), 1.0)
    weights = []
    for lam in (1.0, float(scale)):
        e = np.exp(lam * margin)
        weights.append(float(e / (e + (n - 1))))
    return tuple(weights)
''',
}


# Correct in float32 throughout, written by hand (the others: the model solution wrapped in float32).
FLOAT32_BY_HAND = {
}


# Exercises whose prompt pins float64, with the reason the prompt gives: no float32 student is owed there.
FLOAT64_PINNED = {
}


# Plausible wrong answers, each a solution cell's source with a mistake a student would make: each must lose
# its exercise's points on every draw ({solution id: {what is wrong: source}}).
PLAUSIBLY_WRONG = {
    'yarn_pair_kinds': {
        'partial_rotary_factor ignored (every pair of the head rotates)': r'''def yarn_pair_kinds(config):
    block = config["rope_scaling"]
    if "qk_rope_head_dim" in config:
        d = int(config["qk_rope_head_dim"])
    elif "head_dim" in config:
        d = int(config["head_dim"])
    else:
        d = int(config["hidden_size"]) // int(config["num_attention_heads"])
    base, s = float(config["rope_theta"]), float(block["factor"])
    theta = posenc.rope_frequencies(d, base)
    freqs, _ = posenc.yarn(d, base, s, int(block["original_max_position_embeddings"]),
                           beta_fast=float(block.get("beta_fast", 32.0)), beta_slow=float(block.get("beta_slow", 1.0)))
    kept = int(np.sum(freqs == theta))
    interp = int(np.sum(np.isclose(freqs, theta / s, rtol=1e-12)))
    return kept, d // 2 - kept - interp, interp, 0
''',
        'the partial head keeps the full head spectrum (p-RoPE style), YaRN over d, only the first pairs counted': r'''def yarn_pair_kinds(config):
    block = config["rope_scaling"]
    if "qk_rope_head_dim" in config:
        d = int(config["qk_rope_head_dim"])
    elif "head_dim" in config:
        d = int(config["head_dim"])
    else:
        d = int(config["hidden_size"]) // int(config["num_attention_heads"])
    r = int(d * config.get("partial_rotary_factor", 1.0))
    base, s = float(config["rope_theta"]), float(block["factor"])
    theta = posenc.rope_frequencies(d, base)[: r // 2]
    freqs, _ = posenc.yarn(d, base, s, int(block["original_max_position_embeddings"]),
                           beta_fast=float(block.get("beta_fast", 32.0)), beta_slow=float(block.get("beta_slow", 1.0)))
    freqs = freqs[: r // 2]
    kept = int(np.sum(freqs == theta))
    interp = int(np.sum(np.isclose(freqs, theta / s, rtol=1e-12)))
    return kept, r // 2 - kept - interp, interp, d // 2 - r // 2
''',
        'the head size from head_dim alone (the whole MLA head, or hidden_size / heads ignored)': r'''def yarn_pair_kinds(config):
    block = config["rope_scaling"]
    d = int(config["head_dim"]) if "head_dim" in config else int(config["hidden_size"]) // int(config["num_attention_heads"])
    r = int(d * config.get("partial_rotary_factor", 1.0))
    base, s = float(config["rope_theta"]), float(block["factor"])
    theta = posenc.rope_frequencies(r, base)
    freqs, _ = posenc.yarn(r, base, s, int(block["original_max_position_embeddings"]),
                           beta_fast=float(block.get("beta_fast", 32.0)), beta_slow=float(block.get("beta_slow", 1.0)))
    kept = int(np.sum(freqs == theta))
    interp = int(np.sum(np.isclose(freqs, theta / s, rtol=1e-12)))
    return kept, r // 2 - kept - interp, interp, d // 2 - r // 2
''',
        'the extended length (max_position_embeddings) as the training length': r'''def yarn_pair_kinds(config):
    block = config["rope_scaling"]
    if "qk_rope_head_dim" in config:
        d = int(config["qk_rope_head_dim"])
    elif "head_dim" in config:
        d = int(config["head_dim"])
    else:
        d = int(config["hidden_size"]) // int(config["num_attention_heads"])
    r = int(d * config.get("partial_rotary_factor", 1.0))
    base, s = float(config["rope_theta"]), float(block["factor"])
    theta = posenc.rope_frequencies(r, base)
    freqs, _ = posenc.yarn(r, base, s, int(config.get("max_position_embeddings", 4 * block["original_max_position_embeddings"])),
                           beta_fast=float(block.get("beta_fast", 32.0)), beta_slow=float(block.get("beta_slow", 1.0)))
    kept = int(np.sum(freqs == theta))
    interp = int(np.sum(np.isclose(freqs, theta / s, rtol=1e-12)))
    return kept, r // 2 - kept - interp, interp, d // 2 - r // 2
''',
    },
    'colleague_error': {
        'paper minus colleague (the sign of the error turned round)': r'''def colleague_error(length, group_size, window):
    i = np.arange(length)[:, None]
    j = np.arange(length)[None, :]
    paper = np.where(i - j < window, i - j, i // group_size - j // group_size + window - window // group_size)
    return np.where(j <= i, paper - colleague_self_extend(length, group_size, window), 0)
''',
        'a mask of the wrong pairs instead of the size of the error': r'''def colleague_error(length, group_size, window):
    i = np.arange(length)[:, None]
    j = np.arange(length)[None, :]
    paper = np.where(i - j < window, i - j, i // group_size - j // group_size + window - window // group_size)
    return np.where(j <= i, colleague_self_extend(length, group_size, window) != paper, 0).astype(int)
''',
        'the window edge counted as a neighbour (i - j <= W)': r'''def colleague_error(length, group_size, window):
    i = np.arange(length)[:, None]
    j = np.arange(length)[None, :]
    paper = np.where(i - j <= window, i - j, i // group_size - j // group_size + window - window // group_size)
    return np.where(j <= i, colleague_self_extend(length, group_size, window) - paper, 0)
''',
    },
    'self_extend_logits': {
        'the shift given to the keys instead of the queries': r'''def self_extend_logits(q, k, group_size, window, base):
    pos = np.arange(len(q))
    near = posenc.apply_rope(q, pos, base) @ posenc.apply_rope(k, pos, base).T
    shift = window - window // group_size
    far = posenc.apply_rope(q, pos // group_size, base) @ posenc.apply_rope(k, pos // group_size + shift, base).T
    return np.where(pos[:, None] - pos[None, :] < window, near, far)
''',
        'no shift in the grouped pass (the colleague\'s second mistake, moved into ids)': r'''def self_extend_logits(q, k, group_size, window, base):
    pos = np.arange(len(q))
    near = posenc.apply_rope(q, pos, base) @ posenc.apply_rope(k, pos, base).T
    far = posenc.apply_rope(q, pos // group_size, base) @ posenc.apply_rope(k, pos // group_size, base).T
    return np.where(pos[:, None] - pos[None, :] < window, near, far)
''',
        'the shift W // G (the neighbour window divided by the group) instead of W - W // G': r'''def self_extend_logits(q, k, group_size, window, base):
    pos = np.arange(len(q))
    near = posenc.apply_rope(q, pos, base) @ posenc.apply_rope(k, pos, base).T
    far = posenc.apply_rope(q, pos // group_size + window // group_size, base) @ posenc.apply_rope(k, pos // group_size, base).T
    return np.where(pos[:, None] - pos[None, :] < window, near, far)
''',
        'the grouped pass for every key (the neighbours grouped too)': r'''def self_extend_logits(q, k, group_size, window, base):
    pos = np.arange(len(q))
    shift = window - window // group_size
    return posenc.apply_rope(q, pos // group_size + shift, base) @ posenc.apply_rope(k, pos // group_size, base).T
''',
    },
    'needle_weights': {
        'the scale applied below the training length too (ln n / ln L0 for every n)': r'''def needle_weights(margin, n, L0):
    scale = np.log(n) / np.log(L0)
    plain = 1 / (1 + (n - 1) * np.exp(-margin))
    return float(plain), float(1 / (1 + (n - 1) * np.exp(-scale * margin)))
''',
        'the scale on both queries and keys (its square on the logits, as YaRN applies its factor)': r'''def needle_weights(margin, n, L0):
    scale = np.log(n) / np.log(L0) if n > L0 else 1.0
    plain = 1 / (1 + (n - 1) * np.exp(-margin))
    return float(plain), float(1 / (1 + (n - 1) * np.exp(-scale ** 2 * margin)))
''',
        'n other keys besides the needle (n + 1 keys in all)': r'''def needle_weights(margin, n, L0):
    scale = np.log(n) / np.log(L0) if n > L0 else 1.0
    plain = 1 / (1 + n * np.exp(-margin))
    return float(plain), float(1 / (1 + n * np.exp(-scale * margin)))
''',
    },
}
