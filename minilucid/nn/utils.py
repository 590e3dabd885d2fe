"""Helpers that act on the parameters of a model: clipping the gradients' total norm."""

from __future__ import annotations

import math

import numpy as np

from minilucid.tensor import Tensor


def clip_grad_norm_(
    parameters, max_norm: float, norm_type: float = 2.0, error_if_nonfinite: bool = False
) -> Tensor:
    """Scale all gradients together so that their joint norm is at most max_norm; return the norm.

    The norm is taken over every entry of every gradient, as if they were one long vector.
    """
    params = [parameters] if isinstance(parameters, Tensor) else list(parameters)
    grads = [p.grad for p in params if p.grad is not None]
    if not grads:
        return Tensor(0.0)
    norm_type = float(norm_type)
    if norm_type == math.inf:
        total = max(np.abs(g).max(initial=0.0) for g in grads)
    else:
        norms = [np.linalg.norm(g.ravel(), ord=norm_type) for g in grads]
        total = np.linalg.norm(np.array(norms), ord=norm_type)
    total = np.asarray(total, dtype=grads[0].dtype)
    if error_if_nonfinite and not np.isfinite(total):
        raise RuntimeError(
            f"clip_grad_norm_: the total norm of the gradients is {total}; a loss or a gradient "
            "overflowed. Pass error_if_nonfinite=False to scale anyway."
        )
    coef = min(max_norm / (float(total) + 1e-6), 1.0)  # 1e-6 keeps a zero norm from dividing
    for p in params:
        if p.grad is not None:
            p.grad = p.grad * np.asarray(coef, dtype=p.grad.dtype)  # a new array: grads may share
    return Tensor(total)
