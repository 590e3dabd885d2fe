"""In-place changes with PyTorch's rules: `t += x`, `t.add_(x)`, `t.zero_()`, `t.copy_(s)`, ...

An in-place op writes into the tensor's own array: the same object, the same memory. Three rules
keep the gradients right:

1. A leaf that requires grad (a parameter) may be changed only while recording is off
   (`no_grad`): that is a parameter update. Recorded, it would stop being a leaf.
2. A tensor that is part of a graph is changed by recording the change: `h += 1` makes `h` the
   output of an Add whose input is a new node holding h's old value and history.
3. Every change advances a version clock (`VERSIONS.clock`) and stamps the changed array with
   it; every recorded op notes the clock when it runs. Backward compares the two and refuses an
   array that changed after an op saved it, naming the op, instead of using the new numbers.
   Writing into `t.data` directly goes around all three rules, as PyTorch's `.data` does.
"""

import weakref

import numpy as np

from minilucid._arrays import _as_array, _type_name
from minilucid.grad_mode import GRAD_MODE, VERSIONS
from minilucid.ops.elementwise import Add, Div, Mul, Sub
from minilucid.ops.shape import Where
from minilucid.tensor import Tensor

UPDATES = {  # name -> (the NumPy ufunc that writes in place, the op that records it)
    "add_": (np.add, Add),
    "sub_": (np.subtract, Sub),
    "mul_": (np.multiply, Mul),
    "div_": (np.true_divide, Div),
}


def update(t: Tensor, name: str, other, alpha=1) -> Tensor:
    """t <- t (+ - * /) alpha * other in t's own array; recorded when the graph needs it."""
    ufunc, op = UPDATES[name]
    value = _operand(other, name)
    if alpha != 1:  # add_(x, alpha=-lr): the update of an optimiser, in one call
        value = value * alpha
    _check_target(t, name, value, np.result_type(t.data, value))
    recorded = _recorded(t, other, name)
    VERSIONS.clock += 1  # first, so that the op recorded below is newer than the change
    if recorded:
        operand = _unaliased(t, other, name) if isinstance(other, Tensor) else value
        old = _old_self(t)
        if operand is t:
            operand = old
        if alpha != 1 and isinstance(other, Tensor):
            operand = operand * alpha
        _become(t, op.apply(old, operand))
    else:
        ufunc(t.data, value, out=t.data, casting="same_kind")
    _stamp(t.data, name)
    return t


def overwrite(t: Tensor, name: str, source) -> Tensor:
    """t <- source (a number or a tensor broadcast to t's shape) in t's own array."""
    value = _operand(source, name)
    _check_target(t, name, value, None)  # like PyTorch, copy_ and fill_ convert any dtype
    recorded = _recorded(t, source, name)
    VERSIONS.clock += 1
    if recorded:
        # where(True, source, old): the gradient goes to source, none to the old value
        operand = _unaliased(t, source, name)
        old = _old_self(t)
        _become(t, Where.apply(True, old if operand is t else operand, old))
    else:
        np.copyto(t.data, value, casting="unsafe")
    _stamp(t.data, name)
    return t


def check_saved(ctx) -> None:
    """Refuse to run ctx's backward on values that changed in place after ctx was recorded."""
    op = type(ctx).__name__
    for array in getattr(ctx, "saved_tensors", None) or ():
        if isinstance(array, np.ndarray):
            change = _change_after(array, ctx.version)
            if change is not None:
                raise RuntimeError(
                    f"backward: an array of shape {array.shape} that {op} saved for its backward "
                    f"was changed in place by {change} after {op} ran, so its gradient would use "
                    "the new numbers. Change a copy instead (t = t + x rather than t += x), or "
                    "make the change after backward (or before the forward pass)."
                )
    parents = ctx.parents
    for parent in parents if type(parents) is tuple else ():
        if isinstance(parent, Tensor) and parent._ctx is not None:
            if getattr(parent._ctx, "version", 0) > ctx.version:
                change = _change_after(parent.data, ctx.version) or "an in-place op"
                raise RuntimeError(
                    f"backward: {op} used a tensor of shape {parent.shape} that was then changed "
                    f"in place by {change}, which recorded it as a new op; the graph no longer "
                    f"reaches the value {op} used. Change a copy instead (h = h + x)."
                )


def _operand(x, name: str):
    if isinstance(x, Tensor):
        return x.data
    if isinstance(x, np.ndarray | np.generic | int | float):
        return x
    if isinstance(x, list | tuple):
        return _as_array(x, None, name)
    raise TypeError(
        f"{name}: cannot combine a minilucid tensor with {_type_name(x)}; pass a number, a NumPy "
        "array or a minilucid tensor (for a torch tensor: ml.tensor(t.detach().numpy()))"
    )


