"""Checks for the exercises of chapter 10 (convolutions).

Each check runs the learner's code on inputs chosen to expose one plausible mistake each, raises
AssertionError with a plain-words message on the first problem, and prints one line on success.
The package's own im2col and output-size formula are the reference; no expected number is
printed, only shapes and which case went wrong.
"""

import math
from types import MappingProxyType

import numpy as np

from minilucid.ops.conv import im2col_array, out_size
from minilucid_course.checks.common import call, type_name

# --------------------------------------------------------------------------------------------
# Exercise 1: the output size of a convolution

_SIZE_CASES = (  # (size, kernel, stride, padding, dilation, what it exposes)
    (8, 3, 1, 0, 1, "a 3x3 kernel, no padding"),
    (8, 3, 1, 1, 1, "padding 1 (added on both sides)"),
    (28, 5, 2, 0, 1, "stride 2 (the last window must fit)"),
    (7, 3, 2, 1, 1, "stride 2 with padding 1 on an odd size"),
    (9, 3, 1, 0, 2, "dilation 2 (a 3x3 kernel spread over 5x5)"),
    (10, 2, 3, 1, 3, "stride 3, padding 1 and dilation 3 together"),
    (4, 4, 1, 0, 1, "a kernel as large as the image"),
)


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

_IM2COL_CASES = (  # (shape, kernel, stride, padding, what it exposes)
    ((1, 1, 4, 4), (2, 2), 1, 0, "one 4x4 image, a 2x2 kernel"),
    ((2, 1, 5, 4), (3, 2), 1, 0, "two images, a 3x2 (non-square) kernel"),
    ((2, 3, 5, 5), (3, 3), 1, 0, "three channels"),
    ((1, 2, 4, 5), (3, 3), 1, 1, "padding 1"),
    ((2, 2, 7, 6), (3, 2), 2, 0, "stride 2"),
    ((2, 3, 6, 7), (2, 3), 2, 1, "channels, stride 2 and padding 1 together"),
)


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

_BACKWARD_CASES = (  # (x shape, weight shape, stride, padding, what it exposes)
    ((1, 1, 5, 5), (1, 1, 3, 3), 1, 0, "one image, one channel, one filter"),
    ((3, 1, 5, 4), (2, 1, 3, 2), 1, 0, "a batch of 3 (the weight is shared by all images)"),
    ((2, 3, 6, 5), (4, 3, 3, 3), 1, 1, "three channels and padding 1"),
    ((2, 2, 7, 7), (3, 2, 3, 3), 2, 1, "stride 2 and padding 1"),
    ((2, 2, 6, 7), (3, 2, 2, 3), 2, 0, "stride 2, a non-square kernel"),
)


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


_HINTS = MappingProxyType(
    {
        "grad_x": (
            "The input's gradient is col2im of weight.T @ grad: every window's numbers added (+=, "
            "windows overlap) back where they were copied from, at the same strided slices, then "
            "the padding cut off."
        ),
        "grad_weight": (
            "The weight's gradient is grad @ cols.T for each image, summed over the batch (every "
            "image uses the same filters), reshaped to the weight's shape."
        ),
        "grad_bias": (
            "The bias is added at every pixel of every image: sum grad_out over N, Ho, Wo."
        ),
    }
)


# --------------------------------------------------------------------------------------------
# Exercise 4: a convolution layer on your own im2col

_LAYER_CASES = (  # (x shape, out_channels, kernel_size, stride, padding, what it exposes)
    ((1, 1, 5, 5), 1, 3, 1, 0, "one image, one channel, one filter, kernel_size=3"),
    ((3, 2, 5, 4), 3, (3, 2), 1, 0, "a batch of 3, a (3, 2) kernel"),
    ((2, 3, 6, 5), 4, 3, 1, 1, "three channels and padding 1"),
    ((2, 2, 7, 7), 3, (2, 3), 2, 1, "stride 2, padding 1 and a (2, 3) kernel"),
)


