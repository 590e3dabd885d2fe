"""gradcheck: compare backward's gradients with central differences, entry by entry."""

import numpy as np

from minilucid.autograd import grad as autograd_grad
from minilucid.numerical import numerical_grad
from minilucid.tensor import Tensor


class GradcheckError(AssertionError):
    """An analytic gradient disagrees with the numerical one; the message says where."""


def gradcheck(
    fn, inputs, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3, raise_exception=True
) -> bool:
    """True if backward agrees with central differences for every entry of every input.

    Inputs should be float64 tensors with requires_grad=True. The output is weighted by a
    fixed random array, so a gradient that is wrong in only one output entry is caught too.
    """
    inputs = tuple(inputs) if isinstance(inputs, list | tuple) else (inputs,)
    for i, x in enumerate(inputs):
        if not isinstance(x, Tensor) or not x.requires_grad:
            raise ValueError(f"gradcheck: input {i} must be a tensor with requires_grad=True")
        if x.dtype != np.float64:
            raise ValueError(
                f"gradcheck: input {i} is {x.dtype}; use float64 (dtype=ml.float64), "
                "float32 is too coarse for central differences"
            )
    out = fn(*inputs)
    weights = np.random.default_rng(0).uniform(0.5, 1.5, size=out.shape)
    analytic = autograd_grad(out, inputs, grad_outputs=weights)
    numeric = numerical_grad(fn, inputs, eps, grad_output=weights)
    for i, (a, n) in enumerate(zip(analytic, numeric, strict=True)):
        bad = ~np.isclose(a, n, rtol=rtol, atol=atol)
        if bad.any():
            where = tuple(int(i) for i in np.unravel_index(int(np.argmax(bad)), a.shape))
            message = (
                f"gradcheck: input {i} (shape {a.shape}) disagrees at entry {where}: "
                f"backward gave {a[where]:.6g}, central differences give {n[where]:.6g} "
                f"({int(bad.sum())} of {a.size} entries differ)"
            )
            if raise_exception:
                raise GradcheckError(message)
            return False
    return True
