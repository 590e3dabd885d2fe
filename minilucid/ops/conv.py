"""Convolution and pooling: every window of an image unrolled (im2col), then a matmul.

Im2Col copies each kh x kw window of every channel out of the image: the unrolled matrix has a
column per output pixel and a row per (channel, i, j) of the kernel. Col2Im adds windows back
into an image. The two are adjoint linear maps, so each one's backward is the other: no new
calculus, and a gradient of a gradient needs nothing more. conv2d and the pools are
compositions of Im2Col with ops the course already has (reshape, matmul, add, max, mean).
"""

import numpy as np

from minilucid.function import Function
from minilucid.ops.shape import cat
from minilucid.tensor import Tensor


def pair(value, name: str, op: str) -> tuple:
    pair = (value, value) if isinstance(value, int | np.integer) else tuple(value)
    if len(pair) != 2 or not all(isinstance(v, int | np.integer) for v in pair):
        raise ValueError(f"{op}: {name} must be an int or a pair of ints, got {value!r}")
    return int(pair[0]), int(pair[1])


def out_size(size: int, kernel: int, stride: int, padding: int, dilation: int) -> int:
    """Positions a kernel takes along one side: floor((size + 2p - d(k-1) - 1) / s) + 1."""
    return (size + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1


def _windows(kernel: tuple, stride: tuple, dilation: tuple, out: tuple):
    """The kernel positions (i, j) and, for each, the strided slices of the padded image they
    read: window (i, j) of output pixel (y, x) is padded[..., i*dh + y*sh, j*dw + x*sw]."""
    (kh, kw), (sh, sw), (dh, dw), (ho, wo) = kernel, stride, dilation, out
    for i in range(kh):
        for j in range(kw):
            rows = slice(i * dh, i * dh + sh * (ho - 1) + 1, sh)
            cols = slice(j * dw, j * dw + sw * (wo - 1) + 1, sw)
            yield i, j, rows, cols


def im2col_array(x, kernel, stride, padding, dilation, pad_value=0.0, ones_row=False):
    """(N, C, H, W) -> (N, C, kh, kw, Ho, Wo): every window, copied out, on NumPy arrays.

    Row (c, i, j) of the unrolled matrix holds, for every output pixel, the input pixel that
    kernel position (i, j) of channel c sees: one strided slice of the padded image per (i, j).
    With ones_row the result is that matrix, (N, C*kh*kw + 1, Ho*Wo), with a last row of ones:
    a bias then rides in the product as one more column of the weight.
    """
    (kh, kw), (ph, pw) = kernel, padding
    n, c, h, w = x.shape
    ho = out_size(h, kh, stride[0], ph, dilation[0])
    wo = out_size(w, kw, stride[1], pw, dilation[1])
    if ph or pw:
        shape = (n, c, h + 2 * ph, w + 2 * pw)
        # np.zeros asks the system for zeroed pages (nothing to write): cheaper than np.full
        padded = np.zeros(shape, x.dtype) if pad_value == 0 else np.full(shape, pad_value, x.dtype)
        padded[:, :, ph : ph + h, pw : pw + w] = x
        x = padded
    if ones_row:
        matrix = np.empty((n, c * kh * kw + 1, ho * wo), dtype=x.dtype)
        matrix[:, -1] = 1
        cols = matrix[:, :-1].reshape(n, c, kh, kw, ho, wo)  # a view: filled in place below
    else:
        matrix = cols = np.empty((n, c, kh, kw, ho, wo), dtype=x.dtype)
    for i, j, rows, columns in _windows(kernel, stride, dilation, (ho, wo)):
        cols[:, :, i, j] = x[:, :, rows, columns]  # kh * kw strided copies in all
    return matrix


def col2im_array(cols, image_shape, stride, padding, dilation):
    """(N, C, kh, kw, Ho, Wo) -> (N, C, H, W): each window added back where it came from."""
    n, c, kh, kw, ho, wo = cols.shape
    (ph, pw), (h, w) = padding, image_shape[-2:]
    x = np.zeros((n, c, h + 2 * ph, w + 2 * pw), dtype=cols.dtype)
    for i, j, rows, columns in _windows((kh, kw), stride, dilation, (ho, wo)):
        x[:, :, rows, columns] += cols[:, :, i, j]  # windows overlap: add, never assign
    return x[:, :, ph : ph + h, pw : pw + w] if ph or pw else x


class Im2Col(Function):
    """cols = every kernel window of x, unrolled;  d cols / dx: the windows added back (Col2Im)"""

    __slots__ = ("image_shape", "geometry", "windows_shape")

    @staticmethod
    def forward(ctx, x, kernel, stride, padding, dilation, pad_value=0.0, ones_row=False):
        ctx.image_shape = x.shape
        ctx.geometry = (stride, padding, dilation)
        cols = im2col_array(x, kernel, stride, padding, dilation, pad_value, ones_row)
        ctx.windows_shape = None
        if ones_row:  # the row of ones is a constant: its gradient goes nowhere
            ho = out_size(x.shape[2], kernel[0], stride[0], padding[0], dilation[0])
            ctx.windows_shape = (x.shape[0], x.shape[1], *kernel, ho, cols.shape[2] // ho)
        return cols

    @staticmethod
    def backward(ctx, grad):
        if ctx.windows_shape is not None:  # drop the ones row's gradient, back to the windows
            grad = grad[:, :-1].reshape(*ctx.windows_shape)
        if isinstance(grad, Tensor):  # create_graph: the adjoint as an op, to differentiate again
            stride, padding, dilation = ctx.geometry
            return Col2Im.apply(
                grad, image_shape=ctx.image_shape, stride=stride, padding=padding, dilation=dilation
            )
        return col2im_array(grad, ctx.image_shape, *ctx.geometry)


class Col2Im(Function):
    """x = the windows in cols added back into an image;  dx / d cols: the windows again (Im2Col)"""

    __slots__ = ("kernel", "geometry")

    @staticmethod
    def forward(ctx, cols, image_shape, stride, padding, dilation):
        ctx.kernel = cols.shape[2:4]
        ctx.geometry = (stride, padding, dilation)
        return col2im_array(cols, image_shape, stride, padding, dilation)

    @staticmethod
    def backward(ctx, grad):
        if isinstance(grad, Tensor):  # create_graph: the adjoint as an op, to differentiate again
            stride, padding, dilation = ctx.geometry
            return Im2Col.apply(
                grad, kernel=ctx.kernel, stride=stride, padding=padding, dilation=dilation
            )
        return im2col_array(grad, ctx.kernel, *ctx.geometry)


def _check_image(x, op: str) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: expected a Tensor of shape (N, C, H, W), got {type(x).__name__}")
    if x.ndim != 4:
        raise ValueError(
            f"{op}: expected a 4-D input (batch, channels, height, width), got shape "
            f"{tuple(x.shape)}; add a batch dimension with x.unsqueeze(0) for one image"
        )


def _geometry(x, kernel, stride, padding, dilation, op):
    kernel = pair(kernel, "kernel_size", op)
    stride = pair(kernel if stride is None else stride, "stride", op)
    padding, dilation = pair(padding, "padding", op), pair(dilation, "dilation", op)
    if min(stride) < 1 or min(dilation) < 1 or min(padding) < 0 or min(kernel) < 1:
        raise ValueError(
            f"{op}: kernel {kernel}, stride {stride} and dilation {dilation} must be positive "
            f"and padding {padding} not negative"
        )
    h, w = x.shape[2], x.shape[3]
    ho = out_size(h, kernel[0], stride[0], padding[0], dilation[0])
    wo = out_size(w, kernel[1], stride[1], padding[1], dilation[1])
    if ho < 1 or wo < 1:
        raise ValueError(
            f"{op}: kernel {kernel} (dilation {dilation}) is larger than the padded input "
            f"{(h + 2 * padding[0], w + 2 * padding[1])} of shape {tuple(x.shape)}; use a smaller "
            "kernel, more padding or a larger image"
        )
    return kernel, stride, padding, dilation, (ho, wo)


def conv2d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups: int = 1):
    """2-D cross-correlation of x (N, C, H, W) with weight (O, C/groups, kh, kw): im2col, matmul.

    The unrolled input is (N, C*kh*kw, Ho*Wo), so weight (O, C*kh*kw) @ it is already the output
    (N, O, Ho*Wo) in PyTorch's layout: no transpose forward, no copy of the gradient backward.
    A bias joins the product as a column of the weight against a row of ones (no second array
    of the output's size). With groups g, channels and filters split into g independent
    convolutions (a batch of g matrix products).
    """
    _check_image(x, "conv2d")
    if not isinstance(weight, Tensor) or weight.ndim != 4:
        raise ValueError(
            "conv2d: weight must be a 4-D Tensor (out_channels, in_channels / groups, kh, kw), "
            f"got shape {tuple(np.shape(getattr(weight, 'data', weight)))}"
        )
    o, cg = weight.shape[0], weight.shape[1]
    if not isinstance(groups, int | np.integer) or groups < 1 or o % groups:
        raise ValueError(
            f"conv2d: groups={groups!r} must be a positive int that divides out_channels = {o}"
        )
    if x.shape[1] != cg * groups:
        raise ValueError(
            f"conv2d: input of shape {tuple(x.shape)} has {x.shape[1]} channels but the weight "
            f"{tuple(weight.shape)} expects {cg * groups} (in_channels {cg} x groups {groups})"
        )
    if bias is not None and tuple(bias.shape) != (o,):
        raise ValueError(
            f"conv2d: bias of shape {tuple(bias.shape)} should have shape ({o},), one number "
            "per output channel"
        )
    kernel, stride, padding, dilation, (ho, wo) = _geometry(
        x, weight.shape[2:], stride, padding, dilation, "conv2d"
    )
    n = x.shape[0]
    geometry = {"kernel": kernel, "stride": stride, "padding": padding, "dilation": dilation}
    if groups == 1 and bias is not None:  # [W | b] @ [cols; 1] = W @ cols + b, in one product
        cols = Im2Col.apply(x, **geometry, ones_row=True)  # (N, C*kh*kw + 1, Ho*Wo)
        w = cat([weight.reshape(o, -1), bias.reshape(o, 1)], dim=1)
        return (w @ cols).reshape(n, o, ho, wo)
    cols = Im2Col.apply(x, **geometry)
    if groups == 1:  # (O, C*kh*kw) @ (N, C*kh*kw, Ho*Wo) -> (N, O, Ho*Wo)
        out = weight.reshape(o, -1) @ cols.reshape(n, -1, ho * wo)
    else:  # (g, O/g, C/g*kh*kw) @ (N, g, C/g*kh*kw, Ho*Wo) -> (N, g, O/g, Ho*Wo)
        w = weight.reshape(groups, o // groups, -1)
        out = w @ cols.reshape(n, groups, -1, ho * wo)
    if bias is not None:
        out = out.reshape(n, o, ho * wo) + bias.reshape(o, 1)
    return out.reshape(n, o, ho, wo)


def _pool(x, kernel, stride, padding, op, pad_value):
    """Every window of x as (N, C, kh*kw, Ho, Wo), to be reduced over dimension 2."""
    _check_image(x, op)
    kernel, stride, padding, dilation, (ho, wo) = _geometry(x, kernel, stride, padding, 1, op)
    if padding[0] > kernel[0] // 2 or padding[1] > kernel[1] // 2:
        raise ValueError(f"{op}: padding {padding} must be at most half of kernel_size {kernel}")
    cols = Im2Col.apply(
        x, kernel=kernel, stride=stride, padding=padding, dilation=dilation, pad_value=pad_value
    )  # (N, C, kh, kw, Ho, Wo)
    return cols.reshape(x.shape[0], x.shape[1], -1, ho, wo)


def max_pool2d(x, kernel_size, stride=None, padding: int = 0):
    """The largest number of each window (padding never wins: it is -inf); stride = kernel."""
    return _pool(x, kernel_size, stride, padding, "max_pool2d", -np.inf).max(dim=2)


def avg_pool2d(x, kernel_size, stride=None, padding: int = 0):
    """The mean of each window (padding counts as zeros, as PyTorch's default); stride = kernel."""
    return _pool(x, kernel_size, stride, padding, "avg_pool2d", 0.0).mean(dim=2)
