"""Checks for the exercises of chapter 12 (gradients of gradients, your own ops), as probes and
judges.

Each probe calls the learner's code on seeded cases and returns what came out as plain data;
each judge rebuilds the cases and computes every expected value itself: Newton's iterates from
the closed-form derivatives, H v and the gradients through the package's own ops, the accuracy
of the model of Exercise 5 by rebuilding it from its description and parameters and running it
on the test split, which the learner's code never sees.
"""

from __future__ import annotations

import functools
import math
import types
import weakref

import numpy as np

import minilucid as ml
from minilucid import nn
from minilucid.datasets import load_digits
from minilucid_course.checks.common import attempt
from minilucid_course.checks.exercise import Exercise, Wrong, register
from minilucid_course.checks.outcomes import array_of, called, kind, raised_first, record

GRAPH_HINT = "Can the gradient your first ml.grad returns be differentiated again?"


def _show(x) -> str:
    text = np.array2string(np.asarray(x), precision=5, separator=", ", max_line_width=10**6)
    return " ".join(text.split())


# --------------------------------------------------------------------------------------------
# Exercise 1: Newton's method in one dimension

# (name, f on tensors, f', f''): f' and f'' in closed form, for the expected iterates
NEWTON_FUNCTIONS = (
    ("f(x) = x**4 / 4 - x", lambda x: x**4 / 4 - x, lambda x: x**3 - 1, lambda x: 3 * x**2),
    ("f(x) = exp(x) - 2x", lambda x: x.exp() - 2 * x, lambda x: math.exp(x) - 2, math.exp),
    ("f(x) = (x - 1.5)**2", lambda x: (x - 1.5) ** 2, lambda x: 2 * (x - 1.5), lambda x: 2.0),
)
NEWTON_STARTS = ((2.0, 5), (1.0, 4), (-3.0, 2))  # (x0, steps) of the lab


def _newton_cases(seed: int) -> dict:
    rng = np.random.default_rng([12, 1, seed])
    shift = rng.uniform(0, 0.5, 3) if seed else np.zeros(3)
    return {"cases": [[i, x0 + float(d), steps] for i, ((x0, steps), d) in
                      enumerate(zip(NEWTON_STARTS, shift, strict=True))]}  # fmt: skip


def _iterates(step, d1, d2, x0: float, steps: int) -> list:
    xs = [x0]
    for _ in range(steps):
        x = xs[-1]
        xs.append(step(x, d1(x), d2(x)))
    return xs


NEWTON_MISTAKES = types.MappingProxyType(
    {
        "a gradient-descent step x - f'(x), with no second derivative in it": lambda x, g, h: x - g,
        "the step has the wrong sign: x + f'/f'' walks uphill": lambda x, g, h: x + g / h,
        "x - f''/f': the fraction is upside down": lambda x, g, h: x - h / g,
    }
)


def _floats(outcome) -> dict:
    """Plain data for a list of numbers (floats, 0-d tensors, arrays of one number)."""
    rec = record(outcome)
    if "sequence" not in rec:
        return rec
    try:
        return {"floats": [float(ml.tensor(v).data if isinstance(v, ml.Tensor) else v)
                           for v in outcome]}  # fmt: skip
    except (TypeError, ValueError):
        return {"type": f"{type(outcome).__name__} of {type(outcome[0]).__name__}"}


def _probe_newton(cases, newton_1d):
    out = []
    for index, x0, steps in cases["cases"]:
        f = NEWTON_FUNCTIONS[index][1]
        result = attempt(newton_1d, f, x0, steps)
        out.append({"raised": list(result[1:])} if result[0] == "raised" else _floats(result[1]))
    return out


def _judge_newton(cases, data) -> str:
    for (index, x0, steps), rec in zip(cases["cases"], data, strict=True):
        name, _, d1, d2 = NEWTON_FUNCTIONS[index]
        what = f"newton_1d({name}, x0={x0:.4g}, steps={steps})"
        raised_first(rec, what, GRAPH_HINT)
        if "floats" not in rec:
            raise Wrong(
                f"{what} should return a list of numbers (the iterates x0, x1, ...), got "
                f"{kind(rec)}"
            )
        got = np.array(rec["floats"], dtype=np.float64)
        want = _iterates(lambda x, g, h: x - g / h, d1, d2, x0, steps)
        if got.shape != (len(want),):
            raise Wrong(
                f"{what} returned {got.size} numbers, where the contract asks for x0 and then "
                f"one iterate per step ({len(want)})"
            )
        if np.allclose(got, want, rtol=1e-6, atol=1e-9):
            continue
        for words, step in NEWTON_MISTAKES.items():
            if np.allclose(got, _iterates(step, d1, d2, x0, steps), rtol=1e-6, atol=1e-9):
                raise Wrong(f"{what}: {words}")
        k = int(np.argmax(~np.isclose(got, want, rtol=1e-6, atol=1e-9)))
        raise Wrong(f"{what}: iterate {k} is not the Newton step from iterate {k - 1}")
    return "✓ newton_1d takes Newton steps x - f'(x) / f''(x), its derivatives from ml.grad"


