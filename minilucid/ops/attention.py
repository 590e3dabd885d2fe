"""The ops a transformer adds (chapter 13): embeddings, GELU, masks and triangles.

The embedding and GELU are ops of their own; masking and the triangles are the op Where of
chapter 04 with a constant mask, so their gradients - and gradients of gradients - come free.
"""

import math

import numpy as np

from minilucid.function import Function
from minilucid.ops.alike import exp
from minilucid.ops.shape import IndexAdd, Where
from minilucid.ops.unary import Tanh
from minilucid.tensor import Tensor


class Embedding(Function):
    """z = weight[indices] (one row per index);  dz/dweight: each row's gradient added back
    to the row it came from, so a token used k times collects k gradients"""

    __slots__ = ("indices", "rows")

    @staticmethod
    def forward(ctx, weight, indices):
        ctx.indices, ctx.rows = indices, weight.shape
        return weight[indices]

    @staticmethod
    def backward(ctx, grad):
        if type(grad) is not np.ndarray:  # a tensor under create_graph: the same scatter-add
            return IndexAdd.apply(grad, index=ctx.indices, shape=ctx.rows)
        d_weight = np.zeros(ctx.rows, dtype=grad.dtype)
        np.add.at(d_weight, ctx.indices, grad)  # `d_weight[i] += g` would drop repeats
        return d_weight


class Erf(Function):
    """z = erf(a) = 2/sqrt(pi) * integral of exp(-t*t) from 0 to a;  dz/da = 2/sqrt(pi) exp(-a*a)"""

    __slots__ = ()

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return _ERF(a).astype(a.dtype)

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return grad * (exp(-(a * a)) * (2 / math.sqrt(math.pi)))


_ERF = np.frompyfunc(math.erf, 1, 1)  # NumPy has no erf: the C library's, entry by entry


class Gelu(Function):
    """z = a * Phi(a), Phi the normal distribution function ('tanh': GPT-2's approximation of
    it);  dz/da = Phi(a) + a * phi(a), phi its density"""

    __slots__ = ("approximate",)

    @staticmethod
    def forward(ctx, a, approximate="none"):
        ctx.approximate = approximate
        ctx.save_for_backward(a)
        return a * _normal_cdf(a, approximate)

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return grad * _gelu_slope(a, ctx.approximate)


TANH_C = math.sqrt(2 / math.pi)  # the 'tanh' approximation: Phi(a) ~ (1 + tanh(u)) / 2 with
TANH_K = 0.044715  # u = TANH_C * (a + TANH_K * a**3)


def _normal_cdf(a, approximate: str):
    """Phi(a) on an array or a tensor (then recorded with the ops Erf or Tanh)."""
    if approximate == "tanh":
        return 0.5 * (1 + _tanh(TANH_C * (a + TANH_K * a * a * a)))
    return 0.5 * (1 + _erf(a * (1 / math.sqrt(2))))


def _gelu_slope(a, approximate: str):
    """d/da of a * Phi(a), written once for arrays and tensors."""
    if approximate == "tanh":
        t = _tanh(TANH_C * (a + TANH_K * a * a * a))
        return 0.5 * (1 + t) + 0.5 * a * (1 - t * t) * (TANH_C * (1 + 3 * TANH_K * a * a))
    density = exp(-0.5 * (a * a)) * (1 / math.sqrt(2 * math.pi))
    return _normal_cdf(a, approximate) + a * density


def _erf(x):
    return Erf.apply(x) if isinstance(x, Tensor) else _ERF(x).astype(x.dtype)


def _tanh(x):
    return Tanh.apply(x) if isinstance(x, Tensor) else np.tanh(x)


def embedding(input, weight: Tensor) -> Tensor:  # noqa: A002  (PyTorch's name)
    """Row input[...] of weight for every index: an (...) index tensor gives (..., dim)."""
    indices = np.asarray(input.data if isinstance(input, Tensor) else input)
    if indices.dtype.kind not in "iu":
        raise TypeError(
            f"embedding: indices must be integers (int64), got dtype {indices.dtype}; "
            "make them from integer data or with dtype=ml.long"
        )
    if weight.ndim != 2:
        raise ValueError(
            f"embedding: weight must be a (num_embeddings, embedding_dim) matrix, "
            f"got shape {weight.shape}"
        )
    rows = weight.shape[0]
    bad = (indices < 0) | (indices >= rows)
    if bad.any():
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        raise IndexError(
            f"embedding: index {int(indices[where])} at position {where} is out of range for "
            f"{rows} embeddings; use 0 to {rows - 1}"
        )
    return Embedding.apply(weight, indices=indices)


def gelu(x: Tensor, approximate: str = "none") -> Tensor:
    """x * Phi(x), Phi the standard normal distribution function; approximate='tanh' for
    GPT-2's faster approximation."""
    if approximate not in ("none", "tanh"):
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    return Gelu.apply(x, approximate=approximate)


def masked_fill(x: Tensor, mask, value) -> Tensor:
    """x with `value` wherever the boolean `mask` is True (the two broadcast together)."""
    mask = np.asarray(mask.data if isinstance(mask, Tensor) else mask)
    if mask.dtype != bool:
        raise TypeError(
            f"masked_fill: the mask must be a bool tensor, got dtype {mask.dtype}; "
            "build it with a comparison (t == 0) or .bool() of ones and zeros"
        )
    try:
        np.broadcast_shapes(mask.shape, x.shape)
    except ValueError:
        raise ValueError(
            f"masked_fill: mask of shape {mask.shape} and tensor of shape {x.shape} do not "
            "broadcast; aligned from the right, each pair of dimensions must be equal or one 1"
        ) from None
    fill = np.asarray(value.data if isinstance(value, Tensor) else value, dtype=x.dtype)
    return Where.apply(mask, fill, x)


def tril(x: Tensor, diagonal: int = 0) -> Tensor:
    """The lower triangle of the last two dims (entries j <= i + diagonal); zeros above."""
    keep = _triangle(x, diagonal, "tril")
    return Where.apply(keep, x, np.zeros((), dtype=x.dtype))


def triu(x: Tensor, diagonal: int = 0) -> Tensor:
    """The upper triangle of the last two dims (entries j >= i + diagonal); zeros below."""
    keep = ~_triangle(x, diagonal - 1, "triu")
    return Where.apply(keep, x, np.zeros((), dtype=x.dtype))


def check_broadcasts_to(shape: tuple, target: tuple, op: str, what: str) -> None:
    try:
        fits = np.broadcast_shapes(shape, target) == tuple(target)
    except ValueError:
        fits = False
    if not fits:
        raise ValueError(
            f"{op}: {what} of shape {shape} does not broadcast to {tuple(target)}; aligned from "
            "the right, each of its dimensions must equal the other's or be 1"
        )


def _triangle(x: Tensor, diagonal: int, op: str) -> np.ndarray:
    """True on and below the diagonal `diagonal` of x's last two dimensions."""
    if x.ndim < 2:
        raise ValueError(
            f"{op}: needs a matrix (at least 2 dimensions), got shape {x.shape}; "
            "for a vector, unsqueeze it or build the matrix first"
        )
    return np.tri(x.shape[-2], x.shape[-1], k=diagonal, dtype=bool)
