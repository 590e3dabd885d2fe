"""Chapter 11 (Regularisation and normalisation): every exercise check accepts the solution and
rejects plausible wrong answers.

Each wrong answer below is a mistake people make when they write dropout, batch norm's forward
pass with its running statistics, batch norm's backward pass by hand or layer norm. One style
(tests/nbharness.py): EXERCISES names each exercise's answer and check cells, MUTANTS the wrong
answers as edits of the solution's answer; Wrong(...) also names words the message must contain.
"""

from __future__ import annotations

from pathlib import Path

from forged_data import forged_data_test
from nbharness import Wrong, edited, mutation_tests, run_check

NB = Path(__file__).resolve().parents[1] / "solutions" / "11_regularisation_and_normalisation.ipynb"

EXERCISES = {
    "dropout": ("ex11_1_dropout_answer", "ex11_1_dropout_check"),
    "batch_norm": ("ex11_2_batch_norm_answer", "ex11_2_batch_norm_check"),
    "batch_norm_backward": (
        "ex11_3_batch_norm_backward_answer",
        "ex11_3_batch_norm_backward_check",
    ),
    "layer_norm": ("ex11_4_layer_norm_answer", "ex11_4_layer_norm_check"),
}
DONE = {
    "dropout": "✓ my_dropout",
    "batch_norm": "✓ MyBatchNorm1d",
    "batch_norm_backward": "✓ batch_norm_backward",
    "layer_norm": "✓ my_layer_norm",
}

KEEP = "keep = ml.rand(*x.shape, dtype=np.float64).data >= p"
SCALE = "return x * (keep / (1 - p)).astype(x.dtype)"

RUNNING_MEAN = "self.running_mean.data = (1 - m) * self.running_mean.data + m * mean.data"
RUNNING_VAR = "self.running_var.data = (1 - m) * self.running_var.data + m * unbiased"
EVAL = "x_hat = (x - self.running_mean.data) / np.sqrt(self.running_var.data + self.eps)"
AFFINE = "return x_hat * self.weight + self.bias"
VAR_BUFFER = 'self.register_buffer("running_var", Tensor(np.ones(num_features, dtype=np.float32)))'
MEAN_BUFFER = (
    'self.register_buffer("running_mean", Tensor(np.zeros(num_features, dtype=np.float32)))'
)

DX = "dx = (g - g.mean(axis=0) - x_hat * (g * x_hat).mean(axis=0)) / std"

DIMS = "dims = tuple(range(x.ndim - len(normalized_shape), x.ndim))"
VAR = "spread = ((x - mean) ** 2).mean(dim=dims, keepdim=True)"
OUT = "normalised = (x - mean) / (spread + eps).sqrt()"

