"""Chapter 05 (Functions and numerics): every check accepts the solution and rejects wrong answers.

Also a few focused tests of the chapter's package code: the numerics of the unary ops and of the
softmax family, cross-entropy's argument checks, mse_loss's shape guard and gradcheck's report.
"""

import functools
from pathlib import Path

import numpy as np
import pytest
from forgery import forged_data_test
from nbharness import Wrong, edited, mutation_tests, rejected, run_check, unanswered, with_answer

import minilucid as ml
from minilucid.gradcheck import GradcheckError
from minilucid.nn import functional as F
from minilucid.ops.softmax import logsumexp

NB = Path(__file__).resolve().parents[1] / "solutions" / "05_functions_and_numerics.ipynb"

_rejected = functools.partial(rejected, NB)
_solved = functools.partial(with_answer, NB)
_unanswered = functools.partial(unanswered, NB)


# --------------------------------------------------------------------------------------------
# Exercise 2: a stable log_softmax forward

EX2 = ("ex05_2_log_softmax_check", "ex05_2_log_softmax_answer")


def test_ex2_solution_passes(capsys):
    run_check(NB, EX2[0])
    assert "✓ log_softmax_forward" in capsys.readouterr().out


# --------------------------------------------------------------------------------------------
# Exercise 1: a sigmoid op that survives float32, forward and backward

EX1 = ("ex05_1_sigmoid_check", "ex05_1_sigmoid_answer")
_FORWARD = "out = np.where(a >= 0, 1 / (1 + e), e / (1 + e))"
_BACKWARD = "return grad * out * (1 - out)"


def _sigmoid_with(*edits) -> str:
    return edited(NB, EX1[1], list(edits))


def test_ex1_solution_passes(capsys):
    run_check(NB, EX1[0])
    assert "✓ MySigmoid: values and gradients right" in capsys.readouterr().out


def test_ex1_picture_lights_up_a_wrong_backward():
    wrong = _sigmoid_with((_BACKWARD, "return grad * out * (1 + out)"))
    from minilucid_course.checks.ch05 import your_sigmoid_picture

    namespace = run_check(NB, EX1[0])
    exec(compile(wrong, "<wrong answer>", "exec"), namespace)
    picture = your_sigmoid_picture(namespace["MySigmoid"])
    listing = repr(picture)
    assert "MySigmoid(t1)  -- bad" in listing, listing


def test_ex1_the_packages_sigmoid_passes_the_same_check(capsys):
    from minilucid.ops.unary import Sigmoid
    from minilucid_course.checks.ch05 import check_sigmoid

    check_sigmoid(Sigmoid)
    assert "✓ Sigmoid" in capsys.readouterr().out


# --------------------------------------------------------------------------------------------
# Exercise 3 (a real problem): softplus (3a) or log-sum-exp (3b) as a stable op

EX3A = ("ex05_3a_softplus_check", "ex05_3a_softplus_answer")
EX3B = ("ex05_3b_logsumexp_check", "ex05_3b_logsumexp_answer")
_SOFTPLUS = "return np.maximum(a, 0) + np.log1p(e)  # log(1 + e^a) = max(a, 0) + log(1 + e^-|a|)"
_SOFTPLUS_GRAD = "return grad * np.where(a >= 0, 1 / (1 + e), e / (1 + e))  # the stable sigmoid"


def test_ex3a_solution_passes(capsys):
    run_check(NB, EX3A[0])
    assert "✓ MySoftplus" in capsys.readouterr().out


def test_ex3b_solution_passes(capsys):
    run_check(NB, EX3B[0])
    assert "✓ MyLogSumExp" in capsys.readouterr().out


_LSE_KEPT = "kept = top + np.log(np.exp(a - top).sum(axis=ctx.dim, keepdims=True))"
_LSE_BACK = "g = grad if ctx.keepdim else np.expand_dims(grad, ctx.dim)"


# --------------------------------------------------------------------------------------------
# Exercise 4: cross_entropy from log_softmax and indexing

EX4 = ("ex05_4_cross_entropy_check", "ex05_4_cross_entropy_answer")
ROWS = "np.arange(len(targets))"


def test_ex4_solution_passes(capsys):
    run_check(NB, EX4[0])
    assert "✓ cross_entropy matches" in capsys.readouterr().out


# --------------------------------------------------------------------------------------------
# Exercise 5 (optional): gradcheck's comparison loop

