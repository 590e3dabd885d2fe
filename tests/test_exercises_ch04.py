"""Chapter 04 (Shapes): every exercise check accepts the solution and rejects wrong answers.

Also a few focused tests of the chapter's package code: sum_to_shape, the shared max/min tie
gradient, repeated indices, the dim/axis alias and matmul's gradient shapes.
"""

import functools
from pathlib import Path

import numpy as np
import pytest
from forgery import forged_data_test
from nbharness import Wrong, mutation_tests, rejected, run_check, with_answer

import minilucid as ml
from minilucid.ops.broadcast import sum_to_shape

NB = Path(__file__).resolve().parents[1] / "solutions" / "04_shapes.ipynb"

_rejected = functools.partial(rejected, NB)
_solved = functools.partial(with_answer, NB)


# --------------------------------------------------------------------------------------------
# Exercise 1: sum_to_shape

EX1 = ("ex04_1_sum_to_shape_check", "ex04_1_sum_to_shape_answer")


def test_ex1_solution_passes(capsys):
    run_check(NB, EX1[0])
    assert "✓ sum_to_shape" in capsys.readouterr().out


# --------------------------------------------------------------------------------------------
# Exercise 4: MatMul.backward

EX4 = ("ex04_4_matmul_backward_check", "ex04_4_matmul_backward_answer")


def test_ex4_solution_passes(capsys):
    run_check(NB, EX4[0])
    assert "batched operands work too" in capsys.readouterr().out


def test_ex4_2d_only_solution_passes_without_batches(capsys):
    right_2d = _solved(EX4[1], "return grad @ b.T, a.T @ grad")
    run_check(NB, EX4[0], replace={EX4[1]: right_2d})
    assert "batched operands: not yet (optional)" in capsys.readouterr().out


# --------------------------------------------------------------------------------------------
# Exercise 3: the backward of indexing

EX3 = ("ex04_3_getitem_backward_check", "ex04_3_getitem_backward_answer")


def test_ex3_solution_passes(capsys):
    run_check(NB, EX3[0])
    assert "repeated indices add up" in capsys.readouterr().out


# --------------------------------------------------------------------------------------------
# Exercise 2: the backward of mean over dims

EX2 = ("ex04_2_mean_backward_check", "ex04_2_mean_backward_answer")


def test_ex2_solution_passes(capsys):
    run_check(NB, EX2[0])
    assert "✓ MyMean.backward" in capsys.readouterr().out


# --------------------------------------------------------------------------------------------
# Exercise 5 (a real problem): the gradients of a batched matmul whose batch dimensions broadcast

EX5 = ("ex04_5_batched_matmul_check", "ex04_5_batched_matmul_answer")

_SUM_BACK = """
def summed_to(g, shape):
    extra = g.ndim - len(shape)
    g = g.sum(axis=tuple(range(extra)))
    stretched = tuple(i for i, (n, s) in enumerate(zip(g.shape, shape)) if n != s)
    return g.sum(axis=stretched, keepdims=True)

"""


def test_ex5_solution_passes(capsys):
    run_check(NB, EX5[0])
    assert "✓ matmul_backward" in capsys.readouterr().out


_AVERAGED = (
    _SUM_BACK.replace(".sum(", ".mean(")
    + """
return (summed_to(grad @ np.swapaxes(b, -1, -2), a.shape),
        summed_to(np.swapaxes(a, -1, -2) @ grad, b.shape))
"""
)


# --------------------------------------------------------------------------------------------
# The chapter's package code


@pytest.mark.parametrize(
    "grad_shape, shape",
    [
        ((3, 4), (4,)),
        ((3, 4), (1, 4)),
        ((3, 4), (3, 1)),
        ((3, 4), ()),
        ((2, 3, 4), (3, 1)),
        ((2, 3, 4), (2, 1, 4)),
        ((2, 1, 3), (1, 1, 3)),
        ((5,), (5,)),
    ],
)
def test_sum_to_shape_matches_summing_the_broadcast_copies(grad_shape, shape):
    grad = np.random.default_rng(0).normal(size=grad_shape)
    got = sum_to_shape(grad, shape)
    assert got.shape == shape
    # entry by entry: what all the broadcast copies of x[idx] receive, added up
    expected = np.zeros(shape)
    for idx in np.ndindex(*shape):
        one = np.zeros(shape)
        one[idx] = 1.0
        expected[idx] = (np.broadcast_to(one, grad_shape) * grad).sum()
    np.testing.assert_allclose(got, expected)