def _build(MyConv2d, *args, **kwargs):
    from minilucid.nn.module import Module

    text = ", ".join([*map(repr, args), *(f"{k}={v!r}" for k, v in kwargs.items())])
    layer = call(f"MyConv2d({text})", MyConv2d, *args, **kwargs)
    if not isinstance(layer, Module):
        raise AssertionError(
            f"MyConv2d({text}) is a {type_name(layer)}; make MyConv2d a subclass of Module"
        )
    return layer, f"MyConv2d({text})"


def _parameters_of(layer, what: str, weight_shape: tuple) -> None:
    names = [name for name, _ in layer.named_parameters()]
    if sorted(names) != ["bias", "weight"]:
        raise AssertionError(
            f"{what}.named_parameters() gives {names}; the layer should own exactly two "
            "Parameters, assigned as self.weight and self.bias"
        )
    for name, shape in (("weight", weight_shape), ("bias", weight_shape[:1])):
        got = tuple(getattr(layer, name).shape)
        if got != shape:
            raise AssertionError(
                f"{what}.{name} has shape {got}; it should have {shape} "
                "(weight: out_channels, in_channels, kh, kw; bias: one per out_channel)"
            )


def _bound_problem(layer, what: str, bound: float) -> None:
    """Weight and bias in float32, inside ±bound and reaching out to both of its ends."""
    for name in ("weight", "bias"):
        values = np.asarray(getattr(layer, name).data)
        if values.dtype != np.float32:
            raise AssertionError(f"{what}.{name} is {values.dtype}; keep float32, as Conv2d does")
        if np.abs(values).max() > bound * (1 + 1e-6):
            raise AssertionError(
                f"{what}.{name} has entries outside ±1/sqrt(fan_in) with fan_in = in_channels * "
                "kh * kw: draw them uniformly inside that bound"
            )
        if values.max() < 0.5 * bound or values.min() > -0.5 * bound:
            side = "far inside" if np.abs(values).max() < 0.5 * bound else "on one side of 0 in"
            raise AssertionError(
                f"{what}.{name} has entries only {side} ±1/sqrt(fan_in): draw them uniformly "
                "over the whole interval -bound..bound, bound = 1/sqrt(in_channels * kh * kw)"
            )


def _check_init(MyConv2d) -> None:
    from minilucid import manual_seed

    for args, kh, kw in (((4, 40, (1, 5)), 1, 5), ((16, 32, 3), 3, 3)):
        layer, what = _build(MyConv2d, *args)
        _parameters_of(layer, what, (args[1], args[0], kh, kw))
        bound = 1 / math.sqrt(args[0] * kh * kw)
        _bound_problem(layer, what, bound)
    weights = np.asarray(layer.weight.data, dtype=np.float64)
    if abs(weights.std() * math.sqrt(3) / bound - 1) > 0.1 or abs(weights.mean()) > 0.1 * bound:
        raise AssertionError(
            f"{what}.weight is not spread like a uniform draw over ±1/sqrt(fan_in) (centred "
            "at 0, flat up to the bound); draw it from ml.rand, scaled to that interval"
        )
    draws = []
    for _ in range(2):
        manual_seed(7)
        draws.append(np.array(_build(MyConv2d, 2, 3, 2)[0].weight.data))
    if not np.array_equal(*draws):
        raise AssertionError(
            "MyConv2d(2, 3, 2) after ml.manual_seed(7) gave other weights each time: draw them "
            "from minilucid's stream (ml.rand), which ml.manual_seed resets"
        )


def _conv_reference(x, weight, bias, grad, stride, padding):
    from minilucid import tensor
    from minilucid.ops.conv import conv2d

    leaves = [tensor(a.copy(), requires_grad=True) for a in (x, weight, bias)]
    out = conv2d(*leaves, stride=stride, padding=padding)
    out.backward(grad)
    return out.data, [t.grad for t in leaves]


