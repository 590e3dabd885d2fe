"""Dropout: while training, zero each activation with probability p and scale the rest by
1/(1-p), so that every activation keeps its expected value; in evaluation, do nothing."""

import numpy as np

from minilucid.creation import rand
from minilucid.nn.module import Module
from minilucid.tensor import Tensor


def dropout(x: Tensor, p: float = 0.5, training: bool = True) -> Tensor:
    """x * mask / (1 - p) with mask ~ Bernoulli(1 - p), drawn from ml.manual_seed's stream."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout: p is the probability of dropping, in [0, 1]; got {p}")
    if not training or p == 0.0:
        return x
    if p == 1.0:  # everything dropped; 1 / (1 - p) would divide by zero
        return x * np.zeros(x.shape, dtype=x.dtype)
    keep = rand(*x.shape, dtype=np.float64).data >= p  # True with probability 1 - p
    return x * (keep / (1.0 - p)).astype(x.dtype)


class Dropout(Module):
    """Zeroes a random fraction p of its input in training mode; the identity in eval mode."""

    def __init__(self, p: float = 0.5):
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"Dropout: p is the probability of dropping, in [0, 1]; got {p}")
        self.p = p

    def forward(self, x: Tensor) -> Tensor:
        return dropout(x, self.p, self.training)

    def extra_repr(self) -> str:
        return f"p={self.p}"
