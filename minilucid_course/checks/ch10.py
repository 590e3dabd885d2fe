"""Checks for the exercises of chapter 10 (convolutions), as probes and judges.

Each probe runs the learner's code on seeded cases chosen to expose one plausible mistake each
and returns what came out as plain data; each judge rebuilds the same cases, computes the
reference with the package's own im2col, conv2d and max_pool2d in its own process, and names
the first problem in one line. No expected number is printed, only shapes and which case.
"""

from __future__ import annotations

import math
from types import MappingProxyType

import numpy as np

from minilucid.ops.conv import im2col_array, out_size
from minilucid_course.checks.exercise import Exercise, Wrong, register
from minilucid_course.checks.outcomes import (
    array_of,
    called,
    items_of,
    kind,
    package_kinds,
    raised_first,
    record,
    value_of,
)

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


def _size_cases(seed: int) -> dict:
    rng = np.random.default_rng([10, 1, seed])
    drawn = []
    while len(drawn) < 4:
        size, kernel, stride = (int(v) for v in rng.integers((5, 1, 1), (30, 6, 4)))
        padding, dilation = (int(v) for v in rng.integers((0, 1), (3, 4)))
        if dilation * (kernel - 1) + 1 <= size + 2 * padding:
            drawn.append((size, kernel, stride, padding, dilation, "a case drawn at random"))
    return {"cases": [list(c) for c in _SIZE_CASES + tuple(drawn)]}


def _probe_size(cases, output_size):
    return [called(output_size, *case[:5]) for case in cases["cases"]]


def _judge_size(cases, data) -> str:
    if len(data) != len(cases["cases"]):
        raise Wrong("output_size: the results do not match the cases")
    for (size, kernel, stride, padding, dilation, what), rec in zip(
        cases["cases"], data, strict=True
    ):
        call_text = (
            f"output_size({size}, kernel={kernel}, stride={stride}, padding={padding}, "
            f"dilation={dilation})"
        )
        got = value_of(rec, f"your {call_text}")
        if isinstance(got, float) and got.is_integer():
            got = int(got)
        if type(got) is not int:
            raise Wrong(
                f"{call_text} returned {kind(rec)}; a count of positions is whole: return an int"
            )
        if got != out_size(size, kernel, stride, padding, dilation):
            raise Wrong(
                f"{call_text} ({what}) is wrong: it is not the number of positions of the "
                "kernel on the padded input. Which of size, padding, stride and dilation does "
                "your count leave out?"
            )
    return "✓ output_size counts the kernel's positions for padding, stride and dilation"


EXERCISE_SIZE = register(
    Exercise(
        check="check_output_size",
        chapter="10",
        title="The output size of a convolution",
        probe=_probe_size,
        judge=_judge_size,
        cases=_size_cases,
        forbidden=("out_size",),
    )
)
check_output_size = EXERCISE_SIZE.lab_check


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
    cols = im2col_array(x, tuple(kernel), (stride, stride), (padding, padding), (1, 1))
    n, c, kh, kw, ho, wo = cols.shape
    return cols.reshape(n, c * kh * kw, ho * wo)


def _numbered(shape, seed: int, index: int):
    """Distinct positive numbers in a seeded order, so that every misplaced entry shows."""
    rng = np.random.default_rng([10, 2, seed, index])
    return (rng.permutation(int(np.prod(shape))) + 1.0).reshape(shape)


def _im2col_cases(seed: int) -> dict:
    return {
        "seed": seed,
        "cases": [[list(s), list(k), st, p, w] for s, k, st, p, w in _IM2COL_CASES],
    }


def _probe_im2col(cases, my_im2col):
    out = []
    for index, (shape, kernel, stride, padding, _) in enumerate(cases["cases"]):
        x = _numbered(tuple(shape), cases["seed"], index)
        rec = called(my_im2col, x, tuple(kernel), stride, padding)
        out.append({"result": rec, "x_after": np.array(x)})
    return out


