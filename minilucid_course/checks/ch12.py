"""Checks for the exercises of chapter 12 (gradients of gradients, your own ops).

Expected values come from the calculus (Newton's iterates from the closed-form derivatives) or
from central differences of first gradients, never from the learner's code. Each check raises
AssertionError with a plain-words message, or prints one line.
"""

from __future__ import annotations

import math
import types
import weakref

import numpy as np

import minilucid as ml
from minilucid import nn
from minilucid.datasets import load_digits
from minilucid.numerical import numerical_grad
from minilucid_course.checks.common import call

GRAPH_HINT = (
    "To differentiate a gradient again, the first ml.grad needs create_graph=True, so that the "
    "gradient it returns is a tensor with a graph of its own."
)


def _show(x) -> str:
    text = np.array2string(np.asarray(x), precision=5, separator=", ", max_line_width=10**6)
    return " ".join(text.split())


def _floats(result, what: str) -> list:
    try:
        return [float(ml.tensor(v).data if isinstance(v, ml.Tensor) else v) for v in result]
    except (TypeError, ValueError):
        raise AssertionError(
            f"{what} should return a list of numbers (the iterates x0, x1, ...), got "
            f"{type(result).__name__}"
        ) from None


# --------------------------------------------------------------------------------------------
# Exercise 1: Newton's method in one dimension

# (name, f on tensors, f', f'', x0, steps): f' and f'' in closed form, for the expected iterates
NEWTON_CASES = (
    ("f(x) = x**4 / 4 - x", lambda x: x**4 / 4 - x, lambda x: x**3 - 1, lambda x: 3 * x**2, 2.0, 5),
    ("f(x) = exp(x) - 2x", lambda x: x.exp() - 2 * x, lambda x: math.exp(x) - 2, math.exp, 1.0, 4),
    (
        "f(x) = (x - 1.5)**2",
        lambda x: (x - 1.5) ** 2,
        lambda x: 2 * (x - 1.5),
        lambda x: 2.0,
        -3.0,
        2,
    ),
)


def _iterates(step, d1, d2, x0: float, steps: int, f=None) -> list:
    xs = [x0]
    for _ in range(steps):
        x = xs[-1]
        xs.append(step(x, d1(x), d2(x), f))
    return xs


NEWTON_MISTAKES = types.MappingProxyType(
    {
        "a gradient-descent step x - f'(x); Newton divides by the second derivative: "
        "x - f'(x) / f''(x)": lambda x, g, h, f: x - g,
        "the step has the wrong sign: x + f'/f'' walks uphill; subtract it": lambda x, g, h, f: (
            x + g / h
        ),
        "x - f''/f': the fraction is upside down, it is f'(x) / f''(x)": lambda x, g, h, f: (
            x - h / g
        ),
    }
)


def check_newton_1d(newton_1d) -> None:
    """newton_1d(f, x0, steps) -> [x0, x1, ..., x_steps], x_{k+1} = x_k - f'(x_k) / f''(x_k)."""
    for name, f, d1, d2, x0, steps in NEWTON_CASES:
        what = f"newton_1d({name}, x0={x0}, steps={steps})"
        got = _floats(call(what, newton_1d, f, x0, steps, hint=GRAPH_HINT), what)
        want = _iterates(lambda x, g, h, _: x - g / h, d1, d2, x0, steps)
        if len(got) != len(want):
            raise AssertionError(
                f"{what} returned {len(got)} numbers; return {len(want)}: x0 and then one "
                f"iterate per step"
            )
        if np.allclose(got, want, rtol=1e-6, atol=1e-9):
            continue
        for words, step in NEWTON_MISTAKES.items():
            if np.allclose(got, _iterates(step, d1, d2, x0, steps), rtol=1e-6, atol=1e-9):
                raise AssertionError(f"{what}: {words}")
        k = int(np.argmax(~np.isclose(got, want, rtol=1e-6, atol=1e-9)))
        raise AssertionError(
            f"{what}: iterate {k} is not the Newton step from iterate {k - 1}. Differentiate f "
            "twice at the current x with ml.grad, the first time with create_graph=True, and "
            "step by the first derivative divided by the second."
        )
    print("✓ newton_1d takes Newton steps x - f'(x) / f''(x), its derivatives from ml.grad")


