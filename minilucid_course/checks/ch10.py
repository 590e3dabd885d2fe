"""Checks for the exercises of chapter 10 (convolutions).

Each check runs the learner's code on inputs chosen to expose one plausible mistake each, raises
AssertionError with a plain-words message on the first problem, and prints one line on success.
The package's own im2col and output-size formula are the reference; no expected number is
printed, only shapes and which case went wrong.
"""

import numpy as np

from minilucid.ops.conv import im2col_array, out_size
from minilucid_course.checks.common import call

# --------------------------------------------------------------------------------------------
# Exercise 1: the output size of a convolution

_SIZE_CASES = [  # (size, kernel, stride, padding, dilation, what it exposes)
    (8, 3, 1, 0, 1, "a 3x3 kernel, no padding"),
    (8, 3, 1, 1, 1, "padding 1 (added on both sides)"),
    (28, 5, 2, 0, 1, "stride 2 (the last window must fit)"),
    (7, 3, 2, 1, 1, "stride 2 with padding 1 on an odd size"),
    (9, 3, 1, 0, 2, "dilation 2 (a 3x3 kernel spread over 5x5)"),
    (10, 2, 3, 1, 3, "stride 3, padding 1 and dilation 3 together"),
    (4, 4, 1, 0, 1, "a kernel as large as the image"),
]


def check_output_size(output_size) -> None:
    """output_size(size, kernel, stride, padding, dilation) must count the kernel's positions."""
    for size, kernel, stride, padding, dilation, what in _SIZE_CASES:
        call_text = (
            f"output_size({size}, kernel={kernel}, stride={stride}, padding={padding}, "
            f"dilation={dilation})"
        )
        got = call(f"your {call_text}", output_size, size, kernel, stride, padding, dilation)
        if isinstance(got, float) and got.is_integer():
            got = int(got)
        if not isinstance(got, int | np.integer):
            raise AssertionError(
                f"{call_text} returned {type(got).__name__}; return an int (use // to divide)"
            )
        expected = out_size(size, kernel, stride, padding, dilation)
        if got != expected:
            raise AssertionError(
                f"{call_text} ({what}) is wrong. Count the positions of the kernel's top-left "
                "corner: the padded size is size + 2*padding, a dilated kernel spans "
                "dilation*(kernel-1)+1 pixels, and positions step by stride."
            )
    print("✓ output_size counts the kernel's positions for padding, stride and dilation")


# --------------------------------------------------------------------------------------------
# Exercise 2: im2col of your own

_IM2COL_CASES = [  # (shape, kernel, stride, padding, what it exposes)
    ((1, 1, 4, 4), (2, 2), 1, 0, "one 4x4 image, a 2x2 kernel"),
    ((2, 1, 5, 4), (3, 2), 1, 0, "two images, a 3x2 (non-square) kernel"),
    ((2, 3, 5, 5), (3, 3), 1, 0, "three channels"),
    ((1, 2, 4, 5), (3, 3), 1, 1, "padding 1"),
    ((2, 2, 7, 6), (3, 2), 2, 0, "stride 2"),
    ((2, 3, 6, 7), (2, 3), 2, 1, "channels, stride 2 and padding 1 together"),
]


def _reference(x, kernel, stride, padding):
    cols = im2col_array(x, kernel, (stride, stride), (padding, padding), (1, 1))
    n, c, kh, kw, ho, wo = cols.shape
    return cols.reshape(n, c * kh * kw, ho * wo)


def _numbered(shape):
    """Distinct numbers (1, 2, 3, ...), so that every misplaced entry shows."""
    return np.arange(1, int(np.prod(shape)) + 1, dtype=np.float64).reshape(shape)


def check_im2col(my_im2col) -> None:
    """my_im2col(x, kernel_size, stride, padding) -> (N, C*kh*kw, Ho*Wo), the package's layout."""
    for shape, kernel, stride, padding, what in _IM2COL_CASES:
        x = _numbered(shape)
        kept = x.copy()
        call_text = f"my_im2col(x of shape {shape}, {kernel}, stride={stride}, padding={padding})"
        got = call(f"your {call_text}", my_im2col, x, kernel, stride, padding)
        if hasattr(got, "data") and not isinstance(got, np.ndarray):
            got = got.data
        if not isinstance(got, np.ndarray):
            raise AssertionError(f"{call_text} returned {type(got).__name__}; return a NumPy array")
        if not np.array_equal(x, kept):
            raise AssertionError(f"{call_text} changed its input x; copy windows out instead")
        expected = _reference(x, kernel, stride, padding)
        if got.shape != expected.shape:
            raise AssertionError(
                f"{call_text} ({what}) has shape {got.shape}, but should have shape "
                f"{expected.shape}: (N, C*kh*kw, Ho*Wo), one row per (channel, i, j) of the "
                "kernel and one column per output pixel, row by row."
            )
        if np.array_equal(got, expected):
            continue
        raise AssertionError(_what_is_misplaced(call_text, what, got, expected))
    print("✓ my_im2col unrolls every window: channels, padding, stride and non-square kernels")


