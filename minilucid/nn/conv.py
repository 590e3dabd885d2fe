"""Conv2d: a bank of learned filters slid over the image (functional.conv2d does the sliding)."""

import math

import numpy as np

from minilucid.nn import functional as F
from minilucid.nn import init
from minilucid.nn.module import Module
from minilucid.nn.parameter import Parameter
from minilucid.ops.conv import pair
from minilucid.tensor import Tensor, float32


class Conv2d(Module):
    """out[n, o] = bias[o] + sum over c of weight[o, c] cross-correlated with x[n, c].

    weight has shape (out_channels, in_channels / groups, kh, kw) and bias (out_channels,), as
    in PyTorch, and both start uniform in ±1/sqrt(fan_in), fan_in = in_channels/groups * kh * kw.
    """

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size,
        stride=1,
        padding=0,
        dilation=1,
        groups: int = 1,
        bias: bool = True,
        dtype=None,
    ):
        super().__init__()
        if in_channels % groups or out_channels % groups:
            raise ValueError(
                f"Conv2d: in_channels {in_channels} and out_channels {out_channels} must both "
                f"be divisible by groups {groups}"
            )
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size = pair(kernel_size, "kernel_size", "Conv2d")
        self.stride = pair(stride, "stride", "Conv2d")
        self.padding = pair(padding, "padding", "Conv2d")
        self.dilation = pair(dilation, "dilation", "Conv2d")
        self.groups = groups
        dtype = float32 if dtype is None else dtype
        shape = (out_channels, in_channels // groups, *self.kernel_size)
        self.weight = Parameter(np.zeros(shape, dtype=dtype))
        self.bias = Parameter(np.zeros(out_channels, dtype=dtype)) if bias else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """PyTorch's default: weight and bias uniform in ±1/sqrt(fan_in)."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))  # gain sqrt(1/3): bound 1/sqrt(fan_in)
        if self.bias is not None:
            fan_in = self.weight.shape[1] * self.kernel_size[0] * self.kernel_size[1]
            init.uniform_(self.bias, -1 / math.sqrt(fan_in), 1 / math.sqrt(fan_in))

    def forward(self, x: Tensor) -> Tensor:
        if not isinstance(x, Tensor) or x.ndim != 4 or x.shape[1] != self.in_channels:
            shape = tuple(np.shape(x.data if isinstance(x, Tensor) else x))
            hint = (
                "add a batch dimension with x.unsqueeze(0) for one image"
                if len(shape) == 3
                else f"the layer was built for in_channels = {self.in_channels}"
            )
            raise ValueError(
                f"{self!r}: expected an input of shape (N, {self.in_channels}, H, W), got "
                f"{shape}; {hint}"
            )
        try:
            return F.conv2d(
                x, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups
            )
        except ValueError as error:  # a kernel larger than the padded image, say
            raise ValueError(f"{self!r}: {error}") from None

    def extra_repr(self) -> str:
        text = (
            f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
            f"stride={self.stride}"
        )
        if self.padding != (0, 0):
            text += f", padding={self.padding}"
        if self.dilation != (1, 1):
            text += f", dilation={self.dilation}"
        if self.groups != 1:
            text += f", groups={self.groups}"
        return text + ("" if self.bias is not None else ", bias=False")