def _forward_hint(layer, x_shape, bias) -> str:
    """Name the mistake: run the layer on zeros, where only the bias is left."""
    from minilucid import Tensor

    at_zero = call("your layer on zeros", layer, Tensor(np.zeros(x_shape)), returns=Tensor).data
    if np.allclose(at_zero, 0):
        return "the bias is missing: add bias[o] to every pixel of output channel o"
    if not np.allclose(at_zero, np.broadcast_to(bias.reshape(1, -1, 1, 1), at_zero.shape)):
        return (
            "on an image of zeros the output should be bias[o] at every pixel of channel o; "
            "the product is (N, O, Ho*Wo), so the bias must broadcast as (O, 1)"
        )
    return (
        "the bias is right, the product is not: row c*kh*kw + i*kw + j of the unrolled windows "
        "meets weight[o, c, i, j], so reshape the weight to (O, C*kh*kw) as it is stored, "
        "channels first, and multiply it on the left of the windows"
    )


def check_conv_layer(MyConv2d) -> None:
    """MyConv2d(in, out, kernel_size, stride, padding): parameters, init, forward, gradients."""
    from minilucid import Tensor
    from minilucid.numerical import numerical_grad

    _check_init(MyConv2d)
    rng = np.random.default_rng(104)
    for xs, o, kernel, stride, padding, what in _LAYER_CASES:
        layer, built = _build(MyConv2d, xs[1], o, kernel, stride=stride, padding=padding)
        ks = (kernel, kernel) if isinstance(kernel, int) else kernel
        _parameters_of(layer, built, (o, xs[1], *ks))
        weight, bias = rng.standard_normal((o, xs[1], *ks)), rng.standard_normal(o)
        layer.weight.data, layer.bias.data = weight.copy(), bias.copy()
        x = Tensor(rng.standard_normal(xs), requires_grad=True)
        call_text = f"{built} on x of shape {xs} ({what})"
        out = call(f"your {call_text}", layer, x, returns=Tensor)
        ho, wo = (out_size(xs[k + 2], ks[k], stride, padding, 1) for k in (0, 1))
        if tuple(out.shape) != (xs[0], o, ho, wo):
            raise AssertionError(
                f"{call_text} gave shape {tuple(out.shape)}; it should be (N, O, Ho, Wo), "
                "with Ho and Wo the kernel's positions (Exercise 1's output_size)"
            )
        grad = rng.standard_normal(out.shape)
        want, grads = _conv_reference(x.data, weight, bias, grad, stride, padding)
        if not np.allclose(out.data, want, rtol=1e-9, atol=1e-9):
            hint = _forward_hint(layer, xs, bias)
            raise AssertionError(f"{call_text}: the output is not the convolution's; {hint}")
        if not out.requires_grad:
            raise AssertionError(
                f"{call_text}: the output has no graph behind it; compute it from x and the "
                "Parameters with tensor operations and MyIm2Col.apply, not on .data"
            )
        call(f"backward through {call_text}", out.backward, grad)
        _compare_grads(call_text, (x, layer.weight, layer.bias), grads)
    # central differences: the gradients are those of the function itself
    layer, built = _build(MyConv2d, 2, 2, 2, stride=1, padding=1)
    arrays = [rng.standard_normal(s) for s in ((2, 2, 2, 2), (2,), (1, 2, 4, 3))]
    layer.weight.data, layer.bias.data = arrays[0].copy(), arrays[1].copy()

    def conv(w, b, x):
        layer.weight.data, layer.bias.data = w.data, b.data
        return layer(x)

    grad = rng.standard_normal((1, 2, 5, 4))
    numeric = call(f"your {built}", numerical_grad, conv, arrays, grad_output=grad)
    layer.weight.data, layer.bias.data = arrays[0].copy(), arrays[1].copy()
    x = Tensor(arrays[2].copy(), requires_grad=True)
    call(f"your {built} and its backward", lambda: layer(x).backward(grad))
    for name, got, want in zip(
        ("weight.grad", "bias.grad", "x.grad"), (layer.weight.grad, layer.bias.grad, x.grad),
        numeric, strict=True,
    ):  # fmt: skip
        if got is None or not np.allclose(got, want, rtol=1e-6, atol=1e-8):
            raise AssertionError(
                f"{built} on x of shape (1, 2, 4, 3): {name} differs from central differences"
            )
    print("✓ MyConv2d: parameters, init, forward and gradients of a convolution, on your im2col")


