"""Values on the wire between the grading process and a student's kernel: JSON with tagged types, no pickle.

The grading process decides a test's verdict from the *values* the student's code returned, so those values
cross from a hostile process into a trusted one. Decoding must therefore build nothing but inert data:
numbers, strings, booleans, None, lists, tuples, dicts, NumPy arrays and scalars of numeric dtypes, and torch
tensors (rebuilt from their bytes). Anything else arrives as ``Unsupported`` (its type name and a short
repr), which the checks reject with a message naming the type. A list or dict that is JSON as it stands
(str keys; exact str, int, float, bool and None inside) is sent as it is, so that a large one (the arena's
results) costs what JSON costs in C, not a Python walk that tags every entry. Payloads larger than ``MAX_BYTES`` or
nested deeper than ``MAX_DEPTH`` are refused with ``WireError``.

What the grading process decodes is hostile data, so decoding is bounded in time and memory by what the
payload says, not by what Python would make of it: at most ``MAX_ELEMENTS`` values in all (a 16 MB payload of
empty lists would otherwise cost the grader about 25 times its size), a ``range`` no longer than that (it
crosses as three numbers, and the checks turn it into an array), and a dict whose keys the kernel chose to share
a hash (ints, floats and tuples make that easy, and each insertion then costs as much as the dict has entries:
40,000 such keys took 40 s) is refused before it is built.

Used on both sides: ``autograder.agent`` (inside the sandbox) encodes results and decodes arguments;
``autograder.verdict`` (the grading process) does the opposite.
"""

from __future__ import annotations

import base64
import json
import numbers
import sys

import numpy as np

MAX_BYTES = 16 << 20  # one encoded value (under sandbox.MAX_MESSAGE_BYTES, with room for JSON's escapes)
MAX_DEPTH = 64  # lists, tuples and dicts inside each other
MAX_ELEMENTS = 1 << 21  # values in one decoded payload (containers and leaves; an array counts as one)
MAX_SHARED_HASH = 8  # keys of one decoded dict that may share a hash (CPython's -1 and -2 do, honestly)
_DTYPES = {"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
           "float16", "float32", "float64", "complex64", "complex128", np.dtype(np.longdouble).name,
           np.dtype(np.clongdouble).name}
_TORCH_DTYPES = {"bool", "int8", "int16", "int32", "int64", "uint8", "float16", "bfloat16", "float32",
                 "float64", "complex64", "complex128"}


class WireError(ValueError):
    """A payload that is not a value this protocol carries (too large, too deep, malformed)."""


class Encoded:
    """A value already turned into its wire form (``tree``, by :func:`encode`): sent as it is."""

    def __init__(self, tree):
        self.tree = tree


class Stored:
    """A large argument the kernel keeps between calls: sent once with its value (``text``, the value's wire
    JSON), then by ``key`` alone. The agent keeps the last ``STORED`` of them, the grader mirrors that, so a
    test that passes the same big value to many calls (chapter 8's results file) encodes it once."""

    def __init__(self, key: str, text: str | None):
        self.key, self.text = key, text


STORED = 64


class Unsupported:
    """Stands for a value of a type the wire does not carry (a function, a module, a custom object)."""

    def __init__(self, type_name: str, text: str):
        self.type_name, self.text = str(type_name)[:100], str(text)[:200]

    def __repr__(self):
        return f"<{self.type_name}: {self.text}>"


def _array(arr: np.ndarray) -> dict:
    arr = np.array(arr, order="C", copy=True)  # (ascontiguousarray would turn a 0-d array into 1-d)
    return {"$": "ndarray", "dtype": arr.dtype.name, "shape": list(arr.shape),
            "data": base64.b64encode(arr.tobytes()).decode("ascii")}


_LEAVES = frozenset({str, int, float, bool, type(None)})  # JSON's own values, as exact types


def _plain(value, depth: int, budget: "_Budget | None" = None) -> bool:
    """Whether ``value`` (a list or dict) is JSON as it stands, checked type by type: lists, dicts with str
    keys, and exact str, int, float, bool and None inside (a tuple, a NumPy scalar or a subclass is not, and
    neither is nesting past MAX_DEPTH). Such a value is sent as it is, which JSON writes and reads in C.
    With a ``budget`` (decoding), every value walked is counted against it."""
    stack = [(value, depth)]
    while stack:
        container, level = stack.pop()
        if level > MAX_DEPTH:
            return False
        if budget is not None:
            budget.take(len(container) + 1)
        if type(container) is dict:
            if not all(type(key) is str for key in container):
                return False
            items = container.values()
        else:
            items = container
        for item in items:
            kind = type(item)
            if kind in _LEAVES:
                continue
            if kind is list or kind is dict:
                stack.append((item, level + 1))
                continue
            return False
    return True


