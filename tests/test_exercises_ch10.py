"""Chapter 10 (Convolutions): each check accepts the solution and rejects plausible wrong answers.

One style (tests/nbharness.py): EXERCISES names each exercise's answer and check cells, MUTANTS
the wrong answers, each an edit of the solution's answer (or a whole answer); Wrong(...) also
names words the check's message must contain.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from forged_data import forged_data_test
from nbharness import Wrong, mutation_tests, with_answer

NB = Path(__file__).resolve().parents[1] / "solutions" / "10_convolutions.ipynb"

EXERCISES = {
    "output_size": ("ex10_1_output_size_answer", "ex10_1_output_size_check"),
    "im2col": ("ex10_2_im2col_answer", "ex10_2_im2col_check"),
    "backward": ("ex10_3_backward_answer", "ex10_3_backward_check"),
    "conv_layer": ("ex10_4_conv_layer_answer", "ex10_4_conv_layer_check"),
    "max_pool": ("ex10_5_max_pool_answer", "ex10_5_max_pool_check"),
}
DONE = {
    "output_size": "✓ output_size",
    "im2col": "✓ my_im2col",
    "backward": "✓ conv2d_backward",
    "conv_layer": "✓ MyConv2d",
    "max_pool": "✓ MyMaxPool2d",
}


def _solved(body: str) -> str:
    return with_answer(NB, EXERCISES["output_size"][0], body)


IM2COL = "cols.reshape(n, c * kh * kw, ho * wo)"
WEIGHT = "filters = self.weight.reshape(self.weight.shape[0], -1)"
BIAS = "self.bias.reshape(-1, 1)"
COLS = "cols = MyIm2Col.apply(x, kernel_size=(kh, kw), stride=s, padding=p)"
DRAW_WEIGHT = "self.weight = Parameter((ml.rand(*shape).data * 2 - 1) * bound)"
DRAW_BIAS = "self.bias = Parameter((ml.rand(out_channels).data * 2 - 1) * bound)"
BOUND = "bound = 1 / math.sqrt(in_channels * kernel_size[0] * kernel_size[1])"
ADD_BACK = "image[:, :, rows, columns] += windows[:, :, i, j]"
SHARE = "ctx.share = winners / winners.sum(axis=1, keepdims=True)"
ROUTED = "routed = ctx.share * grad.reshape(n * c, 1, -1)"
TOP = "top = windows.max(axis=1, keepdims=True)"

MUTANTS = {
    "output_size": {
        "dilation ignored": Wrong(
            _solved("return (size + 2 * padding - kernel) // stride + 1"), "dilation", "is wrong"
        ),
        "padding on one side only": Wrong(
            _solved("return (size + padding - dilation * (kernel - 1) - 1) // stride + 1"),
            "padding 1",
            "is wrong",
        ),
        "one position short": Wrong(
            _solved("return (size + 2 * padding - dilation * (kernel - 1) - 1) // stride"),
            "a 3x3 kernel",
            "is wrong",
        ),
        "stride ignored": Wrong(
            _solved("return size + 2 * padding - dilation * (kernel - 1)"), "stride 2", "is wrong"
        ),
        "a float": Wrong(_solved("return float(size - kernel) + 0.5"), "return an int"),
        "true division": Wrong(
            _solved("return (size + 2 * padding - dilation * (kernel - 1) - 1) / stride + 1"),
            "stride=2",
            "return an int",
        ),
    },
    "im2col": {
        "padding ignored": Wrong(
            [
                ("(padding, padding), (padding, padding))", "(0, 0), (0, 0))"),
                ("ho = (h + 2 * padding - kh)", "ho = (h - kh)"),
                ("wo = (w + 2 * padding - kw)", "wo = (w - kw)"),
            ],
            "padding 1",
            "shape",
        ),
        "stride ignored in the slices": Wrong(
            [
                ("i : i + stride * (ho - 1) + 1 : stride", "i : i + ho"),
                ("j : j + stride * (wo - 1) + 1 : stride", "j : j + wo"),
            ],
            "stride 2",
            "window (y, x) starts at row y*stride",
        ),
        "kernel position before channel": Wrong(
            [
                (
                    f"return {IM2COL}",
                    "return cols.transpose(0, 2, 3, 1, 4, 5).reshape(n, c * kh * kw, ho * wo)",
                )
            ],
            "three channels",
            "another order",
            "channel first",
        ),
        "windows as rows": Wrong(
            [(f"return {IM2COL}", f"return {IM2COL}.transpose(0, 2, 1)")], "(N, C*kh*kw, Ho*Wo)"
        ),
        "kernel transposed": Wrong(
            [("cols[:, :, i, j] =", "cols[:, :, j % kh, i % kw] =")], "another order", "i*kw + j"
        ),
        "windows numbered column by column": Wrong(
            [
                (
                    f"return {IM2COL}",
                    "return cols.transpose(0, 1, 2, 3, 5, 4).reshape(n, c * kh * kw, ho * wo)",
                )
            ],
            "another order",
            "y*Wo + x",
        ),
        "changes the input": Wrong(
            [("    return cols.reshape", "    x *= 1.5\n    return (cols / 1.5).reshape")],
            "changed its input",
        ),
        "a list": Wrong(
            [(f"return {IM2COL}", f"return {IM2COL}.tolist()")], "returned list", "NumPy array"
        ),
    },
    "backward": {
        "weight gradient of the first image only": Wrong(
            [("(g @ cols.transpose(0, 2, 1)).sum(axis=0)", "(g @ cols.transpose(0, 2, 1))[0]")],
            "a batch of 3",
            "grad_weight is wrong",
            "image of the batch",
        ),
        "weight gradient averaged over the batch": Wrong(
            [
                (
                    "(g @ cols.transpose(0, 2, 1)).sum(axis=0)",
                    "(g @ cols.transpose(0, 2, 1)).mean(axis=0)",
                )
            ],
            "grad_weight is wrong",
        ),
        "windows assigned not added": Wrong(
            [("] += d_cols[:, :, i, j]", "] = d_cols[:, :, i, j]")],
            "grad_x is wrong",
            "windows overlap",
        ),
        "padding left on": Wrong(
            [
                (
                    "grad_x = padded[:, :, padding : padding + h, padding : padding + w]",
                    "grad_x = padded",
                )
            ],
            "padding 1",
            "grad_x has shape",
        ),
        "bias gradient of one pixel": Wrong(
            [("grad_bias = g.sum(axis=(0, 2))", "grad_bias = g.sum(axis=0)[:, 0]")],
            "grad_bias is wrong",
        ),
        "weight not transposed": Wrong(
            [("d_cols = (weight.reshape(o, -1).T @ g)", "d_cols = (weight.reshape(-1, o) @ g)")],
            "grad_x is wrong",
        ),
        "two results": Wrong(
            [("return grad_x, grad_weight, grad_bias", "return grad_x, grad_weight")],
            "tuple of three arrays",
        ),
    },
    "conv_layer": {
        "the package's Conv2d under another name": Wrong(
            "from minilucid import nn\n\n\nclass MyConv2d(nn.Conv2d):\n    pass\n",
            "minilucid's own Conv2d",
        ),
        "weight reshaped the other way round": Wrong(
            [(WEIGHT, "filters = self.weight.reshape(-1, self.weight.shape[0]).T")],
            "the sum over each window is not",
        ),
        "kernel rows and columns swapped in the filters": Wrong(
            [
                (
                    WEIGHT,
                    "filters = self.weight.permute(0, 1, 3, 2).reshape(self.weight.shape[0], -1)",
                )
            ],
            "the output is not the convolution",
        ),
        "channels last in the filters": Wrong(
            [
                (
                    WEIGHT,
                    "filters = self.weight.permute(0, 2, 3, 1).reshape(self.weight.shape[0], -1)",
                )
            ],
            "weight[o, c, i, j]",
        ),
        "bias missing": Wrong([(f" + {BIAS}", "")], "bias is missing"),
        "one bias shared by all channels": Wrong(
            [(BIAS, "self.bias.sum()")], "bias[o] at every pixel"
        ),
        "bias along the pixels": [(BIAS, "self.bias.reshape(1, -1)")],
        "bias from .data": Wrong([(BIAS, "self.bias.data.reshape(-1, 1)")], "bias.grad is None"),
        "weight from .data": Wrong(
            [(WEIGHT, "filters = self.weight.data.reshape(self.weight.shape[0], -1)")],
            "weight.grad is None",
        ),
        "windows as a constant, no gradient to x": Wrong(
            [(COLS, "cols = Tensor(my_im2col(x.data, (kh, kw), s, p))")], "x.grad is None"
        ),
        "col2im assigns instead of adding": Wrong(
            [(ADD_BACK, ADD_BACK.replace("+=", "="))], "x.grad is wrong", "overlap"
        ),
        "col2im keeps the padding": [
            (
                "return image[:, :, padding : padding + h, padding : padding + w]",
                "return image",
            )
        ],
        "col2im ignores the stride": [
            ("rows = slice(i, i + stride * (ho - 1) + 1, stride)", "rows = slice(i, i + ho)"),
            ("columns = slice(j, j + stride * (wo - 1) + 1, stride)", "columns = slice(j, j + wo)"),
        ],
        "backward hands back the windows' gradient": [
            ("return my_col2im(grad, *ctx.geometry)", "return grad")
        ],
        "weights drawn from a normal distribution": Wrong(
            [(DRAW_WEIGHT, "self.weight = Parameter(ml.randn(*shape).data * bound)")], "outside"
        ),
        "the bias drawn on one side of 0": Wrong(
            [(DRAW_BIAS, DRAW_BIAS.replace("* 2 - 1", "/ 2 - 1"))], "on one side of 0"
        ),
        "a fan-in of kw * kw (right for square kernels only)": Wrong(
            [(BOUND, BOUND.replace("kernel_size[0] *", "kernel_size[1] *"))], "(1, 5)", "far inside"
        ),
        "bound 1/fan_in": Wrong(
            [(BOUND, "bound = 1 / (in_channels * kernel_size[0] * kernel_size[1])")], "far inside"
        ),
        "fan_in without the kernel": Wrong(
            [(BOUND, "bound = 1 / math.sqrt(in_channels)")], "outside"
        ),
        "weights all positive": Wrong(
            [(DRAW_WEIGHT, "self.weight = Parameter(ml.rand(*shape).data * bound)")],
            "on one side of 0",
        ),
        "weights from NumPy's global generator": Wrong(
            [
                (
                    DRAW_WEIGHT,
                    DRAW_WEIGHT.replace(
                        "ml.rand(*shape).data", "np.random.random(shape).astype(np.float32)"
                    ),
                )
            ],
            "ml.manual_seed",
        ),
        "weights in float64": Wrong(
            [(DRAW_WEIGHT, DRAW_WEIGHT.replace("(*shape)", "(*shape, dtype=np.float64)"))],
            "float32",
        ),
        "weight a plain Tensor": Wrong(
            [(DRAW_WEIGHT, DRAW_WEIGHT.replace("Parameter(", "Tensor("))], "two Parameters"
        ),
        "weight as (in, out, kh, kw)": Wrong(
            [
                (
                    "shape = (out_channels, in_channels, *kernel_size)",
                    "shape = (in_channels, out_channels, *kernel_size)",
                )
            ],
            "weight has shape",
        ),
        "kernel_size as an int not accepted": [
            (
                "        if isinstance(kernel_size, int):\n"
                "            kernel_size = (kernel_size, kernel_size)\n",
                "",
            )
        ],
        "output size without the stride": [
            ("(h + 2 * p - kh) // s + 1, (w + 2 * p - kw) // s + 1", "h + 2 * p - kh + 1, -1")
        ],
    },
    "max_pool": {
        "gradient to every entry of the window": Wrong(
            [(ROUTED, "routed = np.ones_like(ctx.share) * grad.reshape(n * c, 1, -1)")],
            "every entry",
        ),
        "ties: all of it to the first maximum": Wrong(
            [
                (
                    "winners = windows == top",
                    "winners = np.arange(windows.shape[1])[None, :, None] == "
                    "windows.argmax(axis=1)[:, None, :]",
                )
            ],
            "only one of them",
        ),
        "ties: the whole gradient to each": Wrong(
            [(SHARE, "ctx.share = winners * 1.0")], "each received the whole gradient"
        ),
        "the minimum": Wrong([(TOP, TOP.replace(".max(", ".min("))], "largest entry"),
        "the mean (average pooling)": Wrong(
            [(TOP, TOP.replace(".max(", ".mean("))], "largest entry"
        ),
        "the mask without the gradient": Wrong(
            [(ROUTED, "routed = ctx.share + 0 * grad.reshape(n * c, 1, -1)")], "x.grad is wrong"
        ),
        "gradient copied to every pixel": [
            (
                "return my_col2im(routed, (n * c, 1, h, w), (k, k), k, 0).reshape(n, c, h, w)",
                "return np.repeat(np.repeat(grad, k, axis=2), k, axis=3)",
            )
        ],
        "overlapping windows (stride 1)": [("(k, k), k, 0)  #", "(k, k), 1, 0)  #")],
        "window size read from the wrong axis": [
            ("k = math.isqrt(ctx.share.shape[1])", "k = ctx.share.shape[1]")
        ],
        "gradient not split at ties but averaged over the window": Wrong(
            [(SHARE, "ctx.share = winners / winners.shape[1]")], "x.grad is wrong"
        ),
    },
}


test_the_solution_passes, test_a_wrong_answer_is_rejected, test_the_stub_raises = mutation_tests(
    NB,
    EXERCISES,
    MUTANTS,
    stand_ins={check: "pass" for _, check in EXERCISES.values()},  # each check judged alone
    done=DONE,
)


def test_an_answer_cell_cannot_empty_the_cases():
    from minilucid_course.checks import ch10

    for name in ("_SIZE_CASES", "_IM2COL_CASES", "_BACKWARD_CASES", "_LAYER_CASES", "_POOL_CASES"):
        cases = getattr(ch10, name)
        assert isinstance(cases, tuple) and cases, name
    for table in (ch10._HINTS, ch10._LAYER_HINTS, ch10._ROUTE_HINTS):
        with pytest.raises(TypeError):
            table["x.grad"] = ""


test_forged_data_is_wrong = forged_data_test(
    NB, EXERCISES, seeded=("output_size", "im2col", "backward", "conv_layer", "max_pool")
)
