"""Layer normalisation as one op (chapter 11 builds it from mean, -, *, / and sqrt; this is its
faster twin, with the backward written out).

    x^ = (a - mean(a)) * r,  r = 1 / sqrt(var(a) + eps)   (over the last `dims` dimensions)
    z = x^ * weight + bias
    dz/dweight: sum of g * x^,  dz/dbias: sum of g  (over every other dimension)
    dz/da: r * (h - mean(h) - x^ * mean(h * x^)),  h = g * weight

Forward keeps r as its cache for a first-order backward, which rebuilds x^ from it in one pass;
under create_graph backward recomputes both from the saved input, with a graph (a kept
intermediate would be a constant). The formulas use only operators and methods that arrays
and tensors share, so the same lines give a first derivative on arrays and record a graph for
the second on tensors.
"""

import numpy as np

from minilucid.function import Function


class LayerNormOp(Function):
    """z = (a - mean) / sqrt(var + eps) * weight + bias;  the gradients in the module docstring"""

    __slots__ = ("cache",)  # forward's values, for a first-order backward

    @staticmethod
    def forward(ctx, a, *affine, dims=1, eps=1e-5, parts="wb"):
        ctx.save_for_backward(a, *affine)
        x_hat, r = ctx.cache = _rows(a, dims, eps)
        weight, bias = _affine(affine, parts)
        rows = np.empty_like(x_hat)  # the affine part in place on one fresh array, in a's dtype
        if weight is not None:
            np.multiply(x_hat, weight.reshape(-1), out=rows)
        else:
            rows[...] = x_hat
        if bias is not None:
            rows += bias.reshape(-1)
        return rows.reshape(a.shape)

    @staticmethod
    def backward(ctx, grad):
        a, *affine = ctx.saved_tensors
        dims, eps, parts = ctx.options["dims"], ctx.options["eps"], ctx.options["parts"]
        weight, bias = _affine(affine, parts)
        cached = getattr(ctx, "cache", None)  # None under create_graph: recomputed, recorded
        x_hat, r = cached if cached is not None else _rows(a, dims, eps)
        g = grad.reshape(x_hat.shape)
        # mean(h) = g @ scale and mean(h * x^) = (g * x^) @ scale, scale = weight / n; g * x^
        # is the weight's gradient's rows as well
        n = x_hat.shape[1]
        scale = _constant(n, 1 / n, x_hat) if weight is None else weight.reshape(-1) * (1 / n)
        g_x_hat = g * x_hat
        mean_h, mean_hx = _column(g @ scale), _column(g_x_hat @ scale)
        if type(g) is np.ndarray:  # the same sums, in place on the fresh arrays
            d_a = g - mean_h if weight is None else g * weight.reshape(-1)
            if weight is not None:
                d_a -= mean_h
            d_a -= x_hat * mean_hx  # not in place: x^ is forward's, kept for another backward
            d_a *= r
        else:
            h = g if weight is None else g * weight.reshape(-1)
            d_a = (h - mean_h - x_hat * mean_hx) * r
        grads = [d_a.reshape(a.shape)]
        ones = _constant(x_hat.shape[0], 1, x_hat)
        if weight is not None:
            grads.append((g_x_hat.transpose(1, 0) @ ones).reshape(weight.shape))
        if bias is not None:
            grads.append((g.transpose(1, 0) @ ones).reshape(bias.shape))
        return tuple(grads)


def _rows(a, dims: int, eps: float) -> tuple:
    """(x^, r): a as rows of the normalised size, (rows, n), shifted to mean 0 and scaled to
    variance 1, and r = 1 / sqrt(var + eps), (rows, 1). The means are matrix-vector products
    (faster than NumPy's sums along short rows); arrays and tensors alike."""
    n = 1
    for size in a.shape[a.ndim - dims :]:
        n *= size
    rows = a.reshape(-1, n)
    means = _constant(n, 1 / n, rows)
    centred = rows - _column(rows @ means)
    r = (_column((centred * centred) @ means) + eps) ** -0.5
    return centred * r, r


def _constant(n: int, value: float, like) -> np.ndarray:
    return np.full(n, value, dtype=like.dtype)


def _column(x):
    return x.reshape(-1, 1)


def _affine(affine: tuple, parts: str) -> tuple:
    """(weight, bias) from the inputs after a, either None when absent."""
    given = dict(zip(parts, affine, strict=True))
    return given.get("w"), given.get("b")
