"""Activation layers: modules without parameters around the functions of chapter 05."""

from minilucid.nn import functional as F
from minilucid.nn.module import Module
from minilucid.tensor import Tensor


class ReLU(Module):
    """max(x, 0), elementwise."""

    def forward(self, x: Tensor) -> Tensor:
        return F.relu(x)


class Tanh(Module):
    """tanh(x), elementwise."""

    def forward(self, x: Tensor) -> Tensor:
        return F.tanh(x)


class Sigmoid(Module):
    """1 / (1 + exp(-x)), elementwise."""

    def forward(self, x: Tensor) -> Tensor:
        return F.sigmoid(x)


class Flatten(Module):
    """Flattens dimensions start_dim..end_dim into one: (N, 1, 8, 8) becomes (N, 64)."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1):
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, x: Tensor) -> Tensor:
        return x.flatten(self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"