def _judge_im2col(cases, data) -> str:
    for index, ((shape, kernel, stride, padding, what), rec) in enumerate(
        zip(cases["cases"], data, strict=True)
    ):
        shape, kernel = tuple(shape), tuple(kernel)
        x = _numbered(shape, cases["seed"], index)
        call_text = f"my_im2col(x of shape {shape}, {kernel}, stride={stride}, padding={padding})"
        got = array_of(rec["result"], f"your {call_text}")
        if got is None:
            raise Wrong(
                f"{call_text} returned {kind(rec['result'])}; it should return a NumPy array"
            )
        after = np.asarray(rec["x_after"], dtype=np.float64)
        if after.shape != x.shape or not np.array_equal(after, x):
            raise Wrong(f"{call_text} changed its input x")
        expected = _reference(x, kernel, stride, padding)
        if got.shape != expected.shape:
            raise Wrong(
                f"{call_text} ({what}) has shape {got.shape}, but should have shape "
                f"{expected.shape}: (N, C*kh*kw, Ho*Wo), one row per (channel, i, j) of the "
                "kernel and one column per output pixel, row by row."
            )
        if not np.array_equal(got, expected):
            raise Wrong(_what_is_misplaced(call_text, what, got, expected))
    return "✓ my_im2col unrolls every window: channels, padding, stride and non-square kernels"


def _what_is_misplaced(call_text: str, what: str, got, expected) -> str:
    base = f"{call_text} ({what}): the shape is right but the numbers are not where they belong."
    if np.array_equal(np.sort(got, axis=None), np.sort(expected, axis=None)):
        return (
            base + " It holds the right numbers in another order than the layout asked for: "
            "row index = c*kh*kw + i*kw + j (channel first, then the kernel's row and column), "
            "column index = y*Wo + x."
        )
    if np.isin(got, 0).sum() != np.isin(expected, 0).sum():
        return base + " The zeros of the padding are not where they should be (or are missing)."
    return (
        base + " Some windows hold pixels they should not: window (y, x) starts at row "
        "y*stride and column x*stride of the padded image."
    )


EXERCISE_IM2COL = register(
    Exercise(
        check="check_im2col",
        chapter="10",
        title="im2col of your own",
        probe=_probe_im2col,
        judge=_judge_im2col,
        cases=_im2col_cases,
        forbidden=("im2col_array", "Im2Col", "sliding_window_view", "as_strided"),
    )
)
check_im2col = EXERCISE_IM2COL.lab_check


# --------------------------------------------------------------------------------------------
# Exercise 3: a convolution's backward pass, by hand

_BACKWARD_CASES = (  # (x shape, weight shape, stride, padding, what it exposes)
    ((1, 1, 5, 5), (1, 1, 3, 3), 1, 0, "one image, one channel, one filter"),
    ((3, 1, 5, 4), (2, 1, 3, 2), 1, 0, "a batch of 3 (the weight is shared by all images)"),
    ((2, 3, 6, 5), (4, 3, 3, 3), 1, 1, "three channels and padding 1"),
    ((2, 2, 7, 7), (3, 2, 3, 3), 2, 1, "stride 2 and padding 1"),
    ((2, 2, 6, 7), (3, 2, 2, 3), 2, 0, "stride 2, a non-square kernel"),
)


def _backward_cases(seed: int) -> dict:
    return {
        "seed": seed,
        "cases": [[list(x), list(w), s, p, t] for x, w, s, p, t in _BACKWARD_CASES],
    }


def _backward_arrays(seed: int, index: int, xs, ws, stride, padding):
    rng = np.random.default_rng([10, 3, seed, index])
    x, weight = rng.standard_normal(xs), rng.standard_normal(ws)
    ho = out_size(xs[2], ws[2], stride, padding, 1)
    wo = out_size(xs[3], ws[3], stride, padding, 1)
    return x, weight, rng.standard_normal((xs[0], ws[0], ho, wo))