EXERCISE_NEWTON = register(
    Exercise(
        check="check_newton_1d",
        chapter="12",
        title="Newton's method in one dimension",
        probe=_probe_newton,
        judge=_judge_newton,
        cases=_newton_cases,
    )
)
check_newton_1d = EXERCISE_NEWTON.lab_check


# --------------------------------------------------------------------------------------------
# Exercise 2: Hessian-vector products


def _cubic(x):
    return (x**3).sum() + x[0] * x[1] * x[2]


def _tanh_mix(x):
    w = ml.tensor(np.array([1.0, -2.0, 0.5, 1.5]))
    return (x.tanh() * w).sum() * x.sum()


HVP_FUNCTIONS = (
    ("f(x) = sum(x**3) + x0 x1 x2", _cubic, 3),
    ("f(x) = sum(w tanh(x)) sum(x)", _tanh_mix, 4),
)
HVP_LAB = (((0.5, -1.0, 2.0), (1.0, 0.0, -1.0)), ((0.3, -0.8, 1.1, 0.2), (0.5, 2.0, -1.0, 1.0)))


def _hvp_cases(seed: int) -> dict:
    if seed == 0:
        return {"cases": [[i, list(x), list(v)] for i, (x, v) in enumerate(HVP_LAB)]}
    rng = np.random.default_rng([12, 2, seed])
    return {"cases": [[i, rng.uniform(-1.5, 1.5, n).tolist(), rng.uniform(-2, 2, n).tolist()]
                      for i, (_, _, n) in enumerate(HVP_FUNCTIONS)]}  # fmt: skip


def _probe_hvp(cases, hvp):
    out = []
    for index, x0, v0 in cases["cases"]:
        x = ml.tensor(np.array(x0), requires_grad=True)
        out.append(called(hvp, HVP_FUNCTIONS[index][1], x, ml.tensor(np.array(v0))))
    return out


def _gradient(f, x0: np.ndarray, create_graph: bool = False):
    x = ml.tensor(x0, requires_grad=True)
    (g,) = ml.grad(f(x), x, create_graph=create_graph)
    return x, g


def _hessian_times(f, x0: np.ndarray, v: np.ndarray) -> np.ndarray:
    """H v by the package's own double backward (the reference)."""
    x, g = _gradient(f, x0, create_graph=True)
    (hv,) = ml.grad((g * ml.tensor(v)).sum(), x)
    return np.asarray(hv.data if isinstance(hv, ml.Tensor) else hv, dtype=np.float64)


def _judge_hvp(cases, data) -> str:
    for (index, x0, v0), rec in zip(cases["cases"], data, strict=True):
        name, f, _ = HVP_FUNCTIONS[index]
        x0, v0 = np.array(x0, dtype=np.float64), np.array(v0, dtype=np.float64)
        what = f"hvp({name}, x={_show(x0)}, v={_show(v0)})"
        raised_first(rec, what, GRAPH_HINT)
        got = array_of(rec, what)
        if got is None:
            raise Wrong(f"{what} returned {kind(rec)}; it should return a Tensor or an array")
        if got.shape != x0.shape:
            raise Wrong(f"{what} has shape {got.shape}; H v has x's shape {x0.shape}")
        want = _hessian_times(f, x0, v0)
        if np.allclose(got, want, rtol=1e-7, atol=1e-9):
            continue
        g = np.asarray(_gradient(f, x0)[1].data, dtype=np.float64)
        ones = _hessian_times(f, x0, np.ones_like(x0))
        if np.allclose(got, g, rtol=1e-6):
            words = "that is the gradient itself, not its derivative along v"
        elif np.allclose(got, g * v0, rtol=1e-6):
            words = "that is gradient * v entry by entry, not a derivative of it"
        elif np.allclose(got, ones, rtol=1e-6, atol=1e-9):
            words = "that is H times a vector of ones: v was left out of the second derivative"
        else:
            words = "that is not H v (the derivative of the gradient along v)"
        raise Wrong(f"{what}: {words}")
    return "✓ hvp differentiates the gradient along v: H v without ever forming H"


