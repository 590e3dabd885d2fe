"""What the engine keeps behind the scenes: the bookkeeping of views, the ops that record an
in-place change of a view on its base, and the checks that keep create_graph honest.

A private module: the chapters teach the engine without these; its names are public so that the
engine's modules may use them.
"""

import weakref

import numpy as np

from minilucid._arrays import checked_axis, positions
from minilucid.function import Function
from minilucid.grad_mode import GRAD_MODE
from minilucid.ops.shape import IndexAdd, Where
from minilucid.tensor import Tensor


class Contiguous(Function):
    """z = a copied into C order when it is not already (`contiguous()`);  dz/da = 1"""

    __slots__ = ()

    @staticmethod
    def forward(ctx, a):
        return np.ascontiguousarray(a).copy()

    @staticmethod
    def backward(ctx, grad):
        return grad


class Gather(Function):
    """z = a's numbers at the flat positions `where` (a view's numbers read from its base);
    dz/da: zeros with the gradient put back at those positions"""

    __slots__ = ("where", "in_shape", "geometry")

    @staticmethod
    def forward(ctx, a, where):
        ctx.where, ctx.in_shape, ctx.geometry = where, a.shape, None
        return a.reshape(-1)[where]

    @staticmethod
    def backward(ctx, grad):
        if ctx.where is None:  # a view refreshed after its base changed: located only now
            ctx.where = positions(ctx.geometry)
        size = int(np.prod(ctx.in_shape))
        if type(grad) is np.ndarray:
            out = np.zeros(size, dtype=grad.dtype)
            out[ctx.where.ravel()] = grad.ravel()  # a view never repeats a position
            return out.reshape(ctx.in_shape)
        return IndexAdd.apply(grad, index=ctx.where, shape=(size,)).reshape(ctx.in_shape)


class Scatter(Function):
    """z = a with the numbers at the flat positions `where` replaced by b (broadcast to
    where's shape): an in-place change of a view, seen from its base;
    dz/da = 1 outside `where`, 0 inside;  dz/db = z's gradient at `where`"""

    __slots__ = ("where",)

    @staticmethod
    def forward(ctx, a, b, where):
        ctx.where = where
        out = a.copy()
        out.reshape(-1)[where.ravel()] = np.broadcast_to(b, where.shape).ravel()
        return out

    @staticmethod
    def backward(ctx, grad):
        inside = np.zeros(grad.shape, dtype=bool)
        inside.reshape(-1)[ctx.where.ravel()] = True
        if type(grad) is np.ndarray:
            return np.where(inside, 0, grad), grad.reshape(-1)[ctx.where]
        return Where.apply(inside, 0, grad), grad.reshape(-1)[ctx.where]


class ViewOfNoGrad(Gather):
    """A view made under no_grad whose base then changed in place while recording: refused at
    backward, as PyTorch refuses it (which graph the view should follow is ambiguous)."""

    __slots__ = ()

    @staticmethod
    def backward(ctx, grad):
        raise RuntimeError(NO_GRAD_VIEW_BASE)


NO_GRAD_VIEW_BASE = (
    "backward: a view was created in no_grad mode and its base (or another view of its base) "
    "was then changed in place with grad mode enabled; which graph the view belongs to is "
    "ambiguous, so it is refused (as in PyTorch). Take the view and make the change both "
    "inside the no_grad block or both outside it."
)


def as_view(out: Tensor, source: Tensor, op: str | None = None) -> Tensor:
    """Note `out`, made from `source` by a view op, as a view of source's base when it shares
    source's memory (so an in-place change of either reaches the other's graph, as in PyTorch).
    `op` names a view op that must not copy (`view`, which PyTorch refuses on such a layout)."""
    data = out.data
    base_array = source.data if source.data.base is None else source.data.base
    if data.base is None or data.base is not base_array:
        if op is not None and data.size:
            raise RuntimeError(
                f"{op}: cannot view a tensor of shape {source.shape} with this memory layout "
                f"(a transpose, say) as shape {out.shape} without copying; use .reshape(...) "
                "or .contiguous().view(...)"
            )
        return out
    view = getattr(source, "_view", None)
    base = source if view is None else view[0]
    made_without_grad = not GRAD_MODE.enabled or (view is not None and view[1])
    out._view = (base, made_without_grad)
    views = getattr(base, "_views", None)
    if views is None:
        base._views = views = Views()
    elif len(views) >= 64 and len(views) & (len(views) - 1) == 0:  # at 64, 128, ...: tidy up
        views[:] = [ref for ref in views if ref() is not None]
    views.append(weakref.ref(out))
    return out


