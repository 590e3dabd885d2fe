"""Checks for the exercises of chapter 12 (gradients of gradients, your own ops).

Expected values come from the calculus (Newton's iterates from the closed-form derivatives) or
from central differences of first gradients, never from the learner's code. Each check raises
AssertionError with a plain-words message, or prints one line.
"""

from __future__ import annotations

import math

import numpy as np

import minilucid as ml
from minilucid_course.checks.common import call, number

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
NEWTON_CASES = [
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
]


def _iterates(step, d1, d2, x0: float, steps: int, f=None) -> list:
    xs = [x0]
    for _ in range(steps):
        x = xs[-1]
        xs.append(step(x, d1(x), d2(x), f))
    return xs


NEWTON_MISTAKES = {
    "a gradient-descent step x - f'(x); Newton divides by the second derivative: "
    "x - f'(x) / f''(x)": lambda x, g, h, f: x - g,
    "the step has the wrong sign: x + f'/f'' walks uphill; subtract it": lambda x, g, h, f: (
        x + g / h
    ),
    "x - f''/f': the fraction is upside down, it is f'(x) / f''(x)": lambda x, g, h, f: x - h / g,
}


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
            f"{what}: iterate {k} should be {number(want[k])} (from x{k - 1} = "
            f"{number(want[k - 1])}), got {number(got[k])}. Differentiate f twice at the current x "
            "with ml.grad, the first time with create_graph=True."
        )
    print("✓ newton_1d takes Newton steps x - f'(x) / f''(x), its derivatives from ml.grad")


# --------------------------------------------------------------------------------------------
# Exercise 2: Hessian-vector products


def _cubic(x):
    return (x**3).sum() + x[0] * x[1] * x[2]


def _tanh_mix(x):
    w = ml.tensor(np.array([1.0, -2.0, 0.5, 1.5]))
    return (x.tanh() * w).sum() * x.sum()


HVP_CASES = [
    ("f(x) = sum(x**3) + x0 x1 x2", _cubic, [0.5, -1.0, 2.0], [1.0, 0.0, -1.0]),
    ("f(x) = sum(w tanh(x)) sum(x)", _tanh_mix, [0.3, -0.8, 1.1, 0.2], [0.5, 2.0, -1.0, 1.0]),
]


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
            words = f"expected {_show(want)}, got {_show(got)}"
        raise AssertionError(f"{what}: {words}")
    print("✓ hvp differentiates the gradient along v: H v without ever forming H")


# --------------------------------------------------------------------------------------------
# Exercise 3: a straight-through estimator, your own op

STE_POINTS = np.array([[-2.3, -1.4, -0.62, -0.2], [0.0, 0.45, 0.8, 1.7]])  # none near +-0.5, +-1
STE_WEIGHTS = np.array([[0.7, -1.3, 0.9, 1.1], [-0.6, 1.4, -0.8, 1.2]])


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
            f"RoundSTE.apply(x) for x = {_show(STE_POINTS)} should be round(x) = "
            f"{_show(np.round(STE_POINTS))}, got {_show(y.data)}. forward returns np.round(a)."
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
            words = f"expected the gradient of clamp(x, -1, 1), {_show(want)}, got {_show(g)}"
        raise AssertionError(f"at x = {_show(STE_POINTS)}: {words}")
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
            f"the second derivative of sum(RoundSTE(x) * x) should be 2 where |x| <= 1 and 0 "
            f"elsewhere, got {_show(h)}; multiply the gradient by a constant mask in backward"
        )
    print("✓ RoundSTE rounds forward and passes the gradient of clamp(x, -1, 1) backward")