EXERCISE_HVP = register(
    Exercise(
        check="check_hvp",
        chapter="12",
        title="A Hessian-vector product",
        probe=_probe_hvp,
        judge=_judge_hvp,
        cases=_hvp_cases,
        forbidden=("hessian", "hvp", "jacobian"),
    )
)
check_hvp = EXERCISE_HVP.lab_check


# --------------------------------------------------------------------------------------------
# Exercise 3: a straight-through estimator, your own op

STE_POINTS = np.array([[-2.3, -1.4, -0.62, -0.2], [0.0, 0.45, 0.8, 1.7]])  # none near +-0.5, +-1
STE_WEIGHTS = np.array([[0.7, -1.3, 0.9, 1.1], [-0.6, 1.4, -0.8, 1.2]])
STE_POINTS.setflags(write=False)
STE_WEIGHTS.setflags(write=False)


def _ste_cases(seed: int) -> dict:
    if seed == 0:
        return {"points": STE_POINTS.tolist(), "weights": STE_WEIGHTS.tolist()}
    rng = np.random.default_rng([12, 3, seed])
    points = rng.uniform(-2.5, 2.5, (2, 4))
    near = np.abs(np.abs(points) - np.round(np.abs(points) * 2) / 2) < 0.05  # away from ±.5, ±1
    points[near] += 0.1
    return {"points": points.tolist(), "weights": rng.uniform(-1.5, 1.5, (2, 4)).tolist()}


def _probe_ste(cases, RoundSTE):  # noqa: N803  (a class)
    points, weights = np.array(cases["points"]), np.array(cases["weights"])
    apply = getattr(RoundSTE, "apply", None)
    if not callable(apply):
        return {"apply": False, "type": type(RoundSTE).__name__}
    data = {"apply": True}
    x = ml.tensor(points.copy(), requires_grad=True)
    outcome = attempt(apply, x)
    data["forward"] = (
        {"raised": list(outcome[1:])} if outcome[0] == "raised" else record(outcome[1])
    )
    if outcome[0] == "raised" or not isinstance(outcome[1], ml.Tensor):
        return data
    data["grad"] = _grad_of(lambda: (outcome[1] * weights).sum(), x)
    ends = ml.tensor(np.array([-1.0, 1.0]), requires_grad=True)
    data["ends"] = _grad_of(lambda: apply(ends).sum(), ends)
    x = ml.tensor(points.copy(), requires_grad=True)
    first = attempt(lambda: ml.grad((apply(x) * x).sum(), x, create_graph=True)[0])
    if first[0] == "raised":
        data["second"] = {"raised": list(first[1:])}
    else:
        data["second"] = _grad_of(lambda: first[1].sum(), x)
    return data


def _grad_of(make, leaf) -> dict:
    """The record of ml.grad(make(), leaf): what the learner's backward gave the engine."""
    outcome = attempt(lambda: ml.grad(make(), leaf)[0])
    return {"raised": list(outcome[1:])} if outcome[0] == "raised" else record(outcome[1])


