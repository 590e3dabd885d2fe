"""Chapter 05 (Functions and numerics): every check accepts the solution and rejects wrong answers.

Also a few focused tests of the chapter's package code: the numerics of the unary ops and of the
softmax family, cross-entropy's argument checks, mse_loss's shape guard and gradcheck's report.
"""

import functools
from pathlib import Path

import numpy as np
import pytest
from nbharness import edited, rejected, run_check, unanswered, with_answer

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


def test_ex2_unanswered_raises_not_implemented():
    _unanswered(*EX2)


def test_ex2_rejects_naive_formula():
    wrong = _solved(EX2[1], "return np.log(np.exp(a) / np.exp(a).sum(axis=dim, keepdims=True))")
    _rejected(*EX2, wrong, "large logits", "shift the logits by their maximum")


def test_ex2_rejects_forgotten_keepdims():
    wrong = _solved(
        EX2[1],
        """
shifted = a - a.max(axis=dim)
return shifted - np.log(np.exp(shifted).sum(axis=dim))
""",
    )
    _rejected(*EX2, wrong, "batch of 2 rows")


def test_ex2_rejects_forgotten_keepdims_on_square_input():
    # broadcasting a (3,) maximum against a 3 x 3 array raises nothing: only the values show it
    wrong = _solved(
        EX2[1],
        """
if a.ndim == 2 and a.shape[0] != a.shape[1]:
    top = a.max(axis=dim, keepdims=True)
else:
    top = a.max(axis=dim)
shifted = a - top
return shifted - np.log(np.exp(shifted).sum(axis=dim, keepdims=True))
""",
    )
    _rejected(*EX2, wrong, "3 x 3 batch", "expected")


def test_ex2_rejects_shift_by_mean():
    wrong = _solved(
        EX2[1],
        """
shifted = a - a.mean(axis=dim, keepdims=True)
return shifted - np.log(np.exp(shifted).sum(axis=dim, keepdims=True))
""",
    )
    _rejected(*EX2, wrong, "large logits", "got [-inf")


def test_ex2_rejects_shift_by_mean_even_when_the_mean_is_not_zero():
    # only the "far from zero" case catches a mean shift whose spread still overflows
    wrong = _solved(
        EX2[1],
        """
if np.allclose(a.mean(axis=dim), 0):
    shifted = a - a.max(axis=dim, keepdims=True)
else:
    shifted = a - a.mean(axis=dim, keepdims=True)
return shifted - np.log(np.exp(shifted).sum(axis=dim, keepdims=True))
""",
    )
    _rejected(*EX2, wrong, "logits far from zero")


def test_ex2_rejects_forgetting_to_add_the_maximum_back():
    wrong = _solved(
        EX2[1],
        """
top = a.max(axis=dim, keepdims=True)
return a - np.log(np.exp(a - top).sum(axis=dim, keepdims=True))
""",
    )
    _rejected(*EX2, wrong, "a small vector", "sum to 1")


def test_ex2_rejects_hard_coded_last_axis():
    wrong = _solved(
        EX2[1],
        """
shifted = a - a.max(axis=-1, keepdims=True)
return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
""",
    )
    _rejected(*EX2, wrong, "dim=0")


def test_ex2_rejects_changing_the_input_in_place():
    wrong = _solved(
        EX2[1],
        """
a -= a.max(axis=dim, keepdims=True)
return a - np.log(np.exp(a).sum(axis=dim, keepdims=True))
""",
    )
    _rejected(*EX2, wrong, "in place")


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


def test_ex1_unanswered_raises_not_implemented():
    _unanswered(*EX1)


def test_ex1_rejects_the_textbook_formula_at_minus_100_in_float32():
    wrong = _sigmoid_with((_FORWARD, "out = 1 / (1 + np.exp(-a))"))
    _rejected(*EX1, wrong, "float32 input", "overflow", "-|a|")


def test_ex1_rejects_both_formulas_inside_np_where():
    both = "out = np.where(a >= 0, 1 / (1 + np.exp(-a)), np.exp(a) / (1 + np.exp(a)))"
    _rejected(*EX1, _sigmoid_with((_FORWARD, both)), "overflow", "np.where computes both")


def test_ex1_rejects_the_tanh_form_that_loses_the_left_tail():
    wrong = _sigmoid_with((_FORWARD, "out = 0.5 * (1 + np.tanh(0.5 * a))"))
    _rejected(*EX1, wrong, "a = -30", "left tail lost its digits")


def test_ex1_rejects_changing_the_dtype():
    wrong = _sigmoid_with((_FORWARD, _FORWARD + ".astype(np.float64)"))
    _rejected(*EX1, wrong, "float32 input", "returned float64")


