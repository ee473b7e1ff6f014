"""Values between the grading process and a student's kernel: JSON with tagged types, no pickle. Decoding builds
inert data only (any other type crosses as ``Unsupported``), within the bounds below (``WireError`` past one):
what the grader decodes is hostile, so they hold for the payload, not for what Python would make of it."""

from __future__ import annotations

import base64
import collections
import contextlib
import json
import numbers
import sys

import numpy as np

MAX_BYTES = 16 << 20  # one encoded value (under sandbox.MAX_MESSAGE_BYTES, with room for JSON's escapes)
MAX_DEPTH = 64  # lists, tuples and dicts inside each other
MAX_ELEMENTS = 1 << 21  # values in one decoded payload (an array counts as one, a range its length)
MAX_SHARED_HASH = 8  # keys of a dict that may share a hash (-1 and -2 do; chosen collisions make a dict quadratic)
STORED = 64  # the large arguments the agent keeps (wire.Stored), oldest dropped first
_DTYPES = {np.dtype(code).name for code in "?" + np.typecodes["AllInteger"] + np.typecodes["AllFloat"]}
_TORCH_DTYPES = {"bool", "int8", "int16", "int32", "int64", "uint8", "float16", "bfloat16", "float32",
                 "float64", "complex64", "complex128"}


class WireError(ValueError):
    """A payload that is not a value this protocol carries (too large, too deep, malformed)."""


class Stored:
    """A large argument the kernel keeps between calls (the last ``STORED``): sent once with its wire JSON
    (``text``), then by ``key`` alone (``text`` None)."""

    def __init__(self, key: str, text: str | None):
        self.key, self.text = key, text


class Unsupported:
    """Stands for a value of a type the wire does not carry (a function, a module, a custom object)."""

    def __init__(self, type_name: str, text: str):
        self.type_name, self.text = str(type_name)[:100], str(text)[:200]

    def __repr__(self):
        return f"<{self.type_name}: {self.text}>"


def _array(arr, tag: str) -> dict:
    arr = np.array(arr, order="C", copy=True)  # (ascontiguousarray would turn a 0-d array into 1-d)
    arr = arr.astype(arr.dtype.newbyteorder("="), copy=False)  # (the bytes are read back in native order)
    return {"$": tag, "dtype": arr.dtype.name, "shape": list(arr.shape),
            "data": base64.b64encode(arr.tobytes()).decode("ascii")}


def encode(value, depth: int = 0):
    """``value`` in its wire form: what :func:`dumps` writes as JSON."""
    if depth > MAX_DEPTH:
        raise WireError(f"values nested more than {MAX_DEPTH} levels deep")
    if isinstance(value, np.ndarray) and value.dtype == object:  # numbers in an object array: as floats
        with contextlib.suppress(TypeError, ValueError):
            value = value.astype(np.float64)
    if isinstance(value, (np.ndarray, np.generic)) and value.dtype.name in _DTYPES:  # (np.float64 is a float)
        return _array(value, "ndarray" if isinstance(value, np.ndarray) else "npscalar")
    if value is None:
        return None
    for kind, plain in ((bool, bool), (str, str), (numbers.Integral, int), (float, float)):  # (bool: an Integral)
        if isinstance(value, kind):
            return plain(value)  # (json keeps ints exact and writes a float's repr, nan and inf included)
    if isinstance(value, complex):
        return {"$": "complex", "re": value.real, "im": value.imag}
    if isinstance(value, numbers.Number):  # Fraction, Decimal, a custom real: its value as a float
        with contextlib.suppress(TypeError, ValueError, OverflowError):
            return float(value)
    torch = sys.modules.get("torch")  # (a tensor exists only if torch was imported)
    if torch is not None and isinstance(value, torch.Tensor):
        name = str(value.dtype).removeprefix("torch.")
        if name in _TORCH_DTYPES:
            plain = value.detach().cpu()
            array = (plain.float() if name == "bfloat16" else plain).numpy()
            return {**_array(array, "tensor"), "array_dtype": array.dtype.name, "dtype": name,
                    "requires_grad": bool(value.requires_grad)}
    if isinstance(value, range):
        return {"$": "range", "start": value.start, "stop": value.stop, "step": value.step}
    if isinstance(value, list):
        return [encode(v, depth + 1) for v in value]
    if isinstance(value, tuple):
        return {"$": "tuple", "items": [encode(v, depth + 1) for v in value]}
    if isinstance(value, dict):
        return {"$": "dict", "items": [[encode(k, depth + 1), encode(v, depth + 1)] for k, v in value.items()]}
    if isinstance(value, Stored):
        return {"$": "stored", "key": value.key, "text": value.text}
    if isinstance(value, Unsupported):
        return {"$": "unsupported", "type": value.type_name, "text": value.text}
    text = "?"
    with contextlib.suppress(Exception):  # (a repr that raises: still a type name to report)
        text = repr(value)[:200]
    return {"$": "unsupported", "type": type(value).__name__, "text": text}


