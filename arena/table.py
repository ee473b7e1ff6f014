r"""What the learned position table learned, and what two summary statistics can and cannot show about it.

Two statistics of the table's cosine-similarity matrix :math:`S_{mn} = \cos(P_m, P_n)`:

- *offset-explained variance*: the share of the variance of S explained by the offset |m - n| alone (1 for a
  Toeplitz matrix, as the sinusoidal table's is up to the effect of finite width);
- *correlation with the sinusoidal similarity*: Pearson's r between S and the sinusoidal table's similarity.

Each is compared with two nulls of the same shape: i.i.d. Gaussian tables (no structure at all), and smooth
random tables whose rows follow an AR(1) process, :math:`P_m = \rho P_{m-1} + \sqrt{1 - \rho^2}\,\epsilon_m`, with
ρ the learned table's own lag-1 autocorrelation (smoothness along positions, and no sinusoid). A smooth table
without any sinusoid already has similarity that decays with |m - n|, so beating the i.i.d. null shows
structure, and only beating the smooth null says more than "the table is smooth".
"""

from __future__ import annotations

import numpy as np

from posenc.sinusoidal import sinusoidal


def cosine_similarity(table: np.ndarray) -> np.ndarray:
    unit = table / np.linalg.norm(table, axis=1, keepdims=True)
    return unit @ unit.T


def statistics(table: np.ndarray, reference: np.ndarray) -> dict:
    """Offset-explained variance of the table's similarity, and its correlation with ``reference`` (a
    similarity matrix of the same shape)."""
    sim = cosine_similarity(table)
    n = len(sim)
    offsets = np.abs(np.subtract.outer(np.arange(n), np.arange(n)))
    mean_by_offset = np.bincount(offsets.ravel(), weights=sim.ravel()) / np.bincount(offsets.ravel())
    explained = 1 - np.var(sim - mean_by_offset[offsets]) / np.var(sim)
    return {"offset_explained_variance": float(explained),
            "correlation_with_sinusoidal_similarity": float(np.corrcoef(sim.ravel(), reference.ravel())[0, 1])}


def lag1_autocorrelation(table: np.ndarray) -> float:
    """ρ of the rows: the correlation of P[m, k] with P[m + 1, k], pooled over dimensions (columns centred)."""
    centred = table - table.mean(0)
    return float((centred[:-1] * centred[1:]).sum() / (centred ** 2).sum())


def smooth_random(shape, rho: float, rng) -> np.ndarray:
    """A table whose rows follow AR(1) with coefficient ρ from a stationary start."""
    rows = np.empty(shape)
    rows[0] = rng.normal(size=shape[1])
    for m in range(1, shape[0]):
        rows[m] = rho * rows[m - 1] + np.sqrt(1 - rho ** 2) * rng.normal(size=shape[1])
    return rows


def analysis(table: np.ndarray, base: float, draws: int, seed: int = 0) -> dict:
    """The learned table's statistics, the sinusoidal table's, and both nulls' (mean and 2.5 / 97.5 % over
    ``draws`` tables each)."""
    table = np.asarray(table, dtype=np.float64)
    n, d = table.shape
    reference = cosine_similarity(sinusoidal(np.arange(n), d, base))
    rho = lag1_autocorrelation(table)
    rng = np.random.default_rng(seed)
    nulls = {}
    for name, draw in (("iid", lambda: rng.normal(size=(n, d))), ("smooth", lambda: smooth_random((n, d), rho, rng))):
        stats = [statistics(draw(), reference) for _ in range(draws)]
        nulls[name] = {key: {"mean": float(np.mean([s[key] for s in stats])),
                             "low": float(np.percentile([s[key] for s in stats], 2.5)),
                             "high": float(np.percentile([s[key] for s in stats], 97.5))} for key in stats[0]}
    return {"learned": statistics(table, reference), "sinusoidal": statistics(sinusoidal(np.arange(n), d, base),
                                                                              reference),
            "lag1_autocorrelation": rho, "nulls": nulls, "null_draws": draws}