def test_sum_to_shape_names_the_op_when_shapes_cannot_match():
    with pytest.raises(RuntimeError, match=r"^Mul\.backward: .*input of shape \(2,\)"):
        sum_to_shape(np.ones((3, 4)), (2,), "Mul")


def test_max_and_min_share_the_gradient_among_ties():
    x = ml.tensor([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]], requires_grad=True)
    x.max(dim=1).sum().backward()
    np.testing.assert_allclose(x.grad, [[0, 0.5, 0.5], [1 / 3, 1 / 3, 1 / 3]], rtol=1e-6)
    y = ml.tensor([[1.0, 1.0, 3.0]], requires_grad=True)
    y.min().backward()
    np.testing.assert_allclose(y.grad, [[0.5, 0.5, 0.0]])


def test_axis_is_an_alias_of_dim_and_not_both():
    x = ml.randn(2, 3)
    np.testing.assert_allclose(x.sum(axis=1, keepdim=True).data, x.sum(dim=1, keepdim=True).data)
    with pytest.raises(TypeError, match="dim or axis"):
        x.mean(dim=0, axis=0)


def test_repeated_indices_accumulate_in_getitem_backward():
    e = ml.tensor(np.zeros((4, 2)), requires_grad=True)
    e[[1, 3, 1, 1]].sum().backward()
    np.testing.assert_allclose(e.grad, [[0, 0], [3, 3], [0, 0], [1, 1]])


@pytest.mark.parametrize(
    "shape_a, shape_b",
    [
        ((2, 3), (3, 4)),
        ((5, 2, 3), (3, 4)),
        ((3,), (3, 4)),
        ((2, 3), (3,)),
        ((2, 1, 2, 3), (4, 3, 2)),
    ],
)
def test_matmul_gradients_have_their_inputs_shapes(shape_a, shape_b):
    rng = np.random.default_rng(1)
    a = ml.tensor(rng.normal(size=shape_a), requires_grad=True)
    b = ml.tensor(rng.normal(size=shape_b), requires_grad=True)
    assert ml.gradcheck(lambda p, q: p @ q, [a, b])
    (a @ b).sum().backward()
    assert a.grad.shape == shape_a and b.grad.shape == shape_b


def test_permute_backward_uses_the_inverse_permutation():
    x = ml.tensor(np.random.default_rng(2).normal(size=(2, 3, 4)), requires_grad=True)
    assert ml.gradcheck(lambda t: t.permute(2, 0, 1), [x])
    assert ml.gradcheck(lambda t: t.permute(-2, -1, 0), [x])


# --- the one style: every wrong answer above, fed to its check ---------------------------

EXERCISES = {
    "sum_to_shape": ("ex04_1_sum_to_shape_answer", "ex04_1_sum_to_shape_check"),
    "matmul_backward": ("ex04_4_matmul_backward_answer", "ex04_4_matmul_backward_check"),
    "getitem_backward": ("ex04_3_getitem_backward_answer", "ex04_3_getitem_backward_check"),
    "mean_backward": ("ex04_2_mean_backward_answer", "ex04_2_mean_backward_check"),
    "batched_matmul": ("ex04_5_batched_matmul_answer", "ex04_5_batched_matmul_check"),
}