def test_ex1_rejects_a_backward_through_exp_of_minus_a():
    wrong = _sigmoid_with(
        ("ctx.save_for_backward(out)", "ctx.save_for_backward(a)"),
        ("(out,) = ctx.saved_tensors", "(a,) = ctx.saved_tensors"),
        (_BACKWARD, "return grad * np.exp(-a) / (1 + np.exp(-a)) ** 2"),
    )
    _rejected(*EX1, wrong, "float32 input", "overflow")


def test_ex1_rejects_one_plus_z():
    wrong = _sigmoid_with((_BACKWARD, "return grad * out * (1 + out)"))
    _rejected(*EX1, wrong, "z * (1 + z)", "entry (0,)")


def test_ex1_rejects_using_the_input():
    wrong = _sigmoid_with(
        ("ctx.save_for_backward(out)", "ctx.save_for_backward(a, out)"),
        ("(out,) = ctx.saved_tensors", "a, out = ctx.saved_tensors"),
        (_BACKWARD, "return grad * a * (1 - a)"),
    )
    _rejected(*EX1, wrong, "used the input a")


def test_ex1_rejects_forgetting_the_incoming_gradient():
    wrong = _sigmoid_with((_BACKWARD, "return out * (1 - out)"))
    _rejected(*EX1, wrong, "incoming gradient was not multiplied")


def test_ex1_rejects_tanh_derivative():
    wrong = _sigmoid_with((_BACKWARD, "return grad * (1 - out * out)"))
    _rejected(*EX1, wrong, "tanh's derivative")


def test_ex1_rejects_flipped_sign():
    wrong = _sigmoid_with((_BACKWARD, "return -grad * out * (1 - out)"))
    _rejected(*EX1, wrong, "sign is flipped")


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


def test_ex3a_unanswered_raises_not_implemented():
    _unanswered(*EX3A)


@pytest.mark.parametrize(
    "forward, words",
    [
        ("return np.log(1 + np.exp(a))", ["large inputs", "overflow"]),
        ("return np.maximum(a, 0) + np.log(1 + e)", ["a = -50", "NumPy has a log that takes x"]),
        ("return np.log1p(np.exp(a))", ["overflow"]),
        ("return np.maximum(a, 0) + np.log1p(e).astype(np.float64)", ["float32", "dtype"]),
        ("return np.where(a > 0, a, 0) + 0 * e", ["moderate inputs", "wrong at a ="]),
    ],
    ids=["textbook", "log-not-log1p", "log1p-of-exp-a", "float64-out", "relu"],
)
def test_ex3a_rejects_unstable_or_wrong_forwards(forward, words):
    _rejected(*EX3A, edited(NB, EX3A[1], [(_SOFTPLUS, forward)]), *words)


@pytest.mark.parametrize(
    "backward, words",
    [
        ("return grad / (1 + np.exp(-a))", ["overflow"]),
        ("return grad * 0.5 * (1 + np.tanh(0.5 * a))", ["a = -50", "tiny, not 0"]),
        ("return grad * a", ["grad * a"]),
        ("return np.where(a >= 0, 1 / (1 + e), e / (1 + e))", ["incoming gradient"]),
        ("return grad * np.where(a >= 0, e / (1 + e), 1 / (1 + e))", ["expected"]),
    ],
    ids=["textbook-sigmoid", "tanh-sigmoid", "grad-times-a", "no-grad", "swapped-branches"],
)
def test_ex3a_rejects_wrong_or_unstable_backwards(backward, words):
    _rejected(*EX3A, edited(NB, EX3A[1], [(_SOFTPLUS_GRAD, backward)]), *words)


def test_ex3b_solution_passes(capsys):
    run_check(NB, EX3B[0])
    assert "✓ MyLogSumExp" in capsys.readouterr().out


def test_ex3b_unanswered_raises_not_implemented():
    _unanswered(*EX3B)


_LSE_KEPT = "kept = top + np.log(np.exp(a - top).sum(axis=ctx.dim, keepdims=True))"
_LSE_BACK = "g = grad if ctx.keepdim else np.expand_dims(grad, ctx.dim)"


@pytest.mark.parametrize(
    "edits, words",
    [
        (
            [(_LSE_KEPT, "kept = np.log(np.exp(a).sum(axis=ctx.dim, keepdims=True))")],
            ["large logits", "overflow"],
        ),
        (
            [(_LSE_KEPT, "kept = np.log(np.exp(a - top).sum(axis=ctx.dim, keepdims=True))")],
            ["a small vector", "expected"],
        ),
        (
            [("return kept if keepdim else np.squeeze(kept, axis=ctx.dim)", "return kept")],
            ["a small vector", "unless keepdim=True"],
        ),
        ([(_LSE_BACK, "g = grad")], ["rows far apart", "put the reduced dimension back"]),
        (
            [
                (
                    "return g * np.exp(a - kept)",
                    "return g * np.exp(a) / np.exp(a).sum(axis=ctx.dim, keepdims=True)",
                )
            ],
            ["overflow"],
        ),
        ([("return g * np.exp(a - kept)", "return np.broadcast_to(g, a.shape)")], ["softmax(a)_j"]),
    ],
    ids=[
        "no-shift",
        "shift-not-added-back",
        "keepdim-ignored",
        "no-expand-dims",
        "naive-softmax-backward",
        "sum-backward",
    ],
)
def test_ex3b_rejects_wrong_or_unstable_answers(edits, words):
    _rejected(*EX3B, edited(NB, EX3B[1], edits), *words)


