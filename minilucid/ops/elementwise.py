"""Elementwise arithmetic: + - * / negation and power.

Each backward returns the local derivative times the incoming gradient, one per input.
Broadcasting is undone by the engine, so these work on the broadcast shape.
"""

import numpy as np

from minilucid.function import Function


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
    """z = a ** b;  dz/da = b * a ** (b - 1),  dz/db = z * log(a)"""

    __slots__ = ()

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a**b

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        grad_a = grad * b * a ** (b - 1)
        if not ctx.needs_input_grad[1]:
            return grad_a, None
        with np.errstate(divide="ignore", invalid="ignore"):
            grad_b = grad * a**b * np.log(a)  # defined for a > 0 only, as in calculus
        return grad_a, grad_b