def _engine_gradients(x, weight, bias, grad_out, stride, padding):
    from minilucid import tensor  # the engine composes im2col, reshape and matmul
    from minilucid.ops.conv import conv2d

    leaves = [tensor(a.copy(), requires_grad=True) for a in (x, weight, bias)]
    conv2d(*leaves, stride=stride, padding=padding).backward(grad_out)
    return [t.grad for t in leaves]


def _probe_backward(cases, conv2d_backward):
    out = []
    for index, (xs, ws, stride, padding, _) in enumerate(cases["cases"]):
        arrays = _backward_arrays(cases["seed"], index, tuple(xs), tuple(ws), stride, padding)
        rec = called(conv2d_backward, *arrays, stride, padding)
        out.append({"result": rec, "after": [np.array(a) for a in arrays]})
    return out


def _judge_backward(cases, data) -> str:
    for index, ((xs, ws, stride, padding, what), rec) in enumerate(
        zip(cases["cases"], data, strict=True)
    ):
        xs, ws = tuple(xs), tuple(ws)
        x, weight, grad_out = _backward_arrays(cases["seed"], index, xs, ws, stride, padding)
        call_text = (
            f"conv2d_backward(x {xs}, weight {ws}, grad_out {grad_out.shape}, stride={stride}, "
            f"padding={padding})"
        )
        items = items_of(rec["result"], f"your {call_text}")
        if items is None or len(items) != 3:
            raise Wrong(
                f"{call_text} returned {kind(rec['result'])}"
                + (f" of {len(items)}" if items is not None else "")
                + "; it should return a tuple of three arrays (grad_x, grad_weight, grad_bias)"
            )
        after = [np.asarray(a, dtype=np.float64) for a in rec["after"]]
        if len(after) != 3 or not all(
            a.shape == b.shape and np.array_equal(a, b)
            for a, b in zip(after, (x, weight, grad_out), strict=True)
        ):
            raise Wrong(f"{call_text} changed one of its inputs")
        expected = _engine_gradients(x, weight, np.zeros(ws[0]), grad_out, stride, padding)
        for name, item, e in zip(
            ("grad_x", "grad_weight", "grad_bias"), items, expected, strict=True
        ):
            g = array_of(item, f"{call_text}: {name}")
            if g is None:
                raise Wrong(f"{call_text}: {name} is a {kind(item)}, not an array")
            if g.shape != e.shape:
                raise Wrong(
                    f"{call_text} ({what}): {name} has shape {g.shape}, but should have the "
                    f"shape {e.shape} of what it is the gradient of."
                )
            if not np.allclose(g, e, rtol=1e-9, atol=1e-9):
                raise Wrong(f"{call_text} ({what}): {name} is wrong. {_HINTS[name]}")
    return "✓ conv2d_backward gives the engine's gradients for input, weight and bias"


_HINTS = MappingProxyType(
    {
        "grad_x": (
            "Every input pixel may sit in several windows (windows overlap): does each window "
            "it sits in contribute, and does the padding stay out of the result?"
        ),
        "grad_weight": (
            "Every image of the batch uses the same filters: does each image contribute to "
            "the weight's gradient, and by how much?"
        ),
        "grad_bias": "The bias is added at every pixel of every image: which of those count?",
    }
)

EXERCISE_BACKWARD = register(
    Exercise(
        check="check_conv2d_backward",
        chapter="10",
        title="A convolution's backward pass, by hand",
        probe=_probe_backward,
        judge=_judge_backward,
        cases=_backward_cases,
        forbidden=("conv2d", "Conv2d", "col2im_array", "Col2Im", "im2col_array", "Im2Col"),
    )
)
check_conv2d_backward = EXERCISE_BACKWARD.lab_check


# --------------------------------------------------------------------------------------------
# Exercise 4: a convolution layer on your own im2col

