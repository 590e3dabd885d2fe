"""Making tensors: from data, filled with constants, ranges, or seeded random numbers."""

import numpy as np

from minilucid.tensor import Tensor, float32

_rng = np.random.default_rng(0)  # replaced by manual_seed


def tensor(data, requires_grad: bool = False, dtype=None, name: str | None = None) -> Tensor:
    """A new tensor from a number, (nested) list or NumPy array; PyTorch's `torch.tensor`."""
    return Tensor(data, requires_grad=requires_grad, dtype=dtype, name=name)


def zeros(*shape, dtype=float32, requires_grad: bool = False) -> Tensor:
    return Tensor(np.zeros(_size(shape), dtype=dtype), requires_grad=requires_grad)


def ones(*shape, dtype=float32, requires_grad: bool = False) -> Tensor:
    return Tensor(np.ones(_size(shape), dtype=dtype), requires_grad=requires_grad)


def zeros_like(t: Tensor, requires_grad: bool = False) -> Tensor:
    return Tensor(np.zeros_like(t.data), requires_grad=requires_grad)


def ones_like(t: Tensor, requires_grad: bool = False) -> Tensor:
    return Tensor(np.ones_like(t.data), requires_grad=requires_grad)


def arange(start, end=None, step=1, dtype=None, requires_grad: bool = False) -> Tensor:
    if end is None:
        start, end = 0, start
    return Tensor(np.arange(start, end, step), dtype=dtype, requires_grad=requires_grad)


def manual_seed(seed: int) -> None:
    """Make randn and rand repeat the same numbers, run after run."""
    global _rng
    _rng = np.random.default_rng(seed)


def randn(*shape, dtype=float32, requires_grad: bool = False) -> Tensor:
    """Standard normal numbers (mean 0, variance 1)."""
    data = _rng.standard_normal(_size(shape)).astype(dtype)
    return Tensor(data, requires_grad=requires_grad)


def rand(*shape, dtype=float32, requires_grad: bool = False) -> Tensor:
    """Uniform numbers in [0, 1)."""
    return Tensor(_rng.random(_size(shape)).astype(dtype), requires_grad=requires_grad)


def _size(shape: tuple) -> tuple:
    if len(shape) == 1 and isinstance(shape[0], tuple | list):
        shape = tuple(shape[0])
    for s in shape:
        if not isinstance(s, int | np.integer) or s < 0:
            raise ValueError(f"shape {shape}: sizes must be non-negative integers")
    return tuple(shape)