class Views(list):
    """A base's weak references to its views. A copy or a pickle of the base carries none: the
    views it notes are the original's."""

    __slots__ = ()

    def __reduce__(self):
        return Views, ()


class Cast(Function):
    """z = a as another dtype;  dz/da = 1 (the engine casts the gradient to a's dtype)"""

    __slots__ = ()

    @staticmethod
    def forward(ctx, a, dtype):
        return a.astype(dtype)

    @staticmethod
    def backward(ctx, grad):
        return grad


def split(x, split_size_or_sections, dim: int = 0) -> tuple:
    """x cut along dim into pieces of split_size (the last may be smaller) or of the sizes in
    a list; each piece is a view of x."""
    axis = checked_axis(dim, x.ndim, "split")
    size = x.shape[axis]
    if isinstance(split_size_or_sections, int):
        if split_size_or_sections <= 0:
            raise ValueError(f"split: split_size must be positive, got {split_size_or_sections}")
        step = split_size_or_sections
        sizes = [min(step, size - start) for start in range(0, size, step)] or [0]
    else:
        sizes = [int(s) for s in split_size_or_sections]
        if sum(sizes) != size or min(sizes, default=0) < 0:
            raise ValueError(
                f"split: sizes {sizes} add up to {sum(sizes)}, but dim {dim} of shape "
                f"{x.shape} has {size} entries"
            )
    before, start, pieces = (slice(None),) * axis, 0, []
    for n in sizes:
        pieces.append(x[(*before, slice(start, start + n))])
        start += n
    return tuple(pieces)


def readable(t: Tensor, how: str) -> np.ndarray:
    """t's array, refused while an op's backward runs on tensors (create_graph) when it holds
    values with a gradient: read as an array they would be a constant, and the higher
    derivatives through that op silently wrong."""
    op = GRAD_MODE.replaying
    if op is not None and t._requires_grad and t.data.dtype.kind in "fc":
        raise RuntimeError(
            f"create_graph: {op}.backward read the array of a tensor of shape {t.shape} with "
            f"{how}; under create_graph that value would be a constant and the higher "
            f"derivatives through {op} silently wrong. Compute with the tensor itself (operators, "
            "methods, minilucid.ops.alike; a comparison such as t > 0 gives a constant mask), "
            "or differentiate it once only (create_graph=False)."
        )
    return t.data


class HookHandle:
    """What register_hook returns: `.remove()` takes the hook off the tensor."""

    __slots__ = ("tensor", "hook")

    def __init__(self, tensor: Tensor, hook) -> None:
        self.tensor, self.hook = weakref.ref(tensor), hook

    def remove(self) -> None:
        t = self.tensor()
        if t is not None and t._hooks and self.hook in t._hooks:
            hooks = list(t._hooks)
            hooks.remove(self.hook)
            t._hooks = tuple(hooks) or None


def held_arrays(ctx) -> list:
    """(name, array) for every array an op keeps on its ctx outside `saved_tensors` (indices,
    masks, or a forward value): in its own attributes, and one level into tuples and lists."""
    found = []
    for name in _held_names(type(ctx)):
        value = getattr(ctx, name, None)
        for item in value if isinstance(value, tuple | list) else (value,):
            if isinstance(item, np.ndarray):
                found.append((name, item))
    for name, value in getattr(ctx, "__dict__", {}).items():  # an op declared without slots
        if name == "cache":
            continue
        for item in value if isinstance(value, tuple | list) else (value,):
            if isinstance(item, np.ndarray):
                found.append((name, item))
    return found


def _held_names(cls) -> tuple:
    names = HELD.get(cls)
    if names is None:
        names = tuple(
            name
            for klass in cls.__mro__
            if klass is not Function and klass is not object
            for name in klass.__dict__.get("__slots__", ())
            if name != "cache"  # hidden under create_graph (autograd._on_tensors)
        )
        HELD[cls] = names
    return names


HELD = {}  # op class -> the names of its own attributes (its slots beyond Function's)