def _compare_grads(call_text: str, leaves, want) -> None:
    names = ("x.grad", "weight.grad", "bias.grad")
    for name, leaf, expected in zip(names, leaves, want, strict=True):
        if leaf.grad is None:
            raise AssertionError(
                f"{call_text}: after backward, {name} is None. {_LAYER_HINTS[name]}"
            )
        if not np.allclose(leaf.grad, expected, rtol=1e-9, atol=1e-9):
            raise AssertionError(f"{call_text}: {name} is wrong. {_LAYER_HINTS[name]}")


_LAYER_HINTS = MappingProxyType({
    "x.grad": (
        "The input's gradient comes back through MyIm2Col.backward: the gradient of every "
        "window added (+=, windows overlap) into a zero image where the window was copied "
        "from, then the padding cut off."
    ),
    "weight.grad": "Use self.weight itself (a Parameter) in the product, not its .data.",
    "bias.grad": "Add self.bias itself (a Parameter), reshaped to (O, 1), not its .data.",
})  # fmt: skip


# --------------------------------------------------------------------------------------------
# Exercise 5: max pooling, forward and backward

_POOL_CASES = (  # (x shape, kernel, values, what it exposes)
    ((1, 1, 4, 4), 2, "distinct", "one 4x4 image, 2x2 windows"),
    ((2, 3, 6, 6), 3, "distinct", "two images, three channels, 3x3 windows"),
    ((2, 2, 5, 7), 2, "distinct", "a 5x7 image: its last row and column fill no window"),
    ((2, 2, 4, 6), 2, "relu", "ReLU outputs: windows of zeros tie everywhere"),
    ((1, 2, 6, 4), 2, "small ints", "small integers: two or more entries tie for the maximum"),
)


def _pool_input(rng, shape, values):
    if values == "distinct":  # well apart, so that a nudge of 1e-6 never changes a winner
        return rng.permutation(np.prod(shape)).reshape(shape) * 0.1
    if values == "relu":
        return np.maximum(rng.standard_normal(shape), 0)
    return rng.integers(0, 3, shape).astype(np.float64)


def _pool_routes(x, k, grad):
    """Wrong routes to name: to every entry, to the first maximum, whole to every tie."""
    n, c, h, w = x.shape
    ho, wo = h // k, w // k
    windows = im2col_array(x, (k, k), (k, k), (0, 0), (1, 1)).reshape(n, c, k * k, ho, wo)
    winners = windows == windows.max(axis=2, keepdims=True)
    first = np.zeros_like(winners)
    np.put_along_axis(first, windows.argmax(axis=2)[:, :, None], True, axis=2)
    out = {}
    for name, mask in (("every", np.ones_like(winners)), ("first", first), ("whole", winners)):
        routed = (mask * grad[:, :, None]).reshape(n, c, k, k, ho, wo)
        image = np.zeros_like(x)
        for i in range(k):
            for j in range(k):
                image[:, :, i : i + k * ho : k, j : j + k * wo : k] += routed[:, :, i, j]
        out[name] = image
    return out


