"""The students of chapter 09_choosing: correct answers written differently from the model solutions, and
plausible wrong ones. Assembled for the whole course by tests/differently_correct.py (read its docstring)."""


CHAPTER = '09_choosing'


# Correct, written differently (loops, lists, math instead of numpy, other formulas, prints): full marks.
DIFFERENT = {
    'unbeaten': r'''import math


def unbeaten(results, length):
    runs = ArenaResults(results)
    m, z = float(runs.rule["margin"]), float(runs.rule["z"])
    table = {}
    for name in runs.sampled_names():
        if name == "dynamic_ntk":
            for f in runs.dynamic_factors():
                table["dynamic_ntk@" + format(f, "g")] = runs.sampled_windows(name, length, factor=f).tolist()
        else:
            table[name] = runs.sampled_windows(name, length).tolist()

    def beats(a, b):  # a lower than b in every seed, beyond z SE and the margin
        for row_a, row_b in zip(a, b):
            diffs = [x - y for x, y in zip(row_a, row_b)]
            n = len(diffs)
            mean = sum(diffs) / n
            var = sum((d - mean) ** 2 for d in diffs) / (n - 1)
            if not mean < -max(z * math.sqrt(var / n), m):
                return False
        return True

    keep = [a for a in table if not any(beats(table[b], table[a]) for b in table if b != a)]
    print("unbeaten at", length, ":", keep)
    return sorted(keep)
''',
}


# Correct, and printing a numpy RuntimeWarning on the way: full marks.
WARNING_VARIANTS = {
}


# Correct in float32 throughout, written by hand (the others: the model solution wrapped in float32).
FLOAT32_BY_HAND = {
}


# Exercises whose prompt pins float64, with the reason the prompt gives: no float32 student is owed.
FLOAT64_PINNED = {
}

_SETTINGS = r'''
    runs = ArenaResults(results)
    margin, z = runs.rule["margin"], runs.rule["z"]
    losses = {name: runs.sampled_windows(name, length)
              for name in runs.sampled_names() if name != "dynamic_ntk"}
    for f in runs.dynamic_factors():
        losses[f"dynamic_ntk@{f:g}"] = runs.sampled_windows("dynamic_ntk", length, factor=f)
'''

_END = r'''
    beaten = {a for a in losses for b in losses if b != a and lower(losses[b], losses[a])}
    return sorted(set(losses) - beaten)
'''


def _rule(body):
    return "def unbeaten(results, length):" + _SETTINGS + "\n    def lower(a, b):\n" + body + _END


# Plausible wrong answers, each a solution cell's source with a mistake a student would make: each must lose
# its exercise's points on every draw ({solution id: {what is wrong: source}}).
PLAUSIBLY_WRONG = {
    'unbeaten': {
        "the colleague's numbers: every static setting and plain RoPE over all positions": r'''def unbeaten(results, length):
    runs = ArenaResults(results)
    margin, z = runs.rule["margin"], runs.rule["z"]
    losses = {"rope": runs.windows("rope", length)}
    for name in runs.sampled_names():
        if "@" in name:
            method, s = name.split("@")
            losses[name] = runs.extension_windows(method, length, scale=float(s))
    for f in runs.dynamic_factors():
        losses[f"dynamic_ntk@{f:g}"] = runs.sampled_windows("dynamic_ntk", length, factor=f)

    def lower(a, b):
        d = a - b
        se = d.std(axis=1, ddof=1) / np.sqrt(d.shape[1])
        return bool(np.all(d.mean(axis=1) < -np.maximum(z * se, margin)))
''' + _END,
        "the seeds' ranges (the earlier rule), ignoring the pairing": _rule(r'''        return bool(a.mean(axis=1).max() < b.mean(axis=1).min())
'''),
        "the standard error alone, no margin": _rule(r'''        d = a - b
        se = d.std(axis=1, ddof=1) / np.sqrt(d.shape[1])
        return bool(np.all(d.mean(axis=1) < -z * se))
'''),
        "the margin alone, no standard error": _rule(r'''        d = a - b
        return bool(np.all(d.mean(axis=1) < -margin))
'''),
        "the standard deviation with n instead of n - 1": _rule(r'''        d = a - b
        se = d.std(axis=1) / np.sqrt(d.shape[1])
        return bool(np.all(d.mean(axis=1) < -np.maximum(z * se, margin)))
'''),
        "the seeds pooled: one mean and one standard error over every window": _rule(r'''        d = (a - b).ravel()
        se = d.std(ddof=1) / np.sqrt(d.size)
        return bool(d.mean() < -max(z * se, margin))
'''),
        "the lowest mean wins": r'''def unbeaten(results, length):''' + _SETTINGS + r'''
    return [min(losses, key=lambda name: losses[name].mean())]
''',
    },
}
