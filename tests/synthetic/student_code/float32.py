"""A student who works in float32: ``_float32(function)`` runs a function on float32 copies of its float
arguments (arrays, NumPy and Python floats; integers, booleans and strings as they are) and returns its answer
in float32 (every float array or number inside tuples, lists and dicts); ``_to32(value)`` is one answer
cast. Correct wherever the prompt does not pin float64: such a student must score full marks."""

import numpy as _np


def _to32(value):
    if isinstance(value, tuple):
        return tuple(_to32(v) for v in value)
    if isinstance(value, list):
        return [_to32(v) for v in value]
    if isinstance(value, dict):
        return {k: _to32(v) for k, v in value.items()}
    if isinstance(value, (bool, _np.bool_, int, _np.integer, str)) or value is None:
        return value
    if isinstance(value, (float, _np.floating)):
        return _np.float32(value)
    if isinstance(value, _np.ndarray) and _np.issubdtype(value.dtype, _np.floating):
        return value.astype(_np.float32)
    return value


def _float32(function):
    def in_float32(*args, **kwargs):
        return _to32(function(*[_to32(a) for a in args], **{k: _to32(v) for k, v in kwargs.items()}))
    return in_float32