def _clamp_grad(points: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """d sum(w * clamp(x, -1, 1)) / dx, through the package's clip."""
    x = ml.tensor(points, requires_grad=True)
    (g,) = ml.grad((x.clamp(-1, 1) * ml.tensor(weights)).sum(), x)
    return np.asarray(g.data if isinstance(g, ml.Tensor) else g)


def _judge_ste(cases, data) -> str:
    points = np.array(cases["points"], dtype=np.float64)
    weights = np.array(cases["weights"], dtype=np.float64)
    if data["apply"] is not True:
        raise Wrong(f"RoundSTE is a {data['type']} without apply: not a subclass of Function")
    raised_first(data["forward"], "RoundSTE.apply(x)")
    y = array_of(data["forward"], "RoundSTE.apply(x)")
    if "tensor" not in data["forward"]:
        raise Wrong(f"RoundSTE.apply(x) returned {kind(data['forward'])}, not a Tensor")
    if y.shape != points.shape or not np.array_equal(y, np.round(points)):
        raise Wrong(f"RoundSTE.apply(x) for x = {_show(points)} is not round(x) (got {_show(y)})")
    what = "ml.grad(sum(w * RoundSTE.apply(x)), x)"
    g = array_of(data["grad"], what)
    if g is None or g.shape != points.shape:
        raise Wrong(f"{what} gave {kind(data['grad'])}, not a gradient of x's shape")
    want = _clamp_grad(points, weights)
    if not np.allclose(g, want, rtol=1e-9, atol=1e-12):
        inside = np.abs(points) <= 1
        if np.allclose(g, 0):
            words = (
                "every gradient is 0: that is round's own derivative, which is why it cannot be "
                "trained through"
            )
        elif np.allclose(g, weights):
            words = "the gradient passes everywhere, also where |x| > 1"
        elif np.allclose(g[inside], weights[inside]):
            words = f"outside [-1, 1] the gradient is not 0 (got {_show(g)})"
        else:
            words = f"the gradient {_show(g)} is not the gradient of clamp(x, -1, 1)"
        raise Wrong(f"at x = {_show(points)}: {words}")
    what = "ml.grad(sum(RoundSTE.apply(x)), x) at x = [-1, 1]"
    g = array_of(data["ends"], what)
    if g is None or g.shape != (2,) or not np.allclose(g, 1.0):
        raise Wrong(
            f"at x = [-1, 1] the gradient is {_show(g) if g is not None else kind(data['ends'])}"
            ": the ends belong to the interval where the gradient passes (|x| <= 1, as with "
            "clamp's gradient)"
        )
    what = "differentiating ml.grad(sum(RoundSTE.apply(x) * x), x, create_graph=True) again"
    raised_first(data["second"], what, "Is backward written so that it works on tensors too?")
    h = array_of(data["second"], what)
    if h is None or h.shape != points.shape or not np.allclose(h, 2 * (np.abs(points) <= 1)):
        raise Wrong(
            "the second derivative of sum(RoundSTE(x) * x) is not that of sum(clamp(x) * x) "
            f"(got {_show(h) if h is not None else kind(data['second'])})"
        )
    return "✓ RoundSTE rounds forward and passes the gradient of clamp(x, -1, 1) backward"


EXERCISE_STE = register(
    Exercise(
        check="check_round_ste",
        chapter="12",
        title="Your own op: a straight-through estimator",
        probe=_probe_ste,
        judge=_judge_ste,
        cases=_ste_cases,
        forbidden=("clip", "clamp", "Clip"),
    )
)
check_round_ste = EXERCISE_STE.lab_check


# --------------------------------------------------------------------------------------------
# Exercise 4: an op of your own that differentiates twice (SiLU), checked by Hessian-vector
# products against the package's own x * sigmoid(x)

SILU_POINTS = np.array([-3.7, -1.9, -0.8, -0.15, 0.0, 0.3, 1.1, 2.4, 3.9])
SILU_POINTS.setflags(write=False)

OP_HINT = (
    "Under create_graph the engine hands backward tensors: which steps of your backward does "
    "the engine see as constants?"
)


def _silu_cases(seed: int) -> dict:
    rng = np.random.default_rng(12 if seed == 0 else [12, 4, seed])
    mix, c, x = rng.standard_normal((5, 4)), rng.standard_normal(5), rng.standard_normal(4)
    points = SILU_POINTS if seed == 0 else np.sort(rng.uniform(-4, 4, SILU_POINTS.size))
    return {"points": points.tolist(), "mix": mix.tolist(), "c": c.tolist(), "x": x.tolist()}


def _silu_functions(cases, silu) -> tuple:
    """(description, f on tensors, x0, v): sums of an op in three settings."""
    points = np.array(cases["points"])
    w = ml.tensor(np.linspace(-1.5, 2.0, points.size))
    mix, c = ml.tensor(np.array(cases["mix"])), ml.tensor(np.array(cases["c"]))
    return (
        ("f(x) = sum(w * SiLU(x))", lambda x: (w * silu(x)).sum(), points,
         np.cos(np.arange(points.size))),
        ("f(x) = sum(c * SiLU(A @ x))", lambda x: (c * silu(mix @ x)).sum(),
         np.array(cases["x"]), np.array([1.0, -0.5, 2.0, 0.25])),
        ("f(x) = sum(SiLU(2 * SiLU(x)))", lambda x: silu(2 * silu(x)).sum(), points,
         np.sin(np.arange(points.size) + 1.0)),
    )  # fmt: skip


def _package_silu(x):
    return x * x.sigmoid()


def _probe_silu(cases, SiLU):  # noqa: N803  (a class)
    apply = getattr(SiLU, "apply", None)
    if not callable(apply):
        return {"apply": False, "type": type(SiLU).__name__}
    points = np.array(cases["points"])
    data = {"apply": True, "forward": called(apply, ml.tensor(points.copy(), requires_grad=True))}
    data["cases"] = []
    for _, f, x0, v in _silu_functions(cases, apply):
        facts = {}
        x = ml.tensor(x0.copy(), requires_grad=True)
        facts["grad"] = _grad_of(lambda f=f, x=x: f(x), x)
        xt = ml.tensor(x0.copy(), requires_grad=True)
        first = attempt(lambda f=f, xt=xt: ml.grad(f(xt), xt, create_graph=True)[0])
        if first[0] == "raised":
            facts["graph"] = {"raised": list(first[1:])}
        else:
            gt = first[1]
            facts["graph"] = {"bool": isinstance(gt, ml.Tensor) and gt.grad_fn is not None}
            if facts["graph"]["bool"]:
                second = attempt(lambda gt=gt, xt=xt, v=v: ml.grad(
                    (gt * ml.tensor(v)).sum(), xt, allow_unused=True)[0])  # fmt: skip
                facts["hv"] = (
                    {"raised": list(second[1:])} if second[0] == "raised" else record(second[1])
                )
        data["cases"].append(facts)
    return data


def _judge_silu(cases, data) -> str:
    points = np.array(cases["points"], dtype=np.float64)
    if data["apply"] is not True:
        raise Wrong(f"SiLU is a {data['type']} without apply: not a subclass of Function")
    raised_first(data["forward"], "SiLU.apply(x)")
    if "tensor" not in data["forward"]:
        raise Wrong(f"SiLU.apply(x) returned {kind(data['forward'])}, not a Tensor")
    y = array_of(data["forward"], "SiLU.apply(x)", dtype=None)
    if y.dtype != np.float64:
        raise Wrong(f"SiLU.apply on float64 input gave {y.dtype}, not the input's dtype")
    want = points / (1 + np.exp(-points))
    if y.shape != points.shape or not np.allclose(y, want, rtol=1e-10, atol=1e-12):
        raise Wrong(f"SiLU.apply(x) at x = {_show(points)} is not x * sigmoid(x) (got {_show(y)})")
    for (name, f, x0, v), facts in zip(
        _silu_functions(cases, _package_silu), data["cases"], strict=True
    ):
        what = f"ml.grad({name}, x)"
        raised_first(facts["grad"], what, OP_HINT)
        g = array_of(facts["grad"], what)
        x, want_g = _gradient(f, np.array(x0))
        if g is None or g.shape != x0.shape or not np.allclose(g, want_g.data, 1e-8, 1e-10):
            raise Wrong(
                f"the gradient of {name} at x = {_show(x0)} is not that of x * sigmoid(x): "
                "the product rule, both factors depend on x"
            )
        what = f"ml.grad({name}, x, create_graph=True)"
        raised_first(facts["graph"], what, OP_HINT)
        if facts["graph"].get("bool") is not True:
            raise Wrong(
                f"{what} gave a gradient without a graph, so it cannot be differentiated again. "
                + OP_HINT
            )
        raised_first(facts["hv"], f"differentiating sum(that gradient * v) for {name}", OP_HINT)
        hv = array_of(facts["hv"], name)
        want = _hessian_times(f, np.array(x0), v)
        got = np.zeros_like(want) if hv is None else hv
        if got.shape == want.shape and np.allclose(got, want, rtol=1e-7, atol=1e-9):
            continue
        if got.shape == want.shape and np.allclose(got, 0):
            raise Wrong(
                f"{name}: the Hessian-vector product through your op is 0, but the gradient "
                "does change along v: to the engine your backward is built from constants. "
                + OP_HINT
            )
        raise Wrong(
            f"{name}: the Hessian-vector product through your op (ml.grad of the gradient, "
            "with create_graph=True) is not that of x * sigmoid(x), though the first "
            "derivative is right on arrays: on tensors part of it is a constant to the engine, "
            "or another formula. " + OP_HINT
        )
    return (
        "✓ SiLU: forward x * sigmoid(x), its gradient is the product rule's, and its backward "
        "differentiates again: Hessian-vector products agree with the package's on three "
        "functions"
    )


EXERCISE_SILU = register(
    Exercise(
        check="check_twice_differentiable_op",
        chapter="12",
        title="An op that differentiates twice: SiLU",
        probe=_probe_silu,
        judge=_judge_silu,
        cases=_silu_cases,
        forbidden=("sigmoid", "Sigmoid", "silu", "SiLU_", "softplus"),
    )
)
check_twice_differentiable_op = EXERCISE_SILU.lab_check


# --------------------------------------------------------------------------------------------
# Exercise 5: a model of your own, graded by its accuracy on the digits' test split
#
# The learner's train_my_model(train, val) gets the training and validation splits (as images
# of shape (n, 1, 8, 8)) and returns an nn.Sequential of the package's own layers, trained. Only
# its description (the layers and their settings) and its state dict leave the probe; the judge
# rebuilds the model from those in its own process and measures it on the test split, which
# only the judge loads. A model is thus a fixed function of its input: it cannot count calls,
# read the order the images come in, or keep a table outside its parameters.

DIGITS_POINTS = types.MappingProxyType({0.90: 1, 0.95: 1, 0.98: 2})  # threshold: its points
# The layers a model may be built of, and the settings that describe each (its constructor's).
LAYERS = types.MappingProxyType({
    "Linear": ("in_features", "out_features"),
    "Conv2d": ("in_channels", "out_channels", "kernel_size", "stride", "padding", "dilation",
               "groups"),
    "BatchNorm1d": ("num_features", "eps", "momentum", "affine", "track_running_stats"),
    "BatchNorm2d": ("num_features", "eps", "momentum", "affine", "track_running_stats"),
    "LayerNorm": ("normalized_shape", "eps", "elementwise_affine"),
    "Dropout": ("p",),
    "MaxPool2d": ("kernel_size", "stride", "padding"),
    "AvgPool2d": ("kernel_size", "stride", "padding"),
    "Flatten": ("start_dim", "end_dim"),
    "ReLU": (), "GELU": (), "Tanh": (), "Sigmoid": (),
})  # fmt: skip
_WITH_BIAS = ("Linear", "Conv2d", "LayerNorm")
MAX_LAYERS, MAX_NUMBERS = 64, 2_000_000  # what the judge agrees to rebuild and run
_TRAINED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # train_fn -> its data


def handed_splits() -> tuple:
    """The training and validation splits as the learner's function gets them: TensorDatasets
    of images (n, 1, 8, 8), float32 in [0, 1], and int64 labels."""
    out = []
    for split in ("train", "val"):
        images, labels = load_digits(split)
        x = (images.reshape(-1, 1, 8, 8) / 16).astype(np.float32)
        out.append(ml.data.TensorDataset(ml.tensor(x), ml.tensor(labels.astype(np.int64))))
    return tuple(out)


def _setting(value):
    if isinstance(value, bool | int | float | str) or value is None:
        return value
    if isinstance(value, tuple | list) and all(type(v) is int for v in value):
        return list(value)
    return {"type": type(value).__name__}


def describe(model) -> dict:
    """Plain data for a model: its layers and settings, and its state dict as arrays."""
    if type(model) is not nn.Sequential:
        return {"model": type(model).__name__}
    layers = []
    for layer in model:
        name = type(layer).__name__
        if type(layer) is not getattr(nn, name, None) or name not in LAYERS:
            layers.append({"kind": name, "own": True})
            continue
        layers.append(
            {"kind": name, "settings": {k: _setting(getattr(layer, k)) for k in LAYERS[name]}}
        )
    outcome = attempt(model.state_dict)
    if outcome[0] == "raised" or not isinstance(outcome[1], dict):
        return {"model": "Sequential", "layers": layers, "state": None}
    state = {}
    for key, value in outcome[1].items():
        data = np.asarray(getattr(value, "data", value))
        state[str(key)] = data if data.dtype.kind in "biuf" else np.zeros(0)
    return {"model": "Sequential", "layers": layers, "state": state}


def _probe_digits(cases, train_my_model):
    cached = _TRAINED.get(train_my_model) if _weakable(train_my_model) else None
    if cached is not None:
        return cached
    outcome = attempt(train_my_model, *handed_splits())
    if outcome[0] == "raised":
        data = {"raised": list(outcome[1:])}
    elif not isinstance(outcome[1], nn.Module):
        data = {"returned": "None" if outcome[1] is None else type(outcome[1]).__name__}
    else:
        data = describe(outcome[1])
    if _weakable(train_my_model):
        _TRAINED[train_my_model] = data
    return data


def _weakable(obj) -> bool:
    try:
        weakref.ref(obj)
    except TypeError:
        return False
    return True


def _read_setting(value, key: str, where: str):
    if isinstance(value, bool | int | float | str) or value is None:
        if isinstance(value, float) and not math.isfinite(value):
            raise Wrong(f"{where}: the setting {key} = {value} is not a number a layer takes")
        return value
    if isinstance(value, list) and all(type(v) is int for v in value) and len(value) <= 4:
        return tuple(value)
    raise Wrong(f"{where}: the setting {key} is not one a layer of the package takes")


def rebuild(data) -> nn.Sequential:
    """The model a description stands for, its parameters and statistics loaded, in eval mode.
    Wrong for anything that is not an nn.Sequential of the package's own layers."""
    if "raised" in data:
        raised_first(data, "train_my_model(train, val)")
    if "returned" in data:
        raise Wrong(
            f"train_my_model(train, val) returned {data['returned']}, where the contract asks "
            "for the trained model (an nn.Module)"
        )
    if data["model"] != "Sequential":
        raise Wrong(
            f"your model is a {data['model']}: the check rebuilds only an nn.Sequential of the "
            "package's own layers (" + ", ".join(LAYERS) + ")"
        )
    layers = data["layers"]
    if not isinstance(layers, list) or not 0 < len(layers) <= MAX_LAYERS:
        raise Wrong(f"your model has {len(layers)} layers; the check rebuilds 1 to {MAX_LAYERS}")
    state = data["state"]
    if not isinstance(state, dict):
        raise Wrong("your model's state_dict() could not be read")
    built = []
    for i, layer in enumerate(layers):
        name = str(layer["kind"])
        if layer.get("own") or name not in LAYERS:
            raise Wrong(
                f"layer {i} of your model is a {name}, not one of the package's own layers "
                "the check can rebuild (" + ", ".join(LAYERS) + ")"
            )
        settings = layer["settings"]
        if sorted(settings) != sorted(LAYERS[name]):
            raise Wrong(f"layer {i} ({name}): its settings are not the ones this layer has")
        kwargs = {k: _read_setting(settings[k], k, f"layer {i} ({name})") for k in LAYERS[name]}
        if name in _WITH_BIAS:
            kwargs["bias"] = f"{i}.bias" in state
        if name in ("BatchNorm1d", "BatchNorm2d"):
            kwargs.pop("track_running_stats")
        outcome = attempt(getattr(nn, name), **kwargs)
        if outcome[0] == "raised":
            raise Wrong(f"layer {i} ({name}) cannot be rebuilt from its settings: {outcome[2]}")
        built.append(outcome[1])
    if sum(int(np.size(v)) for v in state.values()) > MAX_NUMBERS:
        raise Wrong(f"your model holds more than {MAX_NUMBERS:,} numbers, more than the check runs")
    model = nn.Sequential(*built)
    own = model.state_dict()
    if list(state) != list(own):
        missing = [k for k in own if k not in state]
        extra = [k for k in state if k not in own]
        which = f"has no {missing[0]!r}" if missing else f"has {extra[0]!r}, which"
        raise Wrong(f"your model's state dict {which} does not fit the layers it describes")
    for key, value in state.items():
        if not isinstance(value, np.ndarray) or value.shape != tuple(own[key].shape):
            raise Wrong(f"your model's {key!r} does not have the shape its layer gives it")
        if value.dtype.kind == "f" and not np.all(np.isfinite(value)):
            raise Wrong(f"your model's {key!r} holds a number that is not finite")
    model.load_state_dict({k: ml.tensor(v) for k, v in state.items()})
    model.eval()
    return model


def _test_digits() -> tuple[np.ndarray, np.ndarray]:
    images, labels = load_digits("test")
    return (images.reshape(-1, 1, 8, 8) / 16).astype(np.float32), labels


def _predict(model, x: np.ndarray, order: np.ndarray, sizes) -> np.ndarray:
    """Class predictions for x, fed in `order` in batches of the given sizes (rebuilt model)."""
    out = np.empty(len(x), dtype=np.int64)
    start = 0
    with ml.no_grad():
        for size in sizes:
            index = order[start : start + size]
            outcome = attempt(model, ml.tensor(x[index]))
            if outcome[0] == "raised":
                raise Wrong(
                    f"your model, rebuilt and given {len(index)} images of shape (1, 8, 8), "
                    f"raised {outcome[1]}: {outcome[2]}"
                )
            logits = outcome[1]
            if not isinstance(logits, ml.Tensor) or logits.shape != (len(index), 10):
                raise Wrong(
                    f"your model, given a batch of {len(index)} images of shape "
                    f"({len(index)}, 1, 8, 8), gives shape {getattr(logits, 'shape', None)}, "
                    f"where the contract asks for logits of shape ({len(index)}, 10)"
                )
            out[index] = logits.data.argmax(axis=1)
            start += size
    return out


def _batches(n: int, rng) -> list:
    sizes = []
    while sum(sizes) < n:
        sizes.append(min(int(rng.integers(20, 180)), n - sum(sizes)))
    return sizes


def _test_images_held(state: dict, test: np.ndarray, seen: np.ndarray) -> int:
    """How many rows of 64 numbers in the parameters are near-copies of test images, closer to
    one than to any image of the training and validation splits."""

    def unit(rows):
        rows = rows - rows.mean(axis=1, keepdims=True)
        return rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12)

    test_u, seen_u = unit(test.reshape(-1, 64).astype(np.float64)), unit(seen.reshape(-1, 64))
    count = 0
    for value in state.values():
        if value.dtype.kind != "f" or value.size < 64 or value.size % 64:
            continue
        rows = unit(value.reshape(-1, 64).astype(np.float64))
        rows = rows[np.linalg.norm(rows, axis=1) > 0.5]
        if not len(rows):
            continue
        to_test = np.abs(rows @ test_u.T).max(axis=1)
        to_seen = np.abs(rows @ seen_u.T).max(axis=1)
        count += int(np.sum((to_test > 0.95) & (to_test > to_seen + 0.02)))
    return count


