"""Chapter 11 (Regularisation and normalisation): every exercise check accepts the solution and
rejects wrong answers.

Each wrong answer below is a mistake people make when they write dropout, derive batch norm's
backward pass or write layer norm; the check must reject it and, where it can tell, name it.
"""

import functools
from pathlib import Path

import pytest
from nbharness import edited, rejected, run_check, unanswered

NB = Path(__file__).resolve().parents[1] / "solutions" / "11_regularisation_and_normalisation.ipynb"

_rejected = functools.partial(rejected, NB)
_unanswered = functools.partial(unanswered, NB)

# --------------------------------------------------------------------------------------------
# Exercise 1: my_dropout

EX1 = ("ex11_1_dropout_check", "ex11_1_dropout_answer")
KEEP = "keep = ml.rand(*x.shape, dtype=np.float64).data >= p"
SCALE = "return x * (keep / (1 - p)).astype(x.dtype)"


def _dropout(*edits):
    return edited(NB, EX1[1], list(edits))


def test_ex1_solution_passes(capsys):
    run_check(NB, EX1[0])
    assert "✓ my_dropout" in capsys.readouterr().out


def test_ex1_unanswered_raises_not_implemented():
    _unanswered(*EX1)


@pytest.mark.parametrize(
    ("edits", "words"),
    [
        ([(KEEP, KEEP.replace(">= p", "< p"))], ["probability of *dropping*"]),
        ([(SCALE, "return x * keep.astype(x.dtype)")], ["1 / (1 - p)", "not scaled"]),
        ([(SCALE, "return x * (keep * (1 - p)).astype(x.dtype)")], ["shrinks"]),
        ([(SCALE, "return x * (keep / (1 - p))")], ["float32"]),
        ([("if not training or p == 0:", "if p == 0:")], ["training=False", "evaluation"]),
        ([("    if p == 1:\n        return x * np.zeros(x.shape, dtype=x.dtype)\n", "")],
         ["p=1.0", "zeros"]),
        ([(KEEP, "keep = np.random.random(x.shape) >= p")], ["ml.manual_seed", "ml.rand"]),
        ([(KEEP, "keep = np.random.default_rng(0).random(x.shape) >= p")], ["same entries"]),
        ([(SCALE, "return Tensor(x.data * (keep / (1 - p)).astype(x.dtype))")],
         ["x.grad is None", "no graph"]),
        ([(KEEP, "keep = ml.rand(x.shape[-1], dtype=np.float64).data >= p")],
         ["kept"]),
    ],
    ids=["keeps-p", "no-scaling", "scales-by-1-p", "float64-mask", "drops-in-eval",
         "divides-by-zero", "numpy-global-rng", "fixed-mask", "off-the-graph", "one-mask-per-row"],
)  # fmt: skip
def test_ex1_rejects(edits, words):
    _rejected(*EX1, _dropout(*edits), *words)


# --------------------------------------------------------------------------------------------
# Exercise 2: batch norm's backward by hand

EX2 = ("ex11_2_batch_norm_backward_check", "ex11_2_batch_norm_backward_answer")
DX = "dx = (g - g.mean(axis=0) - x_hat * (g * x_hat).mean(axis=0)) / std"


def _backward(*edits):
    return edited(NB, EX2[1], list(edits))


def test_ex2_solution_passes(capsys):
    run_check(NB, EX2[0])
    assert "✓ batch_norm_backward" in capsys.readouterr().out


def test_ex2_unanswered_raises_not_implemented():
    _unanswered(*EX2)