def _check_target(t: Tensor, name: str, value, result_dtype) -> None:
    shape = np.shape(value)
    try:
        fits = np.broadcast_shapes(shape, t.shape) == t.shape
    except ValueError:
        fits = False
    if not fits:
        raise ValueError(
            f"{name}: the other operand has shape {shape}, which does not fit the tensor's shape "
            f"{t.shape}; an in-place op cannot change a tensor's shape (only the other operand "
            "is broadcast). Use an out-of-place op: t = t op x."
        )
    if result_dtype is not None and not np.can_cast(result_dtype, t.dtype, "same_kind"):
        raise TypeError(
            f"{name}: the result is {result_dtype}, which a tensor of {t.dtype} cannot hold in "
            "place. Use an out-of-place op (t = t op x) or make the tensor float."
        )
    if not t.data.flags.writeable:
        raise ValueError(
            f"{name}: this tensor's array is read-only (a broadcast view); change a copy instead"
        )


def _recorded(t: Tensor, other, name: str) -> bool:
    """Whether the change must be recorded in the graph; refuse the changes PyTorch refuses."""
    if not GRAD_MODE.enabled:
        return False
    if not (t._requires_grad or (isinstance(other, Tensor) and other._requires_grad)):
        return False
    if t._ctx is None and t._requires_grad:
        raise RuntimeError(
            f"{name}: a leaf tensor that requires grad (shape {t.shape}) cannot be changed in "
            "place while the graph is recorded: it would stop being a leaf. Update parameters "
            "inside `with ml.no_grad():`, or compute a new tensor out of place (t = t op x)."
        )
    parents = t._ctx.parents if t._ctx is not None else ()
    for parent in parents if type(parents) is tuple else ():
        if isinstance(parent, Tensor) and _root(parent.data) is _root(t.data):
            raise RuntimeError(
                f"{name}: this tensor is the output of {type(t._ctx).__name__} and shares its "
                "array with that op's input, so changing it in place would change the input "
                "behind the graph's back. Use an out-of-place op (t = t op x)."
            )
    return True


def _unaliased(t: Tensor, other, name: str):
    """The operand of a recorded change to t, safe from the change itself.

    `t` is about to become the op's output and its array to be overwritten, so an operand that
    is t itself stands for t's old value (the caller puts the old node in: `h += h` doubles h,
    and the gradient counts both terms), and a constant sharing t's memory (`h.detach()`) is
    copied first.
    """
    if not isinstance(other, Tensor) or other is t or _root(other.data) is not _root(t.data):
        return other
    if not other._requires_grad:
        return other.data.copy()
    raise RuntimeError(
        f"{name}: the other operand shares its memory with the tensor being changed (a view of "
        "it, or it of the other), and it requires grad: changing one in place changes the "
        f"other behind the graph's back. Use an out-of-place op (t = t op x)."
    )


def _old_self(t: Tensor) -> Tensor:
    """A new node that takes over t's value (a copy) and history; t's hooks go with it."""
    old = Tensor.__new__(Tensor)
    old.data = t.data.copy()
    old.grad = None
    old.name = t.name
    old._ctx = t._ctx
    old._requires_grad = t._requires_grad
    old._hooks, t._hooks = t._hooks, None
    old._retains_grad = False
    old._cut = t._cut
    return old


def _become(t: Tensor, result: Tensor) -> None:
    """t takes the value and the creating op of `result`, in its own array."""
    np.copyto(t.data, result.data, casting="unsafe")  # dtypes were checked before
    t._ctx = result._ctx
    t._requires_grad = result._requires_grad


def _root(array: np.ndarray) -> np.ndarray:
    """The array that owns the memory a view looks into."""
    while isinstance(array.base, np.ndarray):
        array = array.base
    return array


def _stamp(array: np.ndarray, name: str) -> None:
    root = _root(array)
    stamps = VERSIONS.stamps
    if len(stamps) > VERSIONS.limit:  # forget arrays that no longer exist
        for key in [k for k, (ref, _, _) in stamps.items() if ref() is None]:
            del stamps[key]
        # the next sweep waits until the table has doubled: amortised constant time per stamp
        VERSIONS.limit = max(1000, 2 * len(stamps))
    stamps[id(root)] = (weakref.ref(root), VERSIONS.clock, name)


def _change_after(array: np.ndarray, version: int):
    """The in-place op that changed `array`'s memory after clock time `version`, or None."""
    root = _root(array)
    stamp = VERSIONS.stamps.get(id(root))
    if stamp is not None and stamp[1] > version and stamp[0]() is root:
        return stamp[2]
    return None
