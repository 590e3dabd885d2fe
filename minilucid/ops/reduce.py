"""Reductions: sum, mean, max and min over all numbers or over chosen dimensions.

A reduction removes dimensions; its backward puts them back and spreads the gradient over
every number that took part.
"""

import numpy as np

from minilucid._arrays import checked_axes, checked_axis
from minilucid.function import Function
from minilucid.ops.broadcast import expand_to


class Sum(Function):
    """z = sum of a over dim;  dz/da = 1 for every summed entry"""

    __slots__ = ("in_shape", "axes", "keepdim")

    @staticmethod
    def forward(ctx, a, dim=None, keepdim=False):
        ctx.in_shape, ctx.axes, ctx.keepdim = a.shape, checked_axes(dim, a.ndim, "sum"), keepdim
        if a.dtype == np.float16:  # add up in float32, as PyTorch does: float16 runs out early
            return a.sum(axis=ctx.axes, keepdims=keepdim, dtype=np.float32).astype(np.float16)
        return a.sum(axis=ctx.axes, keepdims=keepdim)

    @staticmethod
    def backward(ctx, grad):
        return expand_to(_restore(grad, ctx), ctx.in_shape)


class Mean(Function):
    """z = mean of a over dim (n entries each);  dz/da = 1 / n"""

    __slots__ = ("in_shape", "axes", "keepdim")

    @staticmethod
    def forward(ctx, a, dim=None, keepdim=False):
        ctx.in_shape, ctx.axes, ctx.keepdim = a.shape, checked_axes(dim, a.ndim, "mean"), keepdim
        with np.errstate(invalid="ignore", divide="ignore"):  # over no entries: nan, as PyTorch
            return np.mean(a, axis=ctx.axes, keepdims=keepdim) if a.size else _empty_mean(a, ctx)

    @staticmethod
    def backward(ctx, grad):
        count = np.prod([ctx.in_shape[i] for i in ctx.axes], dtype=np.int64)
        if grad.dtype.itemsize < 4 and type(grad) is np.ndarray:  # float16 ends at 65504:
            share = (_restore(grad, ctx).astype(np.float32) / count).astype(grad.dtype)  # in f32
        elif count == 0:  # nothing was averaged: the input is empty and so is its gradient
            share = _restore(grad, ctx) * 0
        else:
            share = _restore(grad, ctx) / grad.dtype.type(count)
        return expand_to(share, ctx.in_shape)


class Max(Function):
    """z = max of a over dim;  dz/da = 1 at the maximum (shared equally by ties), else 0

    As in PyTorch, a nan is the maximum of anything and takes the gradient.
    """

    __slots__ = ("axes", "keepdim")

    @staticmethod
    def forward(ctx, a, dim=None, keepdim=False):
        return _extreme(ctx, a, dim, keepdim, np.max, "max")

    @staticmethod
    def backward(ctx, grad):
        return _to_extremes(ctx, grad)


class Min(Function):
    """z = min of a over dim;  dz/da = 1 at the minimum (shared equally by ties), else 0"""

    __slots__ = ("axes", "keepdim")

    @staticmethod
    def forward(ctx, a, dim=None, keepdim=False):
        return _extreme(ctx, a, dim, keepdim, np.min, "min")

    @staticmethod
    def backward(ctx, grad):
        return _to_extremes(ctx, grad)


def argmax(a: np.ndarray, dim=None, keepdim: bool = False) -> np.ndarray:
    """The int64 index of the largest entry along dim (the first one on a tie, a nan beats
    any number); dim=None: the index into the flattened array. Indices have no gradient."""
    if isinstance(dim, tuple | list):
        raise TypeError(
            f"argmax: dim must be one int (or None for the whole tensor), got {dim!r}; "
            "to search several dimensions, flatten them into one first"
        )
    if dim is None:
        if a.size == 0:
            raise ValueError(f"argmax: the tensor of shape {a.shape} is empty")
        index = np.asarray(np.argmax(a), dtype=np.int64)
        return index.reshape((1,) * a.ndim) if keepdim else index
    axis = checked_axis(dim, a.ndim, "argmax")
    if a.ndim == 0:  # one number: its index is 0
        return np.zeros((), dtype=np.int64)
    if a.shape[axis] == 0:
        raise ValueError(
            f"argmax: dim {dim} of the tensor of shape {a.shape} is empty, so it has no "
            "largest entry"
        )
    return np.argmax(a, axis=axis, keepdims=keepdim).astype(np.int64, copy=False)


def _empty_mean(a, ctx):
    """The mean of an empty tensor: nan where the reduced entries are none (as PyTorch), an
    empty result where the kept dimensions are."""
    kept = tuple(1 if i in ctx.axes else n for i, n in enumerate(a.shape))
    out = np.full(kept, np.nan, dtype=a.dtype)
    return out if ctx.keepdim else np.squeeze(out, ctx.axes)


def _restore(grad, ctx):
    """Put back, as size 1, the dimensions the reduction removed (on arrays and tensors)."""
    if ctx.keepdim:
        return grad
    if type(grad) is np.ndarray:
        return np.expand_dims(grad, ctx.axes)
    shape = list(grad.shape)
    for axis in ctx.axes:  # sorted, so each insert lands where the dimension was
        shape.insert(axis, 1)
    return grad.reshape(tuple(shape))


def _extreme(ctx, a, dim, keepdim, reduce, op: str):
    ctx.axes, ctx.keepdim = checked_axes(dim, a.ndim, op), keepdim
    if any(a.shape[i] == 0 for i in ctx.axes) or (a.size == 0 and not ctx.axes):
        raise ValueError(
            f"{op}: the tensor of shape {a.shape} has no entries along the dimensions reduced "
            f"{ctx.axes}, so it has no {'largest' if op == 'max' else 'smallest'} entry"
        )
    out = reduce(a, axis=ctx.axes, keepdims=True)
    hits = a == out
    if out.dtype.kind == "f" and np.isnan(out).any():  # nan wins, and takes the gradient
        hits |= np.isnan(a) & np.isnan(out)
    ctx.save_for_backward(hits)
    return out if keepdim else np.squeeze(out, ctx.axes)


def _to_extremes(ctx, grad):
    (hits,) = ctx.saved_tensors
    share = hits / hits.sum(axis=ctx.axes, keepdims=True)
    if type(grad) is not np.ndarray:  # a tensor under create_graph; `share` is a constant
        return _restore(grad, ctx) * share.astype(grad.dtype)
    return (_restore(grad, ctx) * share).astype(grad.dtype, copy=False)
