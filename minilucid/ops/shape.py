"""Ops that move numbers without changing them: reshape, permute, indexing, cat, stack, where.

Their backward moves the gradient back to where each number came from.
"""

import numpy as np

from minilucid._arrays import checked_axis
from minilucid.function import Function


class Reshape(Function):
    """z = a viewed as `shape`;  dz/da: the gradient viewed back as a's shape"""

    __slots__ = ("in_shape",)

    @staticmethod
    def forward(ctx, a, shape):
        ctx.in_shape = a.shape
        try:
            return a.reshape(shape)
        except ValueError:
            raise ValueError(
                f"reshape: cannot view shape {a.shape} ({a.size} elements) as {shape}; "
                "the number of elements must stay the same (one dimension may be -1)"
            ) from None

    @staticmethod
    def backward(ctx, grad):
        return grad.reshape(ctx.in_shape)


class Permute(Function):
    """z = a with its dimensions reordered by `dims`;  dz/da: the inverse reordering"""

    __slots__ = ("dims",)

    @staticmethod
    def forward(ctx, a, dims):
        ndim = a.ndim
        in_range = len(dims) == ndim and all(-ndim <= d < ndim for d in dims)
        if not in_range or sorted(d % ndim for d in dims) != list(range(ndim)):
            raise ValueError(
                f"permute: dims {dims} are not a reordering of the {a.ndim} dimensions "
                f"of shape {a.shape}"
            )
        ctx.dims = dims
        return a.transpose(dims)

    @staticmethod
    def backward(ctx, grad):
        inverse = tuple(np.argsort([d % grad.ndim for d in ctx.dims]).tolist())
        if type(grad) is np.ndarray:
            return grad.transpose(inverse)
        return Permute.apply(grad, dims=inverse)  # a tensor under create_graph


class GetItem(Function):
    """z = a[index];  dz/da: zeros with the gradient added back at index (repeats accumulate)"""

    __slots__ = ("in_shape", "index")

    @staticmethod
    def forward(ctx, a, index):
        index = _plain_index(index)
        if a.ndim == 0 and isinstance(index, int | np.integer):  # also what `for v in t` does
            raise IndexError(
                "getitem: a 0-d tensor holds one number and has no dimension to index (nor to "
                "iterate over, as in PyTorch); use .item()"
            )
        if _is_basic(index):  # t[i, j] is a view, as in PyTorch: NumPy gives a 0-d array for
            parts = index if isinstance(index, tuple) else (index,)  # t[i, j, ...], a number
            if Ellipsis not in parts:  # for t[i, j]
                index = (*parts, Ellipsis)
        ctx.in_shape = a.shape
        ctx.index = index
        try:
            return a[index]
        except IndexError as error:
            raise IndexError(f"getitem: {error} (indexing a tensor of shape {a.shape})") from None

    @staticmethod
    def backward(ctx, grad):
        if type(grad) is np.ndarray:
            return IndexAdd.forward(ctx, grad, ctx.index, ctx.in_shape)
        return IndexAdd.apply(grad, index=ctx.index, shape=ctx.in_shape)


class IndexAdd(Function):
    """z = zeros of `shape` with a added at index (repeats accumulate);  dz/da = z's gradient
    at index (GetItem): the two are an adjoint pair, each the other's backward"""

    __slots__ = ("index",)

    @staticmethod
    def forward(ctx, a, index, shape):
        ctx.index = index
        out = np.zeros(shape, dtype=a.dtype)
        if _is_basic(index):
            out[index] = a  # basic indexing never repeats an element
        else:
            np.add.at(out, index, a)  # `out[i] += g` would drop repeated indices
        return out

    @staticmethod
    def backward(ctx, grad):
        return grad[ctx.index]  # GetItem on a tensor


