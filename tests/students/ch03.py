"""The students of chapter 03_learned: correct answers written differently from the model solutions, and
plausible wrong ones. Assembled for the whole course by tests/differently_correct.py (read its docstring)."""


CHAPTER = '03_learned'


# Correct, written differently (loops, lists, math instead of numpy, other formulas, prints): full marks.
DIFFERENT = {
    'resample_vit_table': r'''def resample_vit_table(table, old_grid, new_grid):
    # plain lists; each new patch blends its four old neighbours directly
    rows = [list(map(float, r)) for r in table]
    R, C = old_grid
    NR, NC = new_grid
    grid = rows[1:]
    out = [rows[0]]
    for a in range(NR):
        y = a * (R - 1) / (NR - 1)
        i = min(int(y), R - 2)
        u = y - i
        for b in range(NC):
            x = b * (C - 1) / (NC - 1)
            j = min(int(x), C - 2)
            w = x - j
            corners = [((1 - u) * (1 - w), i, j), ((1 - u) * w, i, j + 1),
                       (u * (1 - w), i + 1, j), (u * w, i + 1, j + 1)]
            out.append([sum(k * grid[r * C + c][e] for k, r, c in corners)
                        for e in range(len(rows[0]))])
    print("resampled", old_grid, "to", new_grid)
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
    'row_gradients': r'''from torch.autograd import grad


def row_gradients(ids, upstream, max_len):
    # one posenc layer (float32), one sequence at a time, positions= its ids
    ids = np.asarray(ids)
    upstream = torch.tensor(np.asarray(upstream), dtype=torch.float32)
    layer = posenc.LearnedPositionalEmbedding(max_len, upstream.shape[-1])
    loss = 0
    for b in range(ids.shape[0]):
        x = torch.zeros(upstream.shape[1], upstream.shape[2])
        h = layer(x, positions=ids[b].tolist())
        loss = loss + (h * upstream[b]).sum()
    (g,) = grad(loss, layer.weight)
    print("gradient rows:", g.shape[0])
    return g.tolist()
''',
}


# Correct, and printing a numpy RuntimeWarning on the way: full marks.
WARNING_VARIANTS = {
}


# Correct in float32 throughout, written by hand (the others: the model solution wrapped in float32).
FLOAT32_BY_HAND = {
    'resample_vit_table': r'''import torch.nn.functional as F


def resample_vit_table(table, old_grid, new_grid):
    t = torch.as_tensor(np.asarray(table, dtype=np.float32))
    grid = t[1:].reshape(*old_grid, -1).permute(2, 0, 1)[None]  # (1, d, rows, cols)
    new = F.interpolate(grid, size=tuple(new_grid), mode="bilinear",
                        align_corners=True)[0].permute(1, 2, 0)
    return torch.cat([t[:1], new.reshape(-1, t.shape[1])])
''',
}


# Exercises whose prompt pins float64, with the reason the prompt gives: no float32 student is owed there.
FLOAT64_PINNED = {
}


# Plausible wrong answers, each a solution cell's source with a mistake a student would make: each must lose
# its exercise's points on every draw ({solution id: {what is wrong: source}}).
PLAUSIBLY_WRONG = {
    'resample_vit_table': {
        "torch's default resize (corners not aligned)": r'''import torch.nn.functional as F


def resample_vit_table(table, old_grid, new_grid):
    t = torch.as_tensor(np.asarray(table, dtype=np.float64))
    grid = t[1:].reshape(*old_grid, -1).permute(2, 0, 1)[None]
    new = F.interpolate(grid, size=tuple(new_grid), mode="bilinear")[0]
    return torch.cat([t[:1], new.permute(1, 2, 0).reshape(-1, t.shape[1])])
''',
        'reshapes the grid column by column': r'''import torch.nn.functional as F


def resample_vit_table(table, old_grid, new_grid):
    t = torch.as_tensor(np.asarray(table, dtype=np.float64))
    rows, cols = old_grid
    grid = t[1:].reshape(cols, rows, -1).permute(2, 1, 0)[None]  # (1, d, rows, cols)
    new = F.interpolate(grid, size=tuple(new_grid), mode="bilinear",
                        align_corners=True)[0]
    return torch.cat([t[:1], new.permute(1, 2, 0).reshape(-1, t.shape[1])])
''',
        "resamples the class token's row with the grid": r'''def resample_vit_table(table, old_grid, new_grid):
    table = np.asarray(table, dtype=np.float64)
    n_old, n_new = table.shape[0], 1 + new_grid[0] * new_grid[1]
    where = np.linspace(0, n_old - 1, n_new)
    return np.stack([np.interp(where, np.arange(n_old), col)
                     for col in table.T], axis=1)
''',
    },
    'row_gradients': {
        'reads rows by slot, ignoring the ids': r'''def row_gradients(ids, upstream, max_len):
    g = torch.as_tensor(np.asarray(upstream, dtype=np.float64))
    table = torch.zeros(max_len, g.shape[-1], dtype=torch.float64, requires_grad=True)
    seq = g.shape[1]
    slots = torch.clamp(torch.arange(seq), max=max_len - 1)
    (table[slots] * g).sum().backward()
    return table.grad.numpy()
''',
        'averages over the batch instead of summing': r'''def row_gradients(ids, upstream, max_len):
    ids = torch.as_tensor(np.asarray(ids), dtype=torch.long)
    g = torch.as_tensor(np.asarray(upstream, dtype=np.float64))
    table = torch.zeros(max_len, g.shape[-1], dtype=torch.float64, requires_grad=True)
    ((table[ids] * g).sum() / ids.shape[0]).backward()
    return table.grad.numpy()
''',
        'one gradient per distinct id (repeats of an id count once)': r'''def row_gradients(ids, upstream, max_len):
    ids = np.asarray(ids)
    g = torch.as_tensor(np.asarray(upstream, dtype=np.float64))
    table = torch.zeros(max_len, g.shape[-1], dtype=torch.float64, requires_grad=True)
    out = torch.zeros(max_len, g.shape[-1], dtype=torch.float64)
    for b in range(ids.shape[0]):
        first = {}
        for t, p in enumerate(ids[b].tolist()):
            first.setdefault(p, t)
        rows = list(first)
        slots = [first[p] for p in rows]
        (table[rows] * g[b, slots]).sum().backward()
    return table.grad.numpy()
''',
    },
}
