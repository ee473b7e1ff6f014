r"""Sinusoidal positional encoding (Vaswani et al. 2017, "Attention Is All You Need", arXiv:1706.03762).

Layout convention used throughout this module: **interleaved pairs**,
``PE(p) = [sin(p ω_0), cos(p ω_0), sin(p ω_1), cos(p ω_1), ...]``, i.e. dimension ``2i`` holds the sine and
``2i + 1`` the cosine of pair ``i``, exactly as in the paper's equations.
"""

from __future__ import annotations

import numpy as np

from . import _validate


def frequencies(d, base=10000.0) -> np.ndarray:
    r"""Angular frequency of each sine/cosine pair.

    .. math:: \omega_i = \mathrm{base}^{-2i/d}, \qquad i = 0, 1, \dots, d/2 - 1

    Vaswani et al. 2017 (arXiv:1706.03762), §3.5. Pair 0 turns one radian per position (the fastest);
    the last pair turns ``base^{-(d-2)/d}`` radians per position.

    Args: d: the model dimension, a positive even integer. base: > 1 (10000 in the paper).
    Returns: float64 array of shape ``(d/2,)``, decreasing.
    """
    d = _validate.even_dim("d", d)
    base = _validate.base(base)
    return base ** (-np.arange(0, d, 2, dtype=np.float64) / d)


def wavelengths(d, base=10000.0) -> np.ndarray:
    r"""Wavelength of each pair, in positions: :math:`\lambda_i = 2\pi / \omega_i = 2\pi\,\mathrm{base}^{2i/d}`.

    They run geometrically from :math:`2\pi` (pair 0) towards :math:`2\pi\,\mathrm{base}` (never reached:
    the last pair has :math:`2\pi\,\mathrm{base}^{(d-2)/d}`). Vaswani et al. 2017 (arXiv:1706.03762), §3.5.
    Returns float64 array of shape ``(d/2,)``.
    """
    return 2.0 * np.pi / frequencies(d, base)


def sinusoidal(positions, d, base=10000.0) -> np.ndarray:
    r"""The sinusoidal encoding table for the given positions.

    .. math:: PE(p, 2i) = \sin(p\,\omega_i), \qquad PE(p, 2i+1) = \cos(p\,\omega_i)

    Vaswani et al. 2017 (arXiv:1706.03762), §3.5. Interleaved layout.

    Args: positions: a scalar or 1-D sequence of finite real positions (integers in practice; real values
    are allowed because interpolation methods use them). d: positive even integer. base: > 1.
    Returns: float64 array of shape ``(len(positions), d)``.
    """
    p = _validate.positions("positions", positions)
    angles = p[:, None] * frequencies(d, base)[None, :]  # (n, d/2)
    table = np.empty((p.size, d), dtype=np.float64)
    table[:, 0::2] = np.sin(angles)
    table[:, 1::2] = np.cos(angles)
    return table


def shift_matrix(k, d, base=10000.0) -> np.ndarray:
    r"""The linear map :math:`R(k)` with :math:`PE(p + k) = R(k)\,PE(p)` for every position p.

    Block diagonal, one 2×2 rotation per pair, acting on :math:`(\sin p\omega_i, \cos p\omega_i)`:

    .. math:: R(k) = \bigoplus_i \begin{pmatrix} \cos k\omega_i & \sin k\omega_i \\ -\sin k\omega_i & \cos k\omega_i \end{pmatrix}

    It follows from the angle-addition formulas; the existence of such a map is the property Vaswani et
    al. 2017 (arXiv:1706.03762, §3.5) give for choosing sinusoids. R(k) is orthogonal and R(a)R(b) = R(a+b).

    Args: k: a finite real offset. d: positive even integer. base: > 1. Returns: float64 ``(d, d)``.
    """
    k = _validate.real("k", k)
    angles = k * frequencies(d, base)  # (d/2,)
    c, s = np.cos(angles), np.sin(angles)
    r = np.zeros((d, d), dtype=np.float64)
    idx = np.arange(0, d, 2)
    r[idx, idx] = c
    r[idx, idx + 1] = s
    r[idx + 1, idx] = -s
    r[idx + 1, idx + 1] = c
    return r


def sinusoidal_dot(m, n, d, base=10000.0) -> np.ndarray:
    r"""Closed form of the dot product of two encodings.

    .. math:: PE(m)\cdot PE(n) = \sum_{i=0}^{d/2-1} \cos\big((m-n)\,\omega_i\big)

    since :math:`\sin a \sin b + \cos a \cos b = \cos(a - b)`: it depends on the offset m − n only (and is
    even in it). Vaswani et al. 2017 (arXiv:1706.03762).

    Args: m, n: finite real positions, scalars or arrays that broadcast together. Returns: float64 array of
    the broadcast shape (a 0-d array for scalars).
    """
    m = _validate.finite_array("m", m)
    n = _validate.finite_array("n", n)
    try:
        offset = np.subtract(m, n)
    except ValueError as exc:
        raise ValueError(f"m and n must broadcast together, got shapes {m.shape} and {n.shape}") from exc
    return np.cos(offset[..., None] * frequencies(d, base)).sum(axis=-1)