_ROUTE_HINTS = MappingProxyType({
    "every": (
        "every entry of a window received the window's gradient; only the window's maximum "
        "should (the others did not change the output)"
    ),
    "first": (
        "where several entries tie for a window's maximum, only one of them received the "
        "gradient; share it equally among the tied entries, as minilucid's max does"
    ),
    "whole": (
        "where several entries tie for a window's maximum, each received the whole gradient; "
        "share it equally among them, so that the window's gradient is not counted twice"
    ),
})  # fmt: skip


def check_max_pool(MyMaxPool2d) -> None:
    """MyMaxPool2d.apply(x, kernel_size=k): the package's max_pool2d, forward and backward."""
    from minilucid import Tensor
    from minilucid.numerical import numerical_grad
    from minilucid.ops.conv import max_pool2d

    if not callable(getattr(MyMaxPool2d, "apply", None)):
        raise AssertionError(
            f"MyMaxPool2d is a {type_name(MyMaxPool2d)} without apply; make it a subclass of "
            "Function, with static forward and backward"
        )
    rng = np.random.default_rng(105)
    for shape, k, values, what in _POOL_CASES:
        x_np = _pool_input(rng, shape, values)
        x = Tensor(x_np.copy(), requires_grad=True)
        call_text = f"MyMaxPool2d.apply(x of shape {shape}, kernel_size={k}) ({what})"
        out = call(f"your {call_text}", MyMaxPool2d.apply, x, kernel_size=k, returns=Tensor)
        ref = Tensor(x_np.copy(), requires_grad=True)
        want = max_pool2d(ref, k)
        if tuple(out.shape) != tuple(want.shape):
            raise AssertionError(
                f"{call_text} gave shape {tuple(out.shape)}; it should be (N, C, H // k, W // k):"
                " windows step by k and a last part that fills no window is left out"
            )
        if not np.array_equal(x.data, x_np):
            raise AssertionError(f"{call_text} changed its input x; leave it as it is")
        if not np.allclose(out.data, want.data, rtol=0, atol=0):
            raise AssertionError(
                f"{call_text}: the output is not the largest entry of each window (window (y, x)"
                " covers rows y*k .. y*k+k-1 and columns x*k .. x*k+k-1 of its channel)"
            )
        if not out.requires_grad:
            raise AssertionError(
                f"{call_text}: the output has no graph behind it; return the forward's array "
                "from MyMaxPool2d.forward and let apply make the tensor"
            )
        grad = rng.standard_normal(out.shape)
        call(f"backward through {call_text}", out.backward, grad)
        want.backward(grad)
        if x.grad is None or tuple(np.shape(x.grad)) != shape:
            raise AssertionError(
                f"{call_text}: after backward, x.grad should have x's shape {shape}; return one "
                "array of that shape from backward"
            )
        if not np.allclose(x.grad, ref.grad, rtol=1e-12, atol=1e-12):
            routes = _pool_routes(x_np, k, grad)
            hint = next(
                (_ROUTE_HINTS[name] for name, g in routes.items() if np.allclose(x.grad, g)),
                "send each window's gradient to the entry that was its maximum, zero elsewhere "
                "(also where no window reached)",
            )
            raise AssertionError(f"{call_text}: x.grad is wrong: {hint}")
    x_np = _pool_input(rng, (1, 2, 4, 4), "distinct")
    grad = rng.standard_normal((1, 2, 2, 2))
    what = "MyMaxPool2d on x of shape (1, 2, 4, 4)"
    pool = lambda x: MyMaxPool2d.apply(x, kernel_size=2)  # noqa: E731
    numeric = call(what, numerical_grad, pool, [x_np], grad_output=grad)
    x = Tensor(x_np, requires_grad=True)
    call(f"{what} and its backward", lambda: pool(x).backward(grad))
    if x.grad is None or not np.allclose(x.grad, numeric[0], rtol=1e-6, atol=1e-8):
        raise AssertionError(f"{what}: x.grad differs from central differences")
    print("✓ MyMaxPool2d: the windows' maxima, and their gradient to the winners (ties share)")
