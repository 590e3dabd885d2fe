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

from minilucid._arrays import as_array, geometry, positions, type_name
from minilucid._views import Gather, Scatter, ViewOfNoGrad, held_arrays
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
    _check_overlap(t.data, other, name)
    recorded = _recorded(t, other, name)
    VERSIONS.clock += 1  # first, so that the op recorded below is newer than the change
    if recorded:
        operand = _unaliased(t, other, name) if isinstance(other, Tensor) else value

        def changed(old, right):
            if right is t:
                right = old
            return op.apply(old, right if alpha == 1 or right is value else right * alpha)

        _record(t, changed, operand)
    else:
        ufunc(t.data, value, out=t.data, casting="same_kind")
    _stamp(t.data, name)
    return t


def overwrite(t: Tensor, name: str, source, index=None) -> Tensor:
    """t <- source (a number or a tensor broadcast to t's shape) in t's own array; with `index`,
    only t[index] (`t[index] = source`)."""
    if index is not None:
        return _overwrite_at(t, name, source, _index_arrays(index))
    value = _operand(source, name)
    _check_target(t, name, value, None)  # like PyTorch, copy_ and fill_ convert any dtype
    _check_overlap(t.data, source, name)
    recorded = _recorded(t, source, name)
    VERSIONS.clock += 1
    if recorded:
        # where(True, source, old): the gradient goes to source, none to the old value
        operand = _unaliased(t, source, name)
        _record(t, lambda old, right: Where.apply(True, old if right is t else right, old), operand)
    else:
        np.copyto(t.data, value, casting="unsafe")
    _stamp(t.data, name)
    return t


def _overwrite_at(t: Tensor, name: str, source, index) -> Tensor:
    value = _operand(source, name)
    where = np.arange(t.data.size).reshape(t.shape)[index]  # t's flat positions it writes
    try:
        np.broadcast_to(value, where.shape)
    except ValueError:
        raise ValueError(
            f"{name}: a value of shape {np.shape(value)} cannot fill t[{index!r}] of shape "
            f"{where.shape} (tensor of shape {t.shape})"
        ) from None
    _check_target(t, name, np.zeros(()), None)
    region = t.data[index]
    if isinstance(region, np.ndarray) and region.base is not None:  # basic indexing: a view
        _check_overlap(region, source, name)
    recorded = _recorded(t, source, name)
    VERSIONS.clock += 1
    if recorded:
        operand = _unaliased(t, source, name) if isinstance(source, Tensor) else value

        def changed(old, right):  # an operand on the very numbers written: their old values
            return Scatter.apply(old, old[index] if right is t else right, where=where)

        _record(t, changed, operand)
    else:
        t.data[index] = value
    _stamp(t.data, name)
    return t


def _index_arrays(index):
    """Tensors inside an index become their arrays."""
    if isinstance(index, tuple):
        return tuple(_index_arrays(i) for i in index)
    return index.data if isinstance(index, Tensor) else index


def _record(t: Tensor, changed, operand) -> None:
    """Record an in-place change of t whose new value is changed(t's old value, operand), both
    as nodes of the graph.

    A tensor that is no view takes the new op as its history. A view's change is recorded on
    its base, as PyTorch does: the base becomes `Scatter(old base, changed(old view values))`.
    An operand that shares the base's memory (another view of it) is read from the old base.
    Then every view of the changed base reads its numbers from the base's new node.
    """
    view = getattr(t, "_view", None)
    base = t if view is None else view[0]
    old_base = _old_self(base)
    if isinstance(operand, Tensor) and operand is not t:  # a view of the same base (not one
        if operand is base or getattr(operand, "_view", (None,))[0] is base:  # with a history
            operand = Gather.apply(old_base, where=_inside(operand, base))  # of its own)
    if view is None:
        _become(t, changed(old_base, operand))
    else:
        where = positions(geometry(t.data, base.data))
        part = changed(Gather.apply(old_base, where=where), operand)
        _become(base, Scatter.apply(old_base, part, where=where))
    _refresh_views(base)


