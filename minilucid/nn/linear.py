"""Linear: the affine layer y = x @ W.T + b."""

import math

import numpy as np

from minilucid.nn import functional as F
from minilucid.nn import init
from minilucid.nn.module import Module
from minilucid.nn.parameter import Parameter
from minilucid.tensor import Tensor, float32


class Linear(Module):
    """y = x @ weight.T + bias, with weight of shape (out_features, in_features), as in PyTorch."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True, dtype=None):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        dtype = float32 if dtype is None else dtype
        self.weight = Parameter(np.zeros((out_features, in_features), dtype=dtype))
        self.bias = Parameter(np.zeros(out_features, dtype=dtype)) if bias else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """PyTorch's default: weight and bias uniform in ±1/sqrt(in_features)."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))  # gain sqrt(1/3): bound 1/sqrt(fan_in)
        if self.bias is not None:
            bound = 1 / math.sqrt(self.in_features) if self.in_features > 0 else 0.0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, x: Tensor) -> Tensor:
        try:
            return F.linear(x, self.weight, self.bias)
        except ValueError:  # say which layer, and what to change
            shape = x.shape if isinstance(x, Tensor) else np.shape(x)
            if shape[-1:] != (self.in_features,):
                raise ValueError(
                    f"{self!r}: got an input of shape {shape}, whose last dimension should be "
                    f"in_features = {self.in_features}. Reshape or flatten the input, or build "
                    f"the layer with in_features = {shape[-1] if shape else 1}."
                ) from None
            raise

    def extra_repr(self) -> str:
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, "
            f"bias={self.bias is not None}"
        )
