"""Checks for the exercises of chapter 02 (local derivatives).

Each check runs the learner's op inside a real graph, lets minilucid's backward call it, and
compares every gradient entry with central differences in float64.
"""

import numpy as np

from minilucid.numerical import numerical_grad
from minilucid.tensor import Tensor

_ROUNDING = 6  # how many significant digits a message shows


def _num(x) -> str:
    return f"{float(x):.{_ROUNDING}g}"


def _entry(index: tuple) -> str:
    return "the only entry" if index == () else f"entry {index}"


def _arrays(seed: int, *shapes, positive=False, away_from_zero=False):
    rng = np.random.default_rng(seed)
    out = []
    for shape in shapes:
        a = rng.uniform(-2.0, 2.0, size=shape)
        if positive:
            a = np.abs(a) + 0.5
        elif away_from_zero:
            a = np.sign(a + (a == 0)) * (np.abs(a) + 0.5)
        out.append(np.asarray(a, dtype=np.float64))  # a 0-d array, not a NumPy scalar
    return out


def _backward_through(op, name, leaves, extra, weights):
    """Build op.apply(*leaves, *extra) in a real graph and run minilucid's backward on it."""
    try:
        out = op.apply(*leaves, *extra)
        out.backward(gradient=weights)
    except NotImplementedError:
        raise
    except (RuntimeError, ValueError, TypeError, AttributeError) as error:
        raise AssertionError(
            f"{name}.backward could not be used by minilucid's backward: "
            f"{type(error).__name__}: {error}"
        ) from None
    return out


def _compare(name, input_name, got, expected, shapes_note, hint=None) -> None:
    if got is None:
        raise AssertionError(
            f"{name}.backward gave no gradient for input {input_name} ({shapes_note}). "
            "Return one gradient per input, in the order of forward's arguments."
        )
    if got.shape != expected.shape:  # the engine un-broadcasts, so this means a wrong shape
        raise AssertionError(
            f"{name}.backward: the gradient of {input_name} has shape {got.shape}, "
            f"expected {expected.shape} ({shapes_note})."
        )
    bad = ~np.isclose(got, expected, rtol=1e-5, atol=1e-6)
    if bad.any():
        index = tuple(int(i) for i in np.argwhere(bad)[0])
        message = (
            f"{name}.backward: the gradient of input {input_name} is wrong at "
            f"{_entry(index)}: expected {_num(expected[index])} (central differences), "
            f"got {_num(got[index])}. {shapes_note}."
        )
        if np.allclose(got, -expected, rtol=1e-5, atol=1e-6):
            message += " Every entry has the wrong sign."
        elif hint:
            message += " " + hint
        raise AssertionError(message)


def _check_binary(op, name, reference, cases, hints) -> Tensor:
    """cases: (seed, shape a, shape b, array options). reference(a, b) uses minilucid's ops."""
    for seed, shape_a, shape_b, options in cases:
        a_data, b_data = _arrays(seed, shape_a, shape_b, **options)
        out_shape = np.broadcast_shapes(shape_a, shape_b)
        (weights,) = _arrays(seed + 100, out_shape)
        note = (
            f"Inputs: a of shape {shape_a}, b of shape {shape_b}; the gradient arriving from "
            f"above was a random array of shape {out_shape}"
        )
        a = Tensor(a_data.copy(), requires_grad=True, name="a")
        b = Tensor(b_data.copy(), requires_grad=True, name="b")
        out = _backward_through(op, name, (a, b), (), weights)
        expected_out = reference(Tensor(a_data), Tensor(b_data)).data
        if not np.allclose(out.data, expected_out):
            raise AssertionError(
                f"{name}.forward no longer computes the right values ({note}); "
                "leave forward as it was given."
            )
        grads = numerical_grad(reference, [Tensor(a_data), Tensor(b_data)], grad_output=weights)
        _compare(name, "a", a.grad, grads[0], note, hints.get("a"))
        _compare(name, "b", b.grad, grads[1], note, hints.get("b"))
    a = Tensor([1.0, 2.0, 3.0], requires_grad=True, name="a")
    b = Tensor(2.0, requires_grad=True, name="b")
    return op.apply(a, b)


_BINARY_CASES = [
    (0, (3, 4), (3, 4), {}),
    (1, (3, 1), (4,), {}),
    (2, (), (2, 3), {}),
]


def check_mul_backward(op) -> Tensor:
    """Run `op` (z = a * b) in real graphs with broadcasting; return a small graph using it."""
    hints = {
        "a": "dz/da is b: multiply the incoming gradient by the saved b (not a).",
        "b": "dz/db is a: multiply the incoming gradient by the saved a (not b).",
    }
    out = _check_binary(op, op.__name__, lambda a, b: a * b, _BINARY_CASES, hints)
    print(f"✓ {op.__name__}.backward agrees with central differences on 3 graphs, 6 gradients")
    return out


