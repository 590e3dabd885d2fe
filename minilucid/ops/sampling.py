"""Choosing tokens (chapter 13): the k largest entries, and draws from a categorical
distribution."""

from typing import NamedTuple

import numpy as np

from minilucid._arrays import checked_axis
from minilucid.creation import rand
from minilucid.tensor import Tensor


class TopK(NamedTuple):
    """What topk returns, as in PyTorch: `values, indices = t.topk(k)` or `.values`."""

    values: Tensor
    indices: Tensor


def topk(x: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True) -> TopK:  # noqa: A002
    """The k largest entries along dim, largest first (smallest first with largest=False), and
    their int64 indices; the values carry gradients back to where they were taken from."""
    if x.ndim == 0:  # one number, as PyTorch: k may be 0 or 1 and the result is 0-d
        checked_axis(dim, 0, "topk")
        if k not in (0, 1):
            raise ValueError(f"topk: k = {k} is out of range for a 0-d tensor; use 0 or 1")
        values, indices = topk(x.reshape(1), 1, 0, largest, sorted)
        return TopK(values.reshape(()), indices.reshape(()))
    axis = checked_axis(dim, x.ndim, "topk")
    size = x.shape[axis]
    if not 0 <= k <= size:
        raise ValueError(
            f"topk: k = {k} is out of range for dim {dim} of size {size} (shape {x.shape}); "
            f"use 0 to {size}"
        )
    if largest and x.dtype.kind == "f":  # nan counts as the largest, as in PyTorch (and max)
        order = np.lexsort((-x.data, ~np.isnan(x.data)), axis=axis)  # stable: ties in order
    else:  # smallest first; argsort puts nan last, where the largest go
        order = np.argsort(-x.data if largest else x.data, axis=axis, kind="stable")
    indices = np.take(order, np.arange(k), axis=axis)
    # index every other dimension by its own position, broadcast against `indices`
    grid = list(np.indices(indices.shape, sparse=True))
    grid[axis] = indices
    return TopK(x[tuple(grid)], Tensor(indices.astype(np.int64)))


def multinomial(input: Tensor, num_samples: int, replacement: bool = False) -> Tensor:  # noqa: A002
    """num_samples category indices per row of the non-negative weights `input` (1-D or 2-D;
    they need not add up to 1), drawn from ml.manual_seed's stream. Without replacement a
    category is drawn at most once."""
    weights = np.asarray(input.data if isinstance(input, Tensor) else input)
    _check_weights(weights, num_samples, replacement)
    rows = weights.reshape(-1, weights.shape[-1]).astype(np.float64)
    if replacement:  # inverse of the cumulative distribution: u falls in one category's step
        u = rand(len(rows), num_samples, dtype=np.float64).data
        cdf = np.cumsum(rows, axis=1) / rows.sum(axis=1, keepdims=True)
        drawn = np.stack([np.searchsorted(c, r, side="right") for c, r in zip(cdf, u, strict=True)])
        last = rows.shape[1] - 1 - np.argmax(rows[:, ::-1] > 0, axis=1)  # rounding: stay in
        drawn = np.minimum(drawn, last[:, None])
    else:  # each category draws a key u**(1/w); the num_samples largest keys win, in order
        with np.errstate(divide="ignore"):
            keys = np.log(rand(*rows.shape, dtype=np.float64).data) / rows
        drawn = np.argsort(-keys, axis=1, kind="stable")[:, :num_samples]
    return Tensor(drawn.astype(np.int64).reshape((*weights.shape[:-1], num_samples)))


def _check_weights(weights: np.ndarray, num_samples: int, replacement: bool) -> None:
    if weights.ndim not in (1, 2) or weights.dtype.kind != "f":
        raise ValueError(
            f"multinomial: weights must be a 1-D or 2-D float tensor, got shape "
            f"{weights.shape} and dtype {weights.dtype}"
        )
    if not np.all(np.isfinite(weights)) or (weights < 0).any():
        raise ValueError("multinomial: weights must be finite and non-negative")
    rows = weights.reshape(-1, weights.shape[-1])
    if not (rows.sum(axis=1) > 0).all():
        raise ValueError("multinomial: every row of weights needs at least one positive entry")
    if num_samples < 1:
        raise ValueError(f"multinomial: num_samples must be at least 1, got {num_samples}")
    if not replacement and num_samples > (rows > 0).sum(axis=1).min():
        raise ValueError(
            f"multinomial: cannot draw {num_samples} samples without replacement from a row "
            f"with only {(rows > 0).sum(axis=1).min()} positive weights; "
            "draw fewer, or pass replacement=True"
        )
