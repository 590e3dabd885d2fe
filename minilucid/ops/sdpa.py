"""Scaled dot-product attention as one op: the scores, the mask, the softmax and the weighted
sum of the values in one node, with the backward written out (chapter 13 builds the same thing
from MatMul, Where and Softmax; this is its faster twin).

    S = q @ k^T * scale + mask,   P = softmax(S) along the keys,   out = P @ v
    dv = P^T @ g,   dP = g @ v^T,   dS = P * (dP - sum(dP * P)),   dq = dS @ k * scale,
    dk = dS^T @ q * scale,   d(float mask) = dS

Forward keeps P as its cache for a first-order backward; under create_graph backward recomputes
P from the saved inputs, with a graph (a kept intermediate would be a constant). The formulas use
only operators and `alike` helpers, so the same lines run on arrays (a first derivative) and on
tensors (a graph for the second).
"""

import numpy as np

from minilucid.function import Function
from minilucid.ops.alike import exp, sum_kept
from minilucid.tensor import Tensor


class ScaledDotProductAttention(Function):
    """z = P @ v, P = softmax(q @ k^T * scale + mask);  dv = P^T @ g, dP = g @ v^T,
    dS = P * (dP - rowsum(dP * P)), dq = dS @ k * scale, dk = dS^T @ q * scale, dmask = dS"""

    __slots__ = ("cache",)  # forward's values, for a first-order backward

    @staticmethod
    def forward(ctx, q, k, v, mask=None, scale=1.0, keep=None):
        ctx.save_for_backward(q, k, v, mask)
        p = ctx.cache = weights(q, k, scale, keep, mask)
        return p @ v

    @staticmethod
    def backward(ctx, grad):
        q, k, v, mask = ctx.saved_tensors
        scale, keep = ctx.options["scale"], ctx.options.get("keep")
        p = getattr(ctx, "cache", None)
        if p is None:  # under create_graph: P again, recorded on the saved tensors
            p = weights(q, k, scale, keep, mask)
        d_p = grad @ _swap_last(v)
        if type(d_p) is np.ndarray:  # the same, in place on the fresh arrays
            d_p -= _row_sums(d_p * p)
            d_p *= p
            d_s = d_p
        else:
            d_s = p * (d_p - sum_kept(d_p * p, -1))  # the softmax's backward, row by row
        d_scores = d_s * scale
        grads = (d_scores @ k, _swap_last(d_scores) @ q, _swap_last(p) @ grad)
        return grads if mask is None else (*grads, d_s)


def weights(q, k, scale: float, keep=None, mask=None):
    """softmax(q @ k^T * scale + mask) over the keys, with `keep` False pairs left out; a query
    that may see no key gets weights 0 (its output is 0, as in PyTorch)."""
    if type(q) is np.ndarray and type(k) is np.ndarray and type(mask) is not Tensor:
        return _weights_of_arrays(q, k, scale, keep, mask)
    scores = q @ _swap_last(k) * scale
    if keep is not None:  # 0 where attending, -inf where not: one addition
        scores = scores + np.where(keep, 0, -np.inf).astype(_constant(scores).dtype)
    if mask is not None:
        if type(mask) is np.ndarray and mask.dtype != _constant(scores).dtype:
            mask = mask.astype(_constant(scores).dtype)  # added in the query's dtype, as PyTorch
        scores = scores + mask
    top = _constant(scores).max(axis=-1, keepdims=True)  # a constant: softmax ignores any shift
    top[top == -np.inf] = 0  # a row of -inf only: exp(-inf - 0) = 0, no nan
    e = exp(scores - top)
    total = sum_kept(e, -1)
    return e / (total + (_constant(total) == 0))  # a row of zeros stays zeros


def _weights_of_arrays(q, k, scale: float, keep, mask) -> np.ndarray:
    """weights() on arrays, step for step the same, in place on one fresh array."""
    scores = q @ np.swapaxes(k, -1, -2)
    scores *= scale
    if keep is not None:
        scores += np.where(keep, 0, -np.inf).astype(scores.dtype)
    if mask is not None:
        scores += mask.astype(scores.dtype, copy=False)
    top = _row_maxima(scores)
    top[top == -np.inf] = 0
    scores -= top
    np.exp(scores, out=scores)
    total = _row_sums(scores)
    total += total == 0
    scores /= total
    return scores


# Along the keys, rows are short (a dozen entries in chapter 13): NumPy's reductions along a
# short last axis take about 4 ns an entry, a matrix-vector product or a reduction down the
# columns of the transposed rows a fifth of that.


def _row_sums(x: np.ndarray) -> np.ndarray:
    """x summed along its last axis, kept as a column: one matrix-vector product."""
    n = x.shape[-1]
    return (x.reshape(-1, n) @ np.ones(n, dtype=x.dtype)).reshape(*x.shape[:-1], 1)


def _row_maxima(x: np.ndarray) -> np.ndarray:
    """x's maximum along its last axis, kept as a column (NaN where a row holds one)."""
    n = x.shape[-1]
    if x.size == 0:
        return x.max(axis=-1, keepdims=True, initial=-np.inf)
    columns = np.ascontiguousarray(x.reshape(-1, n).T)
    return columns.max(axis=0).reshape(*x.shape[:-1], 1)


def _constant(x):
    """x's values as an array with no gradient: for what the result does not depend on (the
    shift of a softmax), for a dtype and for masks. Read on purpose, so not through plain(),
    which refuses to read a tensor with a gradient under create_graph."""
    return x.detach().data if isinstance(x, Tensor) else x


def _swap_last(x):
    """x with its last two dimensions swapped: an array, or a tensor under create_graph."""
    return np.swapaxes(x, -1, -2) if type(x) is np.ndarray else x.transpose(-1, -2)
