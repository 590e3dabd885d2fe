"""Undoing broadcasting: the gradient of a broadcast input is summed back to its shape."""

import numpy as np


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
