"""Plain data between a probe and a judge: JSON, with NumPy arrays as typed base64. Never pickle.

What passes: None, bool, int, float (nan and ±inf included), str, lists (tuples become lists),
dicts with str keys, and NumPy arrays (or scalars) of bool, integer or float dtype. Anything else
is refused where it is made (`encode`) and where it is read (`decode`), with the path to it.

    blob = encode({"order": [0, 2, 1], "grad": np.ones(3)})
    decode(blob)["grad"]   # array([1., 1., 1.])
"""

from __future__ import annotations

import base64
import json
import math

import numpy as np

MAX_BYTES = 64 * 1024 * 1024  # one record; a hand-in cannot flood the judge
_KINDS = "biuf"  # bool, signed and unsigned integers, floats
_ARRAY = "__ndarray__"
_FLOAT = "__float__"


class NotPlain(TypeError):
    """Data that is not plain: named with where it sits."""


def _out(value, path: str):
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, int) and type(value) is int:
        return value
    if isinstance(value, float) and type(value) is float:
        return value if math.isfinite(value) else {_FLOAT: repr(value)}
    if isinstance(value, np.generic) and value.dtype.kind in _KINDS:
        value = np.asarray(value)
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in _KINDS:
            raise NotPlain(f"{path}: an array of dtype {value.dtype} is not plain data")
        data = np.array(value, order="C", copy=True)
        return {
            _ARRAY: data.dtype.str,
            "shape": list(data.shape),
            "b64": base64.b64encode(data.tobytes()).decode("ascii"),
        }
    if isinstance(value, list | tuple):
        return [_out(v, f"{path}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, dict) and type(value) is dict:
        out = {}
        for k, v in value.items():
            if type(k) is not str or k in (_ARRAY, _FLOAT):
                raise NotPlain(f"{path}: the key {k!r} is not a plain str key")
            out[k] = _out(v, f"{path}[{k!r}]")
        return out
    raise NotPlain(f"{path}: a {type(value).__name__} is not plain data")


def encode(value) -> bytes:
    """`value` as one line of JSON bytes; NotPlain for anything but plain data."""
    blob = json.dumps(_out(value, "data"), allow_nan=False, separators=(",", ":")).encode()
    if len(blob) > MAX_BYTES:
        raise NotPlain(f"data: {len(blob)} bytes, more than the {MAX_BYTES} a record may hold")
    return blob


def _in(value, path: str):
    if value is None or type(value) in (bool, str, int, float):
        return value
    if type(value) is list:
        return [_in(v, f"{path}[{i}]") for i, v in enumerate(value)]
    if type(value) is not dict:
        raise NotPlain(f"{path}: a {type(value).__name__} is not plain data")
    if _FLOAT in value:
        text = value[_FLOAT]
        if len(value) != 1 or text not in ("nan", "inf", "-inf"):
            raise NotPlain(f"{path}: a damaged float")
        return float(text)
    if _ARRAY in value:
        if set(value) != {_ARRAY, "shape", "b64"}:
            raise NotPlain(f"{path}: a damaged array")
        dtype = np.dtype(value[_ARRAY])
        shape = value["shape"]
        if dtype.kind not in _KINDS or dtype.hasobject:
            raise NotPlain(f"{path}: an array of dtype {dtype} is not plain data")
        if type(shape) is not list or not all(type(n) is int and n >= 0 for n in shape):
            raise NotPlain(f"{path}: a damaged array shape")
        raw = base64.b64decode(value["b64"], validate=True)
        if len(raw) != dtype.itemsize * math.prod(shape):
            raise NotPlain(f"{path}: an array whose bytes do not fit its shape")
        return np.frombuffer(raw, dtype=dtype).reshape(tuple(shape)).copy()
    return {k: _in(v, f"{path}[{k!r}]") for k, v in value.items()}


def decode(blob: bytes | str):
    """The plain data in `blob`; NotPlain for anything else (a judge reads only this)."""
    if len(blob) > MAX_BYTES:
        raise NotPlain(f"data: more than the {MAX_BYTES} bytes a record may hold")
    return _in(json.loads(blob), "data")