def check_div_backward(op) -> Tensor:
    """Run `op` (z = a / b) in real graphs with broadcasting; return a small graph using it."""
    cases = [(s, sa, sb, {"away_from_zero": True}) for s, sa, sb, _ in _BINARY_CASES]
    hints = {
        "a": "dz/da is 1 / b.",
        "b": "dz/db is -a / b**2: the b of the denominator is squared, and the sign is minus.",
    }
    out = _check_binary(op, op.__name__, lambda a, b: a / b, cases, hints)
    print(f"✓ {op.__name__}.backward agrees with central differences on 3 graphs, 6 gradients")
    return out


def check_pow_backward(op) -> Tensor:
    """Run `op` (z = a ** p, p a plain number) in real graphs; return a small graph using it."""
    name = op.__name__
    for seed, shape, p in [(0, (3, 4), 3), (1, (5,), 0.5), (2, (2, 3), -2.0), (3, (), 1)]:
        (a_data,) = _arrays(seed, shape, positive=True)
        (weights,) = _arrays(seed + 100, shape)
        note = (
            f"Input a of shape {shape} with positive entries, exponent p = {p!r}; the gradient "
            f"arriving from above was a random array of shape {shape}"
        )
        a = Tensor(a_data.copy(), requires_grad=True, name="a")
        out = _backward_through(op, name, (a,), (p,), weights)
        if not np.allclose(out.data, a_data**p):
            raise AssertionError(f"{name}.forward no longer computes a ** p ({note}).")
        (expected,) = numerical_grad(lambda t, p=p: t**p, [Tensor(a_data)], grad_output=weights)
        hint = "dz/da is p * a ** (p - 1): the exponent drops by one and p comes down in front."
        _compare(name, "a", a.grad, expected, note, hint)
    a = Tensor([1.0, 2.0, 3.0], requires_grad=True, name="a")
    print(f"✓ {name}.backward agrees with central differences for p = 3, 0.5, -2 and 1")
    return op.apply(a, 2)


def check_numerical_grad(fn) -> None:
    """`fn(f, x, eps)` must return the central-difference gradient of a float-valued f."""
    x0 = np.array([[1.5, -2.0, 0.5], [3.0, -1.0, 2.5]])
    w = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]])
    corner = np.zeros_like(x0)
    corner[0, 0], corner[1, 2] = x0[1, 2], x0[0, 0]
    cases = [
        ("f(x) = sum(x**3)", lambda x: float((x**3).sum()), 3 * x0**2),
        ("f(x) = sum(w * x) ** 2", lambda x: float((w * x).sum() ** 2), 2 * (w * x0).sum() * w),
        ("f(x) = x[0, 0] * x[1, 2]", lambda x: float(x[0, 0] * x[1, 2]), corner),
    ]
    eps = 1e-3
    for label, f, exact in cases:
        x = x0.copy()
        try:
            got = fn(f, x, eps)
        except NotImplementedError:
            raise
        except Exception as error:
            raise AssertionError(
                f"your numerical gradient raised {type(error).__name__} on {label} "
                f"with x of shape {x0.shape}, eps = {eps}: {error}"
            ) from None
        if not np.array_equal(x, x0):
            raise AssertionError(
                f"after computing the gradient of {label}, x was changed: put each entry back "
                "to its old value after nudging it."
            )
        got = np.asarray(got, dtype=float)
        if got.shape != x0.shape:
            raise AssertionError(
                f"the gradient of {label} has shape {got.shape}; it must have x's shape {x0.shape}"
            )
        # central differences are exact up to eps**2 (here 1e-6); one-sided ones are off by ~eps
        bad = ~np.isclose(got, exact, rtol=0, atol=1e-5)
        if bad.any():
            index = tuple(int(i) for i in np.argwhere(bad)[0])
            message = (
                f"the gradient of {label} at x = {x0.tolist()} with eps = {eps} is wrong at "
                f"entry {index}: the exact value is {_num(exact[index])}, you got "
                f"{_num(got[index])}."
            )
            if np.allclose(got, 2 * exact, atol=1e-5):
                message += " It is twice too big: the two points are 2 * eps apart."
            elif np.allclose(got, exact, atol=1e-2):
                message += (
                    " It is close but not close enough: an error of the size of eps means a "
                    "one-sided difference. Step both ways, f(x + eps) and f(x - eps)."
                )
            raise AssertionError(message)
    # plugged into the engine: their oracle judges minilucid's own backward
    a_data = x0.copy()
    a = Tensor(a_data.copy(), requires_grad=True)
    ((a * a - a / 2.0) ** 2).backward(gradient=np.ones_like(a_data))
    theirs = fn(lambda x: float(((x * x - x / 2.0) ** 2).sum()), a_data.copy(), 1e-6)
    agree = np.allclose(theirs, a.grad, rtol=1e-6, atol=1e-6)
    print("✓ your central differences are right on 3 functions (exact to about eps**2)")
    print(
        "  and they say minilucid's backward of (a*a - a/2)**2 is "
        + ("right" if agree else "WRONG")
        + f" on all {a_data.size} entries"
    )
