"""The students of chapter 09_choosing: correct answers written differently from the model solutions, and
plausible wrong ones. Assembled for the whole course by tests/differently_correct.py (read its docstring)."""


CHAPTER = '09_choosing'


# Correct, written differently (loops, lists, math instead of numpy, other formulas, prints): full marks.
DIFFERENT = {
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
