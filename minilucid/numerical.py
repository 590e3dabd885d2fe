"""Numerical differentiation by central differences: the oracle for every analytic gradient."""

import numpy as np

from minilucid.grad_mode import no_grad
from minilucid.tensor import Tensor


def numerical_grad(fn, inputs, eps: float = 1e-6, grad_output=None) -> list:
    """d(sum(fn(*inputs) * grad_output))/d(input) for each input, one entry at a time.

    (f(x + eps) - f(x - eps)) / (2 eps) has an error of order eps**2, so use float64 inputs.
    """
    # Nudge copies: the caller's arrays stay untouched, and a copy is contiguous, so that
    # `reshape(-1)` below is a view (of a transposed array it would be a copy).
    inputs = [Tensor(np.array(x.data if isinstance(x, Tensor) else x, order="C")) for x in inputs]
    with no_grad():
        out = fn(*inputs)
        weights = np.ones_like(out.data) if grad_output is None else np.asarray(grad_output)
        grads = []
        for x in inputs:
            grad = np.zeros_like(x.data)
            flat, flat_grad = x.data.reshape(-1), grad.reshape(-1)  # views into the arrays
            for i in range(flat.size):
                kept = flat[i]
                flat[i] = kept + eps
                up = float((fn(*inputs).data * weights).sum())
                flat[i] = kept - eps
                down = float((fn(*inputs).data * weights).sum())
                flat[i] = kept
                flat_grad[i] = (up - down) / (2 * eps)
            grads.append(grad)
    return grads