def _encode(value, depth: int):
    if depth > MAX_DEPTH:
        raise WireError(f"values nested more than {MAX_DEPTH} levels deep")
    if (type(value) is list or type(value) is dict) and _plain(value, depth):
        return {"$": "json", "value": value}
    if isinstance(value, np.ndarray) and value.dtype == object:  # numbers in an object array: as floats
        try:
            value = value.astype(np.float64)
        except (TypeError, ValueError):
            pass
    if isinstance(value, np.ndarray) and value.dtype.name in _DTYPES:
        return _array(value)
    if isinstance(value, np.generic) and value.dtype.name in _DTYPES:  # (np.float64 is also a float)
        return {**_array(np.asarray(value)), "$": "npscalar"}
    if value is None or isinstance(value, (bool, str)):
        return str(value) if isinstance(value, str) else value
    if isinstance(value, int):
        return int(value)  # (Python's json keeps ints exact, however large)
    if isinstance(value, float):
        return float(value)  # (json writes repr: the same float back, nan and inf included)
    if isinstance(value, complex):
        return {"$": "complex", "re": float.__repr__(value.real), "im": float.__repr__(value.imag)}
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Number):  # Fraction, Decimal, a custom real: its value as a float
        try:
            return float(value)
        except (TypeError, ValueError, OverflowError):
            pass
    torch = sys.modules.get("torch")  # (a tensor exists only if torch was imported)
    if torch is not None and isinstance(value, torch.Tensor):
        name = str(value.dtype).removeprefix("torch.")
        if name in _TORCH_DTYPES:
            plain = value.detach().cpu()
            array = (plain.float() if name == "bfloat16" else plain).numpy()
            return {**_array(array), "$": "tensor", "array_dtype": array.dtype.name, "dtype": name,
                    "requires_grad": bool(value.requires_grad)}
    if isinstance(value, range):
        return {"$": "range", "start": int.__repr__(value.start), "stop": int.__repr__(value.stop),
                "step": int.__repr__(value.step)}
    if isinstance(value, list):
        return [_encode(v, depth + 1) for v in value]
    if isinstance(value, tuple):
        return {"$": "tuple", "items": [_encode(v, depth + 1) for v in value]}
    if isinstance(value, dict):
        return {"$": "dict", "items": [[_encode(k, depth + 1), _encode(v, depth + 1)] for k, v in value.items()]}
    if isinstance(value, Unsupported):
        return {"$": "unsupported", "type": value.type_name, "text": value.text}
    if isinstance(value, Stored):
        return {"$": "stored", "key": value.key, "text": value.text}
    if isinstance(value, Encoded):
        return value.tree
    try:
        text = repr(value)
    except Exception:  # a repr that raises is still only a type name to report
        text = "?"
    return {"$": "unsupported", "type": type(value).__name__, "text": text[:200]}


def encode(value):
    """``value`` in its wire form: what :func:`dumps` writes as JSON."""
    return _encode(value, 0)


def dumps(value) -> str:
    """``value`` as JSON text (types outside the protocol become ``Unsupported``)."""
    text = json.dumps(_encode(value, 0))
    if len(text) > MAX_BYTES:
        raise WireError(f"the value is larger than {MAX_BYTES >> 20} MB")
    return text


def _raw_array(obj: dict, dtype: str) -> np.ndarray:
    if dtype not in _DTYPES:
        raise WireError(f"dtype {dtype!r} is not carried")
    shape = obj.get("shape")
    if not isinstance(shape, list) or len(shape) > 32 or not all(isinstance(n, int) and n >= 0 for n in shape):
        raise WireError("malformed array shape")
    data = base64.b64decode(obj.get("data", ""), validate=True)
    count = int(np.prod(shape, dtype=np.int64)) if shape else 1
    if count * np.dtype(dtype).itemsize != len(data):
        raise WireError("array data does not match its shape")
    return np.frombuffer(data, dtype=dtype).reshape(shape).copy()


def _number(text, kind):
    if not isinstance(text, str) or len(text) > 5000:
        raise WireError(f"malformed {kind}")
    return kind(text)


class _Budget:
    """The values one payload may still decode to (``MAX_ELEMENTS`` in all)."""

    def __init__(self):
        self.left = MAX_ELEMENTS

    def take(self, count: int) -> None:
        self.left -= count
        if self.left < 0:
            raise WireError(f"more than {MAX_ELEMENTS} values in one payload")