@pytest.mark.parametrize(
    ("edits", "words"),
    [
        ([(DX, "dx = g / std")], ["dx differs", "constants"]),
        ([(DX, "dx = (g - x_hat * (g * x_hat).mean(axis=0)) / std")], ["sum to zero"]),
        ([(DX, "dx = (g - g.mean(axis=0)) / std")], ["dx differs"]),
        ([(DX, DX.replace("g * x_hat", "dout * x_hat"))], ["dx differs"]),
        ([(DX, DX.replace("g = ", "g_ = ").replace("(g ", "(dout ").replace("g.mean", "dout.mean")
           .replace("(g *", "(dout *")), ("g = dout * gamma", "g = dout")], ["dx differs"]),
        ([("std = np.sqrt(x.var(axis=0) + eps)", "std = np.sqrt(x.var(axis=0, ddof=1) + eps)")],
         ["dgamma", "biased"]),
        ([("std = np.sqrt(x.var(axis=0) + eps)", "std = np.sqrt(x.var(axis=0)) + eps")],
         ["dgamma", "inside the square root"]),
        ([("dbeta = dout.sum(axis=0)", "dbeta = dout.mean(axis=0)")], ["dbeta", "sum"]),
        ([("dgamma = (dout * x_hat).sum(axis=0)", "dgamma = dout * x_hat")],
         ["dgamma has shape", "sum over the batch"]),
        ([("dgamma = (dout * x_hat).sum(axis=0)", "dgamma = dout.sum(axis=0)")], ["dgamma"]),
        ([("return dx, dgamma, dbeta", "return dx, dbeta, dgamma")], ["dbeta"]),
        ([("return dx, dgamma, dbeta", "return dx")], ["returned ndarray", "tuple"]),
    ],
    ids=["mean-and-var-constant", "no-mean-path", "no-variance-path", "gamma-missing-in-a-term",
         "gamma-forgotten", "unbiased-variance", "eps-outside-root", "dbeta-mean",
         "dgamma-not-summed", "dgamma-without-x-hat", "swapped", "only-dx"],
)  # fmt: skip
def test_ex2_rejects(edits, words):
    _rejected(*EX2, _backward(*edits), *words)


def test_ex2_rejects_a_numerical_gradient_that_is_not_closed_form_only_by_its_errors():
    """A loop over the examples that is right is accepted: the check judges values, not style."""
    loop = _backward(
        (
            DX,
            "dx = np.stack([(g[i] - g.mean(axis=0) - x_hat[i] * (g * x_hat).mean(axis=0)) "
            "/ std for i in range(len(x))])",
        )
    )
    run_check(NB, EX2[0], replace={EX2[1]: loop})


# --------------------------------------------------------------------------------------------
# Exercise 3: my_layer_norm

EX3 = ("ex11_3_layer_norm_check", "ex11_3_layer_norm_answer")
DIMS = "dims = tuple(range(x.ndim - len(normalized_shape), x.ndim))"
VAR = "var = (centred * centred).mean(dim=dims, keepdim=True)"
OUT = "out = centred / (var + eps).sqrt()"


def _layer_norm(*edits):
    return edited(NB, EX3[1], list(edits))


def test_ex3_solution_passes(capsys):
    run_check(NB, EX3[0])
    assert "✓ my_layer_norm" in capsys.readouterr().out


def test_ex3_unanswered_raises_not_implemented():
    _unanswered(*EX3)


@pytest.mark.parametrize(
    ("edits", "words"),
    [
        ([(DIMS, "dims = (0,)")], ["not over the batch"]),
        ([(DIMS, "dims = (x.ndim - 1,)")], ["(3, 4)", "not only the last one"]),
        ([(VAR, "var = (centred * centred).sum(dim=dims, keepdim=True) / "
                "(np.prod(normalized_shape) - 1)")], ["biased"]),
        ([(OUT, "out = centred / (var.sqrt() + eps)")], ["inside the square root"]),
        ([("out = out + bias", "out = out - bias")], ["weight and bias"]),
        ([(OUT, "out = Tensor(centred.data / np.sqrt(var.data + eps))")],
         ["grad is None", "no graph"]),
        ([(OUT, "out = centred / Tensor(np.sqrt(var.data + eps))")], ["x.grad differs"]),
    ],
    ids=["over-the-batch", "last-dim-only", "unbiased", "eps-outside-root", "bias-sign",
         "off-the-graph", "detached-std"],
)  # fmt: skip
def test_ex3_rejects(edits, words):
    _rejected(*EX3, _layer_norm(*edits), *words)
