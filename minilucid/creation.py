"""Making tensors: from data, filled with constants, ranges, or seeded random numbers."""

import numpy as np

from minilucid.tensor import Tensor, float32

_rng = np.random.default_rng(0)  # replaced by manual_seed


def tensor(data, requires_grad: bool = False, dtype=None, name: str | None = None) -> Tensor:
    """A new leaf with a copy of a number, (nested) list, NumPy array or tensor; `torch.tensor`."""
    array = data.data if isinstance(data, Tensor) else data
    t = Tensor(array, dtype=dtype, name=name)
    if t.data is array:  # Tensor() keeps an array it can use as it is; tensor() never shares
        t.data = array.copy()
    return t.requires_grad_(requires_grad) if requires_grad else t


def as_tensor(data, dtype=None) -> Tensor:
    """`data` as a tensor, sharing its memory where it can: a tensor of the right dtype is
    returned as it is, a NumPy array of the right dtype is wrapped without a copy."""
    if isinstance(data, Tensor) and (dtype is None or data.dtype == dtype):
        return data
    return Tensor(data.data if isinstance(data, Tensor) else data, dtype=dtype)


def from_numpy(array: np.ndarray) -> Tensor:
    """A tensor that shares the NumPy array's memory and keeps its dtype: a change to one is a
    change to the other."""
    if not isinstance(array, np.ndarray):
        raise TypeError(
            f"from_numpy: expected a NumPy array, got {type(array).__name__}; "
            "use ml.tensor(...) for Python data"
        )
    return Tensor(array)


def zeros(*shape, dtype=float32, requires_grad: bool = False) -> Tensor:
    """A tensor of the given shape filled with 0: `zeros(2, 3)` or `zeros((2, 3))`."""
    return Tensor(np.zeros(_size(shape, "zeros"), dtype=dtype), requires_grad=requires_grad)


def ones(*shape, dtype=float32, requires_grad: bool = False) -> Tensor:
    """A tensor of the given shape filled with 1: `ones(2, 3)` or `ones((2, 3))`."""
    return Tensor(np.ones(_size(shape, "ones"), dtype=dtype), requires_grad=requires_grad)


def zeros_like(t: Tensor, requires_grad: bool = False) -> Tensor:
    """Zeros with the shape and dtype of `t` (a new leaf, not connected to `t`'s graph)."""
    return Tensor(np.zeros_like(t.data), requires_grad=requires_grad)


def ones_like(t: Tensor, requires_grad: bool = False) -> Tensor:
    """Ones with the shape and dtype of `t` (a new leaf, not connected to `t`'s graph)."""
    return Tensor(np.ones_like(t.data), requires_grad=requires_grad)


def arange(start, end=None, step=1, dtype=None, requires_grad: bool = False) -> Tensor:
    """start, start + step, ... up to but not including end; `arange(n)` is 0, 1, ..., n - 1."""
    if end is None:
        start, end = 0, start
    data = np.arange(start, end, step)
    if dtype is None and data.dtype.kind == "f":
        dtype = float32  # Python floats make float32 tensors, as in `tensor`
    return Tensor(data, dtype=dtype, requires_grad=requires_grad)


def manual_seed(seed: int) -> None:
    """Make randn and rand repeat the same numbers, run after run."""
    global _rng
    _rng = np.random.default_rng(seed)


def randn(*shape, dtype=float32, requires_grad: bool = False) -> Tensor:
    """Standard normal numbers (mean 0, variance 1)."""
    data = _rng.standard_normal(_size(shape, "randn")).astype(dtype)
    return Tensor(data, requires_grad=requires_grad)


def rand(*shape, dtype=float32, requires_grad: bool = False) -> Tensor:
    """Uniform numbers in [0, 1)."""
    return Tensor(_rng.random(_size(shape, "rand")).astype(dtype), requires_grad=requires_grad)


def _size(shape: tuple, op: str) -> tuple:
    if len(shape) == 1 and isinstance(shape[0], tuple | list):
        shape = tuple(shape[0])
    for s in shape:
        if not isinstance(s, int | np.integer) or s < 0:
            raise ValueError(
                f"{op}: shape {shape} - sizes must be non-negative integers, "
                f"e.g. {op}(2, 3) or {op}((2, 3))"
            )
    return tuple(shape)
