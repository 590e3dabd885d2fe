"""Elementwise functions: exp, log, sqrt, abs, clamp and the activations tanh, sigmoid, relu."""

import numpy as np

from minilucid.function import Function
from minilucid.ops.alike import plain


class Exp(Function):
    """z = exp(a);  dz/da = exp(a) = z"""

    __slots__ = ()

    @staticmethod
    def forward(ctx, a):
        out = np.exp(a)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved_tensors
        return grad * out


class Log(Function):
    """z = log(a);  dz/da = 1 / a"""

    __slots__ = ()

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        with np.errstate(divide="ignore", invalid="ignore"):  # log(0) = -inf, log(-1) = nan
            return np.log(a)

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return grad / a


class Sqrt(Function):
    """z = sqrt(a);  dz/da = 1 / (2 z)"""

    __slots__ = ()

    @staticmethod
    def forward(ctx, a):
        with np.errstate(invalid="ignore"):
            out = np.sqrt(a)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved_tensors
        return grad / (2 * out)


class Abs(Function):
    """z = |a|;  dz/da = sign(a)  (0 at a = 0)"""

    __slots__ = ()

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return np.abs(a)

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        if type(a) is np.ndarray:
            return grad * np.sign(a)
        # a tensor under create_graph: the sign from comparisons, a constant
        return grad * (plain(a > 0).astype(grad.dtype) - plain(a < 0))


class Clamp(Function):
    """z = min(max(a, low), high);  dz/da = 1 inside [low, high], 0 where clamped"""

    __slots__ = ()

    @staticmethod
    def forward(ctx, a, low=None, high=None):
        if low is None and high is None:
            raise ValueError("clamp: give at least one of min and max")
        low, high = _bound(low, "min"), _bound(high, "max")
        if low is not None and high is not None and np.any(low > high):
            raise ValueError(f"clamp: min {low} is greater than max {high}")
        out = np.clip(a, low, high)
        ctx.save_for_backward(out == a)
        return out

    @staticmethod
    def backward(ctx, grad):
        (inside,) = ctx.saved_tensors
        return grad * inside


def _bound(value, name: str):
    """A bound of clamp as a number or an array; a bound that requires grad is refused."""
    if getattr(value, "requires_grad", False):
        raise TypeError(
            f"clamp: a {name} tensor that requires grad is not supported here (its gradient "
            f"would be lost); pass {name}=bound.detach(), or write "
            "ml.where(x < low, low, x) to differentiate the bound too"
        )
    return plain(value)


class Tanh(Function):
    """z = tanh(a);  dz/da = 1 - z**2"""

    __slots__ = ()

    @staticmethod
    def forward(ctx, a):
        out = np.tanh(a)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved_tensors
        return grad * (1 - out * out)


class Sigmoid(Function):
    """z = 1 / (1 + exp(-a));  dz/da = z (1 - z)"""

    __slots__ = ()

    @staticmethod
    def forward(ctx, a):
        e = np.exp(-np.abs(a))  # exp of a number <= 0: it cannot overflow
        # a >= 0: 1 / (1 + exp(-a));  a < 0: exp(a) / (1 + exp(a)), exact in the left tail too
        out = np.where(a >= 0, 1, e) / (1 + e)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved_tensors
        return grad * out * (1 - out)


class Relu(Function):
    """z = max(a, 0);  dz/da = 1 where a > 0, else 0"""

    __slots__ = ()

    @staticmethod
    def forward(ctx, a):
        positive = a > 0
        ctx.save_for_backward(positive)
        return np.maximum(a, 0)

    @staticmethod
    def backward(ctx, grad):
        (positive,) = ctx.saved_tensors
        return grad * positive


def exp(x):
    return Exp.apply(x)


def log(x):
    return Log.apply(x)


def sqrt(x):
    return Sqrt.apply(x)


def abs(x):  # noqa: A001  (PyTorch's name)
    return Abs.apply(x)


def clamp(x, min=None, max=None):  # noqa: A002
    return Clamp.apply(x, low=min, high=max)


def tanh(x):
    return Tanh.apply(x)


def sigmoid(x):
    return Sigmoid.apply(x)


def relu(x):
    return Relu.apply(x)