MUTANTS = {
    "dropout": {
        "keeps with probability p": Wrong(
            [(KEEP, KEEP.replace(">= p", "< p"))], "probability of *dropping*"
        ),
        "no scaling": Wrong(
            [(SCALE, "return x * keep.astype(x.dtype)")], "1 / (1 - p)", "not scaled"
        ),
        "scales by 1 - p": Wrong(
            [(SCALE, "return x * (keep * (1 - p)).astype(x.dtype)")], "shrinks"
        ),
        "a float64 mask": Wrong([(SCALE, "return x * (keep / (1 - p))")], "float32"),
        "drops in eval": Wrong(
            [("if not training or p == 0:", "if p == 0:")], "training=False", "evaluation"
        ),
        "scales its input in place in eval": Wrong(
            [
                (
                    "    if not training or p == 0:\n        return x\n",
                    "    if not training:\n        x.data *= 1 - p\n        return x\n"
                    "    if p == 0:\n        return x\n",
                )
            ],
            "training=False",
            "in place",
        ),
        "divides by zero at p = 1": Wrong(
            [("    if p == 1:\n        return x * np.zeros(x.shape, dtype=x.dtype)\n", "")],
            "p=1.0",
            "zeros",
        ),
        "NumPy's global generator": Wrong(
            [(KEEP, "keep = np.random.random(x.shape) >= p")], "ml.manual_seed resets"
        ),
        "a fixed mask": Wrong(
            [(KEEP, "keep = np.random.default_rng(0).random(x.shape) >= p")], "same entries"
        ),
        "off the graph": Wrong(
            [(SCALE, "return Tensor(x.data * (keep / (1 - p)).astype(x.dtype))")],
            "x.grad is None",
            "no graph",
        ),
        "one mask per row": Wrong(
            [(KEEP, "keep = ml.rand(x.shape[-1], dtype=np.float64).data >= p")], "kept"
        ),
    },
    "batch_norm": {
        "the package's batch norm under another name": Wrong(
            "from minilucid import nn\n\n\nclass MyBatchNorm1d(nn.BatchNorm1d):\n    pass\n",
            "minilucid's own BatchNorm1d",
        ),
        "biased running variance": Wrong(
            [("unbiased = var.data * n / (n - 1)", "unbiased = var.data")], "unbiased"
        ),
        "momentum inverted": Wrong(
            [
                (
                    RUNNING_MEAN,
                    "self.running_mean.data = m * self.running_mean.data + (1 - m) * mean.data",
                ),
                (
                    RUNNING_VAR,
                    "self.running_var.data = m * self.running_var.data + (1 - m) * unbiased",
                ),
            ],
            "momentum weighs the old value",
        ),
        "momentum fixed at 0.1": Wrong(
            [("n, m = x.shape[0], self.momentum", "n, m = x.shape[0], 0.1")],
            "momentum 0.3",
            "running statistics are wrong",
        ),
        "running statistics never updated": Wrong(
            [(RUNNING_MEAN, "pass"), (RUNNING_VAR, "pass")], "did not move"
        ),
        "eval uses the batch's statistics": Wrong(
            [(EVAL, "x_hat = (x - x.mean(dim=0)) / np.sqrt(x.data.var(axis=0) + self.eps)")],
            "eval mode",
            "batch's statistics, not the running ones",
        ),
        "eval trains: batch statistics and updates": Wrong(
            [("        if self.training:\n", "        if True:\n")],
            "eval mode",
            "running statistics changed",
        ),
        "running statistics updated in eval": Wrong(
            [
                (
                    "        else:\n",
                    "        else:\n            self.running_mean.data = 0.9 * "
                    "self.running_mean.data + 0.1 * x.data.mean(axis=0)\n",
                )
            ],
            "running statistics changed",
        ),
        "running mean kept on the graph": Wrong(
            [(RUNNING_MEAN, "self.running_mean = (1 - m) * self.running_mean + m * mean")],
            "requires grad",
        ),
        "eps outside the square root": Wrong(
            [
                (
                    "x_hat = centred / (var + self.eps).sqrt()",
                    "x_hat = centred / (var.sqrt() + self.eps)",
                )
            ],
            "output differs",
            "outside the square root",
        ),
        "unbiased variance to normalise": Wrong(
            [
                (
                    "var = (centred * centred).mean(dim=0)  # biased: divides by n",
                    "var = (centred * centred).sum(dim=0) / (n - 1)",
                )
            ],
            "biased variance",
        ),
        "eval with eps outside the square root": Wrong(
            [
                (
                    EVAL,
                    EVAL.replace(
                        "np.sqrt(self.running_var.data + self.eps)",
                        "(np.sqrt(self.running_var.data) + self.eps)",
                    ),
                )
            ],
            "eval mode",
            "eps is added outside the square root",
        ),
        "eval without eps": Wrong(
            [(EVAL, EVAL.replace(" + self.eps)", ")"))], "eval mode", "output differs"
        ),
        "statistics over the features of each example": [
            ("mean = x.mean(dim=0)", "mean = x.mean(dim=1, keepdim=True)"),
            (
                "var = (centred * centred).mean(dim=0)  # biased: divides by n",
                "var = (centred * centred).mean(dim=1, keepdim=True)",
            ),
        ],
        "running statistics as parameters": Wrong(
            [
                (
                    MEAN_BUFFER,
                    "self.running_mean = Parameter(np.zeros(num_features, dtype=np.float32))",
                )
            ],
            "two Parameters",
        ),
        "running variance not a buffer": Wrong(
            [(VAR_BUFFER, "self.running_var = Tensor(np.ones(num_features, dtype=np.float32))")],
            "register_buffer",
        ),
        "running variance starts at zero": Wrong(
            [(VAR_BUFFER, VAR_BUFFER.replace("np.ones(", "np.zeros("))], "running_var should start"
        ),
        "weight and bias swapped": Wrong(
            [(AFFINE, "return x_hat * self.bias + self.weight")], "output differs"
        ),
        "weight and bias from .data": Wrong(
            [(AFFINE, "return x_hat * self.weight.data + self.bias.data")], "weight.grad differs"
        ),
    },
    "batch_norm_backward": {
        "mean and variance taken as constants": Wrong(
            [(DX, "dx = g / std")], "dx differs", "constants"
        ),
        "no path through the mean": Wrong(
            [(DX, "dx = (g - x_hat * (g * x_hat).mean(axis=0)) / std")], "sum to zero"
        ),
        "no path through the variance": Wrong(
            [(DX, "dx = (g - g.mean(axis=0)) / std")], "dx differs"
        ),
        "gamma missing in a term": Wrong(
            [(DX, DX.replace("g * x_hat", "dout * x_hat"))], "dx differs"
        ),
        "gamma forgotten": Wrong(
            [
                (
                    DX,
                    DX.replace("(g ", "(dout ")
                    .replace("g.mean", "dout.mean")
                    .replace("(g *", "(dout *"),
                ),
                ("g = dout * gamma", "g = dout"),
            ],
            "dx differs",
        ),
        "unbiased variance": Wrong(
            [
                (
                    "std = np.sqrt(x.var(axis=0) + eps)",
                    "std = np.sqrt(x.var(axis=0, ddof=1) + eps)",
                )
            ],
            "dgamma",
            "biased",
        ),
        "eps outside the root": Wrong(
            [("std = np.sqrt(x.var(axis=0) + eps)", "std = np.sqrt(x.var(axis=0)) + eps")],
            "dgamma",
            "outside the square root",
        ),
        "dbeta a mean": Wrong(
            [("dbeta = dout.sum(axis=0)", "dbeta = dout.mean(axis=0)")], "dbeta", "sum"
        ),
        "dgamma not summed": Wrong(
            [("dgamma = (dout * x_hat).sum(axis=0)", "dgamma = dout * x_hat")],
            "dgamma has shape",
            "for the whole batch",
        ),
        "dgamma without x_hat": Wrong(
            [("dgamma = (dout * x_hat).sum(axis=0)", "dgamma = dout.sum(axis=0)")], "dgamma"
        ),
        "dgamma and dbeta swapped": Wrong(
            [("return dx, dgamma, dbeta", "return dx, dbeta, dgamma")], "dbeta"
        ),
        "only dx": Wrong([("return dx, dgamma, dbeta", "return dx")], "returned ndarray", "tuple"),
    },
    "layer_norm": {
        "over the batch": Wrong([(DIMS, "dims = (0,)")], "over the batch"),
        "last dimension only": Wrong(
            [(DIMS, "dims = (x.ndim - 1,)")], "(3, 4)", "last dimension only"
        ),
        "unbiased variance": Wrong(
            [
                (
                    VAR,
                    "spread = ((x - mean) ** 2).sum(dim=dims, keepdim=True) / "
                    "(np.prod(normalized_shape) - 1)",
                )
            ],
            "biased",
        ),
        "eps outside the root": Wrong(
            [(OUT, "normalised = (x - mean) / (spread.sqrt() + eps)")], "outside the square root"
        ),
        "bias subtracted": Wrong([("scaled + bias", "scaled - bias")], "weight and bias"),
        "off the graph": Wrong(
            [(OUT, "normalised = Tensor((x - mean).data / np.sqrt(spread.data + eps))")],
            "grad is None",
            "no graph",
        ),
        "standard deviation detached": Wrong(
            [(OUT, "normalised = (x - mean) / Tensor(np.sqrt(spread.data + eps))")],
            "x.grad differs",
        ),
    },
}


