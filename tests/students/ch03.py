"""The students of chapter 03_learned: correct answers written differently from the model solutions, and
plausible wrong ones. Assembled for the whole course by tests/differently_correct.py (read its docstring)."""


CHAPTER = '03_learned'


# Correct, written differently (loops, lists, math instead of numpy, other formulas, prints): full marks.
DIFFERENT = {
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
}


# Correct, and printing a numpy RuntimeWarning on the way: full marks.
WARNING_VARIANTS = {
}


# Correct in float32 throughout, written by hand (the others: the model solution wrapped in float32).
FLOAT32_BY_HAND = {
    'interpolate_table': r'''def interpolate_table(table, new_len):
    table = np.asarray(table, dtype=np.float32)
    x = np.linspace(0, len(table) - 1, new_len, dtype=np.float32)
    left = np.minimum(np.floor(x).astype(int), len(table) - 2)
    w = (x - left)[:, None]
    return (1 - w) * table[left] + w * table[left + 1]
''',
}


# Exercises whose prompt pins float64, with the reason the prompt gives: no float32 student is owed there.
FLOAT64_PINNED = {
}


# Plausible wrong answers, each a solution cell's source with a mistake a student would make: each must lose
# its exercise's points on every draw ({solution id: {what is wrong: source}}).
PLAUSIBLY_WRONG = {
}