_LAYER_CASES = (  # (x shape, out_channels, kernel_size, stride, padding, what it exposes)
    ((1, 1, 5, 5), 1, 3, 1, 0, "one image, one channel, one filter, kernel_size=3"),
    ((3, 2, 5, 4), 3, (3, 2), 1, 0, "a batch of 3, a (3, 2) kernel"),
    ((2, 3, 6, 5), 4, 3, 1, 1, "three channels and padding 1"),
    ((2, 2, 7, 7), 3, (2, 3), 2, 1, "stride 2, padding 1 and a (2, 3) kernel"),
    ((1, 2, 4, 3), 2, 2, 1, 1, "padding 1 around a 4x3 image, a 2x2 kernel"),
)
_INIT_CASES = (((4, 40, (1, 5)), 1, 5), ((16, 32, 3), 3, 3))


def _layer_cases(seed: int) -> dict:
    return {
        "seed": seed,
        "init": [[list(a[:2]) + [list(a[2]) if isinstance(a[2], tuple) else a[2]], kh, kw]
                 for a, kh, kw in _INIT_CASES],
        "cases": [
            [list(xs), o, list(k) if isinstance(k, tuple) else k, s, p, t]
            for xs, o, k, s, p, t in _LAYER_CASES
        ],
    }  # fmt: skip


def _kernel(kernel) -> tuple:
    return (kernel, kernel) if isinstance(kernel, int) else tuple(kernel)


def _layer_arrays(seed: int, index: int, xs, o, ks):
    rng = np.random.default_rng([10, 4, seed, index])
    weight, bias = rng.standard_normal((o, xs[1], *ks)), rng.standard_normal(o)
    x = rng.standard_normal(xs)
    return weight, bias, x


def _text(args, kwargs) -> str:
    return ", ".join([*map(repr, args), *(f"{k}={v!r}" for k, v in kwargs.items())])


def _build(MyConv2d, args, kwargs) -> tuple:  # noqa: N803
    """In the probe: (the layer or None, plain facts about it)."""
    from minilucid.nn.module import Module, Parameter
    from minilucid_course.checks.common import attempt

    outcome = attempt(MyConv2d, *args, **kwargs)
    if outcome[0] == "raised":
        return None, {"built": {"raised": [outcome[1], outcome[2]]}}
    layer = outcome[1]
    from minilucid import nn

    facts = {"built": {"type": type(layer).__name__}, "module": isinstance(layer, Module)}
    facts["inside"] = package_kinds(layer, ("Conv2d",), nn)
    if not facts["module"]:
        return None, facts
    named = attempt(lambda: list(layer.named_parameters()))
    if named[0] == "raised":
        facts["named"] = {"raised": [named[1], named[2]]}
        return None, facts
    facts["named"] = [str(n) for n, _ in named[1]]
    facts["parameters"] = {
        str(n): {
            "parameter": isinstance(p, Parameter),
            "data": np.array(getattr(p, "data", np.zeros(0))),
        }
        for n, p in named[1]
    }
    return layer, facts