def dumps(value) -> str:
    """``value`` as JSON text (types outside the protocol become ``Unsupported``)."""
    text = json.dumps(encode(value))
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
    count = int(np.prod(shape, dtype=np.int64))
    if count * np.dtype(dtype).itemsize != len(data):
        raise WireError("array data does not match its shape")
    return np.frombuffer(data, dtype=dtype).reshape(shape).copy()


def _decode(obj, depth: int, left: list):  # (left[0]: the values the payload may still decode to)
    if depth > MAX_DEPTH:
        raise WireError(f"values nested more than {MAX_DEPTH} levels deep")
    left[0] -= 1
    if left[0] < 0:
        raise WireError(f"more than {MAX_ELEMENTS} values in one payload")
    if obj is None or isinstance(obj, (bool, str, int, float)):
        return obj
    if isinstance(obj, list):
        return [_decode(v, depth + 1, left) for v in obj]
    if not isinstance(obj, dict):
        raise WireError(f"unexpected {type(obj).__name__}")
    tag, items = obj.get("$"), obj.get("items")
    if tag in ("tuple", "dict") and not isinstance(items, list):
        raise WireError("malformed container")
    if tag == "complex":  # (complex() refuses what is not two numbers)
        return complex(obj.get("re"), obj.get("im"))
    if tag in ("ndarray", "npscalar"):
        array = _raw_array(obj, obj.get("dtype"))
        return array if tag == "ndarray" else array[()]
    if tag == "tensor":
        import torch

        name = obj.get("dtype")
        if name not in _TORCH_DTYPES:
            raise WireError(f"tensor dtype {name!r} is not carried")
        tensor = torch.from_numpy(_raw_array(obj, obj.get("array_dtype")))
        return tensor.to(getattr(torch, name)).requires_grad_(bool(obj.get("requires_grad")) and
                                                              tensor.is_floating_point())
    if tag == "range":  # (range() refuses what is not three ints, and a step of 0)
        value = range(obj.get("start"), obj.get("stop"), obj.get("step"))
        if value[left[0]:]:  # (more values than are left; lazy here, but every check makes it a list or an array)
            raise WireError(f"a range of more than {MAX_ELEMENTS} values")
        left[0] -= len(value)
        return value
    if tag == "tuple":
        return tuple(_decode(v, depth + 1, left) for v in items)
    if tag == "dict":
        if not all(isinstance(pair, list) and len(pair) == 2 for pair in items):
            raise WireError("malformed dict entry")
        pairs = [(_decode(k, depth + 1, left), _decode(v, depth + 1, left)) for k, v in items]
        counts = collections.Counter(hash(key) for key, _ in pairs)  # (TypeError: a key that is not hashable)
        if max(counts.values(), default=0) > MAX_SHARED_HASH:
            raise WireError(f"more than {MAX_SHARED_HASH} keys of one dict share a hash (keys chosen to make the "
                            "dict slow to build)")
        return dict(pairs)
    if tag == "unsupported":
        return Unsupported(obj.get("type", "?"), obj.get("text", ""))
    if tag == "stored":
        key, text = obj.get("key"), obj.get("text")
        if not isinstance(key, str) or not (text is None or isinstance(text, str)):
            raise WireError("malformed stored value")
        return Stored(key, text)
    raise WireError(f"unknown tag {str(tag)[:40]!r}")


def loads(text) -> object:
    """The value encoded in ``text``; ``WireError`` for anything that is not a well-formed payload."""
    try:
        if len(text) > MAX_BYTES:
            raise WireError(f"the payload is larger than {MAX_BYTES >> 20} MB")
        return _decode(json.loads(text), 0, [MAX_ELEMENTS])
    except WireError:
        raise
    except (ValueError, TypeError, OverflowError, RecursionError, MemoryError) as exc:
        raise WireError(f"malformed: not JSON, or not a value ({type(exc).__name__}: {str(exc)[:100]})") from None
