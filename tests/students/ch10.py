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
    base = float(config["rope_theta"])
    L0 = int(block["original_max_position_embeddings"])
    fast = float(block.get("beta_fast", 32))
    slow = float(block.get("beta_slow", 1))

    def pair_with(turns):
        return d * math.log(L0 / (turns * 2 * math.pi)) / (2 * math.log(base))

    low = max(math.floor(pair_with(fast)), 0)
    high = min(math.ceil(pair_with(slow)), d - 1)
    if low == high:
        high += 0.001
    kept = blended = interpolated = 0
    for i in range(d // 2):
        ramp = min(max((i - low) / (high - low), 0.0), 1.0)
        if ramp == 0.0:
            kept += 1
        elif ramp == 1.0:
            interpolated += 1
        else:
            blended += 1
    print("pairs:", kept, blended, interpolated)
    return [kept, blended, interpolated]
''',
    'needle_weights': r'''import math

def needle_weights(margin, n, L0):
    # closed form: the needle's e^(lambda a) against n - 1 keys at e^0
    lam = math.log(n, L0) if n > L0 else 1
    return [1 / (1 + (n - 1) * math.exp(-margin)), 1 / (1 + (n - 1) * math.exp(-lam * margin))]
''',
    'my_self_extend': r'''def my_self_extend(length, group_size, window):
    out = []
    for i in range(length):
        row = []
        for j in range(length):
            if j > i:
                row.append(-1)
            elif i - j < window:
                row.append(i - j)
            else:
                row.append(i // group_size - j // group_size + window - window // group_size)
        out.append(row)
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
        'the head size from head_dim alone (the whole MLA head, or hidden_size / heads ignored)': r'''def yarn_pair_kinds(config):
    block = config["rope_scaling"]
    d = int(config["head_dim"]) if "head_dim" in config else int(config["hidden_size"]) // int(config["num_attention_heads"])
    base, s = float(config["rope_theta"]), float(block["factor"])
    theta = posenc.rope_frequencies(d, base)
    freqs, _ = posenc.yarn(d, base, s, int(block["original_max_position_embeddings"]),
                           beta_fast=float(block.get("beta_fast", 32.0)), beta_slow=float(block.get("beta_slow", 1.0)))
    kept = int(np.sum(freqs == theta))
    interp = int(np.sum(np.isclose(freqs, theta / s, rtol=1e-12)))
    return kept, d // 2 - kept - interp, interp
''',
        'the extended length (max_position_embeddings) as the training length': r'''def yarn_pair_kinds(config):
    block = config["rope_scaling"]
    if "qk_rope_head_dim" in config:
        d = int(config["qk_rope_head_dim"])
    elif "head_dim" in config:
        d = int(config["head_dim"])
    else:
        d = int(config["hidden_size"]) // int(config["num_attention_heads"])
    base, s = float(config["rope_theta"]), float(block["factor"])
    theta = posenc.rope_frequencies(d, base)
    freqs, _ = posenc.yarn(d, base, s, int(config["max_position_embeddings"]),
                           beta_fast=float(block.get("beta_fast", 32.0)), beta_slow=float(block.get("beta_slow", 1.0)))
    kept = int(np.sum(freqs == theta))
    interp = int(np.sum(np.isclose(freqs, theta / s, rtol=1e-12)))
    return kept, d // 2 - kept - interp, interp
''',
        'the head size from hidden_size / num_attention_heads, whatever head_dim says': r'''def yarn_pair_kinds(config):
    block = config["rope_scaling"]
    d = int(config["hidden_size"]) // int(config["num_attention_heads"])
    base, s = float(config["rope_theta"]), float(block["factor"])
    theta = posenc.rope_frequencies(d, base)
    freqs, _ = posenc.yarn(d, base, s, int(block["original_max_position_embeddings"]),
                           beta_fast=float(block.get("beta_fast", 32.0)), beta_slow=float(block.get("beta_slow", 1.0)))
    kept = int(np.sum(freqs == theta))
    interp = int(np.sum(np.isclose(freqs, theta / s, rtol=1e-12)))
    return kept, d // 2 - kept - interp, interp
''',
    },
    'my_self_extend': {
        'the neighbours grouped too (the colleague fixed only the shift)': r'''def my_self_extend(length, group_size, window):
    i = np.arange(length)[:, None]
    j = np.arange(length)[None, :]
    grouped = i // group_size - j // group_size + window - window // group_size
    return np.where(j <= i, grouped, -1)
''',
        'the window without the shift (the grouped distances fall back below the window)': r'''def my_self_extend(length, group_size, window):
    i = np.arange(length)[:, None]
    j = np.arange(length)[None, :]
    grouped = i // group_size - j // group_size
    return np.where(j <= i, np.where(i - j < window, i - j, grouped), -1)
''',
        'the window edge included (i - j <= W keeps one distance too many)': r'''def my_self_extend(length, group_size, window):
    i = np.arange(length)[:, None]
    j = np.arange(length)[None, :]
    grouped = i // group_size - j // group_size + window - window // group_size
    return np.where(j <= i, np.where(i - j <= window, i - j, grouped), -1)
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