def _digits_cases(seed: int) -> dict:
    return {"seed": seed}


def _judge_digits(at_least: float, cases, data) -> str:
    points = DIGITS_POINTS[at_least]
    model = rebuild(data)
    x, y = _test_digits()
    rng = np.random.default_rng([12, 5, cases["seed"]])
    order = rng.permutation(len(y))
    predictions = _predict(model, x, order, _batches(len(y), rng))
    again = _predict(model, x, order[::-1].copy(), _batches(len(y), rng))
    if not np.array_equal(predictions, again):
        raise Wrong(
            "your model, rebuilt in eval mode, gives other classes for the same test digits in "
            "another order: its answers depend on what else is in the batch"
        )
    jittered = _predict(model, x + np.float32(1e-4), order, _batches(len(y), rng))
    if np.mean(jittered != predictions) > 0.02:
        raise Wrong(
            "your model's answers change when every pixel moves by 0.0001: they do not come "
            "from the images it is given"
        )
    for p in model.parameters():
        p.data[...] = 0
    blank = np.mean(_predict(model, x, order, [len(y)]) == y)
    if blank > 0.3:
        raise Wrong(
            f"with all its parameters set to zero your model still gets {blank:.0%} of the test "
            "digits right: its answers do not come from what it learned"
        )
    seen = np.concatenate([load_digits(s)[0] for s in ("train", "val")]) / 16
    held = _test_images_held(data["state"], x, seen)
    if held >= 5:
        raise Wrong(
            f"your model's parameters hold near-copies of {held} test images, which the "
            "training function never gets: a model learns from the training split only"
        )
    right = int(np.sum(predictions == y))
    accuracy = right / len(y)
    shuffled = np.array([np.mean(predictions == rng.permutation(y)) for _ in range(200)])
    p_value = (1 + np.sum(shuffled >= accuracy)) / (1 + len(shuffled))
    if p_value > 0.01:
        raise Wrong(
            f"your model's {accuracy:.1%} on the test digits is no better than the same "
            "answers against the labels shuffled (a permutation test): it does not tell digits "
            "apart"
        )
    measured = (
        f"your model classifies {right} of the {len(y)} test digits correctly "
        f"({accuracy:.1%}), measured by the check: rebuilt from its layers and parameters, on "
        "the test split your training never saw, in eval mode, in shuffled batches"
    )
    plural = "s" if points > 1 else ""
    if accuracy < at_least:
        raise Wrong(f"{measured}; this part ({points} point{plural}) needs at least {at_least:.0%}")
    return f"✓ {measured}: at least {at_least:.0%}, {points} point{plural}"


def _digits_exercise(at_least: float) -> Exercise:
    percent = round(at_least * 100)
    return register(
        Exercise(
            check=f"check_digits_{percent}",
            chapter="12",
            title=f"A model of your own: {percent}% on the test digits",
            probe=_probe_digits,
            judge=functools.partial(_judge_digits, at_least),
            cases=_digits_cases,
            forbidden=("datasets", "load_digits", "digits", "DIGITS", "FILE"),
        )
    )


EXERCISE_DIGITS = types.MappingProxyType({a: _digits_exercise(a) for a in DIGITS_POINTS})
check_digits_90 = EXERCISE_DIGITS[0.90].lab_check
check_digits_95 = EXERCISE_DIGITS[0.95].lab_check
check_digits_98 = EXERCISE_DIGITS[0.98].lab_check


def check_digits_model(train_my_model, at_least: float) -> None:
    """The check cells of earlier copies: check_digits_model(train_my_model, at_least=0.90)."""
    if at_least not in EXERCISE_DIGITS:
        raise Wrong(f"no part of this exercise asks for {at_least:.0%}")
    EXERCISE_DIGITS[at_least].lab_check(train_my_model)
