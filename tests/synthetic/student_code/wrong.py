"""Answers made wrong on purpose: ``_make_wrong(value, kind)`` changes a value's "value", "type" or "shape";
``_wrap_wrong(function, kind)`` makes a function return such answers; ``_raising(name)`` is a function that
raises instead of answering."""

import numpy as _np


def _make_wrong(value, kind):
    if kind == "type":
        return "not a number"
    if kind == "shape":
        if isinstance(value, tuple):
            return tuple(_make_wrong(v, kind) for v in value)
        return _np.append(_np.ravel(_np.asarray(value, dtype=float)), 0.5)
    if isinstance(value, (bool, _np.bool_)):
        return not value
    if isinstance(value, _np.ndarray) and value.dtype == bool:
        return ~value
    if isinstance(value, tuple):
        return tuple(_make_wrong(v, kind) for v in value)
    if isinstance(value, str):
        return value + "?"
    if hasattr(value, "detach"):
        return value + 0.5
    return _np.asarray(value, dtype=float) + 0.5


def _wrap_wrong(function, kind):
    def wrong(*args, **kwargs):
        return _make_wrong(function(*args, **kwargs), kind)
    return wrong


def _raising(name):
    def raises(*args, **kwargs):
        raise ValueError(f"a bug in {name}")
    return raises