def _run(exercise: str, answer: str | None = None):
    """Run the notebook to this exercise's check, earlier checks skipped (they pass)."""
    answer_id, check_id = EXERCISES[exercise]
    order = [check for _, check in EXERCISES.values()]
    replace = {check: "pass" for check in order[: order.index(check_id)]}
    if answer is not None:
        replace[answer_id] = answer
    return run_check(NB, check_id, replace=replace)


test_the_solution_passes, test_a_wrong_answer_is_rejected, test_the_stub_raises = mutation_tests(
    NB,
    EXERCISES,
    MUTANTS,
    stand_ins={check: "pass" for _, check in EXERCISES.values()},  # each check judged alone
    done=DONE,
)


def test_a_loop_over_the_examples_that_is_right_is_accepted():
    """The backward check judges values, not style: a correct loop passes."""
    loop = edited(
        NB,
        EXERCISES["batch_norm_backward"][0],
        [
            (
                DX,
                "dx = np.stack([(g[i] - g.mean(axis=0) - x_hat[i] * (g * x_hat).mean(axis=0)) "
                "/ std for i in range(len(x))])",
            )
        ],
    )
    _run("batch_norm_backward", loop)


def test_an_answer_cell_cannot_empty_the_cases():
    from minilucid_course.checks import ch11

    assert isinstance(ch11._FORWARD_CASES, tuple) and ch11._FORWARD_CASES
    assert isinstance(ch11._RUNNING, tuple)


test_forged_data_is_wrong = forged_data_test(
    NB, EXERCISES, seeded=("dropout", "batch_norm", "batch_norm_backward", "layer_norm")
)
