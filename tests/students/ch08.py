"""The students of chapter 08_arena: correct answers written differently from the model solutions, and
plausible wrong ones. Assembled for the whole course by tests/differently_correct.py (read its docstring)."""


CHAPTER = '08_arena'


# Correct, written differently (loops, lists, math instead of numpy, other formulas, prints): full marks.
DIFFERENT = {
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
}