def _what_is_misplaced(call_text: str, what: str, got, expected) -> str:
    base = f"{call_text} ({what}): the shape is right but the numbers are not where they belong."
    if np.array_equal(np.sort(got, axis=None), np.sort(expected, axis=None)):
        return (
            base + " It holds the right numbers in another order: row index = c*kh*kw + i*kw "
            "+ j (channel first, then the kernel's row and column), column index = y*Wo + x."
        )
    if np.isin(got, 0).sum() != np.isin(expected, 0).sum():
        return base + " The zeros of the padding are not where they should be (or are missing)."
    return (
        base + " Some windows hold pixels they should not: window (y, x) starts at row "
        "y*stride and column x*stride of the padded image."
    )


# --------------------------------------------------------------------------------------------
# Exercise 3: a convolution's backward pass, by hand

_BACKWARD_CASES = [  # (x shape, weight shape, stride, padding, what it exposes)
    ((1, 1, 5, 5), (1, 1, 3, 3), 1, 0, "one image, one channel, one filter"),
    ((3, 1, 5, 4), (2, 1, 3, 2), 1, 0, "a batch of 3 (the weight is shared by all images)"),
    ((2, 3, 6, 5), (4, 3, 3, 3), 1, 1, "three channels and padding 1"),
    ((2, 2, 7, 7), (3, 2, 3, 3), 2, 1, "stride 2 and padding 1"),
    ((2, 2, 6, 7), (3, 2, 2, 3), 2, 0, "stride 2, a non-square kernel"),
]


def _engine_gradients(x, weight, bias, grad_out, stride, padding):
    from minilucid import tensor  # the engine composes im2col, reshape and matmul
    from minilucid.ops.conv import conv2d

    leaves = [tensor(a.copy(), requires_grad=True) for a in (x, weight, bias)]
    conv2d(*leaves, stride=stride, padding=padding).backward(grad_out)
    return [t.grad for t in leaves]


def check_conv2d_backward(conv2d_backward) -> None:
    """conv2d_backward(x, weight, grad_out, stride, padding) -> the engine's three gradients."""
    rng = np.random.default_rng(10)
    for xs, ws, stride, padding, what in _BACKWARD_CASES:
        x, weight, bias = (
            rng.standard_normal(xs),
            rng.standard_normal(ws),
            rng.standard_normal(ws[0]),
        )
        ho = out_size(xs[2], ws[2], stride, padding, 1)
        wo = out_size(xs[3], ws[3], stride, padding, 1)
        grad_out = rng.standard_normal((xs[0], ws[0], ho, wo))
        kept = [a.copy() for a in (x, weight, grad_out)]
        call_text = (
            f"conv2d_backward(x {xs}, weight {ws}, grad_out {grad_out.shape}, stride={stride}, "
            f"padding={padding})"
        )
        got = call(f"your {call_text}", conv2d_backward, x, weight, grad_out, stride, padding)
        if not isinstance(got, tuple | list) or len(got) != 3:
            raise AssertionError(
                f"{call_text} returned {type(got).__name__}; return a tuple of three arrays "
                "(grad_x, grad_weight, grad_bias)"
            )
        if not all(np.array_equal(a, b) for a, b in zip((x, weight, grad_out), kept, strict=True)):
            raise AssertionError(f"{call_text} changed one of its inputs; leave them as they are")
        expected = _engine_gradients(x, weight, bias, grad_out, stride, padding)
        for name, g, e in zip(("grad_x", "grad_weight", "grad_bias"), got, expected, strict=True):
            g = np.asarray(getattr(g, "data", g))
            if g.shape != e.shape:
                raise AssertionError(
                    f"{call_text} ({what}): {name} has shape {g.shape}, but should have the "
                    f"shape {e.shape} of what it is the gradient of."
                )
            if not np.allclose(g, e, rtol=1e-9, atol=1e-9):
                raise AssertionError(f"{call_text} ({what}): {name} is wrong. {_HINTS[name]}")
    print("✓ conv2d_backward gives the engine's gradients for input, weight and bias")


_HINTS = {
    "grad_x": (
        "The input's gradient is col2im of weight.T @ grad: every window's numbers added (+=, "
        "windows overlap) back where they were copied from, at the same strided slices, then "
        "the padding cut off."
    ),
    "grad_weight": (
        "The weight's gradient is grad @ cols.T for each image, summed over the batch (every "
        "image uses the same filters), reshaped to the weight's shape."
    ),
    "grad_bias": "The bias is added at every pixel of every image: sum grad_out over N, Ho, Wo.",
}
