"""Chapter 12 (Beyond): every exercise check accepts the solution and rejects wrong answers.

Each wrong answer below is a mistake people make with gradients of gradients and custom ops; the
check must reject it and, where it can tell, name it.
"""

import functools
from pathlib import Path

import pytest
from nbharness import edited, rejected, run_check, unanswered

NB = Path(__file__).resolve().parents[1] / "solutions" / "12_beyond.ipynb"

_rejected = functools.partial(rejected, NB)
_unanswered = functools.partial(unanswered, NB)


def _edited(answer_id, *edits):
    return edited(NB, answer_id, list(edits))


# --------------------------------------------------------------------------------------------
# Exercise 1: Newton's method

EX1 = ("ex12_1_newton_check", "ex12_1_newton_answer")
STEP = "xs.append(xs[-1] - d1.item() / float(d2))"


def test_ex1_solution_passes(capsys):
    run_check(NB, EX1[0])
    assert "✓ newton_1d" in capsys.readouterr().out


def test_ex1_unanswered_raises_not_implemented():
    _unanswered(*EX1)


@pytest.mark.parametrize(
    ("step", "words"),
    [
        ("xs.append(xs[-1] - d1.item())", "gradient-descent step"),
        ("xs.append(xs[-1] + d1.item() / float(d2))", "wrong sign"),
        ("xs.append(xs[-1] - float(d2) / d1.item())", "upside down"),
        ("xs.append(xs[-1] - d1.item() / float(d2) / 2)", "iterate 1 should be"),
        ("xs.append(xs[-1] - d1.item() / 2.0)", "iterate 1 should be"),
    ],
    ids=["gradient step", "sign", "inverted", "half step", "constant curvature"],
)
def test_ex1_rejects_wrong_steps(step, words):
    _rejected(*EX1, _edited(EX1[1], (STEP, step)), words)


def test_ex1_rejects_a_first_gradient_without_a_graph():
    wrong = _edited(EX1[1], ("create_graph=True", "create_graph=False"))
    _rejected(*EX1, wrong, "create_graph=True")


def test_ex1_rejects_a_list_without_the_start():
    wrong = _edited(EX1[1], ("    return xs", "    return xs[1:]"))
    _rejected(*EX1, wrong, "x0 and then one iterate per step")


# --------------------------------------------------------------------------------------------
# Exercise 2: Hessian-vector product

EX2 = ("ex12_2_hvp_check", "ex12_2_hvp_answer")
SECOND = "(hv,) = ml.grad((g * v).sum(), x)"


def test_ex2_solution_passes(capsys):
    run_check(NB, EX2[0])
    assert "✓ hvp" in capsys.readouterr().out


def test_ex2_unanswered_raises_not_implemented():
    _unanswered(*EX2)


@pytest.mark.parametrize(
    ("edits", "words"),
    [
        ([("return hv", "return g")], "the gradient itself"),
        ([("return hv", "return g * v")], "entry by entry"),
        ([(SECOND, "(hv,) = ml.grad(g.sum(), x)")], "vector of ones"),
        ([("create_graph=True", "create_graph=False")], "create_graph=True"),
        ([(SECOND, "(hv,) = ml.grad((g * v).sum(), x)\n    hv = hv * v")], "expected"),
        ([(SECOND, "(hv,) = ml.grad((g * g).sum(), x)")], "expected"),
    ],
    ids=["gradient", "g times v", "v left out", "no graph", "times v again", "g . g"],
)
def test_ex2_rejects(edits, words):
    _rejected(*EX2, _edited(EX2[1], *edits), words)


# --------------------------------------------------------------------------------------------
# Exercise 3: the straight-through estimator

EX3 = ("ex12_3_ste_check", "ex12_3_ste_answer")
SAVE = "ctx.save_for_backward(np.abs(a) <= 1)"
RETURN = "return grad * inside"


def test_ex3_solution_passes(capsys):
    run_check(NB, EX3[0])
    assert "✓ RoundSTE" in capsys.readouterr().out


def test_ex3_unanswered_raises_not_implemented():
    stub = _edited(
        EX3[1],
        (f"{SAVE}\n        return np.round(a)", "raise NotImplementedError()"),
        (f"(inside,) = ctx.saved_tensors\n        {RETURN}", "raise NotImplementedError()"),
    )
    with pytest.raises(NotImplementedError):
        run_check(NB, EX3[0], replace={EX3[1]: stub})


@pytest.mark.parametrize(
    ("edits", "words"),
    [
        ([("return np.round(a)", "return a")], "should be round(x)"),
        ([("return np.round(a)", "return np.floor(a)")], "should be round(x)"),
        ([(RETURN, "return grad")], "also where |x| > 1"),
        ([(RETURN, "return grad * 0")], "round's own derivative"),
        ([(SAVE, "ctx.save_for_backward(a < 1)")], "outside [-1, 1]"),
        ([(SAVE, "ctx.save_for_backward(np.abs(a) < 0.5)")], "expected the gradient of clamp"),
        ([(RETURN, "return np.where(inside, grad, 0)")], "create_graph"),
        ([(RETURN, "return np.asarray(grad * inside)")], "RoundSTE.backward returned"),
    ],
    ids=[
        "identity forward",
        "floor",
        "straight through everywhere",
        "true derivative",
        "one-sided mask",
        "narrow mask",
        "np.where backward",
        "tensor lost",
    ],
)
def test_ex3_rejects(edits, words):
    _rejected(*EX3, _edited(EX3[1], *edits), words)
