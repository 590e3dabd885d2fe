"""The ops a transformer adds (chapter 13): embeddings, GELU, masks and triangles.

The embedding and GELU are ops of their own; masking and the triangles are the op Where of
chapter 04 with a constant mask, so their gradients - and gradients of gradients - come free.
"""

import math

import numpy as np

from minilucid._views import Cast
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
        rows = grad.reshape(-1, ctx.rows[1])
        indices = ctx.indices.reshape(-1)
        if ctx.rows[0] * len(indices) <= 1 << 20:  # a small table: one-hot rows @ gradient
            one_hot = indices == np.arange(ctx.rows[0], dtype=indices.dtype)[:, None]
            return one_hot.astype(grad.dtype) @ rows
        d_weight = np.zeros(ctx.rows, dtype=grad.dtype)
        np.add.at(d_weight, indices, rows)  # `d_weight[i] += g` would drop repeats
        return d_weight


class Erf(Function):
    """z = erf(a) = 2/sqrt(pi) * integral of exp(-t*t) from 0 to a;  dz/da = 2/sqrt(pi) exp(-a*a)"""

    __slots__ = ()

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return erf_array(a)

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return grad * (exp(-(a * a)) * (2 / math.sqrt(math.pi)))


class Gelu(Function):
    """z = a * Phi(a), Phi the normal distribution function ('tanh': GPT-2's approximation of
    it);  dz/da = Phi(a) + a * phi(a), phi its density

    On arrays, backward reads Phi(a) off the saved output (z / a) instead of computing it
    again; on tensors (create_graph) it differentiates Phi(a) + a * phi(a) written with ops.
    The output is therefore saved too: changing it in place before backward is refused."""

    __slots__ = ("approximate",)

    @staticmethod
    def forward(ctx, a, approximate="none"):
        ctx.approximate = approximate
        if approximate == "none" and type(a) is np.ndarray and a.ndim and a.dtype.kind == "f":
            out = _gelu_array(a)
        else:
            out = _normal_cdf(a, approximate)  # a fresh array: times a in place
            out *= a
        ctx.save_for_backward(a, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        a, out = ctx.saved_tensors
        if type(a) is np.ndarray and type(out) is np.ndarray and a.ndim:
            slope = _gelu_slope_from_output(a, out, ctx.approximate)  # fresh: times grad in place
            slope *= grad
            return slope
        return grad * _gelu_slope(a, ctx.approximate)


TANH_C = math.sqrt(2 / math.pi)  # the 'tanh' approximation: Phi(a) ~ (1 + tanh(u)) / 2 with
TANH_K = 0.044715  # u = TANH_C * (a + TANH_K * a**3)


def _normal_cdf(a, approximate: str):
    """Phi(a) on an array or a tensor (then recorded with the ops Erf or Tanh)."""
    if approximate == "tanh":
        if type(a) is np.ndarray and a.ndim:  # (1 + tanh(u)) / 2 = 1 / (1 + exp(-2u)): no tanh
            e = a * a
            e *= -2 * TANH_C * TANH_K
            e -= 2 * TANH_C
            e *= a
            with np.errstate(over="ignore"):  # exp(-2u) = inf far left: Phi = 1 / inf = 0
                np.exp(e, out=e)
            e += 1
            return np.reciprocal(e, out=e)
        return 0.5 * (1 + _tanh(TANH_C * (a + TANH_K * a * a * a)))
    if type(a) is np.ndarray and a.ndim:
        return _normal_cdf_array(a)
    return 0.5 * (1 + _erf(a * (1 / math.sqrt(2))))


def _gelu_slope(a, approximate: str):
    """d/da of a * Phi(a), written once for arrays and tensors."""
    if approximate == "tanh":
        t = _tanh(TANH_C * (a + TANH_K * a * a * a))
        return 0.5 * (1 + t) + 0.5 * a * (1 - t * t) * (TANH_C * (1 + 3 * TANH_K * a * a))
    density = exp(-0.5 * (a * a)) * (1 / math.sqrt(2 * math.pi))
    return _normal_cdf(a, approximate) + a * density


def _gelu_array(a: np.ndarray) -> np.ndarray:
    """a * Phi(a) on a float array: a / 2 + s Q(s) with s = a*a (Phi = 1/2 + a Q(s), the
    normal cdf's series) where |a| is small, a * Phi(a) from the far formula elsewhere."""
    single = a.dtype.itemsize <= 4
    limit = (1.5 if single else 1.0) * math.sqrt(2)
    s = a * a
    with np.errstate(over="ignore", invalid="ignore"):  # far entries are replaced below
        out = _horner(CDF_32 if single else CDF_64, s)
        out *= s
    beyond = np.flatnonzero(s > limit * limit)
    out += np.multiply(a, 0.5, out=s)  # s is not needed any more
    if beyond.size:
        far = a.ravel()[beyond].astype(np.float64)
        out.ravel()[beyond] = far * (0.5 + _normal_cdf_far(far, single))
    return out


def _gelu_slope_from_output(a: np.ndarray, out: np.ndarray, approximate: str) -> np.ndarray:
    """d/da of a * Phi(a) on arrays, with Phi(a) = out / a (1/2 where a is 0)."""
    with np.errstate(divide="ignore", invalid="ignore"):  # 0 / 0 where a is 0: set below
        cdf = out / a
    zero = a == 0
    if zero.any():
        cdf[zero] = 0.5
    if approximate == "tanh":  # 1 - tanh(u)**2 = 4 Phi (1 - Phi)
        slope = a * a
        slope *= 2 * TANH_C * 3 * TANH_K
        slope += 2 * TANH_C
        slope *= a
        slope *= cdf
        slope *= 1 - cdf
        slope += cdf
        return slope
    density = a * a
    density *= -0.5
    np.exp(density, out=density)
    density *= a * (1 / math.sqrt(2 * math.pi))
    density += cdf
    return density


def _erf(x):
    return Erf.apply(x) if isinstance(x, Tensor) else erf_array(x)


def _tanh(x):
    return Tanh.apply(x) if isinstance(x, Tensor) else np.tanh(x)


def erf_array(x: np.ndarray) -> np.ndarray:
    """erf of every entry, in x's float dtype, to within a few units of its last place.

    |x| <= 1 (float32: 1.5): x * P(x*x). Beyond, erf = 1 - erfc with erfc(x) =
    exp(-x*x) * R(x), computed in float64 on those entries only: for float64, R is a
    polynomial in x - 1.75 up to 2.5 and in 1/x up to 6, from where on erf is 1 to float64's
    precision; for float32 one polynomial in x - 2.75 up to 4 does. The polynomials are
    Chebyshev fits of erf(sqrt(s)) / sqrt(s) and erfc(x) * exp(x*x), made once with mpmath at
    60 digits (tests/test_attention_ops.py checks them against math.erf).
    """
    x = np.asarray(x)
    if x.dtype.kind != "f":
        x = x.astype(np.float64)
    single = x.dtype.itemsize <= 4
    return _odd_series(x, SMALL_32 if single else SMALL_64, 1.5 if single else 1.0, _erf_far)


def _normal_cdf_array(a: np.ndarray) -> np.ndarray:
    """Phi(a) = (1 + erf(a / sqrt(2))) / 2 on an array: erf_array's series with the scale
    folded into its coefficients, then 1/2 added."""
    single = a.dtype.itemsize <= 4
    series = CDF_32 if single else CDF_64
    limit = (1.5 if single else 1.0) * math.sqrt(2)
    out = _odd_series(a, series, limit, _normal_cdf_far)
    out += 0.5
    return out


def _odd_series(x: np.ndarray, coefficients: tuple, limit: float, far) -> np.ndarray:
    """x * P(x*x) where |x| <= limit, far(x in float64) - 1/2 if far is the normal cdf's -
    elsewhere (NaN compares False and stays NaN from P)."""
    s = x * x
    with np.errstate(over="ignore", invalid="ignore"):  # far entries are replaced below
        out = _horner(coefficients, s)
        out *= x
    beyond = np.flatnonzero(s > limit * limit)
    if beyond.size:
        out.ravel()[beyond] = far(x.ravel()[beyond].astype(np.float64), x.dtype.itemsize <= 4)
    return out


def _normal_cdf_far(a: np.ndarray, single: bool) -> np.ndarray:
    return 0.5 * _erf_far(a * (1 / math.sqrt(2)), single)  # the caller adds 1/2


def _erf_far(x: np.ndarray, single: bool = False) -> np.ndarray:
    """erf(x) for |x| > 1 in float64: 1 - exp(-x*x) R(|x|), with the sign of x; accurate to
    float32's precision only when `single`."""
    ax = np.abs(x)
    if single:
        r = _horner(FAR_32, ax - 2.75)
        end = 4.0
    else:
        r = np.empty_like(ax)
        middle = ax <= 2.5
        r[middle] = _horner(MIDDLE, ax[middle] - 1.75)
        tail = ~middle
        with np.errstate(divide="ignore", over="ignore"):  # |x| = inf: 1/x = 0, erfc = 0
            r[tail] = _horner(TAIL, 1 / ax[tail])
        end = 6.0
    with np.errstate(invalid="ignore", over="ignore"):  # inf * 0 at |x| = inf
        erfc = np.exp(-ax * ax) * r
    erfc[ax >= end] = 0  # below half a unit of 1 in the last place from there on
    return np.copysign(1 - erfc, x)


def _horner(coefficients: tuple, s: np.ndarray) -> np.ndarray:
    """c0 + c1 s + c2 s**2 + ... in s's dtype, in place on one fresh array."""
    dtype = s.dtype.type
    out = np.multiply(s, dtype(coefficients[-1]), out=np.empty_like(s))
    out += dtype(coefficients[-2])
    for c in coefficients[-3::-1]:
        out *= s
        out += dtype(c)
    return out


# Chebyshev fits (see erf_array), highest accuracy first: coefficients of s**0, s**1, ...
SMALL_64 = (
    1.1283791670955126,
    -0.37612638903183543,
    0.11283791670945006,
    -0.02686617064323777,
    0.0052239776071164225,
    -0.0008548325975389692,
    0.00012055294904839707,
    -1.492473690741966e-05,
    1.6447424703317362e-06,
    -1.6208483801871705e-07,
    1.3720064546777686e-08,
    -7.795898827002142e-10,
)
SMALL_32 = (
    1.1283791663354448,
    -0.3761263342329531,
    0.11283726278315473,
    -0.026863147521137064,
    0.005216919267809122,
    -0.000845462740956296,
    0.00011309676159880694,
    -1.132887370811487e-05,
    6.205873060404022e-07,
)
MIDDLE = (
    0.2849722347374364,
    -0.1309763455144821,
    0.0557636300870865,
    -0.02225999524165483,
    0.008404319207394291,
    -0.003020974644803341,
    0.0010392045208187824,
    -0.00034353342725064023,
    0.00010950530658864637,
    -3.375492008540358e-05,
    1.0086576456492661e-05,
    -2.9293898567097817e-06,
    8.274886764680256e-07,
    -2.2501983701420874e-07,
    6.054678916872184e-08,
    -1.879448760275295e-08,
    4.801487044012266e-09,
)
TAIL = (
    -6.810950269616096e-07,
    0.5642175941212056,
    -0.0005096881889025845,
    -0.27674086799589764,
    -0.035231478133546656,
    0.5672373156971727,
    -0.30797715181189766,
    -1.1452210381441934,
    2.4829762262466666,
    -2.134470174244165,
    0.7294531787062798,
)


FAR_32 = (
    0.1936620962790687,
    -0.06323705514481724,
    0.01975845122245704,
    -0.005939274061178796,
    0.0017207837215757792,
    -0.0004710308074867952,
    0.00012846151605658997,
    -4.382103943747848e-05,
    1.1166891491612598e-05,
)

# Phi(a) = 1/2 + a * Q(a*a) with Q(s) = P(s / 2) / (2 sqrt(2)): the erf series, rescaled
CDF_64 = tuple(c / (2 * math.sqrt(2)) / 2**i for i, c in enumerate(SMALL_64))
CDF_32 = tuple(c / (2 * math.sqrt(2)) / 2**i for i, c in enumerate(SMALL_32))


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
    if isinstance(value, Tensor) and value.requires_grad:  # its gradient: the masked places
        fill = value if value.dtype == x.dtype else Cast.apply(value, dtype=x.dtype)
    else:
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