class Cat(Function):
    """z = [a1, a2, ...] joined along dim;  dz/dai: the slice of the gradient ai filled"""

    __slots__ = ("dim", "sizes")

    @staticmethod
    def forward(ctx, *arrays, dim=0):
        _same_shapes_but(arrays, dim, "cat")
        ctx.dim = dim
        ctx.sizes = [a.shape[dim] for a in arrays]
        return np.concatenate(arrays, axis=dim)

    @staticmethod
    def backward(ctx, grad):
        if type(grad) is np.ndarray:
            return tuple(np.split(grad, np.cumsum(ctx.sizes)[:-1], axis=ctx.dim))
        before, start = (slice(None),) * (ctx.dim % grad.ndim), 0
        pieces = []
        for size in ctx.sizes:  # on a tensor: one GetItem per input
            pieces.append(grad[(*before, slice(start, start + size))])
            start += size
        return tuple(pieces)


class Stack(Function):
    """z = [a1, a2, ...] stacked along a new dim;  dz/dai: the gradient's i-th slice there"""

    __slots__ = ("dim",)

    @staticmethod
    def forward(ctx, *arrays, dim=0):
        if not arrays:
            raise ValueError("stack: needs at least one tensor")
        if len({a.shape for a in arrays}) > 1:
            raise ValueError(f"stack: all tensors need the same shape, got {_listed(arrays)}")
        ctx.dim = checked_axis(dim, arrays[0].ndim + 1, "stack")  # the new dim is one of ndim + 1
        return np.stack(arrays, axis=ctx.dim)

    @staticmethod
    def backward(ctx, grad):
        if type(grad) is np.ndarray:
            return tuple(np.moveaxis(grad, ctx.dim, 0))
        before = (slice(None),) * ctx.dim  # on a tensor: one GetItem per input
        return tuple(grad[(*before, i)] for i in range(grad.shape[ctx.dim]))


class Where(Function):
    """z = a where cond else b;  dz/da = cond,  dz/db = not cond"""

    __slots__ = ()

    @staticmethod
    def forward(ctx, cond, a, b):
        cond = np.asarray(cond, dtype=bool)
        ctx.save_for_backward(cond)
        return np.where(cond, a, b)

    @staticmethod
    def backward(ctx, grad):
        (cond,) = ctx.saved_tensors
        zero = np.zeros((), dtype=grad.dtype)
        if type(grad) is np.ndarray:
            return None, np.where(cond, grad, zero), np.where(cond, zero, grad)
        return None, Where.apply(cond, grad, zero), Where.apply(cond, zero, grad)


def cat(tensors, dim: int = 0):
    """Join tensors of equal shape (but along `dim`) into one."""
    return Cat.apply(*tensors, dim=dim)


def stack(tensors, dim: int = 0):
    """Stack tensors of equal shape along a new dimension `dim`."""
    return Stack.apply(*tensors, dim=dim)


def where(condition, input, other):  # noqa: A002  (PyTorch's name)
    """Pick from `input` where `condition` holds, else from `other` (broadcasting all three)."""
    return Where.apply(condition, input, other)


def _plain_index(index):
    """Tensors inside an index become their arrays."""
    if isinstance(index, tuple):
        return tuple(_plain_index(i) for i in index)
    data = getattr(index, "data", None)
    return data if isinstance(data, np.ndarray) else index


def _is_basic(index) -> bool:
    parts = index if isinstance(index, tuple) else (index,)
    return all(isinstance(p, int | slice | type(None) | type(Ellipsis)) for p in parts)


def _same_shapes_but(arrays, dim: int, op: str) -> None:
    if not arrays:
        raise ValueError(f"{op}: needs at least one tensor")
    first = arrays[0]
    if first.ndim == 0:
        raise ValueError(f"{op}: 0-d tensors have no dimension to join along; use stack")
    if not -first.ndim <= dim < first.ndim:
        raise ValueError(f"{op}: dim {dim} is out of range for tensors of shape {first.shape}")
    axis = dim % first.ndim
    for a in arrays:
        others = [s for i, s in enumerate(a.shape) if i != axis]
        if a.ndim != first.ndim or others != [s for i, s in enumerate(first.shape) if i != axis]:
            raise ValueError(
                f"{op}: shapes must match except along dim {dim}, got {_listed(arrays)}"
            )


def _listed(arrays) -> str:
    return ", ".join(str(a.shape) for a in arrays)
