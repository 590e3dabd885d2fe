"""Checks for the exercises of chapter 02 (local derivatives).

Each check runs the learner's op inside a real graph, lets minilucid's backward call it, and
compares every gradient entry with central differences in float64.
"""

import numpy as np

from minilucid.function import Function
from minilucid.numerical import numerical_grad
from minilucid.ops.elementwise import Div, Mul
from minilucid.tensor import Tensor
from minilucid.viz import draw_graph
from minilucid_course.checks.common import call, cases_of, frozen, number


def _count(name: str, right: bool | None = None) -> int:
    """How many cases the check ran (for its ✓ line); with `right`, only those so marked."""
    found = cases_of(__name__, name)
    return len(found) if right is None else sum(bool(c[-1]) == right for c in found)


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

    def run():
        out = op.apply(*leaves, *extra)
        out.backward(gradient=weights)
        return out

    return call(f"{name}, used in a graph by minilucid's backward,", run)


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
            f"{_entry(index)}: expected {number(expected[index])} (central differences), "
            f"got {number(got[index])}. {shapes_note}."
        )
        if np.allclose(got, -expected, rtol=1e-5, atol=1e-6):
            message += " Every entry has the wrong sign."
        elif hint:
            message += " " + hint
        raise AssertionError(message)


def _check_binary(op, name, reference, cases, hints, forward_given=True):
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
        if out.data.shape != expected_out.shape or not np.allclose(out.data, expected_out):
            index = (
                tuple(int(i) for i in np.argwhere(~np.isclose(out.data, expected_out))[0])
                if out.data.shape == expected_out.shape
                else None
            )
            raise AssertionError(
                f"{name}.forward no longer computes the right values ({note}); "
                "leave forward as it was given."
                if forward_given
                else f"{name}.forward computes the wrong values ({note}): "
                + (
                    f"shape {out.data.shape}, expected {expected_out.shape}"
                    if index is None
                    else f"{_entry(index)} is {number(out.data[index])}, "
                    f"expected {number(expected_out[index])}"
                )
                + "."
            )
        grads = numerical_grad(reference, [Tensor(a_data), Tensor(b_data)], grad_output=weights)
        _compare(name, "a", a.grad, grads[0], note, hints.get("a"))
        _compare(name, "b", b.grad, grads[1], note, hints.get("b"))
    return _picture(
        op,
        Tensor([1.0, 2.0, 3.0], requires_grad=True, name="a"),
        Tensor(2.0, requires_grad=True, name="b"),
    )


def _picture(op, *inputs):
    """The learner's op in a small graph, drawn: what a check shows when it passes."""
    out = op.apply(*inputs)
    out.name = "z"
    return draw_graph(out)


_BINARY_CASES = frozen(
    __name__,
    "_BINARY_CASES",
    [
        (0, (3, 4), (3, 4), {}),
        (1, (3, 1), (4,), {}),
        (2, (), (2, 3), {}),
    ],
)


def check_mul_backward(op):
    """Run `op` (z = a * b) in real graphs with broadcasting; return a picture of it in use."""
    hints = {
        "a": "dz/da is b: multiply the incoming gradient by the saved b (not a).",
        "b": "dz/db is a: multiply the incoming gradient by the saved a (not b).",
    }
    out = _check_binary(
        op, op.__name__, lambda a, b: a * b, cases_of(__name__, "_BINARY_CASES"), hints
    )
    print(f"✓ {op.__name__}.backward agrees with central differences on 3 graphs, 6 gradients")
    return out


def check_div_backward(op):
    """Run `op` (z = a / b) in real graphs with broadcasting; return a small graph using it."""
    cases = [
        (s, sa, sb, {"away_from_zero": True})
        for s, sa, sb, _ in cases_of(__name__, "_BINARY_CASES")
    ]
    hints = {
        "a": "dz/da is 1 / b.",
        "b": "dz/db is -a / b**2: the b of the denominator is squared, and the sign is minus.",
    }
    out = _check_binary(op, op.__name__, lambda a, b: a / b, cases, hints)
    print(f"✓ {op.__name__}.backward agrees with central differences on 3 graphs, 6 gradients")
    return out


def check_pow_backward(op):
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
    return _picture(op, a, 2)


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
        got = call(
            f"your numerical gradient, on {label} with x of shape {x0.shape} and eps = {eps},",
            fn,
            f,
            x,
            eps,
        )
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
                f"entry {index}: the exact value is {number(exact[index])}, you got "
                f"{number(got[index])}."
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


# --- exercise 5: a new op from scratch ----------------------------------------------------------


def _hypot(a, b):
    return (a * a + b * b).sqrt()


def check_hypot(op):
    """The learner's Hypot (forward and backward) in real graphs, against central differences."""
    if not (isinstance(op, type) and issubclass(op, Function)):
        raise AssertionError(
            f"Hypot should be a class derived from Function, got {type(op).__name__}"
        )
    cases = [
        (s, sa, sb, {"away_from_zero": True})
        for s, sa, sb, _ in cases_of(__name__, "_BINARY_CASES")
    ]
    cases.append((3, (2, 1, 3), (4, 1), {"away_from_zero": True}))
    hint = (
        "z depends on a through a**2 + b**2 under a square root: the chain rule gives two "
        "factors. Forward may save z, so that backward need not compute it again."
    )
    out = _check_binary(op, op.__name__, _hypot, cases, {"a": hint, "b": hint}, forward_given=False)
    print(
        f"✓ {op.__name__}: forward and backward agree with central differences on "
        f"{len(cases)} graphs with broadcasting"
    )
    return out


