"""Undoing broadcasting: the gradient of a broadcast input is summed back to its shape."""

import numpy as np

from minilucid.function import Function
from minilucid.tensor import Tensor


def sum_to_shape(grad: np.ndarray, shape: tuple, op: str = "backward") -> np.ndarray:
    """Sum `grad` over the dimensions that broadcasting added or stretched, giving `shape`.

    Broadcasting copies an input along new leading dimensions and along dimensions of size 1;
    each copy sent its own gradient back, and the chain rule adds them up.
    """
    extra = grad.ndim - len(shape)
    if extra < 0:
        raise _mismatch(grad.shape, shape, op)
    stretched = []
    for axis, (size, wanted) in enumerate(zip(grad.shape[extra:], shape, strict=True)):
        if size != wanted:
            if wanted != 1:
                raise _mismatch(grad.shape, shape, op)
            stretched.append(axis)
    if extra:
        grad = grad.sum(axis=tuple(range(extra)))
    if stretched:
        grad = grad.sum(axis=tuple(stretched), keepdims=True)
    return grad


def _mismatch(got: tuple, shape: tuple, op: str) -> RuntimeError:
    return RuntimeError(
        f"{op}.backward: returned a gradient of shape {got} for an input of shape {shape}; "
        "a gradient must have its input's shape (or a shape that broadcast from it)"
    )


# --- gradients of gradients (chapter 12) ----------------------------------------------------
# A backward formula that runs on tensors needs its array-only steps as ops. Summing to a shape
# and broadcasting to a shape are an adjoint pair: the backward of each is the other.


class SumTo(Function):
    """z = a summed over the dimensions broadcasting added to `shape`;  dz/da: z's gradient
    broadcast back to a's shape (ExpandTo)"""

    __slots__ = ("in_shape",)

    @staticmethod
    def forward(ctx, a, shape, op="backward"):
        ctx.in_shape = a.shape
        return sum_to_shape(a, shape, op)

    @staticmethod
    def backward(ctx, grad):
        return expand_to(grad, ctx.in_shape)


class ExpandTo(Function):
    """z = a broadcast to `shape`;  dz/da: z's gradient summed back to a's shape (SumTo)"""

    __slots__ = ("in_shape",)

    @staticmethod
    def forward(ctx, a, shape):
        ctx.in_shape = a.shape
        return np.broadcast_to(a, shape)

    @staticmethod
    def backward(ctx, grad):
        return sum_to(grad, ctx.in_shape)


def sum_to(x, shape: tuple, op: str = "backward"):
    """`sum_to_shape` for an array, the op SumTo for a tensor (a gradient with a graph)."""
    if isinstance(x, Tensor):
        return SumTo.apply(x, shape=shape, op=op)
    return sum_to_shape(x, shape, op)


def expand_to(x, shape: tuple):
    """`np.broadcast_to` for an array, the op ExpandTo for a tensor."""
    if isinstance(x, Tensor):
        return ExpandTo.apply(x, shape=shape)
    return np.broadcast_to(x, shape)