def _probe_layer(cases, MyConv2d):  # noqa: N803
    from minilucid import Tensor, manual_seed, nn

    package = package_kinds(MyConv2d, ("Conv2d",), nn)
    if package:
        return {"package": package}
    data = {"init": [], "seeded": [], "cases": []}
    for args, _, _ in cases["init"]:
        args = [tuple(a) if isinstance(a, list) else a for a in args]
        data["init"].append(_build(MyConv2d, args, {})[1])
    for _ in range(2):
        manual_seed(7)
        data["seeded"].append(_build(MyConv2d, (2, 3, 2), {})[1])
    for index, (xs, o, kernel, stride, padding, _) in enumerate(cases["cases"]):
        kernel = kernel if isinstance(kernel, int) else tuple(kernel)
        xs, ks = tuple(xs), _kernel(kernel)
        layer, facts = _build(MyConv2d, (xs[1], o, kernel), {"stride": stride, "padding": padding})
        data["cases"].append(facts)
        if (
            layer is None
            or "weight" not in facts["parameters"]
            or "bias" not in facts["parameters"]
        ):
            continue
        weight, bias, x_np = _layer_arrays(cases["seed"], index, xs, o, ks)
        layer.weight.data, layer.bias.data = weight.copy(), bias.copy()
        facts["at_zero"] = called(layer, Tensor(np.zeros(xs)))
        x = Tensor(x_np.copy(), requires_grad=True)
        facts["out"], out = _attempt(layer, x)
        if out is None or facts["out"].get("requires_grad") is not True:
            continue
        grad = np.random.default_rng([10, 5, cases["seed"], index]).standard_normal(
            facts["out"]["tensor"].shape
        )
        facts["backward"] = called(out.backward, grad)
        facts["grads"] = [record(leaf.grad) for leaf in (x, layer.weight, layer.bias)]
    return data


def _conv_reference(x, weight, bias, grad, stride, padding):
    from minilucid import tensor
    from minilucid.ops.conv import conv2d

    leaves = [tensor(a.copy(), requires_grad=True) for a in (x, weight, bias)]
    out = conv2d(*leaves, stride=stride, padding=padding)
    out.backward(grad)
    return out.data, [t.grad for t in leaves]


def _read_facts(facts, what: str, weight_shape: tuple) -> dict:
    raised_first(facts["built"], f"your {what}")
    if facts["inside"]:
        raise Wrong(
            f"{what} keeps minilucid's own {str(facts['inside'][0])} and lets it do the work: "
            "the exercise is the convolution, not a call to the package"
        )
    if not facts.get("module"):
        raise Wrong(f"{what} is a {facts['built'].get('type', '?')}, not a Module")
    if not isinstance(facts["named"], list):
        raised_first(facts["named"], f"{what}.named_parameters()")
    names = list(facts["named"])
    params = facts["parameters"]
    if sorted(names) != ["bias", "weight"] or not all(params[n]["parameter"] for n in names):
        raise Wrong(
            f"{what}.named_parameters() gives {names}; the layer should own exactly two "
            "Parameters, weight and bias"
        )
    for name, shape in (("weight", weight_shape), ("bias", weight_shape[:1])):
        got = tuple(np.shape(params[name]["data"]))
        if got != shape:
            raise Wrong(
                f"{what}.{name} has shape {got}; it should have {shape} "
                "(weight: out_channels, in_channels, kh, kw; bias: one per out_channel)"
            )
    return params


def _bound_problem(params, what: str, bound: float) -> None:
    """Weight and bias in float32, inside ±bound and reaching out to both of its ends."""
    for name in ("weight", "bias"):
        values = params[name]["data"]
        if values.dtype != np.float32:
            raise Wrong(f"{what}.{name} is {values.dtype}, where Conv2d's is float32")
        if np.abs(values).max() > bound * (1 + 1e-6):
            raise Wrong(
                f"{what}.{name} has entries outside ±1/sqrt(fan_in), with fan_in = in_channels "
                "* kh * kw"
            )
        if values.max() < 0.5 * bound or values.min() > -0.5 * bound:
            side = "far inside" if np.abs(values).max() < 0.5 * bound else "on one side of 0 in"
            raise Wrong(
                f"{what}.{name} has entries only {side} ±1/sqrt(fan_in), with fan_in = "
                "in_channels * kh * kw: not a uniform draw over the whole interval"
            )