# --------------------------------------------------------------------------------------------
# Exercise 2: Hessian-vector products


def _cubic(x):
    return (x**3).sum() + x[0] * x[1] * x[2]


def _tanh_mix(x):
    w = ml.tensor(np.array([1.0, -2.0, 0.5, 1.5]))
    return (x.tanh() * w).sum() * x.sum()


HVP_CASES = (
    ("f(x) = sum(x**3) + x0 x1 x2", _cubic, (0.5, -1.0, 2.0), (1.0, 0.0, -1.0)),
    ("f(x) = sum(w tanh(x)) sum(x)", _tanh_mix, (0.3, -0.8, 1.1, 0.2), (0.5, 2.0, -1.0, 1.0)),
)


def _gradient(f, x0: np.ndarray) -> np.ndarray:
    x = ml.tensor(x0, requires_grad=True)
    (g,) = ml.grad(f(x), x)
    return g


def _central(f, x0: np.ndarray, v: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """H v by central differences of the gradient along v."""
    return (_gradient(f, x0 + eps * v) - _gradient(f, x0 - eps * v)) / (2 * eps)


def check_hvp(hvp) -> None:
    """hvp(f, x, v): the Hessian of f at x times v, by differentiating the gradient once more."""
    for name, f, x0, v0 in HVP_CASES:
        x0, v0 = np.array(x0), np.array(v0)
        x = ml.tensor(x0.copy(), requires_grad=True)
        v = ml.tensor(v0.copy())
        what = f"hvp({name}, x={_show(x0)}, v={_show(v0)})"
        result = call(what, hvp, f, x, v, returns=(ml.Tensor, np.ndarray), hint=GRAPH_HINT)
        got = np.asarray(result.data if isinstance(result, ml.Tensor) else result, dtype=float)
        want = _central(f, x0, v0)
        if got.shape != x0.shape:
            raise AssertionError(f"{what} has shape {got.shape}; H v has x's shape {x0.shape}")
        if np.allclose(got, want, rtol=1e-5, atol=1e-6):
            continue
        g = _gradient(f, x0)
        ones = _central(f, x0, np.ones_like(x0))
        if np.allclose(got, g, rtol=1e-6):
            words = "that is the gradient itself; differentiate (gradient . v) once more"
        elif np.allclose(got, g * v0, rtol=1e-6):
            words = "that is gradient * v entry by entry; differentiate sum(gradient * v) w.r.t. x"
        elif np.allclose(got, ones, rtol=1e-5, atol=1e-6):
            words = "that is H times a vector of ones: v was left out of the second derivative"
        else:
            words = (
                "that is not H v: it differs from central differences of the gradient along v. "
                "Differentiate the number sum(gradient * v) with respect to x"
            )
        raise AssertionError(f"{what}: {words}")
    print("✓ hvp differentiates the gradient along v: H v without ever forming H")


# --------------------------------------------------------------------------------------------
# Exercise 3: a straight-through estimator, your own op

STE_POINTS = np.array([[-2.3, -1.4, -0.62, -0.2], [0.0, 0.45, 0.8, 1.7]])  # none near +-0.5, +-1
STE_WEIGHTS = np.array([[0.7, -1.3, 0.9, 1.1], [-0.6, 1.4, -0.8, 1.2]])
STE_POINTS.setflags(write=False)  # an answer cell cannot change the check's cases
STE_WEIGHTS.setflags(write=False)


def _clamp_central(x0: np.ndarray, w: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """d sum(w * clamp(x, -1, 1)) / dx, entry by entry: the surrogate the estimator follows."""
    out = np.zeros_like(x0)
    for i in np.ndindex(x0.shape):
        up, down = x0.copy(), x0.copy()
        up[i] += eps
        down[i] -= eps
        out[i] = (w * (np.clip(up, -1, 1) - np.clip(down, -1, 1))).sum() / (2 * eps)
    return out


def check_round_ste(RoundSTE) -> None:  # noqa: N803  (a class)
    """Forward rounds; backward passes the gradient where |x| <= 1, zero outside."""
    x = ml.tensor(STE_POINTS.copy(), requires_grad=True)
    y = call("RoundSTE.apply(x)", RoundSTE.apply, x, returns=ml.Tensor)
    if y.shape != x.shape or not np.array_equal(y.data, np.round(STE_POINTS)):
        raise AssertionError(
            f"RoundSTE.apply(x) for x = {_show(STE_POINTS)} is not round(x) (got "
            f"{_show(y.data)}); forward rounds each entry to the nearest integer"
        )
    (g,) = call("ml.grad(sum(w * RoundSTE.apply(x)), x)", ml.grad, (y * STE_WEIGHTS).sum(), x)
    want = _clamp_central(STE_POINTS, STE_WEIGHTS)
    if not np.allclose(g, want, rtol=1e-5, atol=1e-6):
        inside = np.abs(STE_POINTS) <= 1
        if np.allclose(g, 0):
            words = (
                "every gradient is 0: that is round's own derivative, which is why it cannot be "
                "trained through. The estimator passes the incoming gradient through instead"
            )
        elif np.allclose(g, STE_WEIGHTS):
            words = (
                "the gradient passes everywhere, also where |x| > 1; there it should be 0 "
                "(the estimator follows clamp(x, -1, 1))"
            )
        elif np.allclose(g[inside], STE_WEIGHTS[inside]):
            words = f"outside [-1, 1] the gradient should be 0, got {_show(g)}"
        else:
            words = (
                f"the gradient {_show(g)} is not the gradient of clamp(x, -1, 1) (checked by "
                "central differences): pass the gradient where |x| <= 1, 0 elsewhere"
            )
        raise AssertionError(f"at x = {_show(STE_POINTS)}: {words}")
    ends = ml.tensor(np.array([-1.0, 1.0]), requires_grad=True)
    (g,) = call("ml.grad(sum(RoundSTE.apply(x)), x) at x = [-1, 1]", ml.grad,
                RoundSTE.apply(ends).sum(), ends)  # fmt: skip
    if not np.allclose(g, 1.0):
        raise AssertionError(
            f"at x = [-1, 1] the gradient is {_show(g)}: the ends belong to the interval "
            "where the gradient passes (|x| <= 1, as with clamp's gradient)"
        )
    x = ml.tensor(STE_POINTS.copy(), requires_grad=True)
    z = (RoundSTE.apply(x) * x).sum()  # a second derivative exists: d/dx of round(x) + x * mask
    (g,) = call(
        "ml.grad(sum(RoundSTE.apply(x) * x), x, create_graph=True)",
        ml.grad,
        z,
        x,
        create_graph=True,
        hint="Write backward with operators (grad * mask), which work on tensors too.",
    )
    (h,) = call("differentiating that gradient again", ml.grad, g.sum(), x)
    if not np.allclose(h, 2 * (np.abs(STE_POINTS) <= 1)):
        raise AssertionError(
            f"the second derivative of sum(RoundSTE(x) * x) is not that of sum(clamp(x) * x) "
            f"(got {_show(h)}); multiply the gradient by a constant mask in backward"
        )
    print("✓ RoundSTE rounds forward and passes the gradient of clamp(x, -1, 1) backward")


# --------------------------------------------------------------------------------------------
# Exercise 4: an op of your own that differentiates twice (SiLU), checked by Hessian-vector
# products against central differences of its gradient

SILU_POINTS = np.array([-3.7, -1.9, -0.8, -0.15, 0.0, 0.3, 1.1, 2.4, 3.9])
SILU_POINTS.setflags(write=False)
_RNG = np.random.default_rng(12)
SILU_MIX = _RNG.standard_normal((5, 4))  # f(x) = sum(c * SiLU(A @ x)): a dense Hessian
SILU_C = _RNG.standard_normal(5)
SILU_X = _RNG.standard_normal(4)
for _array in (SILU_MIX, SILU_C, SILU_X):
    _array.setflags(write=False)

OP_HINT = (
    "Under create_graph the engine hands backward tensors; write it with operators and the "
    "helpers of minilucid.ops.alike (exp), never a NumPy function or .data"
)


def _silu(x: np.ndarray) -> np.ndarray:
    return x / (1 + np.exp(-x))


def _silu_cases(SiLU) -> tuple:  # noqa: N803  (a class)
    """(description, f on tensors, x0, v): sums of SiLU in three settings."""
    w = ml.tensor(np.linspace(-1.5, 2.0, SILU_POINTS.size))
    mix, c = ml.tensor(SILU_MIX), ml.tensor(SILU_C)
    return (
        (
            "f(x) = sum(w * SiLU(x))",
            lambda x: (w * SiLU.apply(x)).sum(),
            SILU_POINTS,
            np.cos(np.arange(SILU_POINTS.size)),
        ),
        (
            "f(x) = sum(c * SiLU(A @ x))",
            lambda x: (c * SiLU.apply(mix @ x)).sum(),
            SILU_X,
            np.array([1.0, -0.5, 2.0, 0.25]),
        ),
        (
            "f(x) = sum(SiLU(2 * SiLU(x)))",
            lambda x: SiLU.apply(2 * SiLU.apply(x)).sum(),
            SILU_POINTS,
            np.sin(np.arange(SILU_POINTS.size) + 1.0),
        ),
    )


def _first_gradient(f, x0: np.ndarray, what: str) -> np.ndarray:
    x = ml.tensor(np.array(x0), requires_grad=True)
    (g,) = call(what, ml.grad, f(x), x)
    return np.asarray(g)


def check_twice_differentiable_op(SiLU) -> None:  # noqa: N803  (a class)
    """SiLU.apply(x) = x * sigmoid(x); its gradient by central differences; H v by differences
    of the gradient, with the second derivative taken through the learner's backward."""
    x = ml.tensor(np.array(SILU_POINTS), requires_grad=True)
    y = call("SiLU.apply(x)", SiLU.apply, x, returns=ml.Tensor)
    if y.dtype != ml.float64:
        raise AssertionError(f"SiLU.apply on float64 input gave {y.dtype}; keep the input's dtype")
    if y.shape != x.shape or not np.allclose(y.data, _silu(SILU_POINTS), rtol=1e-10, atol=1e-12):
        raise AssertionError(
            f"SiLU.apply(x) at x = {_show(SILU_POINTS)} is not x * sigmoid(x) (got "
            f"{_show(y.data)}); forward returns x / (1 + exp(-x)), entry by entry"
        )
    for name, f, x0, v in _silu_cases(SiLU):
        g = _first_gradient(f, x0, f"ml.grad({name}, x)")
        numeric = numerical_grad(f, [np.array(x0)])[0]
        if not np.allclose(g, numeric, rtol=1e-5, atol=1e-7):
            raise AssertionError(
                f"the gradient of {name} at x = {_show(x0)} differs from central differences "
                "of the function: backward returns grad times the derivative of x * sigmoid(x) "
                "(the product rule: both factors depend on x)"
            )
        xt = ml.tensor(np.array(x0), requires_grad=True)
        what = f"ml.grad({name}, x, create_graph=True)"
        (gt,) = call(what, ml.grad, f(xt), xt, create_graph=True, hint=OP_HINT)
        if not isinstance(gt, ml.Tensor) or gt.grad_fn is None:
            raise AssertionError(
                f"{what} gave a gradient without a graph, so it cannot be differentiated again. "
                + OP_HINT
            )
        vt = ml.tensor(v)
        hv = call(
            f"differentiating sum(that gradient * v) for {name}",
            ml.grad,
            (gt * vt).sum(),
            xt,
            allow_unused=True,
            hint=OP_HINT,
        )[0]
        eps = 1e-5
        want = (
            _first_gradient(f, x0 + eps * v, "the gradient")
            - _first_gradient(f, x0 - eps * v, "the gradient")
        ) / (2 * eps)
        got = (
            np.zeros_like(want)
            if hv is None
            else np.asarray(hv.data if isinstance(hv, ml.Tensor) else hv, dtype=float)
        )
        if np.allclose(got, want, rtol=1e-5, atol=1e-6):
            continue
        if np.allclose(got, 0):
            raise AssertionError(
                f"{name}: the Hessian-vector product through your op is 0, but the gradient does "
                "change along v (central differences). Your backward built the derivative from "
                "constants - .data or NumPy arrays - so the engine sees nothing to "
                "differentiate. " + OP_HINT
            )
        raise AssertionError(
            f"{name}: the Hessian-vector product through your op (ml.grad of the gradient, with "
            "create_graph=True) differs from central differences of the gradient along v. The "
            "first derivative is right on arrays, so on tensors either part of it is a constant "
            "to the engine (.data, or NumPy on a value taken out of x), or the formula is not the "
            "same one. " + OP_HINT
        )
    print(
        "✓ SiLU: forward x * sigmoid(x), its gradient agrees with central differences, and its "
        "backward differentiates again: Hessian-vector products agree with central differences "
        "of the gradient on three functions"
    )


# --------------------------------------------------------------------------------------------
# Exercise 5: a model of your own, graded by its accuracy on the digits' test split

DIGITS_SCALE = types.MappingProxyType({0.90: 1, 0.95: 1, 0.98: 2})  # threshold: its points
_TRAINED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # train_fn -> its model


def _test_digits() -> tuple[np.ndarray, np.ndarray]:
    """The test split, loaded here (not from the learner's variables), in a shuffled order."""
    images, labels = load_digits("test")
    order = np.random.default_rng(2026).permutation(len(labels))
    x = images.reshape(len(images), 64).astype(np.float32)[order] / 16
    return x, labels[order]


def _predict(model, x: np.ndarray) -> np.ndarray:
    """Class predictions in uneven batches, in eval mode, without a graph."""
    out = []
    with ml.no_grad():
        for start, stop in ((0, 50), (50, 173), (173, len(x))):
            logits = model(ml.tensor(x[start:stop]))
            if not isinstance(logits, ml.Tensor) or logits.shape != (stop - start, 10):
                shape = getattr(logits, "shape", None)
                raise AssertionError(
                    f"your model, given a batch of {stop - start} images of shape "
                    f"({stop - start}, 64), returned {type(logits).__name__} of shape {shape}; "
                    f"it should return a tensor of logits of shape ({stop - start}, 10)"
                )
            out.append(logits.data.argmax(axis=1))
    return np.concatenate(out)


def _trained_model(train_my_model):
    if train_my_model in _TRAINED:
        return _TRAINED[train_my_model]
    model = call("train_my_model()", train_my_model)
    if not isinstance(model, nn.Module):
        raise AssertionError(
            f"train_my_model() returned {type(model).__name__}; return the trained model, an "
            "nn.Module"
        )
    if not list(model.parameters()):
        raise AssertionError("your model has no parameters: it cannot have learned anything")
    _TRAINED[train_my_model] = model
    return model


def check_digits_model(train_my_model, at_least: float) -> None:
    """The trained model's accuracy on the digits' test split, measured here, against a bar."""
    if at_least not in DIGITS_SCALE:
        raise AssertionError(f"no part of this exercise asks for {at_least:.0%}")
    model = _trained_model(train_my_model)
    x, y = _test_digits()
    model.eval()  # the check measures in eval mode (dropout off, running statistics on)
    what = "your model on the test digits"
    predictions = call(what, _predict, model, x)
    again = call(what, _predict, model, x)
    if not np.array_equal(predictions, again):
        raise AssertionError(
            "your model, in eval mode, gave different classes for the same test digits on two "
            "runs; in eval mode a model must be a fixed function of its input"
        )
    jittered = call(what, _predict, model, x + np.float32(1e-4))
    if np.mean(jittered != predictions) > 0.02:
        raise AssertionError(
            "your model's answers change when every pixel moves by 0.0001: it does not compute "
            "them from the images it is given"
        )
    saved = [(p, p.data.copy()) for p in model.parameters()]
    try:
        for p, _ in saved:
            p.data[...] = 0
        blank = np.mean(call(what, _predict, model, x) == y)
    finally:
        for p, data in saved:
            p.data[...] = data
    if blank > 0.3:
        raise AssertionError(
            f"with all its parameters set to zero your model still gets {blank:.0%} of the test "
            "digits right: its answers do not come from what it learned"
        )
    right = int(np.sum(predictions == y))
    accuracy = right / len(y)
    measured = (
        f"your model classifies {right} of the {len(y)} test digits correctly "
        f"({accuracy:.1%}), measured by the check on the test split it loads itself, in eval "
        "mode, in shuffled batches"
    )
    points = DIGITS_SCALE[at_least]
    if accuracy < at_least:
        raise AssertionError(
            f"{measured}; this part ({points} point{'s' if points > 1 else ''}) needs at least "
            f"{at_least:.0%}"
        )
    print(f"✓ {measured}: at least {at_least:.0%}, {points} point{'s' if points > 1 else ''}")
