"""Softmax and log-softmax along a dimension, computed the numerically safe way."""

import numpy as np

from minilucid._arrays import checked_axis
from minilucid.function import Function
from minilucid.ops.alike import exp, sum_kept


class Softmax(Function):
    """z = exp(a) / sum(exp(a));  dz/da applied to g: z * (g - sum(g * z))"""

    __slots__ = ("dim",)

    @staticmethod
    def forward(ctx, a, dim=-1):
        ctx.dim = checked_axis(dim, a.ndim, "softmax") if a.ndim else None  # 0-d: one entry
        if a.ndim:
            _check_not_empty(a, ctx.dim, "softmax")
        shifted = np.exp(a - a.max(axis=ctx.dim, keepdims=True))  # the largest becomes exp(0)
        out = shifted / shifted.sum(axis=ctx.dim, keepdims=True)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved_tensors
        return out * (grad - sum_kept(grad * out, ctx.dim))


class LogSoftmax(Function):
    """z = a - logsumexp(a);  dz/da applied to g: g - softmax(a) * sum(g)"""

    __slots__ = ("dim",)

    @staticmethod
    def forward(ctx, a, dim=-1):
        ctx.dim = checked_axis(dim, a.ndim, "log_softmax") if a.ndim else None  # 0-d: one entry
        if a.ndim:
            _check_not_empty(a, ctx.dim, "log_softmax")
        out = a - logsumexp(a, ctx.dim)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved_tensors
        return grad - exp(out) * sum_kept(grad, ctx.dim)


class CrossEntropy(Function):
    """z = mean_i(-log softmax(a_i)[t_i]);  dz/da_i = (softmax(a_i) - onehot(t_i)) / n"""

    __slots__ = ("targets",)

    @staticmethod
    def forward(ctx, logits, targets):
        _check_targets(logits, targets)
        n = len(targets)
        shifted = logits - logits.max(axis=1, keepdims=True)  # exp cannot overflow now
        total = np.exp(shifted).sum(axis=1, keepdims=True)
        ctx.save_for_backward(logits)  # only the input: the softmax is recomputed in backward
        ctx.targets = targets  # class indices: a constant, version-checked by backward
        # -log softmax(a)[t] = log(sum(exp(a - max))) - (a - max)[t], averaged over the rows
        return (np.log(total).sum() - shifted[np.arange(n), targets].sum()) / n

    @staticmethod
    def backward(ctx, grad):
        (logits,) = ctx.saved_tensors
        targets, n = ctx.targets, len(ctx.targets)
        rows = np.arange(n)
        if type(grad) is not np.ndarray:  # create_graph: the softmax recomputed with ops
            onehot = np.zeros(logits.shape, dtype=logits.dtype)
            onehot[rows, targets] = 1
            return (Softmax.apply(logits, dim=1) - onehot) * (grad / n), None
        d_logits = logits - logits.max(axis=1, keepdims=True)  # one fresh array, then in place
        np.exp(d_logits, out=d_logits)
        d_logits /= d_logits.sum(axis=1, keepdims=True)  # softmax(a)
        d_logits[rows, targets] -= 1
        d_logits *= grad / n
        return d_logits, None


def logsumexp(a: np.ndarray, dim: int) -> np.ndarray:
    """log(sum(exp(a))) along dim (kept), shifted by the maximum so that exp cannot overflow."""
    top = a.max(axis=dim, keepdims=True)
    return top + np.log(np.exp(a - top).sum(axis=dim, keepdims=True))


def _check_not_empty(a: np.ndarray, dim: int, op: str) -> None:
    if a.shape[dim] == 0:
        raise ValueError(
            f"{op}: dimension {dim} of the tensor of shape {a.shape} is empty, and a "
            "distribution over no entries is undefined; choose a dimension with entries"
        )


def _check_targets(logits: np.ndarray, targets: np.ndarray) -> None:
    if logits.ndim != 2:
        raise ValueError(
            f"cross_entropy: logits must have shape (batch, classes), got {logits.shape}"
        )
    if targets.ndim != 1 or targets.dtype.kind not in "iu":
        raise ValueError(
            f"cross_entropy: targets must be a 1-D tensor of class indices (integers), "
            f"got shape {targets.shape} and dtype {targets.dtype}"
        )
    if len(targets) != len(logits):
        raise ValueError(f"cross_entropy: {len(logits)} rows of logits but {len(targets)} targets")
    classes = logits.shape[1]
    if len(targets) and (targets.min() < 0 or targets.max() >= classes):
        i = int(np.argmax((targets < 0) | (targets >= classes)))
        raise ValueError(
            f"cross_entropy: target {int(targets[i])} at position {i} is not a class index; "
            f"with {classes} classes use 0 to {classes - 1}"
        )
