"""Chapter 12 (Beyond): every exercise check accepts the solution and rejects wrong answers.

Each wrong answer below is a mistake people make with gradients of gradients, custom ops and a
model of their own; the check must reject it and, where it can tell, name it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from forged_data import forged_data_test
from nbharness import Wrong, answer_source, mutation_tests, with_answer

NB = Path(__file__).resolve().parents[1] / "solutions" / "12_beyond.ipynb"

EXERCISES = {
    "newton": ("ex12_1_newton_answer", "ex12_1_newton_check"),
    "hvp": ("ex12_2_hvp_answer", "ex12_2_hvp_check"),
    "ste": ("ex12_3_ste_answer", "ex12_3_ste_check"),
    "silu": ("ex12_4_silu_answer", "ex12_4_silu_check"),
    "digits 90%": ("ex12_5_model_answer", "ex12_5a_digits_check"),
    "digits 95%": ("ex12_5_model_answer", "ex12_5b_digits_check"),
    "digits 98%": ("ex12_5_model_answer", "ex12_5c_digits_check"),
}

STEP = "xs.append(xs[-1] - d1.item() / float(d2))"
SECOND = "(hv,) = ml.grad((g * v).sum(), x)"
SAVE = "ctx.save_for_backward(np.abs(a) <= 1)"
RETURN = "return grad * inside"
SIGMOID = "s = 1 / (1 + alike.exp(-x))"
DERIVATIVE = "return grad * s * (1 + x * (1 - s))"
KEEP = "ctx.save_for_backward(x)"
FORWARD = "return x / (1 + np.exp(-x))"


class _ByCode(dict):
    """The probe's store of trained models, keyed by the training function's code instead of the
    function object (see one_training_per_answer)."""

    @staticmethod
    def _key(train_my_model):
        return train_my_model.__code__, repr(train_my_model.__defaults__)

    def get(self, train_my_model, default=None):
        return super().get(self._key(train_my_model), default)

    def __setitem__(self, train_my_model, data):
        super().__setitem__(self._key(train_my_model), data)


@pytest.fixture(autouse=True, scope="module")
def one_training_per_answer():
    """In the lab, the three digits checks share one training: the probe keeps the trained model
    per training function. Each test here runs the notebook afresh, which makes a new function of
    the same code, so here the store is keyed by the code: the (seeded) solution trains once for
    all its tests, not six times; every wrong answer has code of its own and trains itself."""
    from minilucid_course.checks import ch12

    kept = ch12._TRAINED
    ch12._TRAINED = _ByCode()
    yield
    ch12._TRAINED = kept


def _digits(body: str) -> str:
    return with_answer(NB, "ex12_5_model_answer", body)


# A module of its own: the check rebuilds only an nn.Sequential of the package's layers.
OWN_CLASS = """
class Digits(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Linear(64, 10)

    def forward(self, x):
        return self.head(x.reshape(len(x.data), 64))


return Digits()
"""

# Labels replayed in the order the images come in, by a layer that counts its calls.
REPLAY = """
class Replay(nn.Linear):
    seen = 0

    def forward(self, x):
        n = len(x.data)
        Replay.seen += n
        return super().forward(x)


return nn.Sequential(nn.Flatten(), Replay(64, 10))
"""

# The nearest test image, held in the parameters: each row of the first Linear is one test
# image (normalised), and only an image that matches one well gets past the ReLU.
NEAREST = """
images, labels = ml.datasets.load_digits("test")
rows = images.reshape(-1, 64).astype(np.float64)
rows = rows - rows.mean(axis=1, keepdims=True)
rows = rows / np.sqrt((rows**2).mean(axis=1, keepdims=True) + 1e-5)
model = nn.Sequential(
    nn.Flatten(), nn.LayerNorm(64, elementwise_affine=False), nn.Linear(64, len(rows)),
    nn.ReLU(), nn.Linear(len(rows), 10, bias=False),
)
model[2].weight.data[...] = rows / 64
model[2].bias.data[...] = -0.97
model[4].weight.data[...] = np.eye(10)[labels].T * 100
return model
"""

# The test split, trained on: only grading's policy can see this (the judge gets a model).
ON_TEST = """
ml.manual_seed(0)
model = nn.Sequential(nn.Flatten(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
opt = optim.Adam(model.parameters(), lr=3e-3)
x, y = ml.datasets.digits("test").tensors
for step in range(300):
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
return model
"""

# A plain MLP, briefly trained: a real model, weaker than the bars above it.
MLP = """
ml.manual_seed(0)
model = nn.Sequential(nn.Flatten(), nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))
opt = optim.Adam(model.parameters(), lr=3e-3)
x, y = train.tensors
for step in range({steps}):
    batch = np.random.default_rng(step).integers(0, len(y), 32)
    loss = nn.functional.cross_entropy(model(x[batch]), y[batch])
    opt.zero_grad()
    loss.backward()
    opt.step()
return model
"""

CHEATS = {
    "untrained": Wrong(
        _digits("ml.manual_seed(0)\nreturn nn.Sequential(nn.Flatten(), nn.Linear(64, 10))"),
        "needs at least 90%",
    ),
    "forgets to return the model": Wrong(_digits("ml.manual_seed(0)\nmodel = None"), "None"),
    "returns its optimiser": Wrong(
        _digits("model = nn.Linear(64, 10)\nreturn optim.Adam(model.parameters(), lr=1e-3)"),
        "returned Adam",
        "nn.Module",
    ),
    "a module of its own class": Wrong(_digits(OWN_CLASS), "is a Digits", "nn.Sequential"),
    "replays labels by counting its calls": Wrong(
        _digits(REPLAY), "layer 1", "Replay", "package's own layers"
    ),
    "holds the test images in its parameters": Wrong(_digits(NEAREST), "near-copies of"),
}


MUTANTS = {
    "newton": {
        "a gradient step": Wrong(
            [(STEP, "xs.append(xs[-1] - d1.item())")], "gradient-descent step"
        ),
        "the step's sign": Wrong(
            [(STEP, "xs.append(xs[-1] + d1.item() / float(d2))")], "wrong sign"
        ),
        "the fraction inverted": Wrong(
            [(STEP, "xs.append(xs[-1] - float(d2) / d1.item())")], "upside down"
        ),
        "half a step": Wrong(
            [(STEP, "xs.append(xs[-1] - d1.item() / float(d2) / 2)")],
            "iterate 1 is not the Newton step",
        ),
        "a constant curvature": Wrong(
            [(STEP, "xs.append(xs[-1] - d1.item() / 2.0)")], "iterate 1 is not the Newton step"
        ),
        "a first gradient without a graph": Wrong(
            [("create_graph=True", "create_graph=False")], "differentiated again"
        ),
        "a list without the start": Wrong(
            [("    return xs", "    return xs[1:]")], "x0 and then one iterate per step"
        ),
    },
    "hvp": {
        "the gradient": Wrong([("return hv", "return g")], "the gradient itself"),
        "g times v": Wrong([("return hv", "return g * v")], "entry by entry"),
        "v left out": Wrong([(SECOND, "(hv,) = ml.grad(g.sum(), x)")], "vector of ones"),
        "no graph": Wrong([("create_graph=True", "create_graph=False")], "differentiated again"),
        "times v again": Wrong(
            [(SECOND, "(hv,) = ml.grad((g * v).sum(), x)\n    hv = hv * v")], "not H v"
        ),
        "g . g": Wrong([(SECOND, "(hv,) = ml.grad((g * g).sum(), x)")], "not H v"),
    },
    "ste": {
        "identity forward": Wrong([("return np.round(a)", "return a")], "is not round(x)"),
        "floor": Wrong([("return np.round(a)", "return np.floor(a)")], "is not round(x)"),
        "straight through everywhere": Wrong([(RETURN, "return grad")], "also where |x| > 1"),
        "true derivative": Wrong([(RETURN, "return grad * 0")], "round's own derivative"),
        "one-sided mask": Wrong([(SAVE, "ctx.save_for_backward(a < 1)")], "outside [-1, 1]"),
        "a mask without its ends (|x| < 1)": Wrong(
            [(SAVE, "ctx.save_for_backward(np.abs(a) < 1)")], "at x = [-1, 1]", "|x| <= 1"
        ),
        "narrow mask": Wrong(
            [(SAVE, "ctx.save_for_backward(np.abs(a) < 0.5)")], "not the gradient of clamp"
        ),
        "np.where backward": Wrong([(RETURN, "return np.where(inside, grad, 0)")], "create_graph"),
        "tensor lost": Wrong(
            [(RETURN, "return np.asarray(grad * inside)")], "RoundSTE.backward returned"
        ),
    },
    "silu": {
        "backward on .data (no second derivative)": Wrong(
            [(SIGMOID, "s = 1 / (1 + np.exp(-(x.data if isinstance(x, ml.Tensor) else x)))")],
            "a constant",
        ),
        "np.exp on a tensor": Wrong(
            [(SIGMOID, "s = 1 / (1 + np.exp(-x))")], "raised TypeError", "constants"
        ),
        "sigmoid saved in forward": Wrong(
            [
                (KEEP, "ctx.save_for_backward(x, 1 / (1 + np.exp(-x)))"),
                ("(x,) = ctx.saved_tensors\n        " + SIGMOID, "(x, s) = ctx.saved_tensors"),
            ],
            "create_graph=True",
        ),
        "half the product rule": Wrong([(DERIVATIVE, "return grad * s")], "product rule"),
        "a sign slip in the derivative": Wrong(
            [(DERIVATIVE, "return grad * s * (1 - x * (1 - s))")], "not that of x * sigmoid(x)"
        ),
        "the tensor path's sigmoid of -x (second derivative of the wrong sign)": Wrong(
            [
                (
                    SIGMOID,
                    "s = 1 / (1 + alike.exp(x if isinstance(x, ml.Tensor) else -x))",
                )
            ],
            "Hessian-vector product",
        ),
        "a constant array returned on tensors": Wrong(
            [(DERIVATIVE, "return alike.plain(grad * s * (1 + x * (1 - s)))")], "create_graph"
        ),
        "forward is the sigmoid": Wrong([(FORWARD, "return 1 / (1 + np.exp(-x))")], "x * sigmoid"),
        "forward in float32": Wrong(
            [(FORWARD, "return (x / (1 + np.exp(-x))).astype(np.float32)")], "float32"
        ),
        "backward of the identity": Wrong([(DERIVATIVE, "return grad")], "product rule"),
    },
    "digits 90%": {
        "untrained": CHEATS["untrained"],
        "forgets to return the model": CHEATS["forgets to return the model"],
        "returns its optimiser": CHEATS["returns its optimiser"],
        "a module of its own class": CHEATS["a module of its own class"],
        "replays labels by counting its calls": CHEATS["replays labels by counting its calls"],
        "holds the test images in its parameters": CHEATS[
            "holds the test images in its parameters"
        ],
    },
    "digits 95%": {
        "a small MLP, 60 steps": Wrong(_digits(MLP.format(steps=60)), "needs at least 95%"),
        "holds the test images in its parameters": CHEATS[
            "holds the test images in its parameters"
        ],
    },
    "digits 98%": {
        "a small MLP, 400 steps": Wrong(_digits(MLP.format(steps=400)), "needs at least 98%"),
        "replays labels by counting its calls": CHEATS["replays labels by counting its calls"],
    },
}


DONE = {
    "newton": "✓ newton_1d",
    "hvp": "✓ hvp",
    "ste": "✓ RoundSTE",
    "silu": "✓ SiLU",
    "digits 90%": "at least 90%",
    "digits 95%": "at least 95%",
    "digits 98%": "at least 98%",
}


test_the_solution_passes, test_a_wrong_answer_is_rejected, test_the_stub_raises = mutation_tests(
    NB,
    EXERCISES,
    MUTANTS,
    stand_ins={check: "pass" for _, check in EXERCISES.values()},  # each check judged alone
    done=DONE,
)


test_forged_data_is_wrong = forged_data_test(NB, EXERCISES, seeded=("newton", "hvp", "ste", "silu"))


def test_the_test_split_is_out_of_reach():
    """The model's training function gets the training and validation splits only; an answer
    that loads a split itself (the test split, to train on it or to copy it into parameters)
    names the dataset module, which grading's policy refuses before anything runs."""
    policy = pytest.importorskip("minilucid_course.policy")
    from minilucid_course.checks.ch12 import EXERCISE_DIGITS

    for at_least, exercise in EXERCISE_DIGITS.items():
        honest = answer_source(NB, "ex12_5_model_answer")
        assert not policy.violations(honest, exercise.forbidden, exercise.imports), at_least
        for cheat in (ON_TEST, NEAREST):
            source = _digits(cheat)
            assert policy.violations(source, exercise.forbidden, exercise.imports), at_least
