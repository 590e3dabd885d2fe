"""Matrix multiplication, with batches and 1-D operands as in NumPy and PyTorch."""

import numpy as np

from minilucid.function import Function


class MatMul(Function):
    """Z = A @ B;  dZ/dA = G @ B^T,  dZ/dB = A^T @ G  (G the incoming gradient)"""

    __slots__ = ()

    @staticmethod
    def forward(ctx, a, b):
        a, b = np.asarray(a), np.asarray(b)
        if a.ndim == 0 or b.ndim == 0:
            raise ValueError(
                f"matmul: {a.shape} @ {b.shape} - both operands need at least one dimension; "
                "use * to multiply by a scalar"
            )
        inner_b = b.shape[-2] if b.ndim > 1 else b.shape[0]
        if a.shape[-1] != inner_b:
            raise ValueError(
                f"matmul: {a.shape} @ {b.shape} - inner dimensions {a.shape[-1]} and "
                f"{inner_b} differ"
            )
        try:
            if a.ndim > 2 or b.ndim > 2:  # batches of matrices: their batch shapes broadcast
                np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
        except ValueError:
            raise ValueError(
                f"matmul: {a.shape} @ {b.shape} - batch dimensions {a.shape[:-2]} and "
                f"{b.shape[:-2]} cannot be broadcast together (aligned from the right, each pair "
                "must be equal or one of them 1)"
            ) from None
        ctx.save_for_backward(a, b)
        return a @ b

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad
        # A 1-D operand is a row (left) or a column (right) whose extra dimension was dropped.
        a2 = a[None, :] if a.ndim == 1 else a
        b2 = b[:, None] if b.ndim == 1 else b
        if b.ndim == 1:  # first: with two 1-D operands the gradient is 0-d
            grad = grad[..., None]
        if a.ndim == 1:
            grad = grad[..., None, :]
        grad_a = grad_b = None
        if need_a:
            grad_a = grad @ _swap_last(b2)
            if a.ndim == 1:
                grad_a = grad_a[..., 0, :]
        if need_b:
            grad_b = _swap_last(a2) @ grad
            if b.ndim == 1:
                grad_b = grad_b[..., 0]
        return grad_a, grad_b


def _swap_last(x):
    """x with its last two dimensions swapped: an array, or a tensor under create_graph."""
    return np.swapaxes(x, -1, -2) if type(x) is np.ndarray else x.transpose(-1, -2)


class Affine(Function):
    """Z = X @ W^T + b, the op of a Linear layer, as one node instead of three (Permute, MatMul,
    Add). dZ/dX = G @ W,  dZ/dW = G^T @ X,  dZ/db = G summed over every row (G the incoming
    gradient; with more than two dimensions the leading ones are rows too)."""

    __slots__ = ()

    @staticmethod
    def forward(ctx, x, weight, bias=None):
        if type(x) is not np.ndarray or type(weight) is not np.ndarray:
            x, weight = np.asarray(x), np.asarray(weight)
        if weight.ndim != 2 or x.ndim == 0 or x.shape[-1] != weight.shape[1]:
            raise ValueError(
                f"affine: linear's input {x.shape} and weight {weight.shape} - the weight must be "
                "(out_features, in_features) and the input's last dimension in_features = "
                f"{weight.shape[-1] if weight.ndim else '?'}; reshape or flatten the input"
            )
        ctx.save_for_backward(x, weight)
        if x.ndim > 2:  # one matrix product over all rows: NumPy would loop over the leading dims
            out = (x.reshape(-1, x.shape[-1]) @ weight.T).reshape(*x.shape[:-1], weight.shape[0])
        else:
            out = x @ weight.T
        if bias is None:
            return out
        if np.shape(bias) != weight.shape[:1]:
            raise ValueError(
                f"affine: linear's bias {np.shape(bias)} with weight {weight.shape} - the bias "
                f"needs one entry per output, shape ({weight.shape[0]},)"
            )
        if type(bias) is np.ndarray and out.dtype == bias.dtype:  # out is fresh: add in place
            out += bias
            return out
        return out + bias

    @staticmethod
    def backward(ctx, grad):
        x, weight = ctx.saved_tensors
        need_x, need_w, *need_b = ctx.needs_input_grad
        rows, x_rows = grad, x  # (rows, out_features) and (rows, in_features)
        if grad.ndim != 2:
            rows, x_rows = grad.reshape(-1, grad.shape[-1]), x.reshape(-1, x.shape[-1])
        grad_x = (rows @ weight).reshape(x.shape) if need_x else None
        grad_w = None
        if need_w:  # summing over many rows, BLAS is faster with the longer side as its rows
            out_features, in_features = weight.shape
            flip = out_features < in_features < len(rows)
            grad_w = (x_rows.T @ rows).T if flip else rows.T @ x_rows
        if not need_b:  # no bias
            return grad_x, grad_w
        return grad_x, grad_w, rows.sum(0) if need_b[0] else None
