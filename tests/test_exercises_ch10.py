"""Chapter 10 (Convolutions): each check accepts the solution, rejects wrong answers."""

import functools
from pathlib import Path

import pytest
from nbharness import edited, rejected, run_check, unanswered, with_answer

NB = Path(__file__).resolve().parents[1] / "solutions" / "10_convolutions.ipynb"

_rejected = functools.partial(rejected, NB)
_solved = functools.partial(with_answer, NB)
_edited = functools.partial(edited, NB)

EX1 = ("ex10_1_output_size_check", "ex10_1_output_size_answer")
EX2 = ("ex10_2_im2col_check", "ex10_2_im2col_answer")
EX3 = ("ex10_3_backward_check", "ex10_3_backward_answer")


@pytest.mark.parametrize(
    "check, answer, done",
    [(*EX1, "✓ output_size"), (*EX2, "✓ my_im2col"), (*EX3, "✓ conv2d_backward")],
)
def test_solution_passes_and_stub_is_not_done(check, answer, done, capsys):
    run_check(NB, check)
    assert done in capsys.readouterr().out
    unanswered(NB, check, answer)


# --------------------------------------------------------------------------------------------
# Exercise 1: output_size

OUTPUT_SIZE_MUTANTS = [
    ("return (size + 2 * padding - kernel) // stride + 1", "dilation"),  # dilation ignored
    ("return (size + padding - dilation * (kernel - 1) - 1) // stride + 1", "padding 1"),
    ("return (size + 2 * padding - dilation * (kernel - 1) - 1) // stride", "a 3x3 kernel"),
    ("return size + 2 * padding - dilation * (kernel - 1)", "stride 2"),  # stride ignored
]


@pytest.mark.parametrize("body, word", OUTPUT_SIZE_MUTANTS)
def test_ex1_rejects(body, word):
    _rejected(*EX1, _solved(EX1[1], body), word, "is wrong")


def test_ex1_rejects_a_float():
    _rejected(*EX1, _solved(EX1[1], "return float(size - kernel) + 0.5"), "return an int")
    true_division = "return (size + 2 * padding - dilation * (kernel - 1) - 1) / stride + 1"
    _rejected(*EX1, _solved(EX1[1], true_division), "stride=2", "return an int", "//")


# --------------------------------------------------------------------------------------------
# Exercise 2: my_im2col

IM2COL = "cols.reshape(n, c * kh * kw, ho * wo)"


def test_ex2_rejects_padding_ignored():
    wrong = _edited(
        EX2[1],
        [
            ("(padding, padding), (padding, padding))", "(0, 0), (0, 0))"),
            ("ho = (h + 2 * padding - kh)", "ho = (h - kh)"),
            ("wo = (w + 2 * padding - kw)", "wo = (w - kw)"),
        ],
    )
    _rejected(*EX2, wrong, "padding 1", "shape")


def test_ex2_rejects_stride_ignored_in_the_slices():
    wrong = _edited(
        EX2[1],
        [
            ("i : i + stride * (ho - 1) + 1 : stride", "i : i + ho"),
            ("j : j + stride * (wo - 1) + 1 : stride", "j : j + wo"),
        ],
    )
    _rejected(*EX2, wrong, "stride 2", "window (y, x) starts at row y*stride")


def test_ex2_rejects_kernel_position_before_channel():
    wrong = _edited(
        EX2[1],
        (
            f"return {IM2COL}",
            "return cols.transpose(0, 2, 3, 1, 4, 5).reshape(n, c * kh * kw, ho * wo)",
        ),
    )
    _rejected(*EX2, wrong, "three channels", "another order", "channel first")


def test_ex2_rejects_windows_as_rows():
    wrong = _edited(EX2[1], (f"return {IM2COL}", f"return {IM2COL}.transpose(0, 2, 1)"))
    _rejected(*EX2, wrong, "(N, C*kh*kw, Ho*Wo)")


def test_ex2_rejects_kernel_transposed():
    wrong = _edited(EX2[1], ("cols[:, :, i, j] =", "cols[:, :, j % kh, i % kw] ="))
    _rejected(*EX2, wrong, "another order", "i*kw + j")


def test_ex2_rejects_changing_the_input():
    wrong = _edited(
        EX2[1],
        ("    return cols.reshape", "    x *= 1.5\n    return (cols / 1.5).reshape"),
    )
    _rejected(*EX2, wrong, "changed its input")


def test_ex2_rejects_a_list():
    wrong = _edited(EX2[1], (f"return {IM2COL}", f"return {IM2COL}.tolist()"))
    _rejected(*EX2, wrong, "returned list", "NumPy array")


# --------------------------------------------------------------------------------------------
# Exercise 3: conv2d_backward


def test_ex3_rejects_weight_gradient_of_the_first_image_only():
    wrong = _edited(
        EX3[1],
        ("(g @ cols.transpose(0, 2, 1)).sum(axis=0)", "(g @ cols.transpose(0, 2, 1))[0]"),
    )
    _rejected(*EX3, wrong, "a batch of 3", "grad_weight is wrong", "summed over the batch")


def test_ex3_rejects_weight_gradient_averaged_over_the_batch():
    wrong = _edited(
        EX3[1],
        ("(g @ cols.transpose(0, 2, 1)).sum(axis=0)", "(g @ cols.transpose(0, 2, 1)).mean(axis=0)"),
    )
    _rejected(*EX3, wrong, "grad_weight is wrong")


def test_ex3_rejects_windows_assigned_not_added():
    wrong = _edited(EX3[1], ("] += d_cols[:, :, i, j]", "] = d_cols[:, :, i, j]"))
    _rejected(*EX3, wrong, "grad_x is wrong", "windows overlap")


def test_ex3_rejects_padding_left_on():
    wrong = _edited(
        EX3[1],
        ("grad_x = padded[:, :, padding : padding + h, padding : padding + w]", "grad_x = padded"),
    )
    _rejected(*EX3, wrong, "padding 1", "grad_x has shape")


def test_ex3_rejects_bias_gradient_of_one_pixel():
    wrong = _edited(EX3[1], ("grad_bias = g.sum(axis=(0, 2))", "grad_bias = g.sum(axis=0)[:, 0]"))
    _rejected(*EX3, wrong, "grad_bias is wrong")


def test_ex3_rejects_weight_not_transposed():
    wrong = _edited(
        EX3[1], ("d_cols = (weight.reshape(o, -1).T @ g)", "d_cols = (weight.reshape(-1, o) @ g)")
    )
    _rejected(*EX3, wrong, "grad_x is wrong")


def test_ex3_rejects_two_results():
    wrong = _edited(EX3[1], ("return grad_x, grad_weight, grad_bias", "return grad_x, grad_weight"))
    _rejected(*EX3, wrong, "tuple of three arrays")
