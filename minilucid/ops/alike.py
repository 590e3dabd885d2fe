"""Backward formulas on arrays and tensors alike (chapter 12).

A backward formula written with operators (`grad * b`, `1 - z * z`) already works on both: on
arrays it computes a gradient, on tensors it records the gradient's own graph. These helpers do
the same for the few NumPy functions that backward formulas call: each takes arrays to NumPy and
tensors to the op that differentiates the same function.
"""

import numpy as np

from minilucid._views import readable
from minilucid.tensor import Tensor


def plain(x):
    """The array inside a tensor (x itself otherwise): for masks and tests, which need no graph.
    Under create_graph a backward may read this way only what has no gradient (a mask)."""
    return readable(x, "plain()") if isinstance(x, Tensor) else x


def where(cond, x, y):
    """np.where(cond, x, y) with cond an array; the op Where if x or y is a tensor."""
    if isinstance(x, Tensor) or isinstance(y, Tensor):
        return shape.Where.apply(cond, x, y)
    return np.where(cond, x, y)


def exp(x):
    """np.exp, or the op Exp for a tensor."""
    return unary.Exp.apply(x) if isinstance(x, Tensor) else np.exp(x)


def log(x):
    """np.log, or the op Log for a tensor."""
    return unary.Log.apply(x) if isinstance(x, Tensor) else np.log(x)


def sum_kept(x, dim):
    """x summed over dim (an int or a tuple), keeping the summed dimensions as size 1."""
    if isinstance(x, Tensor):
        return x.sum(dim=dim, keepdim=True)
    return x.sum(axis=dim, keepdims=True)


# The ops these helpers hand tensors to are looked up at call time, and imported last: an ops
# module (unary, say) may then import these helpers itself without an import circle.
from minilucid.ops import shape, unary  # noqa: E402