EX5 = ("ex05_5_first_disagreement_check", "ex05_5_first_disagreement_answer")
LOOP = """
for k, (a, n) in enumerate(zip(analytic, numeric)):
    bad = {bad}
    if bad.any():
        return {found}
return None
"""


def _loop(bad="np.abs(a - n) > atol + rtol * np.abs(n)", found=None):
    found = found or "k, np.unravel_index(int(np.argmax(bad)), a.shape)"
    return _solved(EX5[1], LOOP.format(bad=bad, found=found))


def test_ex5_solution_passes(capsys):
    run_check(NB, EX5[0])
    assert "✓ first_disagreement" in capsys.readouterr().out


# --------------------------------------------------------------------------------------------
# The chapter's package code


def test_sigmoid_is_finite_where_the_textbook_formula_overflows():
    a = ml.tensor(np.array([-1000.0, -100.0, 0.0, 100.0, 1000.0]), requires_grad=True)
    z = a.sigmoid()
    z.sum().backward()
    assert np.isfinite(z.data).all() and np.isfinite(a.grad).all()
    np.testing.assert_allclose(z.data, [0.0, 0.0, 0.5, 1.0, 1.0], atol=1e-40)
    np.testing.assert_allclose(a.grad[2], 0.25)


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_softmax_family_is_stable_and_consistent(dim):
    data = np.array([[1000.0, -1000.0, 3.0], [0.0, 999.0, -5.0]])
    probs = F.softmax(ml.tensor(data), dim=dim).data
    log_probs = F.log_softmax(ml.tensor(data), dim=dim).data
    assert np.isfinite(log_probs).all()
    np.testing.assert_allclose(probs.sum(axis=dim), 1.0)
    np.testing.assert_allclose(np.exp(log_probs), probs, atol=1e-300)
    expected = np.logaddexp.reduce(data, axis=dim, keepdims=True)
    np.testing.assert_allclose(logsumexp(data, dim), expected)


@pytest.mark.parametrize(
    "fn, make",
    [
        (lambda x: x.softmax(dim=0), lambda r: r.normal(size=(3, 2))),
        (lambda x: x.log_softmax(dim=1), lambda r: r.normal(size=(2, 4))),
        (lambda x: F.cross_entropy(x, np.array([2, 0, 1])), lambda r: r.normal(size=(3, 3))),
        (lambda x: x.clamp(max=0.5), lambda r: r.uniform(-1, 0.4, size=5)),
        (lambda x: x.sqrt(), lambda r: r.uniform(0.5, 2, size=4)),
    ],
)
def test_gradcheck_passes_the_chapter_ops(fn, make):
    x = ml.tensor(make(np.random.default_rng(1)), requires_grad=True)
    assert ml.gradcheck(fn, [x])


def test_cross_entropy_gradient_is_prediction_minus_truth():
    logits = ml.tensor(np.array([[1.0, 2.0, 0.5], [0.0, 0.0, 0.0]]), requires_grad=True)
    F.cross_entropy(logits, np.array([1, 2])).backward()
    probs = F.softmax(ml.tensor(logits.data), dim=1).data
    np.testing.assert_allclose(logits.grad, (probs - np.eye(3)[[1, 2]]) / 2)


@pytest.mark.parametrize(
    "targets, words",
    [
        (np.array([0, 3]), "target 3 at position 1"),
        (np.array([[0, 1], [1, 0]]), "1-D tensor of class indices"),
        (np.array([0.0, 1.0]), "class indices"),
        (np.array([0, 1, 2]), "2 rows of logits but 3 targets"),
    ],
)
def test_cross_entropy_explains_bad_targets(targets, words):
    with pytest.raises(ValueError, match=words):
        F.cross_entropy(ml.zeros(2, 3, requires_grad=True), targets)


def test_mse_loss_refuses_shapes_that_would_broadcast():
    with pytest.raises(ValueError, match=r"mse_loss: prediction \(4, 1\) and target \(4,\)"):
        F.mse_loss(ml.zeros(4, 1), ml.zeros(4))


def test_gradcheck_names_the_input_and_the_entry():
    from minilucid.function import Function

    class Wrong(Function):
        @staticmethod
        def forward(ctx, a, b):
            return a * b

        @staticmethod
        def backward(ctx, grad):
            return grad, grad  # right for neither input, unless the other is 1

    a = ml.tensor(np.array([1.0, 1.0, 1.0]), requires_grad=True)
    b = ml.tensor(np.array([1.0, 3.0, 1.0]), requires_grad=True)
    with pytest.raises(GradcheckError, match=r"input 0 \(shape \(3,\)\) disagrees at entry \(1,\)"):
        ml.gradcheck(Wrong.apply, [a, b])
    assert ml.gradcheck(Wrong.apply, [a, b], raise_exception=False) is False