# --- exercise 6: a gradient check of your own ---------------------------------------------------


class _Hypot(Function):
    """z = sqrt(a**2 + b**2), right."""

    @staticmethod
    def forward(ctx, a, b):
        z = np.hypot(a, b)
        ctx.save_for_backward(a, b, z)
        return z

    @staticmethod
    def backward(ctx, grad):
        a, b, z = ctx.saved_tensors
        return grad * a / z, grad * b / z


def _variant(base, name: str, grads):
    """`base` with its backward replaced: grads(*saved arrays, grad) -> the gradients it returns."""

    def backward(ctx, grad):
        return grads(*ctx.saved_tensors, grad)

    return type(name, (base,), {"backward": staticmethod(backward)})


def _last_entry_off(x):
    x = np.array(x, dtype=np.float64)
    x.flat[-1] += 0.25
    return x


# plausible wrong backwards: the learner's gradient check must say False to each
_HypotIgnoresGrad = _variant(_Hypot, "Hypot", lambda a, b, z, g: (a / z + 0 * g, b / z + 0 * g))
_HypotSwapped = _variant(_Hypot, "Hypot", lambda a, b, z, g: (g * b / z, g * a / z))
_HypotSlightlyOff = _variant(_Hypot, "Hypot", lambda a, b, z, g: (g * a / z * 1.001, g * b / z))
_HypotOneEntryWrong = _variant(
    _Hypot, "Hypot", lambda a, b, z, g: (g * a / z, _last_entry_off(g * b / z))
)
_MulSwapped = _variant(Mul, "Mul", lambda a, b, g: (g * a, g * b))
_DivWrongSign = _variant(Div, "Div", lambda a, b, g: (g / b, g * a / b**2))


def _case_arrays(seed, shape_a, shape_b):
    return _arrays(seed, shape_a, shape_b, away_from_zero=True)


# (what the op is, op, shapes, seed, right?) - the learner's check must say True exactly when right
_GRADCHECK_CASES = frozen(
    __name__,
    "_GRADCHECK_CASES",
    [
        ("a correct hypot, a (3, 1) and b (4,)", _Hypot, (3, 1), (4,), 10, True),
        ("minilucid's Mul, a (2, 3) and b (3,)", Mul, (2, 3), (3,), 11, True),
        ("minilucid's Div, a (4,) and b (4,)", Div, (4,), (4,), 12, True),
        ("a hypot on 0-d arrays", _Hypot, (), (), 13, True),
        (
            "a hypot whose backward ignores the incoming grad (returns a / z and b / z)",
            _HypotIgnoresGrad,
            (3,),
            (3,),
            14,
            False,
        ),
        ("a hypot that swaps its two gradients", _HypotSwapped, (3,), (3,), 15, False),
        (
            "a hypot whose gradient for a is 0.1% too large",
            _HypotSlightlyOff,
            (2, 2),
            (2, 2),
            16,
            False,
        ),
        (
            "a hypot whose gradient for b is wrong in its last entry only",
            _HypotOneEntryWrong,
            (5,),
            (5,),
            17,
            False,
        ),
        ("a Mul that swaps its two gradients", _MulSwapped, (3,), (3,), 18, False),
        ("a Div whose gradient for b has the wrong sign", _DivWrongSign, (4,), (4,), 19, False),
    ],
)


def check_gradient_check(gradient_check) -> None:
    """The learner's gradient_check(op, a, b) must accept right ops and reject wrong ones."""
    for what, op, shape_a, shape_b, seed, right in cases_of(__name__, "_GRADCHECK_CASES"):
        a, b = _case_arrays(seed, shape_a, shape_b)
        kept = a.copy(), b.copy()
        verdict = call(f"gradient_check on {what}", gradient_check, op, a, b)
        if not isinstance(verdict, bool | np.bool_):
            raise AssertionError(
                f"gradient_check on {what} returned {type(verdict).__name__}; return True or "
                "False (np.allclose gives one; a comparison of arrays gives an array)"
            )
        if not (np.array_equal(a, kept[0]) and np.array_equal(b, kept[1])):
            raise AssertionError(
                f"gradient_check on {what} changed the arrays it was given; work on copies"
            )
        if bool(verdict) != right:
            if right:
                why = (
                    "this op is right: compare with a tolerance that allows central "
                    "differences their small error (about 1e-6 relative), and feed the "
                    "same weights to the numerical side as to backward"
                )
            else:
                why = {
                    _HypotIgnoresGrad: "an arrival gradient of all ones hides this mistake: "
                    "call backward with random weights, and weight the numerical side alike",
                    _HypotSlightlyOff: "a tolerance as loose as this lets a 0.1% error "
                    "through: central differences in float64 are good to about 1e-8",
                    _HypotOneEntryWrong: "compare every entry of every input, not a sample",
                }.get(
                    op, "compare both inputs' gradients, entry by entry, with central differences"
                )
            raise AssertionError(f"gradient_check said {bool(verdict)} on {what}: {why}.")
    print(
        f"✓ your gradient_check accepts the {_count('_GRADCHECK_CASES', True)} right ops "
        f"and rejects the {_count('_GRADCHECK_CASES', False)} wrong ones"
    )
