"""Pooling layers: each window of an image summarised by one number (its largest, its mean)."""

from minilucid.nn import functional as F
from minilucid.nn.module import Module
from minilucid.tensor import Tensor


class _Pool2d(Module):
    def __init__(self, kernel_size, stride=None, padding=0):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = kernel_size if stride is None else stride
        self.padding = padding

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxPool2d(_Pool2d):
    """The largest number of each kernel_size window; windows step by stride (= kernel_size)."""

    def forward(self, x: Tensor) -> Tensor:
        return F.max_pool2d(x, self.kernel_size, self.stride, self.padding)


class AvgPool2d(_Pool2d):
    """The mean of each kernel_size window; windows step by stride (= kernel_size)."""

    def forward(self, x: Tensor) -> Tensor:
        return F.avg_pool2d(x, self.kernel_size, self.stride, self.padding)
