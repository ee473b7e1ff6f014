"""Tables of calls: ``_Recorder`` notes what each solution function returned for each call a test cell made
(``record_calls`` runs the source notebook with it); ``_lookup`` answers a call from such a table (the student
who hard-codes the answers to the visible tests). Calls are keyed by their arguments as JSON (``_key``), and
answers travel as JSON (``_encode``, ``_decode``)."""

import json as _json

import numpy as _np


def _norm(x):
    if hasattr(x, "detach") and hasattr(x, "numpy"):
        x = x.detach().cpu().numpy()
    if isinstance(x, _np.ndarray):
        return ["nd", str(x.dtype), list(x.shape), x.tolist()]
    if isinstance(x, _np.generic):
        return ["np", str(x.dtype), x.item()]
    if isinstance(x, (bool, int, float, str)) or x is None:
        return x
    if isinstance(x, range):
        return ["range", x.start, x.stop, x.step]
    if isinstance(x, (list, tuple)):
        return [type(x).__name__, [_norm(i) for i in x]]
    if isinstance(x, dict):
        return ["dict", [[_norm(k), _norm(v)] for k, v in sorted(x.items(), key=repr)]]
    if callable(x):
        return ["fn", getattr(x, "__qualname__", repr(x))]
    return ["repr", repr(x)]


def _key(args, kwargs):
    return _json.dumps([_norm(list(args)), _norm(dict(kwargs))])


class _Unencodable(Exception):
    pass


def _encode(v):
    if isinstance(v, _np.ndarray):
        return {"nd": v.tolist(), "dtype": str(v.dtype), "shape": list(v.shape)}
    if isinstance(v, _np.generic):
        return {"np": v.item(), "dtype": str(v.dtype)}
    if isinstance(v, (bool, int, float, str)) or v is None:
        return v
    if isinstance(v, tuple):
        return {"tuple": [_encode(i) for i in v]}
    if isinstance(v, list):
        return {"list": [_encode(i) for i in v]}
    raise _Unencodable(type(v).__name__)


def _decode(v):
    if isinstance(v, dict):
        if "nd" in v:
            return _np.array(v["nd"], dtype=v["dtype"]).reshape(v["shape"])
        if "np" in v:
            return _np.dtype(v["dtype"]).type(v["np"])
        if "tuple" in v:
            return tuple(_decode(i) for i in v["tuple"])
        if "list" in v:
            return [_decode(i) for i in v["list"]]
    return v


def _lookup(table, args, kwargs):
    found = table.get(_key(args, kwargs))
    return None if found is None else _decode(found)


class _Recorder:
    def __init__(self):
        self.phase, self.depth, self.calls, self.unencodable = None, 0, [], set()

    def wrap(self, name, function):
        def recorded(*args, **kwargs):
            key = _key(args, kwargs) if self.phase and self.depth == 0 else None
            self.depth += 1
            try:
                result = function(*args, **kwargs)
            finally:
                self.depth -= 1
            if key is not None:
                try:
                    self.calls.append([self.phase[0], self.phase[1], name, key, _encode(result)])
                except _Unencodable:
                    self.unencodable.add(name)
            return result
        return recorded

    def dump(self, path):
        with open(path, "w") as f:
            _json.dump({"calls": self.calls, "unencodable": sorted(self.unencodable)}, f)
