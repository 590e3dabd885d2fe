"""What a probe records of one call of learner code, and how a judge reads it back.

A probe turns whatever the learner's code gave into plain data with `record` (or `called`, which
runs the code first); the judge reads it with `value_of`, `array_of` and `raised_first`, which
raise `Wrong` with a one-line message for anything that is not the kind of result it wants.

    rec = called(output_size, 8, 3, 1, 0, 1)     # in the probe
    got = value_of(rec, "output_size(8, 3, ...)")  # in the judge: the learner's number
"""

from __future__ import annotations

import numpy as np

from minilucid_course.checks.common import attempt, raised_message
from minilucid_course.checks.exercise import Wrong

_PLAIN_KINDS = "biuf"


def record(obj) -> dict:
    """Plain data for one object the learner's code gave back (never the object itself)."""
    from minilucid.tensor import Tensor

    if isinstance(obj, Tensor):
        data = np.asarray(obj.data)
        if data.dtype.kind not in _PLAIN_KINDS:
            return {"type": "Tensor"}
        return {
            "tensor": data,
            "requires_grad": bool(obj.requires_grad),
            "grad_fn": obj.grad_fn is not None,
        }
    if isinstance(obj, bool | np.bool_):
        return {"bool": bool(obj)}
    if isinstance(obj, int | np.integer):
        return {"int": int(obj)}
    if isinstance(obj, float | np.floating):
        return {"float": float(obj)}
    if isinstance(obj, np.ndarray):
        if obj.dtype.kind not in _PLAIN_KINDS:
            return {"type": f"ndarray of {obj.dtype}"}
        return {"array": np.array(obj)}
    if isinstance(obj, list | tuple) and len(obj) <= 64:
        return {"sequence": type(obj).__name__, "items": [record(x) for x in obj]}
    if obj is None:
        return {"type": "None"}
    return {"type": type(obj).__name__}


def called(fn, *args, **kwargs) -> dict:
    """Run learner code (NotImplementedError passes through) and record what came out."""
    outcome = attempt(fn, *args, **kwargs)
    if outcome[0] == "raised":
        return {"raised": [str(outcome[1]), str(outcome[2])]}
    return record(outcome[1])


def raised_first(rec, what: str, hint: str = "") -> None:
    """Raise Wrong if the recorded call raised (or is no record at all)."""
    if not isinstance(rec, dict):
        raise Wrong(f"{what}: its result has a form no answer gives")
    if "raised" in rec:
        name, text = rec["raised"]
        raise Wrong(raised_message(what, ("raised", str(name), str(text)), hint))


def kind(rec) -> str:
    """The type name of what the learner's code gave, as a message names it."""
    if not isinstance(rec, dict):
        return "something else"
    for key, name in (("int", "int"), ("float", "float"), ("bool", "bool"), ("array", "ndarray")):
        if key in rec:
            return name
    if "tensor" in rec:
        return "Tensor"
    if "sequence" in rec:
        return str(rec["sequence"])
    return str(rec.get("type", "something else"))


def value_of(rec, what: str):
    """The number the learner's code gave (int, float or bool), after a raised check."""
    raised_first(rec, what)
    for key in ("int", "float", "bool"):
        if key in rec:
            value = rec[key]
            if type(value) not in (int, float, bool):
                raise Wrong(f"{what}: its result has a form no answer gives")
            return value
    return None


def array_of(rec, what: str, *, tensor_ok: bool = True, dtype=np.float64) -> np.ndarray | None:
    """The numbers of an array (or, if allowed, a Tensor) result; None for any other kind."""
    raised_first(rec, what)
    if "array" in rec:
        values = rec["array"]
    elif "tensor" in rec and tensor_ok:
        values = rec["tensor"]
    else:
        return None
    if not isinstance(values, np.ndarray) or values.dtype.kind not in _PLAIN_KINDS:
        raise Wrong(f"{what}: its result has a form no answer gives")
    return values if dtype is None else values.astype(dtype)


def items_of(rec, what: str) -> list | None:
    """The records of a list or tuple result; None for any other kind."""
    raised_first(rec, what)
    if "sequence" not in rec:
        return None
    items = rec.get("items")
    if not isinstance(items, list):
        raise Wrong(f"{what}: its result has a form no answer gives")
    return items


def same_shape(got: np.ndarray, want: np.ndarray) -> bool:
    return tuple(got.shape) == tuple(want.shape)


def package_kinds(answer, names: tuple[str, ...], where) -> list[str]:
    """The package classes (among `where`'s `names`) that an answer class derives from, or that
    an answer object keeps one level into its attributes (lists, tuples and dicts included):
    a class that is the package's own, or hands it the work, builds nothing."""
    packaged = tuple(getattr(where, n) for n in names if isinstance(getattr(where, n, None), type))
    found = []
    if isinstance(answer, type):
        found += [c.__name__ for c in packaged if issubclass(answer, c)]
        return sorted(set(found))
    seen = list(vars(answer).values()) if hasattr(answer, "__dict__") else []
    for value in list(seen):
        if isinstance(value, list | tuple):
            seen += list(value)
        elif isinstance(value, dict):
            seen += list(value.values())
    found += [type(v).__name__ for v in seen
              if isinstance(v, packaged) and not isinstance(v, type(answer))]  # fmt: skip
    return sorted(set(found))