def _dict(pairs: list) -> dict:
    """A dict of decoded (key, value) pairs, refused when more than MAX_SHARED_HASH keys share a hash: the
    keys' hashes are counted first (a dict of hash values, which are distinct ints when the keys are), so that
    keys chosen to collide cost linear time to find, not quadratic time to insert."""
    counts = {}
    for key, _ in pairs:
        try:
            h = hash(key)
        except TypeError:
            raise WireError("a dict key that is not hashable") from None
        counts[h] = counts.get(h, 0) + 1
        if counts[h] > MAX_SHARED_HASH:
            raise WireError(f"more than {MAX_SHARED_HASH} keys of one dict share a hash (keys chosen to "
                            "make the dict slow to build)")
    return dict(pairs)


def _decode(obj, depth: int, budget: _Budget):
    if depth > MAX_DEPTH:
        raise WireError(f"values nested more than {MAX_DEPTH} levels deep")
    budget.take(1)
    if obj is None or isinstance(obj, (bool, str, int, float)):
        return obj
    if isinstance(obj, list):
        return [_decode(v, depth + 1, budget) for v in obj]
    if not isinstance(obj, dict):
        raise WireError(f"unexpected {type(obj).__name__}")
    tag = obj.get("$")
    if tag == "json":
        value = obj.get("value")
        if not isinstance(value, (list, dict)) or not _plain(value, depth, budget):  # (json.loads built it)
            raise WireError(f"malformed plain value (a list or dict nested at most {MAX_DEPTH} levels)")
        return value
    if tag == "complex":
        return complex(_number(obj.get("re"), float), _number(obj.get("im"), float))
    if tag == "ndarray":
        return _raw_array(obj, obj.get("dtype"))
    if tag == "npscalar":
        return _raw_array(obj, obj.get("dtype"))[()]
    if tag == "tensor":
        import torch

        name = obj.get("dtype")
        if name not in _TORCH_DTYPES:
            raise WireError(f"tensor dtype {name!r} is not carried")
        tensor = torch.from_numpy(_raw_array(obj, obj.get("array_dtype")))
        return tensor.to(getattr(torch, name)).requires_grad_(bool(obj.get("requires_grad")) and
                                                              tensor.is_floating_point())
    if tag == "range":
        bounds = [_number(obj.get(k), int) for k in ("start", "stop", "step")]
        if bounds[2] == 0:
            raise WireError("a range with step 0")
        value = range(*bounds)
        try:
            budget.take(len(value))  # (lazy here, but every check turns it into a list or an array)
        except OverflowError:
            raise WireError(f"a range of more than {MAX_ELEMENTS} values") from None
        except WireError:
            raise WireError(f"a range of more than {MAX_ELEMENTS} values") from None
        return value
    if tag == "tuple":
        return tuple(_decode(v, depth + 1, budget) for v in _items(obj))
    if tag == "dict":
        pairs = []
        for pair in _items(obj):
            if not isinstance(pair, list) or len(pair) != 2:
                raise WireError("malformed dict entry")
            pairs.append((_decode(pair[0], depth + 1, budget), _decode(pair[1], depth + 1, budget)))
        return _dict(pairs)
    if tag == "unsupported":
        return Unsupported(obj.get("type", "?"), obj.get("text", ""))
    if tag == "stored":
        key, text = obj.get("key"), obj.get("text")
        if not isinstance(key, str) or not (text is None or isinstance(text, str)):
            raise WireError("malformed stored value")
        return Stored(key, text)
    raise WireError(f"unknown tag {str(tag)[:40]!r}")


def _items(obj) -> list:
    items = obj.get("items")
    if not isinstance(items, list):
        raise WireError("malformed container")
    return items


def loads(text) -> object:
    """The value encoded in ``text``; ``WireError`` for anything that is not a well-formed payload."""
    if not isinstance(text, str):
        raise WireError(f"a payload must be text, got {type(text).__name__}")
    if len(text) > MAX_BYTES:
        raise WireError(f"the payload is larger than {MAX_BYTES >> 20} MB")
    try:
        obj = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise WireError(f"not JSON ({type(exc).__name__})") from None
    try:
        return _decode(obj, 0, _Budget())
    except WireError:
        raise
    except (ValueError, TypeError, OverflowError, RecursionError, MemoryError) as exc:
        raise WireError(f"malformed value ({type(exc).__name__}: {str(exc)[:100]})") from None
