r"""Rotary position embedding, RoPE (Su et al. 2021, "RoFormer", arXiv:2104.09864).

Query and key vectors are rotated pair by pair by an angle proportional to their position,
:math:`f(x, m) = R_m x`, so that :math:`(R_m q)^\top (R_n k) = q^\top R_{n-m} k` depends on the offset only.
Values are never rotated and nothing is added to the token embedding.

Two layouts of the pairs are in use, and this module supports both:

* ``"interleaved"``: pair i is dimensions (2i, 2i+1), as in the RoFormer paper, Mesh TF and GPT-J.
* ``"half"``: pair i is dimensions (i, i + d/2), the ``rotate_half`` form of GPT-NeoX and of Llama in
  Hugging Face transformers.

They are one rotation up to a fixed permutation of the dimensions (see :func:`layout_permutation`).

Every function takes numpy arrays; :func:`apply_rope` also takes torch tensors (any float dtype, autograd
supported: its backward pass is the inverse rotation :math:`R_m^\top`).
"""

from __future__ import annotations

import sys

import numpy as np

from . import _validate
from .sinusoidal import frequencies as _sinusoidal_frequencies

LAYOUTS = ("interleaved", "half")


def rope_frequencies(d, base=10000.0) -> np.ndarray:
    r"""Rotation speed of each pair: :math:`\theta_i = \mathrm{base}^{-2i/d}`, :math:`i = 0..d/2-1`.

    Su et al. 2021 (arXiv:2104.09864), eq. 15: the same spectrum as the sinusoidal encoding's
    :math:`\omega_i` (Vaswani et al. 2017). Returns float64 ``(d/2,)``.
    """
    return _sinusoidal_frequencies(d, base)