def _judge_init(cases, data) -> None:
    for facts, (args, kh, kw) in zip(data["init"], cases["init"], strict=True):
        args = [tuple(a) if isinstance(a, list) else a for a in args]
        what = f"MyConv2d({_text(args, {})})"
        params = _read_facts(facts, what, (args[1], args[0], kh, kw))
        bound = 1 / math.sqrt(args[0] * kh * kw)
        _bound_problem(params, what, bound)
    weights = np.asarray(params["weight"]["data"], dtype=np.float64)
    if abs(weights.std() * math.sqrt(3) / bound - 1) > 0.1 or abs(weights.mean()) > 0.1 * bound:
        raise Wrong(
            f"{what}.weight is not spread like a uniform draw over ±1/sqrt(fan_in) (centred "
            "at 0, flat up to the bound)"
        )
    draws = [_read_facts(f, "MyConv2d(2, 3, 2)", (3, 2, 2, 2))["weight"]["data"]
             for f in data["seeded"]]  # fmt: skip
    if len(draws) != 2 or not np.array_equal(*draws):
        raise Wrong(
            "MyConv2d(2, 3, 2) after ml.manual_seed(7) gave other weights each time: its draws "
            "do not come from the stream that ml.manual_seed resets"
        )


def _forward_hint(facts, x_shape, bias) -> str:
    """Name the mistake: the layer on zeros, where only the bias is left."""
    at_zero = array_of(facts.get("at_zero", {"type": "None"}), "your layer on zeros")
    if at_zero is None or at_zero.shape != (x_shape[0], bias.shape[0], *at_zero.shape[2:]):
        return "and on an image of zeros it does not give an output of that shape either"
    if np.allclose(at_zero, 0):
        return "the bias is missing: on an image of zeros the output is zero everywhere"
    if not np.allclose(at_zero, np.broadcast_to(bias.reshape(1, -1, 1, 1), at_zero.shape)):
        return (
            "on an image of zeros the output should be bias[o] at every pixel of channel o, "
            "and it is not"
        )
    return (
        "the bias is right, the sum over each window is not: which row of the unrolled "
        "windows meets weight[o, c, i, j]?"
    )


def _judge_layer(cases, data) -> str:
    if "package" in data:
        raise Wrong(
            f"MyConv2d is minilucid's own {str(data['package'][0])} under another name: "
            "nothing of it is yours"
        )
    _judge_init(cases, data)
    for index, ((xs, o, kernel, stride, padding, what), facts) in enumerate(
        zip(cases["cases"], data["cases"], strict=True)
    ):
        kernel = kernel if isinstance(kernel, int) else tuple(kernel)
        xs, ks = tuple(xs), _kernel(kernel)
        built = f"MyConv2d({_text((xs[1], o, kernel), {'stride': stride, 'padding': padding})})"
        _read_facts(facts, built, (o, xs[1], *ks))
        weight, bias, x = _layer_arrays(cases["seed"], index, xs, o, ks)
        call_text = f"{built} on x of shape {xs} ({what})"
        out_rec = facts["out"]
        raised_first(out_rec, f"your {call_text}")
        if "tensor" not in out_rec:
            raise Wrong(f"{call_text} returned {kind(out_rec)}, not a Tensor")
        out = array_of(out_rec, call_text)
        ho, wo = (out_size(xs[k + 2], ks[k], stride, padding, 1) for k in (0, 1))
        if tuple(out.shape) != (xs[0], o, ho, wo):
            raise Wrong(
                f"{call_text} gave shape {tuple(out.shape)}; it should be (N, O, Ho, Wo), "
                "with Ho and Wo the kernel's positions (Exercise 1's output_size)"
            )
        grad = np.random.default_rng([10, 5, cases["seed"], index]).standard_normal(out.shape)
        want, grads = _conv_reference(x, weight, bias, grad, stride, padding)
        if not np.allclose(out, want, rtol=1e-9, atol=1e-9):
            hint = _forward_hint(facts, xs, bias)
            raise Wrong(f"{call_text}: the output is not the convolution's; {hint}")
        if out_rec.get("requires_grad") is not True:
            raise Wrong(
                f"{call_text}: the output has no graph behind it (it does not require grad), "
                "so no gradient can reach x or the Parameters"
            )
        raised_first(facts["backward"], f"backward through {call_text}")
        _compare_grads(call_text, facts["grads"], grads)
    return "✓ MyConv2d: parameters, init, forward and gradients of a convolution, on your im2col"


