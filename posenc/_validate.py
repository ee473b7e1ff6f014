"""Argument validation shared by every public function.

Each check raises ``TypeError`` (wrong kind of value) or ``ValueError`` (right kind, wrong value) with a
message that names the argument, repeats the value given and says what is allowed, so that a student
never meets a bare traceback from deep inside numpy.
"""

from __future__ import annotations

import math
import numbers

import numpy as np


def _describe(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def integer(name: str, value, *, minimum: int | None = None) -> int:
    """Return ``value`` as a Python int; it must be an integer (bools are refused) and at least ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        if isinstance(value, (float, np.floating)) and math.isfinite(value) and float(value).is_integer():
            value = int(value)
        else:
            raise TypeError(f"{name} must be an integer, got {_describe(value)} of type {type(value).__name__}")
    value = int(value)
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value}")
    return value


def even_dim(name: str, value) -> int:
    """A model or head dimension: a positive even integer (positions are encoded in pairs)."""
    value = integer(name, value)
    if value <= 0 or value % 2:
        raise ValueError(f"{name} must be a positive even integer (dimensions come in pairs), got {value}")
    return value


def real(name: str, value, *, greater_than: float | None = None, at_least: float | None = None) -> float:
    """A finite real scalar, optionally bounded below (strictly or not)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {_describe(value)} of type {type(value).__name__}")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    if greater_than is not None and not value > greater_than:
        raise ValueError(f"{name} must be > {greater_than:g}, got {value:g}")
    if at_least is not None and not value >= at_least:
        raise ValueError(f"{name} must be >= {at_least:g}, got {value:g}")
    return value


def base(value, name: str = "base") -> float:
    """The RoPE / sinusoidal base: finite and > 1 (otherwise the frequencies do not decrease)."""
    return real(name, value, greater_than=1.0)


def scale(value, name: str = "scale") -> float:
    """A context-extension factor s: finite and >= 1 (s < 1 would shrink the context)."""
    return real(name, value, at_least=1.0)


def positions(name: str, value, *, integer_only: bool = False, non_negative: bool = False) -> np.ndarray:
    """A 1-D float64 array of finite positions from a scalar, list, numpy array or torch tensor."""
    if hasattr(value, "detach") and hasattr(value, "cpu"):  # a torch tensor
        value = value.detach().cpu().numpy()
    if isinstance(value, (str, bytes)) or value is None:
        raise TypeError(f"{name} must be a number or a sequence of numbers, got {_describe(value)}")
    try:
        arr = np.asarray(value)
    except Exception as exc:  # ragged lists and the like
        raise TypeError(f"{name} must be a number or a sequence of numbers, got {_describe(value)}") from exc
    if arr.dtype == bool or not (np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)):
        raise TypeError(f"{name} must hold integers or reals, got an array of dtype {arr.dtype}")
    arr = np.atleast_1d(arr).astype(np.float64)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a scalar or a 1-D sequence, got shape {arr.shape}")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} must be finite, got {_describe(arr[~np.isfinite(arr)][:3].tolist())} among them")
    if integer_only and not (arr == np.round(arr)).all():
        bad = arr[arr != np.round(arr)][:3].tolist()
        raise ValueError(f"{name} must be integers, got non-integer values such as {bad}")
    if non_negative and (arr < 0).any():
        raise ValueError(f"{name} must be >= 0, got negative values such as {arr[arr < 0][:3].tolist()}")
    return arr


def finite_array(name: str, value) -> np.ndarray:
    """A float64 numpy array with only finite entries."""
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be an array of real numbers, got {_describe(value)}") from exc
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} must contain only finite values (no NaN or inf)")
    return arr


def choice(name: str, value, allowed: tuple) -> str:
    if value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, allowed))}, got {_describe(value)}")
    return value