def _frequencies_for(rotary_dim, base, frequencies) -> np.ndarray:
    if frequencies is None:
        return rope_frequencies(rotary_dim, base)
    theta = _validate.finite_array("frequencies", frequencies)
    if theta.shape != (rotary_dim // 2,):
        raise ValueError(f"frequencies must have shape ({rotary_dim // 2},) (one per rotated pair), got {theta.shape}")
    return theta


def rope_angles(positions, d, base=10000.0, frequencies=None) -> np.ndarray:
    r"""The angle of every pair at every position: :math:`m\,\theta_i`, float64 ``(len(positions), d/2)``.

    Su et al. 2021 (arXiv:2104.09864). ``frequencies`` (shape ``(d/2,)``) replaces
    :math:`\theta_i` for the context-extension methods of :mod:`posenc.scaling`.
    Computed in float64: in float32 the angle of a far position loses its low digits.
    """
    d = _validate.even_dim("d", d)
    p = _validate.positions("positions", positions)
    return p[:, None] * _frequencies_for(d, base, frequencies)[None, :]


def _pair_index(layout, rotary_dim):
    """Indices of the first and second member of every pair, for the given layout."""
    _validate.choice("layout", layout, LAYOUTS)
    h = rotary_dim // 2
    if layout == "interleaved":
        return slice(0, rotary_dim, 2), slice(1, rotary_dim, 2)
    return slice(0, h), slice(h, rotary_dim)


def layout_permutation(d, source="half", target="interleaved") -> np.ndarray:
    r"""Index array P that reorders dimensions from one layout to the other: ``x_target = x_source[..., P]``.

    With P from half to interleaved: ``apply_rope(x[..., P], layout="interleaved") ==
    apply_rope(x, layout="half")[..., P]``. This is the permutation Hugging Face's Llama conversion applies
    to the rows of :math:`W_q` and :math:`W_k` (in the other direction); skipping it silently breaks a model.
    Returns int64 ``(d,)``.
    """
    d = _validate.even_dim("d", d)
    _validate.choice("source", source, LAYOUTS)
    _validate.choice("target", target, LAYOUTS)
    half_to_interleaved = np.stack([np.arange(d // 2), np.arange(d // 2) + d // 2], axis=1).reshape(-1)
    if source == target:
        return np.arange(d)
    return half_to_interleaved if source == "half" else np.argsort(half_to_interleaved)


def _rotary_dim(d, rotary_dim) -> int:
    if rotary_dim is None:
        return d
    rd = _validate.even_dim("rotary_dim", rotary_dim)
    if rd > d:
        raise ValueError(f"rotary_dim must be <= the last dimension d={d}, got {rd}")
    return rd


def rope_matrix(position, d, base=10000.0, layout="interleaved", rotary_dim=None, frequencies=None) -> np.ndarray:
    r"""The explicit rotation :math:`R_m` with ``apply_rope(x, [m]) == R_m @ x``, float64 ``(d, d)``.

    Block diagonal in the interleaved layout (Su et al. 2021, arXiv:2104.09864, eq. 15):

    .. math:: R_m = \bigoplus_i \begin{pmatrix} \cos m\theta_i & -\sin m\theta_i \\ \sin m\theta_i & \cos m\theta_i \end{pmatrix}

    In the half layout the same 2×2 blocks act on dimensions (i, i + d/2). Dimensions past ``rotary_dim``
    are left alone (identity). Orthogonal; :math:`R_m^\top R_n = R_{n-m}`.
    """
    d = _validate.even_dim("d", d)
    rd = _rotary_dim(d, rotary_dim)
    m = _validate.real("position", position)
    angles = m * _frequencies_for(rd, base, frequencies)  # (rd/2,)
    c, s = np.cos(angles), np.sin(angles)
    first, second = _pair_index(layout, rd)
    i1, i2 = np.arange(d)[first], np.arange(d)[second]
    r = np.eye(d)
    r[i1, i1], r[i1, i2] = c, -s
    r[i2, i1], r[i2, i2] = s, c
    return r


def _rotate(x, cos, sin, layout, rotary_dim):
    """out = R x on the last axis of a numpy array; cos, sin are (seq, rotary_dim/2)."""
    first, second = _pair_index(layout, rotary_dim)
    x1, x2 = x[..., first], x[..., second]
    out = x.copy()
    out[..., first] = x1 * cos - x2 * sin
    out[..., second] = x2 * cos + x1 * sin
    return out


def apply_rope(x, positions, base=10000.0, *, layout="interleaved", rotary_dim=None, frequencies=None,
               attention_factor=1.0):
    r"""Rotate every vector of ``x`` by its position: :math:`x_m \mapsto R_m x_m`.

    .. math:: \begin{pmatrix} x'_{a} \\ x'_{b} \end{pmatrix} =
              \begin{pmatrix} \cos m\theta_i & -\sin m\theta_i \\ \sin m\theta_i & \cos m\theta_i \end{pmatrix}
              \begin{pmatrix} x_{a} \\ x_{b} \end{pmatrix}

    for each pair i = (a, b): (2i, 2i+1) if ``layout="interleaved"`` (Su et al. 2021, arXiv:2104.09864;
    GPT-J), (i, i + rotary_dim/2) if ``layout="half"`` (GPT-NeoX, Black et al. 2022, arXiv:2204.06745;
    Llama in Hugging Face). Apply to queries and keys, never to values.

    Args:
        x: numpy array or torch tensor ``(..., seq, d)``, d even.
        positions: ``(seq,)`` finite positions of the rows of x.
        base: > 1. layout: "interleaved" or "half".
        rotary_dim: rotate only the first rotary_dim dimensions (partial rotary, as GPT-NeoX); the
            frequencies are then :math:`\mathrm{base}^{-2i/\mathrm{rotary\_dim}}`. Default d.
        frequencies: ``(rotary_dim/2,)`` per-pair frequencies overriding base (see :mod:`posenc.scaling`).
        attention_factor: multiplies the rotated dimensions, as Hugging Face applies YaRN's factor to cos
            and sin (the logits then scale by its square).
    Returns: same type and shape as x; float64 for numpy, x's dtype for torch.
    """
    torch = sys.modules.get("torch")  # a tensor can only exist if torch is already imported
    is_torch = torch is not None and isinstance(x, torch.Tensor)
    if is_torch:
        if not x.is_floating_point():
            raise TypeError(f"x must be a floating-point tensor, got dtype {x.dtype}")
        # A sum is one fast read pass and is finite unless x holds NaN/inf (or it overflows: then check exactly).
        if not torch.isfinite(x.sum()) and not torch.isfinite(x).all():
            raise ValueError("x must contain only finite values (no NaN or inf)")
    else:
        x = _validate.finite_array("x", x)
    if x.ndim < 2:
        raise ValueError(f"x must have shape (..., seq, d), got shape {tuple(x.shape)}")
    seq, d = x.shape[-2], x.shape[-1]
    d = _validate.even_dim("the last dimension of x (d)", d)
    rd = _rotary_dim(d, rotary_dim)
    factor = _validate.real("attention_factor", attention_factor, greater_than=0.0)
    angles = rope_angles(positions, rd, base, frequencies)  # (seq, rd/2), float64
    if angles.shape[0] != seq:
        raise ValueError(f"positions must have one entry per row of x ({seq}), got {angles.shape[0]}")
    cos, sin = factor * np.cos(angles), factor * np.sin(angles)
    if not is_torch:
        return _rotate(x, cos, sin, layout, rd)
    _validate.choice("layout", layout, LAYOUTS)
    from .rope_torch import RotaryFunction

    cos_t = torch.as_tensor(cos, dtype=x.dtype, device=x.device)
    sin_t = torch.as_tensor(sin, dtype=x.dtype, device=x.device)
    return RotaryFunction.apply(x, cos_t, sin_t, layout, rd)


def apply_rope_complex(x, positions, base=10000.0, frequencies=None) -> np.ndarray:
    r"""RoPE in complex form: pair i of x read as :math:`z_i = x_{2i} + \mathrm{i}\,x_{2i+1}`, then
    :math:`z_i \mapsto z_i\,e^{\mathrm{i} m \theta_i}` (Su et al. 2021, arXiv:2104.09864, eq. 12–13).

    The same result as ``apply_rope(x, positions, base, layout="interleaved")``, computed another way.
    numpy only; x ``(..., seq, d)``; returns float64 of the same shape.
    """
    x = _validate.finite_array("x", x)
    if x.ndim < 2:
        raise ValueError(f"x must have shape (..., seq, d), got shape {x.shape}")
    d = _validate.even_dim("the last dimension of x (d)", x.shape[-1])
    angles = rope_angles(positions, d, base, frequencies)  # (seq, d/2)
    if angles.shape[0] != x.shape[-2]:
        raise ValueError(f"positions must have one entry per row of x ({x.shape[-2]}), got {angles.shape[0]}")
    z = x[..., 0::2] + 1j * x[..., 1::2]
    z = z * np.exp(1j * angles)
    out = np.empty_like(x)
    out[..., 0::2], out[..., 1::2] = z.real, z.imag
    return out


def rope_score_bound(offsets, d, base=10000.0) -> np.ndarray:
    r"""RoFormer's long-term decay: the relative upper bound of the score as a function of the offset.

    .. math:: \frac{1}{d/2}\sum_{j=1}^{d/2} |S_j|, \qquad S_j = \sum_{k=0}^{j-1} e^{\mathrm{i}\,r\,\theta_k}

    Su et al. 2021 (arXiv:2104.09864), §3.4.3 and Figure 2: with h the pairwise products of q and k,
    :math:`|q^\top R_r k| \le \max_i |h_{i+1} - h_i| \sum_j |S_j|`; the sum decays (with oscillations) as the
    offset r grows. Returns float64 of the shape of ``offsets``.
    """
    r = _validate.finite_array("offsets", offsets)
    theta = rope_frequencies(d, base)
    partial = np.cumsum(np.exp(1j * r[..., None] * theta), axis=-1)  # (..., d/2): S_1..S_{d/2}
    return np.abs(partial).mean(axis=-1)