def _compare_grads(call_text: str, records, want) -> None:
    names = ("x.grad", "weight.grad", "bias.grad")
    for name, rec, expected in zip(names, records, want, strict=True):
        got = array_of(rec, f"{call_text}: {name}")
        if got is None:
            raise Wrong(f"{call_text}: after backward, {name} is None. {_LAYER_HINTS[name]}")
        if got.shape != expected.shape or not np.allclose(got, expected, rtol=1e-9, atol=1e-9):
            raise Wrong(f"{call_text}: {name} is wrong. {_LAYER_HINTS[name]}")


_LAYER_HINTS = MappingProxyType({
    "x.grad": (
        "Does the gradient of every window come back to each pixel it was copied from, "
        "where windows overlap and around the padding?"
    ),
    "weight.grad": "Is the graph built from the Parameter self.weight itself?",
    "bias.grad": "Is the graph built from the Parameter self.bias itself?",
})  # fmt: skip

EXERCISE_LAYER = register(
    Exercise(
        check="check_conv_layer",
        chapter="10",
        title="A convolution layer on your own im2col",
        probe=_probe_layer,
        judge=_judge_layer,
        cases=_layer_cases,
        forbidden=("conv2d", "Conv2d", "im2col_array", "Im2Col", "col2im_array", "Col2Im"),
    )
)
check_conv_layer = EXERCISE_LAYER.lab_check


# --------------------------------------------------------------------------------------------
# Exercise 5: max pooling, forward and backward

_POOL_CASES = (  # (x shape, kernel, values, what it exposes)
    ((1, 1, 4, 4), 2, "distinct", "one 4x4 image, 2x2 windows"),
    ((2, 3, 6, 6), 3, "distinct", "two images, three channels, 3x3 windows"),
    ((2, 2, 5, 7), 2, "distinct", "a 5x7 image: its last row and column fill no window"),
    ((2, 2, 4, 6), 2, "relu", "ReLU outputs: windows of zeros tie everywhere"),
    ((1, 2, 6, 4), 2, "small ints", "small integers: two or more entries tie for the maximum"),
)


def _pool_cases(seed: int) -> dict:
    return {"seed": seed, "cases": [[list(s), k, v, t] for s, k, v, t in _POOL_CASES]}


def _pool_arrays(seed: int, index: int, shape, k, values):
    rng = np.random.default_rng([10, 6, seed, index])
    if values == "distinct":  # well apart, so that a nudge of 1e-6 never changes a winner
        x = rng.permutation(int(np.prod(shape))).reshape(shape) * 0.1
    elif values == "relu":
        x = np.maximum(rng.standard_normal(shape), 0)
    else:
        x = rng.integers(0, 3, shape).astype(np.float64)
    grad = rng.standard_normal((shape[0], shape[1], shape[2] // k, shape[3] // k))
    return x, grad


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
        "every entry of a window received the window's gradient, also those that are not its "
        "maximum (and did not change the output)"
    ),
    "first": (
        "where several entries tie for a window's maximum, only one of them received the "
        "gradient, where minilucid's max shares it among the tied entries"
    ),
    "whole": (
        "where several entries tie for a window's maximum, each received the whole gradient, "
        "so the window's gradient is counted more than once"
    ),
})  # fmt: skip


