"""Chapter 02's checks accept the solutions and reject plausible wrong answers."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from forgery import forged_data_test
from nbharness import Wrong, mutation_tests

from minilucid import Tensor
from minilucid.function import Function
from minilucid.numerical import numerical_grad
from minilucid.ops.elementwise import Mul
from minilucid_course.checks import ch02

NB = Path(__file__).resolve().parents[1] / "solutions" / "02_local_derivatives.ipynb"

# every earlier check cell re-runs before the one under test; these stand in for them
EARLIER_CHECKS = {
    "ex02_1_mul_backward_check": "pass",
    "ex02_2_div_backward_check": "pass",
    "ex02_3_pow_backward_check": "pass",
    "ex02_4_central_difference_check": "pass",
    "ex02_5_hypot_check": "pass",
}

EXERCISES = {
    "mul": ("ex02_1_mul_backward_answer", "ex02_1_mul_backward_check"),
    "div": ("ex02_2_div_backward_answer", "ex02_2_div_backward_check"),
    "pow": ("ex02_3_pow_backward_answer", "ex02_3_pow_backward_check"),
    "central": ("ex02_4_central_difference_answer", "ex02_4_central_difference_check"),
    "hypot": ("ex02_5_hypot_answer", "ex02_5_hypot_check"),
    "gradcheck": ("ex02_6_gradient_check_answer", "ex02_6_gradient_check_check"),
}

HYPOT_RIGHT = "return grad * a / z, grad * b / z"
GRADCHECK_BODY_START = "    arrays = [np.array(a, dtype=np.float64), np.array(b, dtype=np.float64)]"

MUTANTS = {
    "mul": {
        "swapped inputs": Wrong(
            ("return grad * b, grad * a", "return grad * a, grad * b"), "times a itself"
        ),
        "forgot the incoming grad": ("return grad * b, grad * a", "return b, a"),
        "wrong sign": ("return grad * b, grad * a", "return -grad * b, -grad * a"),
        "one gradient for two inputs": ("return grad * b, grad * a", "return grad * b"),
        "the incoming grad multiplied in place": Wrong(
            ("return grad * b, grad * a", "grad *= b\n        return grad, grad * a"),
            "multiplied by b in place",
        ),
    },
    "div": {
        "wrong sign on b": (
            "return grad / b, -grad * a / b**2",
            "return grad / b, grad * a / b**2",
        ),
        "forgot the square": Wrong(
            ("return grad / b, -grad * a / b**2", "return grad / b, -grad * a / b"),
            "not squared",
        ),
        "forgot a": ("return grad / b, -grad * a / b**2", "return grad / b, -grad / b**2"),
        "the incoming grad divided in place": Wrong(
            (
                "return grad / b, -grad * a / b**2",
                "grad /= b\n        return grad, -grad * a / b**2",
            ),
            "divided by b in place",
        ),
        "a's gradient times b": Wrong(
            ("return grad / b, -grad * a / b**2", "return grad * b, -grad * a / b**2"),
            "times b",
        ),
    },
    "pow": {
        "exponent not lowered": Wrong(
            ("return grad * p * a ** (p - 1), None", "return grad * p * a**p, None"),
            "exponent unchanged",
        ),
        "p not brought down": Wrong(
            ("return grad * p * a ** (p - 1), None", "return grad * a ** (p - 1), None"),
            "without p",
        ),
        "no gradient slot for p": (
            "return grad * p * a ** (p - 1), None",
            "return grad * p * a ** (p - 1)",
        ),
    },
    "central": {
        "one-sided difference": [
            ("x[index] = kept - eps\n        down = f(x)", "x[index] = kept\n        down = f(x)"),
            ("(up - down) / (2 * eps)", "(up - down) / eps"),
        ],
        "denominator eps instead of 2 eps": ("(up - down) / (2 * eps)", "(up - down) / eps"),
        "entry not put back": ("        x[index] = kept\n        grad", "        grad"),
        "all entries nudged at once": (
            "        kept = x[index]\n        x[index] = kept + eps\n        up = f(x)\n"
            "        x[index] = kept - eps\n        down = f(x)\n        x[index] = kept\n",
            "        up = f(x + eps)\n        down = f(x - eps)\n",
        ),
    },
    "hypot": {
        "forgot the incoming grad": Wrong(
            (HYPOT_RIGHT, "return a / z, b / z"), "without the incoming gradient"
        ),
        "derivative of the square root alone": (
            HYPOT_RIGHT,
            "return grad / (2 * z), grad / (2 * z)",
        ),
        "derivative of the square alone": (HYPOT_RIGHT, "return grad * 2 * a, grad * 2 * b"),
        "swapped inputs": (HYPOT_RIGHT, "return grad * b / z, grad * a / z"),
        "one factor of z too many": (HYPOT_RIGHT, "return grad * a / z**2, grad * b / z**2"),
        "forward without the square root": ("z = np.sqrt(a * a + b * b)", "z = a * a + b * b"),
        "one gradient for two inputs": (HYPOT_RIGHT, "return grad * a / z"),
    },
    "gradcheck": {
        "weights of ones hide a forgotten grad": (
            "weights = np.random.default_rng(0).standard_normal(out.shape)",
            "weights = np.ones(out.shape)",
        ),
        "a loose tolerance": ("rtol=tol, atol=tol", "rtol=1e-2, atol=1e-2"),
        "no tolerance at all": ("rtol=tol, atol=tol", "rtol=0, atol=0"),
        "only the first input": (
            "for i, leaf in enumerate(leaves):",
            "for i, leaf in list(enumerate(leaves))[:1]:",
        ),
        "only the first entry": (
            "np.allclose(leaf.grad, numeric, rtol=tol, atol=tol)",
            "np.allclose(leaf.grad.flat[0], numeric.flat[0], rtol=tol, atol=tol)",
        ),
        "numerical side not weighted": (
            "return float((op.apply(*[ml.tensor(x) for x in inputs]).data * weights).sum())",
            "return float(op.apply(*[ml.tensor(x) for x in inputs]).data.sum())",
        ),
        "always True": (GRADCHECK_BODY_START, "    return True\n" + GRADCHECK_BODY_START),
        "an array for a verdict": ("    return True\n", "    return np.array([True])\n"),
    },
}


test_the_solution_passes, test_a_wrong_answer_is_rejected, test_the_stub_raises = mutation_tests(
    NB, EXERCISES, MUTANTS, stand_ins=EARLIER_CHECKS
)

# the exercises whose checks are probes and judges (minilucid_course.checks.exercise)
JUDGED = {k: EXERCISES[k] for k in ("mul", "div", "pow", "central", "hypot", "gradcheck")}
test_forged_data_is_wrong = forged_data_test(NB, JUDGED, EARLIER_CHECKS)


# --- messages say what is wrong, in plain words ---------------------------------------------


class SwappedMul(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a * b

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        return grad * a, grad * b


class NegatedDiv(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a / b

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        return -grad / b, grad * a / b**2


def test_mul_message_names_the_input_the_entry_and_both_values():
    with pytest.raises(AssertionError) as info:
        ch02.check_mul_backward(SwappedMul)
    message = str(info.value)
    assert "SwappedMul.backward" in message and "input a" in message
    assert "entry (" in message and "expected" in message and "got" in message
    assert "shape (3, 4)" in message


def test_a_gradient_with_every_sign_wrong_is_called_so():
    with pytest.raises(AssertionError, match="wrong sign"):
        ch02.check_div_backward(NegatedDiv)


def test_one_sided_difference_is_explained():
    def one_sided(f, x, eps):
        grad = np.zeros_like(x)
        base = f(x)
        for index in np.ndindex(x.shape):
            kept = x[index]
            x[index] = kept + eps
            grad[index] = (f(x) - base) / eps
            x[index] = kept
        return grad

    with pytest.raises(AssertionError, match="one-sided"):
        ch02.check_numerical_grad(one_sided)


def test_a_passing_check_shows_a_graph_made_with_the_learners_op(monkeypatch):
    import IPython.display

    class GoodMul(SwappedMul):
        @staticmethod
        def backward(ctx, grad):
            a, b = ctx.saved_tensors
            return grad * b, grad * a

    shown = []
    monkeypatch.setattr(IPython.display, "display", lambda *objs, **kw: shown.extend(objs))
    ch02.check_mul_backward(GoodMul)  # then a drawing of the learner's op in use (lab only)
    assert any("z = GoodMul(a, b)" in repr(picture) for picture in shown)


# --- the chapter's package code: Function.apply and numerical_grad --------------------------


def test_apply_records_inputs_as_given_and_which_need_a_gradient():
    x = Tensor(np.array([1.0, 2.0]), requires_grad=True)
    c = Tensor(np.array([3.0, 4.0]))
    y = Mul.apply(x, 2.0)
    assert y.grad_fn.parents[0] is x and y.grad_fn.parents[1] == 2.0
    assert y.grad_fn.needs_input_grad == (True, False)
    assert Mul.apply(c, x).grad_fn.needs_input_grad == (False, True)
    assert Mul.apply(c, 2.0).grad_fn is None  # nothing requires grad: a plain leaf
    np.testing.assert_array_equal(Mul.backward(y.grad_fn, np.ones(2)), (2.0 * np.ones(2), x.data))


def test_numerical_grad_is_central_weighted_and_leaves_inputs_alone():
    x_data = np.array([[0.5, -1.0], [2.0, 1.5]])
    w = np.array([[1.0, -2.0], [0.5, 3.0]])
    x = Tensor(x_data.copy())
    (got,) = numerical_grad(lambda t: t * t * t, [x], grad_output=w, eps=1e-3)
    # d/dx sum(w * x**3) = 3 w x**2; central differences add exactly w * eps**2 for a cube
    np.testing.assert_allclose(got, 3 * w * x_data**2 + w * 1e-6, rtol=0, atol=1e-9)
    np.testing.assert_array_equal(x.data, x_data)


def test_a_forged_verdict_of_the_gradient_check_is_wrong():
    from forgery import solution_answers

    from minilucid_course.checks.exercise import LAB_SEED

    _, answers = solution_answers(NB, EXERCISES["gradcheck"][1], EARLIER_CHECKS)
    data = ch02.GRADIENT_CHECK.run_probe(LAB_SEED, answers)
    for i in range(len(data["runs"])):
        for key in ("bool", "kept"):
            forged = {"runs": [dict(r) for r in data["runs"]]}
            forged["runs"][i][key] = not forged["runs"][i][key]
            passed, message = ch02.GRADIENT_CHECK.verdict(LAB_SEED, forged)
            assert not passed and "gradient_check" in message, (i, key, message)
    forged = {"runs": [dict(r, kind="ndarray") for r in data["runs"]]}
    assert not ch02.GRADIENT_CHECK.verdict(LAB_SEED, forged)[0]
