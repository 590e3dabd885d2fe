"""Elementwise arithmetic: + - * / negation and power.

Each backward returns the local derivative times the incoming gradient, one per input.
Broadcasting is undone by the engine, so these work on the broadcast shape.
"""

import numpy as np

from minilucid.function import Function
from minilucid.ops.alike import log, plain, where


class Add(Function):
    """z = a + b;  dz/da = 1,  dz/db = 1"""

    __slots__ = ()

    @staticmethod
    def forward(ctx, a, b):
        return a + b

    @staticmethod
    def backward(ctx, grad):
        return grad, grad


class Sub(Function):
    """z = a - b;  dz/da = 1,  dz/db = -1"""

    __slots__ = ()

    @staticmethod
    def forward(ctx, a, b):
        return a - b

    @staticmethod
    def backward(ctx, grad):
        return grad, -grad


class Mul(Function):
    """z = a * b;  dz/da = b,  dz/db = a"""

    __slots__ = ()

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a * b

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        return grad * b, grad * a


class Div(Function):
    """z = a / b;  dz/da = 1 / b,  dz/db = -a / b**2"""

    __slots__ = ()

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a / b

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        grad_a = grad / b
        return grad_a, -grad_a * a / b


class Neg(Function):
    """z = -a;  dz/da = -1"""

    __slots__ = ()

    @staticmethod
    def forward(ctx, a):
        return -a

    @staticmethod
    def backward(ctx, grad):
        return -grad


class Pow(Function):
    """z = a ** b;  dz/da = b * a ** (b - 1),  dz/db = z * log(a)

    At the corners PyTorch's conventions: dz/da = 0 where b = 0 (a ** 0 is the constant 1, also
    at a = 0, where the formula would give 0 * inf), and dz/db = 0 where a = 0 and b >= 0.
    """

    __slots__ = ()

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a**b

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        # under create_graph a and b may be tensors: masks come from comparisons (constants)
        b_zero = plain(b == 0)
        if np.ndim(b_zero) == 0:  # the usual x ** 2, x ** 0.5, ...
            grad_a = grad * b * a ** (b - 1) if not b_zero else grad * 0
        else:
            with np.errstate(divide="ignore", invalid="ignore"):
                grad_a = where(b_zero, 0, grad * b * a ** (b - 1))
        if not ctx.needs_input_grad[1]:
            return grad_a, None
        with np.errstate(divide="ignore", invalid="ignore"):
            # defined for a > 0 as in calculus; at a = 0 (b >= 0) 0: the true value for b > 0,
            # PyTorch's convention at b = 0 (where a**b * log(a) tends to -inf)
            grad_b = where(plain(a == 0) & plain(b >= 0), 0, grad * a**b * log(a))
        return grad_a, grad_b