MUTANTS = {
    "sum_to_shape": {
        "summing only leading dims": Wrong(
            _solved(
                EX1[1],
                """
while grad.ndim > len(shape):
    grad = grad.sum(axis=0)
return grad
""",
            ),
            "(1, 4)",
            "expected shape",
        ),
        "forgotten keepdims": Wrong(
            _solved(
                EX1[1],
                """
extra = grad.ndim - len(shape)
if extra:
    grad = grad.sum(axis=tuple(range(extra)))
stretched = tuple(i for i, (g, s) in enumerate(zip(grad.shape, shape)) if g != s)
if stretched:
    grad = grad.sum(axis=stretched)
return grad
""",
            ),
            "a dimension of size 1 was dropped",
        ),
        "axes aligned from the left": Wrong(
            _solved(
                EX1[1],
                """
stretched = tuple(i for i, s in enumerate(shape) if s == 1 and grad.shape[i] != 1)
if stretched:
    grad = grad.sum(axis=stretched, keepdims=True)
while grad.ndim > len(shape):
    grad = grad.sum(axis=0)
return grad
""",
            ),
            "(2, 3, 4)",
        ),
        "summing trailing dims": Wrong(
            _solved(
                EX1[1],
                """
grad = grad.sum(axis=tuple(range(len(shape), grad.ndim)))
stretched = tuple(i for i, (g, s) in enumerate(zip(grad.shape, shape)) if g != s)
return grad.sum(axis=stretched, keepdims=True)
""",
            ),
            "sum_to_shape(grad of shape (3, 4), (4,))",
        ),
        "mean instead of sum": Wrong(
            _solved(
                EX1[1],
                """
extra = grad.ndim - len(shape)
if extra:
    grad = grad.mean(axis=tuple(range(extra)))
stretched = tuple(i for i, (g, s) in enumerate(zip(grad.shape, shape)) if g != s)
if stretched:
    grad = grad.mean(axis=stretched, keepdims=True)
return grad
""",
            ),
            "wrong at entry",
        ),
    },
    "matmul_backward": {
        "transposed gradients": Wrong(
            _solved(EX4[1], "return b @ grad.T, grad.T @ a"),
            "the gradient for A",
            "expected shape (2, 3), got shape (3, 2)",
        ),
        "missing transposes": Wrong(
            _solved(EX4[1], "return grad @ b, a @ grad"),
            "inner dimensions differ",
            "G (2, 4), A (2, 3) and B (3, 4)",
        ),
        "missing transposes, on square matrices": Wrong(
            _solved(
                EX4[1],
                """
if a.shape[0] == a.shape[1] == b.shape[1]:
    return grad @ b, a.T @ grad
return grad @ b.T, a.T @ grad
""",
            ),
            "(3, 3)",
            "B not transposed",
        ),
        "swapped operands on square matrices": Wrong(
            _solved(
                EX4[1],
                """
if a.shape[0] == a.shape[1] == b.shape[1]:
    return b.T @ grad, grad @ a.T
return grad @ b.T, a.T @ grad
""",
            ),
            "(3, 3)",
            "wrong at entry",
        ),
        "gradients in the wrong order": Wrong(
            _solved(EX4[1], "return a.T @ grad, grad @ b.T"),
            "the gradient for A",
        ),
    },
    "getitem_backward": {
        "assignment": Wrong(
            _solved(
                EX3[1],
                """
out = np.zeros(ctx.in_shape, dtype=grad.dtype)
out[ctx.index] = grad
return out
""",
            ),
            "kept only one pick per entry",
        ),
        "buffered in place add": Wrong(
            _solved(
                EX3[1],
                """
out = np.zeros(ctx.in_shape, dtype=grad.dtype)
out[ctx.index] += grad
return out
""",
            ),
            "[1, 3, 1, 1]",
            "kept only one pick per entry",
        ),
        "counting picks instead of adding gradients": Wrong(
            _solved(
                EX3[1],
                """
out = np.zeros(ctx.in_shape, dtype=grad.dtype)
np.add.at(out, ctx.index, 1.0)
return out
""",
            ),
            "wrong at entry",
        ),
        "gradient not scattered back": Wrong(
            _solved(EX3[1], "return grad"),
            "expected shape (5,)",
        ),
    },
    "mean_backward": {
        "broadcast without restoring dims": Wrong(
            _solved(
                EX2[1],
                """
n = np.prod([ctx.in_shape[i] for i in ctx.axes])
return np.broadcast_to(grad / n, ctx.in_shape)
""",
            ),
            "dim=1",
            "square-matrix trap",
        ),
        "square input filled by columns": Wrong(
            _solved(
                EX2[1],
                """
n = np.prod([ctx.in_shape[i] for i in ctx.axes])
try:
    return np.broadcast_to(grad / n, ctx.in_shape)
except ValueError:
    if not ctx.keepdim:
        grad = np.expand_dims(grad, ctx.axes)
    return np.broadcast_to(grad / n, ctx.in_shape)
""",
            ),
            "x of shape (4, 4)",
            "wrong at entry",
        ),
        "dividing by the total size": Wrong(
            _solved(
                EX2[1],
                """
if not ctx.keepdim:
    grad = np.expand_dims(grad, ctx.axes)
return np.broadcast_to(grad / np.prod(ctx.in_shape), ctx.in_shape)
""",
            ),
            "dim=1",
            "divides by the input's total size",
        ),
        "dividing the incoming gradient in place": Wrong(
            _solved(
                EX2[1],
                """
if not ctx.keepdim:
    grad = np.expand_dims(grad, ctx.axes)
grad /= np.prod([ctx.in_shape[i] for i in ctx.axes])
return np.broadcast_to(grad, ctx.in_shape)
""",
            ),
            "changed the incoming gradient in place",
            "x of shape (3, 4)",
        ),
        "forgotten division": Wrong(
            _solved(
                EX2[1],
                """
if not ctx.keepdim:
    grad = np.expand_dims(grad, ctx.axes)
return np.broadcast_to(grad, ctx.in_shape)
""",
            ),
            "wrong at entry",
            "times too large",
        ),
    },
    "batched_matmul": {
        "averaging the uses instead of adding them": Wrong(
            _solved(EX5[1], _AVERAGED), "wrong at entry"
        ),
        "the 2d formulas without summing the batch": Wrong(
            _solved(EX5[1], "return grad @ np.swapaxes(b, -1, -2), np.swapaxes(a, -1, -2) @ grad"),
            "(5, 2, 3), b (3, 4)",
            "the gradient for b",
            "once per entry of the batch",
        ),
        "transposing with dot t": Wrong(
            _solved(
                EX5[1],
                _SUM_BACK + "return summed_to(grad @ b.T, a.shape), summed_to(a.T @ grad, b.shape)",
            ),
            "matmul_backward",
        ),
        "dropping stretched batch dimensions": Wrong(
            _solved(
                EX5[1],
                """
grad_a = grad @ np.swapaxes(b, -1, -2)
grad_b = np.swapaxes(a, -1, -2) @ grad
while grad_a.ndim > a.ndim:
    grad_a = grad_a.sum(axis=0)
while grad_b.ndim > b.ndim:
    grad_b = grad_b.sum(axis=0)
return grad_a, grad_b
""",
            ),
            "(2, 1, 3, 4)",
            "expected shape",
            "a dimension it had of size 1 was stretched",
        ),
        "squeezing size one batch dimensions": Wrong(
            _solved(
                EX5[1],
                _SUM_BACK
                + """
grad_a = summed_to(grad @ np.swapaxes(b, -1, -2), a.shape)
grad_b = summed_to(np.swapaxes(a, -1, -2) @ grad, b.shape)
return grad_a.reshape(grad_a.shape[-2:]) if a.shape[0] == 1 else grad_a, grad_b
""",
            ),
            "(1, 3, 4)",
            "expected shape (1, 3, 4)",
        ),
        "gradients in the wrong order": Wrong(
            _solved(
                EX5[1],
                _SUM_BACK
                + """
return (summed_to(np.swapaxes(a, -1, -2) @ grad, b.shape),
        summed_to(grad @ np.swapaxes(b, -1, -2), a.shape))
""",
            ),
            "the gradient for a",
        ),
        "swapped operands on square matrices": Wrong(
            _solved(
                EX5[1],
                _SUM_BACK
                + """
if a.shape[-1] == a.shape[-2] == b.shape[-1]:
    return (summed_to(np.swapaxes(b, -1, -2) @ grad, a.shape),
            summed_to(grad @ np.swapaxes(a, -1, -2), b.shape))
return (summed_to(grad @ np.swapaxes(b, -1, -2), a.shape),
        summed_to(np.swapaxes(a, -1, -2) @ grad, b.shape))
""",
            ),
            "wrong at entry",
        ),
    },
}

test_the_solution_passes, test_a_wrong_answer_is_rejected, test_the_stub_raises = mutation_tests(
    NB, EXERCISES, MUTANTS
)

# the exercises whose checks are probes and judges (minilucid_course.checks.exercise); every
# earlier check cell re-runs before the one under test, and these stand in for them
JUDGED = {
    k: EXERCISES[k]
    for k in (
        "sum_to_shape",
        "matmul_backward",
        "getitem_backward",
        "mean_backward",
        "batched_matmul",
    )
}
EARLIER_CHECKS = {check: "pass" for _, check in EXERCISES.values()}
test_forged_data_is_wrong = forged_data_test(NB, JUDGED, EARLIER_CHECKS)
