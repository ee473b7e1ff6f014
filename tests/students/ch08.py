"""The students of chapter 08_arena: correct answers written differently from the model solutions, and
plausible wrong ones. Assembled for the whole course by tests/differently_correct.py (read its docstring)."""


CHAPTER = '08_arena'

# The cell's given code after the two functions (the comparisons of the earlier edition), the same in every student.
_EARLIER = r'''

longest_length = lengths[-1]
EARLIER = [(m, L, m, L_train) for m in ("alibi", "t5", "sinusoidal", "rope", "none")
           for L in lengths if L != L_train]
EARLIER += [(a, L_train, b, L_train) for i, a in enumerate(SCHEMES)
            for b in SCHEMES[i + 1:]]
EARLIER += [(a, longest_length, b, longest_length) for a in ("rope", "sinusoidal")
            for b in ("sinusoidal", "none", "t5", "alibi", "rope_ceiling") if a != b]
EARLIER += [("rope_ceiling", L_train, "rope", L_train)]
EARLIER += [("alibi", L, "rope_ceiling", L) for L in lengths]
changed_here = changed_verdicts(result, EARLIER)
print(len(changed_here), "of", len(EARLIER), "verdicts change")
'''

# changed_verdicts as the model solution writes it, for the wrong students whose mistake is in paired_call
_CHANGED = r'''

def changed_verdicts(results, comparisons):
    read = ArenaResults(results)
    margin, z = read.rule["margin"], read.rule["z"]
    changed = []
    for model_a, length_a, model_b, length_b in comparisons:
        a, b = read.windows(model_a, length_a), read.windows(model_b, length_b)
        mean_a, mean_b = a.mean(axis=1), b.mean(axis=1)
        if mean_a.max() < mean_b.min():
            before = "lower"
        elif mean_a.min() > mean_b.max():
            before = "higher"
        else:
            before = "tie"
        now = paired_call(a, b, margin, z)
        if before != now and {before, now} != {"tie", "unresolved"}:
            changed.append((model_a, length_a, model_b, length_b, before, now))
    return changed
'''

# paired_call as the model solution writes it, for the wrong students whose mistake is in changed_verdicts
_CALL = r'''def paired_call(a, b, margin, z):
    d = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    mean = d.mean(axis=1)
    se = d.std(axis=1, ddof=1) / np.sqrt(d.shape[1])
    threshold = np.maximum(z * se, margin)
    if np.all(mean < -threshold):
        return "lower"
    if np.all(mean > threshold):
        return "higher"
    return "unresolved"
'''


# Correct, written differently (loops, lists, math instead of numpy, other formulas, prints): full marks.
DIFFERENT = {
    'paired_call': r'''import math


def paired_call(a, b, margin, z):
    rows_a = [[float(x) for x in row] for row in a]
    rows_b = [[float(x) for x in row] for row in b]
    signs = []
    for ra, rb in zip(rows_a, rows_b):
        diffs = [x - y for x, y in zip(ra, rb)]
        n = len(diffs)
        mean = sum(diffs) / n
        var = sum((x - mean) ** 2 for x in diffs) / (n - 1)
        limit = max(z * math.sqrt(var / n), margin)
        if mean < -limit:
            signs.append(-1)
        elif mean > limit:
            signs.append(1)
        else:
            signs.append(0)
    if all(s == -1 for s in signs):
        return "lower"
    if all(s == 1 for s in signs):
        return "higher"
    return "unresolved"


def changed_verdicts(results, comparisons):
    runs_here = ArenaResults(results)
    rule = runs_here.rule
    found = []
    for model_a, length_a, model_b, length_b in comparisons:
        wa = runs_here.windows(model_a, length_a)
        wb = runs_here.windows(model_b, length_b)
        seeds_a = [sum(row) / len(row) for row in wa.tolist()]
        seeds_b = [sum(row) / len(row) for row in wb.tolist()]
        old = ("lower" if max(seeds_a) < min(seeds_b)
               else "higher" if min(seeds_a) > max(seeds_b) else "tie")
        new = paired_call(wa.tolist(), wb.tolist(), float(rule["margin"]), float(rule["z"]))
        same = old == new or (old == "tie" and new == "unresolved")
        if not same:
            found.append((model_a, length_a, model_b, length_b, old, new))
    print(len(found), "changes")
    return found
''' + _EARLIER,
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
}


# Correct, and printing a numpy RuntimeWarning on the way: full marks.
WARNING_VARIANTS = {
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
    'paired_call': {
        'pools every seed and window into one difference (the sign need not hold in every seed)': r'''def paired_call(a, b, margin, z):
    d = (np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)).ravel()
    mean = d.mean()
    limit = max(z * d.std(ddof=1) / np.sqrt(d.size), margin)
    if mean < -limit:
        return "lower"
    if mean > limit:
        return "higher"
    return "unresolved"
''' + _CHANGED + _EARLIER,
        'compares each seed with the margin only (ignores the windows\' standard error)': r'''def paired_call(a, b, margin, z):
    mean = (np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)).mean(axis=1)
    if np.all(mean < -margin):
        return "lower"
    if np.all(mean > margin):
        return "higher"
    return "unresolved"
''' + _CHANGED + _EARLIER,
        'standard error with the population standard deviation (divides by W, not W - 1)': r'''def paired_call(a, b, margin, z):
    d = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    mean = d.mean(axis=1)
    threshold = np.maximum(z * d.std(axis=1) / np.sqrt(d.shape[1]), margin)
    if np.all(mean < -threshold):
        return "lower"
    if np.all(mean > threshold):
        return "higher"
    return "unresolved"
''' + _CHANGED + _EARLIER,
        'counts a range-rule tie against an unresolved paired verdict as a change': _CALL + r'''

def changed_verdicts(results, comparisons):
    read = ArenaResults(results)
    changed = []
    for model_a, length_a, model_b, length_b in comparisons:
        a, b = read.windows(model_a, length_a), read.windows(model_b, length_b)
        mean_a, mean_b = a.mean(axis=1), b.mean(axis=1)
        before = ("lower" if mean_a.max() < mean_b.min()
                  else "higher" if mean_a.min() > mean_b.max() else "tie")
        now = paired_call(a, b, read.rule["margin"], read.rule["z"])
        if before != now:
            changed.append((model_a, length_a, model_b, length_b, before, now))
    return changed
''' + _EARLIER,
    },
    'false_alarm': {
        'counts one direction only (every seed of A below every seed of B)': r'''from math import comb


def false_alarm(n_a, n_b):
    return 1.0 / comb(int(n_a) + int(n_b), int(n_a))
''',
        'multiplies independent coin flips, one per seed': r'''def false_alarm(n_a, n_b):
    return 2.0 * 0.5 ** (int(n_a) + int(n_b) - 1)
''',
    },
    'shortest_training_length': {
        'takes max_distance + 1 (the last bucket starts before max_distance)': r'''def shortest_training_length(num_buckets, max_distance):
    return int(max_distance) + 1


t5_default = shortest_training_length(32, 128)
''',
    },
}