# --------------------------------------------------------------------------------------------
# Exercise 4: cross_entropy from log_softmax and indexing

EX4 = ("ex05_4_cross_entropy_check", "ex05_4_cross_entropy_answer")
ROWS = "np.arange(len(targets))"


def test_ex4_solution_passes(capsys):
    run_check(NB, EX4[0])
    assert "✓ cross_entropy matches" in capsys.readouterr().out


def test_ex4_unanswered_raises_not_implemented():
    _unanswered(*EX4)


def test_ex4_rejects_missing_minus():
    wrong = _solved(EX4[1], f"return logits.log_softmax(dim=1)[{ROWS}, targets].mean()")
    _rejected(*EX4, wrong, "sign is flipped")


def test_ex4_rejects_sum_instead_of_mean():
    wrong = _solved(EX4[1], f"return -logits.log_softmax(dim=1)[{ROWS}, targets].sum()")
    _rejected(*EX4, wrong, "sum over the batch")


def test_ex4_rejects_swapped_indices():
    wrong = _solved(EX4[1], f"return -logits.log_softmax(dim=1)[targets, {ROWS}].mean()")
    _rejected(*EX4, wrong, "4 examples")  # 4 x 3: index 3 is out of range for the columns


def test_ex4_rejects_swapped_indices_on_square_batch():
    wrong = _solved(
        EX4[1],
        f"""
log_probs = logits.log_softmax(dim=1)
if logits.shape[0] == logits.shape[1]:
    return -log_probs[targets, {ROWS}].mean()
return -log_probs[{ROWS}, targets].mean()
""",
    )
    _rejected(*EX4, wrong, "indices are swapped")


def test_ex4_rejects_whole_columns():
    wrong = _solved(EX4[1], "return -logits.log_softmax(dim=1)[:, targets].mean()")
    _rejected(*EX4, wrong, "n x n block")


def test_ex4_rejects_log_of_softmax():
    wrong = _solved(EX4[1], f"return -logits.softmax(dim=1).log()[{ROWS}, targets].mean()")
    _rejected(*EX4, wrong, "large logits", "use log_softmax")


def test_ex4_rejects_a_loss_without_graph():
    wrong = _solved(
        EX4[1],
        """
data = logits.data
log_probs = data - data.max(axis=1, keepdims=True)
log_probs = log_probs - np.log(np.exp(log_probs).sum(axis=1, keepdims=True))
return Tensor(-log_probs[np.arange(len(targets)), targets].mean())
""",
    )
    _rejected(*EX4, wrong, "no graph behind it")


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


def test_ex5_unanswered_raises_not_implemented():
    _unanswered(*EX5)


def test_ex5_rejects_exact_equality():
    _rejected(*EX5, _loop(bad="a != n"), "agree up to rounding", "expected None")


def test_ex5_rejects_absolute_tolerance_only():
    _rejected(*EX5, _loop(bad="np.abs(a - n) > atol"), "large gradients")


def test_ex5_rejects_relative_tolerance_only():
    _rejected(*EX5, _loop(bad="np.abs(a - n) > rtol * np.abs(n)"), "near zero")


def test_ex5_rejects_flat_index():
    _rejected(*EX5, _loop(found="k, int(np.argmax(bad))"), "np.unravel_index")


def test_ex5_rejects_largest_difference_instead_of_first():
    found = "k, np.unravel_index(int(np.argmax(np.abs(a - n))), a.shape)"
    _rejected(*EX5, _loop(found=found), "later one more so", "entry (1, 0)")


def test_ex5_rejects_looking_at_the_first_input_only():
    wrong = _solved(
        EX5[1],
        """
a, n = analytic[0], numeric[0]
bad = np.abs(a - n) > atol + rtol * np.abs(n)
if bad.any():
    return 0, np.unravel_index(int(np.argmax(bad)), a.shape)
return None
""",
    )
    _rejected(*EX5, wrong, "input 1 wrong")


def test_ex5_rejects_last_input_instead_of_first():
    wrong = _solved(
        EX5[1],
        """
found = None
for k, (a, n) in enumerate(zip(analytic, numeric)):
    bad = np.abs(a - n) > atol + rtol * np.abs(n)
    if bad.any():
        found = k, np.unravel_index(int(np.argmax(bad)), a.shape)
return found
""",
    )
    _rejected(*EX5, wrong, "both inputs wrong")


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