def test_gradcheck_insists_on_float64():
    with pytest.raises(ValueError, match="float64"):
        ml.gradcheck(ml.exp, [ml.tensor([1.0, 2.0], requires_grad=True)])


# --- the one style: every wrong answer above, fed to its check ---------------------------

EXERCISES = {
    "log_softmax": ("ex05_2_log_softmax_answer", "ex05_2_log_softmax_check"),
    "sigmoid": ("ex05_1_sigmoid_answer", "ex05_1_sigmoid_check"),
    "softplus": ("ex05_3a_softplus_answer", "ex05_3a_softplus_check"),
    "logsumexp": ("ex05_3b_logsumexp_answer", "ex05_3b_logsumexp_check"),
    "cross_entropy": ("ex05_4_cross_entropy_answer", "ex05_4_cross_entropy_check"),
    "first_disagreement": ("ex05_5_first_disagreement_answer", "ex05_5_first_disagreement_check"),
}

MUTANTS = {
    "softplus": {
        "shifts its input in place (right values)": Wrong(
            [
                (
                    _SOFTPLUS,
                    "out = np.maximum(a, 0) + np.log1p(e)\n        a -= out\n        return out",
                )
            ],
            "changed its input in place",
            "moderate inputs",
        ),
        "the textbook forward log(1 + exp(a))": Wrong(
            [(_SOFTPLUS, "return np.log(1 + np.exp(a))")], "large inputs", "overflow"
        ),
        "log instead of log1p": Wrong(
            [(_SOFTPLUS, "return np.maximum(a, 0) + np.log(1 + e)")],
            "a = -50",
            "1 + x rounds to 1",
        ),
        "log1p of exp(a)": Wrong([(_SOFTPLUS, "return np.log1p(np.exp(a))")], "overflow"),
        "a float64 result for float32 input": Wrong(
            [(_SOFTPLUS, "return np.maximum(a, 0) + np.log1p(e).astype(np.float64)")],
            "float32",
            "dtype",
        ),
        "relu instead of softplus": Wrong(
            [(_SOFTPLUS, "return np.where(a > 0, a, 0) + 0 * e")], "moderate inputs", "wrong at a ="
        ),
        "the textbook sigmoid as its derivative": Wrong(
            [(_SOFTPLUS_GRAD, "return grad / (1 + np.exp(-a))")], "overflow", "the backward"
        ),
        "the tanh form of the sigmoid": Wrong(
            [(_SOFTPLUS_GRAD, "return grad * 0.5 * (1 + np.tanh(0.5 * a))")],
            "a = -50",
            "tiny, not 0",
        ),
        "grad times a": Wrong([(_SOFTPLUS_GRAD, "return grad * a")], "grad * a"),
        "forgets the incoming gradient": Wrong(
            [(_SOFTPLUS_GRAD, "return np.where(a >= 0, 1 / (1 + e), e / (1 + e))")],
            "incoming gradient",
        ),
        "the sigmoid's branches swapped": Wrong(
            [(_SOFTPLUS_GRAD, "return grad * np.where(a >= 0, e / (1 + e), 1 / (1 + e))")],
            "expected",
        ),
    },
    "logsumexp": {
        "no shift": Wrong(
            [(_LSE_KEPT, "kept = np.log(np.exp(a).sum(axis=ctx.dim, keepdims=True))")],
            "large logits",
            "overflow",
        ),
        "the shift not added back": Wrong(
            [(_LSE_KEPT, "kept = np.log(np.exp(a - top).sum(axis=ctx.dim, keepdims=True))")],
            "a small vector",
            "expected",
        ),
        "keepdim ignored": Wrong(
            [("return kept if keepdim else np.squeeze(kept, axis=ctx.dim)", "return kept")],
            "a small vector",
            "unless keepdim=True",
        ),
        "no expand_dims in backward": Wrong(
            [(_LSE_BACK, "g = grad")], "rows far apart", "the output's shape"
        ),
        "a naive softmax in backward": Wrong(
            [
                (
                    "return g * np.exp(a - kept)",
                    "return g * np.exp(a) / np.exp(a).sum(axis=ctx.dim, keepdims=True)",
                )
            ],
            "overflow",
        ),
        "the backward of a sum": Wrong(
            [("return g * np.exp(a - kept)", "return np.broadcast_to(g, a.shape)")],
            "backward on a small vector",
        ),
    },
    "log_softmax": {
        "naive formula": Wrong(
            _solved(EX2[1], "return np.log(np.exp(a) / np.exp(a).sum(axis=dim, keepdims=True))"),
            "large logits",
            "exp overflowed or a log met 0",
        ),
        "forgotten keepdims": Wrong(
            _solved(
                EX2[1],
                """
shifted = a - a.max(axis=dim)
return shifted - np.log(np.exp(shifted).sum(axis=dim))
""",
            ),
            "batch of 2 rows",
        ),
        "forgotten keepdims on square input": Wrong(
            _solved(
                EX2[1],
                """
if a.ndim == 2 and a.shape[0] != a.shape[1]:
    top = a.max(axis=dim, keepdims=True)
else:
    top = a.max(axis=dim)
shifted = a - top
return shifted - np.log(np.exp(shifted).sum(axis=dim, keepdims=True))
""",
            ),
            "3 x 3 batch",
            "expected",
        ),
        "shift by mean": Wrong(
            _solved(
                EX2[1],
                """
shifted = a - a.mean(axis=dim, keepdims=True)
return shifted - np.log(np.exp(shifted).sum(axis=dim, keepdims=True))
""",
            ),
            "large logits",
            "got [-inf",
        ),
        "shift by mean even when the mean is not zero": Wrong(
            _solved(
                EX2[1],
                """
if np.allclose(a.mean(axis=dim), 0):
    shifted = a - a.max(axis=dim, keepdims=True)
else:
    shifted = a - a.mean(axis=dim, keepdims=True)
return shifted - np.log(np.exp(shifted).sum(axis=dim, keepdims=True))
""",
            ),
            "logits far from zero",
        ),
        "forgetting to add the maximum back": Wrong(
            _solved(
                EX2[1],
                """
top = a.max(axis=dim, keepdims=True)
return a - np.log(np.exp(a - top).sum(axis=dim, keepdims=True))
""",
            ),
            "a small vector",
            "sum to 1",
        ),
        "hard coded last axis": Wrong(
            _solved(
                EX2[1],
                """
shifted = a - a.max(axis=-1, keepdims=True)
return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
""",
            ),
            "dim=0",
        ),
        "changing the input in place": Wrong(
            _solved(
                EX2[1],
                """
a -= a.max(axis=dim, keepdims=True)
return a - np.log(np.exp(a).sum(axis=dim, keepdims=True))
""",
            ),
            "in place",
        ),
    },
    "sigmoid": {
        "changes its input in place (right values)": Wrong(
            _sigmoid_with((_FORWARD, _FORWARD + "\n        np.abs(a, out=a)")),
            "changed its input in place",
            "input [-2. , -0.5, 0. , 0.7, 3. ]",
        ),
        "both formulas inside np.where": Wrong(
            _sigmoid_with(
                (
                    _FORWARD,
                    "out = np.where(a >= 0, 1 / (1 + np.exp(-a)), np.exp(a) / (1 + np.exp(a)))",
                )
            ),
            "overflow",
            "np.where computes both",
        ),
        "the textbook formula at minus 100 in float32": Wrong(
            _sigmoid_with((_FORWARD, "out = 1 / (1 + np.exp(-a))")),
            "float32 input",
            "overflow",
            "above exp(88.7)",
        ),
        "the tanh form that loses the left tail": Wrong(
            _sigmoid_with((_FORWARD, "out = 0.5 * (1 + np.tanh(0.5 * a))")),
            "a = -30",
            "left tail lost its digits",
        ),
        "changing the dtype": Wrong(
            _sigmoid_with((_FORWARD, _FORWARD + ".astype(np.float64)")),
            "float32 input",
            "returned float64",
        ),
        "a backward through exp of minus a": Wrong(
            _sigmoid_with(
                ("ctx.save_for_backward(out)", "ctx.save_for_backward(a)"),
                ("(out,) = ctx.saved_tensors", "(a,) = ctx.saved_tensors"),
                (_BACKWARD, "return grad * np.exp(-a) / (1 + np.exp(-a)) ** 2"),
            ),
            "float32 input",
            "overflow",
            "Your forward got through; it is the backward",
        ),
        "one plus z": Wrong(
            _sigmoid_with((_BACKWARD, "return grad * out * (1 + out)")),
            "z * (1 + z)",
            "entry (0,)",
        ),
        "using the input": Wrong(
            _sigmoid_with(
                ("ctx.save_for_backward(out)", "ctx.save_for_backward(a, out)"),
                ("(out,) = ctx.saved_tensors", "a, out = ctx.saved_tensors"),
                (_BACKWARD, "return grad * a * (1 - a)"),
            ),
            "used the input a",
        ),
        "forgetting the incoming gradient": Wrong(
            _sigmoid_with((_BACKWARD, "return out * (1 - out)")),
            "incoming gradient was not multiplied",
        ),
        "tanh derivative": Wrong(
            _sigmoid_with((_BACKWARD, "return grad * (1 - out * out)")),
            "tanh's derivative",
        ),
        "flipped sign": Wrong(
            _sigmoid_with((_BACKWARD, "return -grad * out * (1 - out)")),
            "sign is flipped",
        ),
    },
    "cross_entropy": {
        "missing minus": Wrong(
            _solved(EX4[1], f"return logits.log_softmax(dim=1)[{ROWS}, targets].mean()"),
            "sign is flipped",
        ),
        "sum instead of mean": Wrong(
            _solved(EX4[1], f"return -logits.log_softmax(dim=1)[{ROWS}, targets].sum()"),
            "sum over the batch",
        ),
        "swapped indices": Wrong(
            _solved(EX4[1], f"return -logits.log_softmax(dim=1)[targets, {ROWS}].mean()"),
            "4 examples",
        ),
        "swapped indices on square batch": Wrong(
            _solved(
                EX4[1],
                f"""
log_probs = logits.log_softmax(dim=1)
if logits.shape[0] == logits.shape[1]:
    return -log_probs[targets, {ROWS}].mean()
return -log_probs[{ROWS}, targets].mean()
""",
            ),
            "indices are swapped",
        ),
        "whole columns": Wrong(
            _solved(EX4[1], "return -logits.log_softmax(dim=1)[:, targets].mean()"),
            "n x n block",
        ),
        "log of softmax": Wrong(
            _solved(EX4[1], f"return -logits.softmax(dim=1).log()[{ROWS}, targets].mean()"),
            "large logits",
            "underflowed to 0",
        ),
        "a loss without graph": Wrong(
            _solved(
                EX4[1],
                """
data = logits.data
log_probs = data - data.max(axis=1, keepdims=True)
log_probs = log_probs - np.log(np.exp(log_probs).sum(axis=1, keepdims=True))
return Tensor(-log_probs[np.arange(len(targets)), targets].mean())
""",
            ),
            "no graph behind it",
        ),
    },
    "first_disagreement": {
        "the largest difference instead of the first": Wrong(
            _loop(found="k, np.unravel_index(int(np.argmax(np.abs(a - n))), a.shape)"),
            "later one more so",
            "entry (1, 0)",
        ),
        "exact equality": Wrong(
            _loop(bad="a != n"),
            "agree up to rounding",
            "expected None",
        ),
        "NumPy's default tolerances": Wrong(
            _loop(bad="~np.isclose(a, n)"),
            "4 significant digits",
            "expected None",
        ),
        "absolute tolerance only": Wrong(
            _loop(bad="np.abs(a - n) > atol"),
            "large gradients",
        ),
        "relative tolerance only": Wrong(
            _loop(bad="np.abs(a - n) > rtol * np.abs(n)"),
            "near zero",
        ),
        "flat index": Wrong(
            _loop(found="k, int(np.argmax(bad))"),
            "a flat position",
        ),
        "looking at the first input only": Wrong(
            _solved(
                EX5[1],
                """
a, n = analytic[0], numeric[0]
bad = np.abs(a - n) > atol + rtol * np.abs(n)
if bad.any():
    return 0, np.unravel_index(int(np.argmax(bad)), a.shape)
return None
""",
            ),
            "input 1 wrong",
        ),
        "last input instead of first": Wrong(
            _solved(
                EX5[1],
                """
found = None
for k, (a, n) in enumerate(zip(analytic, numeric)):
    bad = np.abs(a - n) > atol + rtol * np.abs(n)
    if bad.any():
        found = k, np.unravel_index(int(np.argmax(bad)), a.shape)
return found
""",
            ),
            "both inputs wrong",
        ),
    },
}

test_the_solution_passes, test_a_wrong_answer_is_rejected, test_the_stub_raises = mutation_tests(
    NB, EXERCISES, MUTANTS
)

# every check of the chapter is a probe and a judge (minilucid_course.checks.exercise)
test_forged_data_is_wrong = forged_data_test(NB, EXERCISES)