def _probe_pool(cases, MyMaxPool2d):  # noqa: N803
    from minilucid import Tensor

    apply = getattr(MyMaxPool2d, "apply", None)
    if not callable(apply):
        return {"has_apply": False, "type": type(MyMaxPool2d).__name__}
    data = {"has_apply": True, "cases": []}
    for index, (shape, k, values, _) in enumerate(cases["cases"]):
        x_np, grad = _pool_arrays(cases["seed"], index, tuple(shape), k, values)
        x = Tensor(x_np.copy(), requires_grad=True)
        outcome = _attempt(apply, x, kernel_size=k)
        facts = {"out": outcome[0]}
        data["cases"].append(facts)
        facts["x_after"] = np.array(x.data)
        out = outcome[1]
        if out is None or not getattr(out, "requires_grad", False):
            continue
        facts["backward"] = called(out.backward, grad)
        facts["grad"] = record(x.grad)
    return data


def _attempt(fn, *args, **kwargs):
    """(the record, the object or None) of one learner call."""
    from minilucid_course.checks.common import attempt

    outcome = attempt(fn, *args, **kwargs)
    if outcome[0] == "raised":
        return {"raised": [outcome[1], outcome[2]]}, None
    return record(outcome[1]), outcome[1]


def _judge_pool(cases, data) -> str:
    from minilucid import Tensor
    from minilucid.ops.conv import max_pool2d

    if data["has_apply"] is not True:
        raise Wrong(f"MyMaxPool2d is a {data['type']} without apply: not a subclass of Function")
    for index, ((shape, k, values, what), facts) in enumerate(
        zip(cases["cases"], data["cases"], strict=True)
    ):
        shape = tuple(shape)
        x_np, grad = _pool_arrays(cases["seed"], index, shape, k, values)
        call_text = f"MyMaxPool2d.apply(x of shape {shape}, kernel_size={k}) ({what})"
        raised_first(facts["out"], f"your {call_text}")
        if "tensor" not in facts["out"]:
            raise Wrong(f"{call_text} returned {kind(facts['out'])}, not a Tensor")
        out = array_of(facts["out"], call_text)
        ref = Tensor(x_np.copy(), requires_grad=True)
        want = max_pool2d(ref, k)
        if tuple(out.shape) != tuple(want.shape):
            raise Wrong(
                f"{call_text} gave shape {tuple(out.shape)}; it should be (N, C, H // k, W // k):"
                " windows step by k and a last part that fills no window is left out"
            )
        after = np.asarray(facts["x_after"], dtype=np.float64)
        if after.shape != shape or not np.array_equal(after, x_np):
            raise Wrong(f"{call_text} changed its input x")
        if not np.array_equal(out, want.data):
            raise Wrong(
                f"{call_text}: the output is not the largest entry of each window (window (y, x)"
                " covers rows y*k .. y*k+k-1 and columns x*k .. x*k+k-1 of its channel)"
            )
        if facts["out"].get("requires_grad") is not True:
            raise Wrong(
                f"{call_text}: the output has no graph behind it (it does not require grad)"
            )
        raised_first(facts["backward"], f"backward through {call_text}")
        want.backward(grad)
        got = array_of(facts["grad"], f"{call_text}: x.grad")
        if got is None or got.shape != shape:
            raise Wrong(
                f"{call_text}: after backward, x.grad is "
                + ("None" if got is None else f"of shape {got.shape}")
                + f", where x has shape {shape}"
            )
        if not np.allclose(got, ref.grad, rtol=1e-12, atol=1e-12):
            routes = _pool_routes(x_np, k, grad)
            hint = next(
                (_ROUTE_HINTS[name] for name, g in routes.items() if np.allclose(got, g)),
                "it is not the gradient of the windows' maxima",
            )
            raise Wrong(f"{call_text}: x.grad is wrong: {hint}")
    return "✓ MyMaxPool2d: the windows' maxima, and their gradient to the winners (ties share)"


EXERCISE_POOL = register(
    Exercise(
        check="check_max_pool",
        chapter="10",
        title="Max pooling, forward and backward",
        probe=_probe_pool,
        judge=_judge_pool,
        cases=_pool_cases,
        forbidden=("max_pool2d", "MaxPool2d", "_pool"),
    )
)
check_max_pool = EXERCISE_POOL.lab_check