def _inside(view: Tensor, base: Tensor) -> np.ndarray:
    """The flat positions in base of a tensor on part of its memory; refused when it is not."""
    where = positions(geometry(view.data, base.data))
    if where.size and (where.min() < 0 or where.max() >= base.data.size):
        raise RuntimeError(
            "in-place: the other operand shares memory with the tensor being changed but is not "
            "a view of it, and it requires grad; use an out-of-place op (t = t op x)."
        )
    return where


def _refresh_views(base: Tensor) -> None:
    """After base changed in place with a recorded op, its views' numbers come from its node."""
    if not base._requires_grad:
        return
    for ref in getattr(base, "_views", None) or ():
        v = ref()
        if v is None:
            continue
        ctx = ViewOfNoGrad() if v._view[1] else Gather()
        ctx.where, ctx.in_shape = None, base.shape
        ctx.geometry = geometry(v.data, base.data)
        ctx.parents, ctx.version = (base,), VERSIONS.clock
        v._ctx, v._requires_grad = ctx, True


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
    for name, array in held_arrays(ctx):
        change = _change_after(array, ctx.version)
        if change is not None:
            raise RuntimeError(
                f"backward: an array of shape {array.shape} that {op} kept for its backward "
                f"(ctx.{name}, indices say) was changed in place by {change} after {op} ran, "
                "so its gradient would go to the wrong places. Change a copy instead "
                "(idx = idx + 1 rather than idx += 1), or make the change after backward."
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
        return as_array(x, None, name)
    raise TypeError(
        f"{name}: cannot combine a minilucid tensor with {type_name(x)}; pass a number, a NumPy "
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
    view = getattr(t, "_view", None)
    base_grad = view is not None and view[0]._requires_grad
    if not (t._requires_grad or base_grad or (isinstance(other, Tensor) and other._requires_grad)):
        return False
    if view is not None:
        base, made_without_grad = view
        if made_without_grad:
            raise RuntimeError(
                f"{name}: a view was created in no_grad mode and is being changed in place with "
                "grad mode enabled; which graph it belongs to is ambiguous, so it is refused (as "
                "in PyTorch). Take the view and make the change both inside the no_grad block "
                "or both outside it."
            )
        if base._ctx is None and base._requires_grad:
            raise RuntimeError(
                f"{name}: this tensor is a view of a leaf that requires grad (shape "
                f"{base.shape}), and a leaf cannot be changed in place while the graph is "
                "recorded. Update parameters inside `with ml.no_grad():`, or compute a new "
                "tensor out of place."
            )
        return True
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
    is t itself, or a tensor on exactly t's numbers (`h.reshape(h.shape)`) that requires grad,
    stands for t's old value (the caller puts the old node in: `h += h` doubles h, and the
    gradient counts both terms), and a constant sharing t's memory (`h.detach()`) is copied
    first. (`_check_overlap` has refused an operand on only part of t's numbers.)
    """
    if not isinstance(other, Tensor) or other is t or _root(other.data) is not _root(t.data):
        return other
    if not other._requires_grad:
        return other.data.copy()
    return other  # `_record` reads it from the old node of the memory they share


def _check_overlap(target: np.ndarray, other, name: str) -> None:
    """Refuse, as PyTorch does, an operand that shares some but not all of the numbers the
    in-place op writes: the result would depend on the order the numbers are written in."""
    if not isinstance(other, Tensor) or not _overlaps(target, other.data):
        return
    a, b = target.__array_interface__, other.data.__array_interface__
    if a["data"] == b["data"] and target.shape == other.shape and a["strides"] == b["strides"]:
        return  # the very same numbers: each is read before it is written
    raise RuntimeError(
        f"{name}: the other operand shares part of its memory with the numbers being changed "
        f"(a {other.shape} view overlapping the {target.shape} being written), so the result "
        "would depend on the order they are written in (as PyTorch, refused). Pass a copy of "
        "the operand (t.add_(v * 1)), or use an out-of-place op."
    )


def _overlaps(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether two arrays share a number (exactly, when NumPy can tell quickly)."""
    if not np.may_share_memory(a, b):
        return False
    try:
        return np.shares_memory(a, b, max_work=10_000)
    except np.exceptions.TooHardError:
        return True


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
