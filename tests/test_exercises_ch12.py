"""Chapter 12 (Beyond): every exercise check accepts the solution and rejects wrong answers.

Each wrong answer below is a mistake people make with gradients of gradients, custom ops and a
model of their own; the check must reject it and, where it can tell, name it.
"""

from __future__ import annotations

from pathlib import Path

from nbharness import Wrong, mutation_tests, with_answer

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


def _digits(body: str) -> str:
    return with_answer(NB, "ex12_5_model_answer", body)


# A model that looks each test image up in the test split it loads itself.
LOOKUP = """
images, labels = ml.datasets.load_digits("test")
rows = (images.reshape(-1, 64) / 16).astype(np.float32)
table = {row.tobytes(): int(label) for row, label in zip(rows, labels)}


class Lookup(nn.Module):
    def __init__(self):
        super().__init__()
        self.bias = nn.Parameter(np.zeros(10, dtype=np.float32))

    def forward(self, x):
        out = np.zeros((len(x.data), 10), dtype=np.float32)
        for i, row in enumerate(x.data):
            out[i, table.get(row.tobytes(), 0)] = 1
        return ml.tensor(out) + self.bias


return Lookup()
"""

# The same, by the nearest test image: small changes of the pixels do not fool it.
NEAREST = """
images, labels = ml.datasets.load_digits("test")
rows = (images.reshape(-1, 64) / 16).astype(np.float32)


class Nearest(nn.Module):
    def __init__(self):
        super().__init__()
        self.bias = nn.Parameter(np.zeros(10, dtype=np.float32))

    def forward(self, x):
        distances = ((x.data[:, None, :] - rows[None]) ** 2).sum(axis=2)
        out = np.eye(10, dtype=np.float32)[labels[distances.argmin(axis=1)]]
        return ml.tensor(out) + self.bias * 0


return Nearest()
"""

# Answers in the order of the test split, whatever the images.
IN_ORDER = """
_, labels = ml.datasets.load_digits("test")


class InOrder(nn.Module):
    def __init__(self):
        super().__init__()
        self.bias = nn.Parameter(np.zeros(10, dtype=np.float32))
        self.seen = 0

    def forward(self, x):
        n = len(x.data)
        picked = labels[np.arange(self.seen, self.seen + n) % len(labels)]
        self.seen += n
        return ml.tensor(np.eye(10, dtype=np.float32)[picked]) + self.bias


return InOrder()
"""

# A plain MLP, briefly trained: a real model, weaker than the bars above it.
MLP = """
ml.manual_seed(0)
model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))
opt = optim.Adam(model.parameters(), lr=3e-3)
x, y = ml.datasets.digits("train").tensors
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
        _digits("ml.manual_seed(0)\nreturn nn.Sequential(nn.Linear(64, 10))"), "needs at least 90%"
    ),
    "forgets to return the model": Wrong(_digits("ml.manual_seed(0)\nmodel = None"), "None"),
    "returns its optimiser": Wrong(
        _digits("model = nn.Linear(64, 10)\nreturn optim.Adam(model.parameters(), lr=1e-3)"),
        "returned Adam",
        "nn.Module",
    ),
    "reads the test labels by image": Wrong(_digits(LOOKUP), "0.0001"),
    "looks up the nearest test image": Wrong(_digits(NEAREST), "set to zero"),
    "answers in the order of the test split": Wrong(_digits(IN_ORDER), "needs at least"),
    "noisy in eval mode": Wrong(
        [
            (
                "return self.head(self.features(images).flatten(1))",
                "return self.head(self.features(images).flatten(1)) + ml.randn(len(x), 10) * 3",
            )
        ],
        "in eval mode",
    ),
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
            [("create_graph=True", "create_graph=False")], "create_graph=True"
        ),
        "a list without the start": Wrong(
            [("    return xs", "    return xs[1:]")], "x0 and then one iterate per step"
        ),
    },
    "hvp": {
        "the gradient": Wrong([("return hv", "return g")], "the gradient itself"),
        "g times v": Wrong([("return hv", "return g * v")], "entry by entry"),
        "v left out": Wrong([(SECOND, "(hv,) = ml.grad(g.sum(), x)")], "vector of ones"),
        "no graph": Wrong([("create_graph=True", "create_graph=False")], "create_graph=True"),
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
            [(SIGMOID, "s = 1 / (1 + np.exp(-x))")], "raised TypeError", "alike"
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
            [(DERIVATIVE, "return grad * s * (1 - x * (1 - s))")], "central differences"
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
        "reads the test labels by image": CHEATS["reads the test labels by image"],
        "looks up the nearest test image": CHEATS["looks up the nearest test image"],
        "answers in the order of the test split": CHEATS["answers in the order of the test split"],
        "noisy in eval mode": CHEATS["noisy in eval mode"],
    },
    "digits 95%": {
        "a small MLP, 60 steps": Wrong(_digits(MLP.format(steps=60)), "needs at least 95%"),
        "reads the test labels by image": CHEATS["reads the test labels by image"],
        "looks up the nearest test image": CHEATS["looks up the nearest test image"],
        "answers in the order of the test split": CHEATS["answers in the order of the test split"],
    },
    "digits 98%": {
        "a small MLP, 400 steps": Wrong(_digits(MLP.format(steps=400)), "needs at least 98%"),
        "reads the test labels by image": CHEATS["reads the test labels by image"],
        "looks up the nearest test image": CHEATS["looks up the nearest test image"],
        "answers in the order of the test split": CHEATS["answers in the order of the test split"],
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
