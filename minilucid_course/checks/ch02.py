"""Checks for the exercises of chapter 02 (local derivatives).

Each check runs the learner's op inside a real graph, lets minilucid's backward call it, and
compares every gradient entry with central differences in float64.
"""

import numpy as np

from minilucid.function import Function
from minilucid.numerical import numerical_grad
from minilucid.ops.broadcast import sum_to_shape
from minilucid.ops.elementwise import Div, Mul
from minilucid.tensor import Tensor
from minilucid.viz import draw_graph
from minilucid_course.checks.common import (
    attempt,
    cases_of,
    frozen,
    judged_entry,
    number,
)
from minilucid_course.checks.exercise import LAB_SEED, Exercise, Wrong, register


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


def _compare(name, input_name, got, expected, shapes_note, mistakes=()) -> None:
    """`mistakes`: (what the mistake is, the gradient it gives) pairs, named when one fits."""
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
        else:
            for what, wrong in mistakes:
                if wrong.shape == got.shape and np.allclose(got, wrong, rtol=1e-5, atol=1e-6):
                    message += f" Every entry equals {what}."
                    break
        raise AssertionError(message)


def _binary_case(seed: int, shift: int, shape_a, shape_b, options):
    """The arrays of one case: a, b, and the gradient arriving from above."""
    a_data, b_data = _arrays(seed + shift, shape_a, shape_b, **options)
    (weights,) = _arrays(seed + shift + 100, np.broadcast_shapes(shape_a, shape_b))
    return a_data, b_data, weights


def _run_in_graph(op, inputs, weights):
    """op.apply(*inputs) in a graph, minilucid's backward run on it; the output's values."""
    out = op.apply(*inputs)
    out.backward(gradient=weights)
    return np.array(out.data, dtype=np.float64)


def _grad_of(t):
    g = t.grad
    return np.array(g, dtype=np.float64) if isinstance(g, np.ndarray | np.generic) else None


def _probe_binary(cases, op):
    """Per case: the op's output and both inputs' gradients after minilucid's backward ran it
    in a real graph; the probe stops at the first case the learner's code raises on."""
    runs = []
    for seed, shape_a, shape_b, options in cases["cases"]:
        a_data, b_data, weights = _binary_case(seed, cases["shift"], shape_a, shape_b, options)
        a = Tensor(a_data.copy(), requires_grad=True, name="a")
        b = Tensor(b_data.copy(), requires_grad=True, name="b")
        record = attempt(_run_in_graph, op, (a, b), weights)
        if record[0] == "raised":
            runs.append({"raised": list(record)})
            break
        runs.append({"out": record[1], "a": _grad_of(a), "b": _grad_of(b)})
    name = getattr(op, "__name__", None)
    is_op = isinstance(op, type) and issubclass(op, Function)
    return {
        "name": name if isinstance(name, str) else "op",
        "is_op": is_op,
        "type": type(op).__name__,
        "runs": runs,
    }


def _judge_binary(cases, data, reference, mistakes, forward_given=True) -> str:
    """What a binary op's probe data says against central differences; the op's name."""
    name = data.get("name") if isinstance(data, dict) else None
    runs = data.get("runs") if isinstance(data, dict) else None
    if not isinstance(name, str) or not isinstance(runs, list) or not runs:
        raise Wrong("the results of your answer hold no runs of your op")
    if type(data.get("is_op")) is not bool or not isinstance(data.get("type"), str):
        raise Wrong("the results of your answer do not say what your op is")
    name = name[:40]
    if len(runs) > len(cases["cases"]):
        raise Wrong("the results of your answer hold more runs than the check has cases")
    for (seed, shape_a, shape_b, options), run in zip(cases["cases"], runs, strict=False):
        out_shape = np.broadcast_shapes(shape_a, shape_b)
        note = (
            f"Inputs: a of shape {shape_a}, b of shape {shape_b}; the gradient arriving from "
            f"above was a random array of shape {out_shape}"
        )
        judged_entry(run, note, f"{name}, used in a graph by minilucid's backward,")
        a_data, b_data, weights = _binary_case(seed, cases["shift"], shape_a, shape_b, options)
        out = run.get("out")
        if not isinstance(out, np.ndarray) or out.dtype.kind not in "biuf":
            raise Wrong(f"{name}.forward gave no array of numbers ({note})")
        expected_out = reference(Tensor(a_data), Tensor(b_data)).data
        if out.shape != expected_out.shape or not np.allclose(out, expected_out):
            index = (
                tuple(int(i) for i in np.argwhere(~np.isclose(out, expected_out))[0])
                if out.shape == expected_out.shape
                else None
            )
            raise Wrong(
                f"{name}.forward no longer computes the right values ({note}); the forward "
                "was given"
                if forward_given
                else f"{name}.forward computes the wrong values ({note}): "
                + (
                    f"shape {out.shape}, expected {expected_out.shape}"
                    if index is None
                    else f"{_entry(index)} is {number(out[index])}, "
                    f"expected {number(expected_out[index])}"
                )
            )
        grads = numerical_grad(reference, [Tensor(a_data), Tensor(b_data)], grad_output=weights)
        wrong = mistakes(a_data, b_data, weights)
        wrong = {
            k: [(what, sum_to_shape(g, x.shape)) for what, g in v]
            for (k, v), x in zip(wrong.items(), (a_data, b_data), strict=True)
        }
        for key, expected in zip("ab", grads, strict=True):
            got = run.get(key)
            if got is not None and not isinstance(got, np.ndarray):
                raise Wrong(f"the results of your answer hold no gradient for {key}")
            try:
                _compare(name, key, got, expected, note, wrong[key])
            except AssertionError as error:
                raise Wrong(str(error)) from None
    if len(runs) < len(cases["cases"]):
        raise Wrong("the results of your answer hold fewer runs than the check has cases")
    return name


def _show_binary(op) -> None:
    """Lab only: the learner's op in a small graph, drawn."""
    from IPython.display import display

    display(
        _picture(
            op,
            Tensor([1.0, 2.0, 3.0], requires_grad=True, name="a"),
            Tensor(2.0, requires_grad=True, name="b"),
        )
    )


def _binary_cases(seed: int, options: dict, extra=()) -> dict:
    found = [(s, sa, sb, dict(options)) for s, sa, sb, _ in cases_of(__name__, "_BINARY_CASES")]
    return {"cases": found + list(extra), "shift": 0 if seed == LAB_SEED else seed % 100_003}


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


def _mul_mistakes(a, b, g):
    return {
        "a": [("the incoming gradient times a itself", g * a + 0 * b)],
        "b": [
            ("the incoming gradient times b itself", g * b + 0 * a),
            (
                "the incoming gradient times a and times b: grad was multiplied by b in place "
                "before a's share was taken from it",
                g * b * a,
            ),
        ],
    }


def _judge_mul(cases, data) -> str:
    name = _judge_binary(cases, data, lambda a, b: a * b, _mul_mistakes)
    return f"✓ {name}.backward agrees with central differences on 3 graphs, 6 gradients"


MUL = register(
    Exercise(
        check="check_mul_backward",
        chapter="02",
        title="Mul's backward",
        probe=_probe_binary,
        judge=_judge_mul,
        cases=lambda seed: _binary_cases(seed, {}),
        forbidden=("Mul",),
        after=_show_binary,
    )
)
check_mul_backward = MUL.lab_check


def _div_mistakes(a, b, g):
    return {
        "a": [("the incoming gradient times b", g * b + 0 * a)],
        "b": [
            ("the incoming gradient times -a / b, where b is not squared", -g * a / b),
            ("the incoming gradient divided by b, the gradient of a", g / b + 0 * a),
            (
                "the incoming gradient times -a / b**3: grad was divided by b in place before "
                "b's share was taken from it",
                -g * a / b**3,
            ),
        ],
    }


def _judge_div(cases, data) -> str:
    name = _judge_binary(cases, data, lambda a, b: a / b, _div_mistakes)
    return f"✓ {name}.backward agrees with central differences on 3 graphs, 6 gradients"


DIV = register(
    Exercise(
        check="check_div_backward",
        chapter="02",
        title="Div's backward",
        probe=_probe_binary,
        judge=_judge_div,
        cases=lambda seed: _binary_cases(seed, {"away_from_zero": True}),
        forbidden=("Div",),
        after=_show_binary,
    )
)
check_div_backward = DIV.lab_check


_POW_CASES = frozen(
    __name__, "_POW_CASES", [(0, (3, 4), 3), (1, (5,), 0.5), (2, (2, 3), -2.0), (3, (), 1)]
)


def _pow_case(seed: int, shift: int, shape):
    (a_data,) = _arrays(seed + shift, shape, positive=True)
    (weights,) = _arrays(seed + shift + 100, shape)
    return a_data, weights


def _probe_pow(cases, op):
    """Per case: a ** p and a's gradient after minilucid's backward ran the op in a graph."""
    runs = []
    for seed, shape, p in cases_of(__name__, "_POW_CASES"):
        a_data, weights = _pow_case(seed, cases["shift"], shape)
        a = Tensor(a_data.copy(), requires_grad=True, name="a")
        record = attempt(_run_in_graph, op, (a, p), weights)
        if record[0] == "raised":
            runs.append({"raised": list(record)})
            break
        runs.append({"out": record[1], "a": _grad_of(a)})
    name = getattr(op, "__name__", None)
    return {"name": name if isinstance(name, str) else "op", "runs": runs}


def _judge_pow(cases, data) -> str:
    found = cases_of(__name__, "_POW_CASES")
    name = data.get("name") if isinstance(data, dict) else None
    runs = data.get("runs") if isinstance(data, dict) else None
    if not isinstance(name, str) or not isinstance(runs, list) or not runs or len(runs) > 4:
        raise Wrong("the results of your answer hold no runs of your op")
    name = name[:40]
    for (seed, shape, p), run in zip(found, runs, strict=False):
        note = (
            f"Input a of shape {shape} with positive entries, exponent p = {p!r}; the gradient "
            f"arriving from above was a random array of shape {shape}"
        )
        judged_entry(run, note, f"{name}, used in a graph by minilucid's backward,")
        a_data, weights = _pow_case(seed, cases["shift"], shape)
        out, got = run.get("out"), run.get("a")
        if not isinstance(out, np.ndarray) or out.shape != np.shape(a_data**p):
            raise Wrong(f"{name}.forward no longer computes a ** p ({note})")
        if not np.allclose(out, a_data**p):
            raise Wrong(f"{name}.forward no longer computes a ** p ({note})")
        if got is not None and not isinstance(got, np.ndarray):
            raise Wrong("the results of your answer hold no gradient for a")
        (expected,) = numerical_grad(lambda t, p=p: t**p, [Tensor(a_data)], grad_output=weights)
        mistakes = [
            ("the incoming gradient times a ** (p - 1), without p", weights * a_data ** (p - 1)),
            (
                "the incoming gradient times p * a ** p, the exponent unchanged",
                weights * p * a_data**p,
            ),
        ]
        try:
            _compare(name, "a", got, expected, note, mistakes)
        except AssertionError as error:
            raise Wrong(str(error)) from None
    if len(runs) < len(found):
        raise Wrong("the results of your answer hold fewer runs than the check has cases")
    return f"✓ {name}.backward agrees with central differences for p = 3, 0.5, -2 and 1"


def _show_pow(op) -> None:
    """Lab only: the learner's op in a small graph, drawn."""
    from IPython.display import display

    display(_picture(op, Tensor([1.0, 2.0, 3.0], requires_grad=True, name="a"), 2))


POW = register(
    Exercise(
        check="check_pow_backward",
        chapter="02",
        title="Pow's backward",
        probe=_probe_pow,
        judge=_judge_pow,
        cases=lambda seed: {"shift": 0 if seed == LAB_SEED else seed % 100_003},
        forbidden=("Pow",),
        after=_show_pow,
    )
)
check_pow_backward = POW.lab_check


def _central_cases(seed: int) -> dict:
    """x0 and w of the three functions (the lab's fixed ones at seed 0), and eps."""
    x0 = np.array([[1.5, -2.0, 0.5], [3.0, -1.0, 2.5]])
    w = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]])
    if seed != LAB_SEED:
        rng = np.random.default_rng(seed)
        x0 = np.round(rng.uniform(-3.0, 3.0, size=x0.shape), 2)
        w = np.round(rng.uniform(-2.0, 2.0, size=w.shape), 2)
    return {"x0": x0, "w": w, "eps": 1e-3}


def _central_functions(cases) -> list:
    """(label, f, exact gradient at x0) for the three functions of the check."""
    x0, w = cases["x0"], cases["w"]
    corner = np.zeros_like(x0)
    corner[0, 0], corner[1, 2] = x0[1, 2], x0[0, 0]
    return [
        ("f(x) = sum(x**3)", lambda x: float((x**3).sum()), 3 * x0**2),
        ("f(x) = sum(w * x) ** 2", lambda x: float((w * x).sum() ** 2), 2 * (w * x0).sum() * w),
        ("f(x) = x[0, 0] * x[1, 2]", lambda x: float(x[0, 0] * x[1, 2]), corner),
    ]


def _engine_function(x):
    return float(((x * x - x / 2.0) ** 2).sum())


def _probe_central(cases, fn):
    """Per function: ("raised", ...) or the learner's gradient, and whether x came back as it
    went in; then the learner's gradient of (a*a - a/2)**2 at x0 (for the ✓ line)."""
    runs = []
    for _, f, _ in _central_functions(cases):
        x = cases["x0"].copy()
        record = attempt(fn, f, x, cases["eps"])
        if record[0] == "raised":
            runs.append({"raised": list(record)})
            return {"runs": runs}
        got = attempt(lambda r=record[1]: np.array(r, dtype=np.float64))
        runs.append(
            {
                "grad": got[1] if got[0] == "ok" else "not numbers",
                "x_kept": bool(np.array_equal(x, cases["x0"])),
            }
        )
    engine = attempt(fn, _engine_function, cases["x0"].copy(), 1e-6)
    theirs = attempt(lambda: np.array(engine[1], dtype=np.float64)) if engine[0] == "ok" else None
    return {"runs": runs, "engine": theirs[1] if theirs and theirs[0] == "ok" else None}


def _judge_central(cases, data) -> str:
    functions = _central_functions(cases)
    runs = data.get("runs") if isinstance(data, dict) else None
    if not isinstance(runs, list) or not runs or len(runs) > len(functions):
        raise Wrong("the results of your answer hold no gradients for the check's functions")
    x0, eps = cases["x0"], cases["eps"]
    for (label, _, exact), run in zip(functions, runs, strict=False):
        what = f"your numerical gradient, on {label} with x of shape {x0.shape} and eps = {eps},"
        judged_entry(run, label, what)
        if run.get("x_kept") is not True:
            raise Wrong(
                f"after computing the gradient of {label}, x was changed: an entry nudged "
                "was not left at its old value"
            )
        got = run.get("grad")
        if not isinstance(got, np.ndarray) or got.dtype.kind not in "biuf":
            raise Wrong(f"the gradient of {label} is not an array of numbers")
        if got.shape != x0.shape:
            raise Wrong(f"the gradient of {label} has shape {got.shape}; x has shape {x0.shape}")
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
                message += " It is twice too big."
            elif np.allclose(got, exact, atol=1e-2):
                message += (
                    " It is close but not close enough: its error is of the size of eps, the "
                    "error of a one-sided difference."
                )
            raise Wrong(message)
    if len(runs) < len(functions):
        raise Wrong("the results of your answer hold no gradients for the check's functions")
    # plugged into the engine: their oracle judges minilucid's own backward
    a = Tensor(x0.copy(), requires_grad=True)
    ((a * a - a / 2.0) ** 2).backward(gradient=np.ones_like(x0))
    theirs = data.get("engine")
    if not isinstance(theirs, np.ndarray) or theirs.shape != x0.shape:
        raise Wrong(
            "your numerical gradient of (a*a - a/2)**2 at x0, with eps = 1e-6, is not an array "
            f"of x's shape {x0.shape}"
        )
    agree = np.allclose(theirs, a.grad, rtol=1e-6, atol=1e-6)
    return (
        "✓ your central differences are right on 3 functions (exact to about eps**2)\n"
        "  and they say minilucid's backward of (a*a - a/2)**2 is "
        + ("right" if agree else "WRONG")
        + f" on all {x0.size} entries"
    )


CENTRAL = register(
    Exercise(
        check="check_numerical_grad",
        chapter="02",
        title="Central differences",
        probe=_probe_central,
        judge=_judge_central,
        cases=_central_cases,
        forbidden=("numerical_grad", "gradcheck"),
        reveals=("minilucid.numerical.numerical_grad",),
    )
)
check_numerical_grad = CENTRAL.lab_check


# --- exercise 5: a new op from scratch ----------------------------------------------------------


def _hypot(a, b):
    return (a * a + b * b).sqrt()


def _hypot_mistakes(a, b, g):
    z = np.sqrt(a * a + b * b)
    return {
        x: [
            (f"{x} / z alone, without the incoming gradient", v / z + 0 * g),
            (f"the incoming gradient times {x}, not divided by z", g * v + 0 * z),
            (f"the incoming gradient times {x} / (2z)", g * v / (2 * z)),
        ]
        for x, v in (("a", a), ("b", b))
    }


def _judge_hypot(cases, data) -> str:
    if not isinstance(data, dict) or data.get("is_op") is not True:
        kind = data.get("type") if isinstance(data, dict) else None
        raise Wrong(f"Hypot is not a class derived from Function (it is a {str(kind)[:40]})")
    name = _judge_binary(cases, data, _hypot, _hypot_mistakes, forward_given=False)
    return (
        f"✓ {name}: forward and backward agree with central differences on "
        f"{len(cases['cases'])} graphs with broadcasting"
    )


HYPOT = register(
    Exercise(
        check="check_hypot",
        chapter="02",
        title="A new op: hypot",
        probe=_probe_binary,
        judge=_judge_hypot,
        cases=lambda seed: _binary_cases(
            seed, {"away_from_zero": True}, [(3, (2, 1, 3), (4, 1), {"away_from_zero": True})]
        ),
        forbidden=("hypot",),
        after=_show_binary,
    )
)
check_hypot = HYPOT.lab_check


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


def _probe_gradient_check(cases, gradient_check):
    """Per case: the learner's verdict (its type, its truth) and whether the arrays it was
    given came back unchanged; the probe stops at the first case their code raises on."""
    runs = []
    for _, op, shape_a, shape_b, seed, _ in cases_of(__name__, "_GRADCHECK_CASES"):
        a, b = _case_arrays(seed + cases["shift"], shape_a, shape_b)
        kept = a.copy(), b.copy()
        record = attempt(gradient_check, op, a, b)
        if record[0] == "raised":
            runs.append({"raised": list(record)})
            break
        verdict = record[1]
        runs.append(
            {
                "kind": type(verdict).__name__,
                "bool": isinstance(verdict, bool | np.bool_) and bool(verdict),
                "kept": bool(np.array_equal(a, kept[0]) and np.array_equal(b, kept[1])),
            }
        )
    return {"runs": runs}


_GRADCHECK_WHY = frozen(
    __name__,
    "_GRADCHECK_WHY",
    {
        _HypotIgnoresGrad: "its mistake does not show when the arriving gradient is all ones",
        _HypotSlightlyOff: "its gradient for a is off by 0.1%, which your tolerance lets through",
        _HypotOneEntryWrong: "only the last entry of its gradient for b is wrong",
    },
)


def _judge_gradient_check(cases, data) -> str:
    found = cases_of(__name__, "_GRADCHECK_CASES")
    runs = data.get("runs") if isinstance(data, dict) else None
    if not isinstance(runs, list) or not runs or len(runs) > len(found):
        raise Wrong("the results of your answer hold no verdicts for the check's ops")
    for (what, op, _, _, _, right), run in zip(found, runs, strict=False):
        run = judged_entry(run, what, f"gradient_check on {what}")
        kind, verdict, kept = run.get("kind"), run.get("bool"), run.get("kept")
        if not isinstance(kind, str) or type(verdict) is not bool or type(kept) is not bool:
            raise Wrong(f"the results of your answer hold no verdict for {what}")
        if kind not in ("bool", "bool_"):
            raise Wrong(
                f"gradient_check on {what} returned {kind[:40]}, not True or False (a "
                "comparison of arrays gives an array)"
            )
        if not kept:
            raise Wrong(f"gradient_check on {what} changed the arrays it was given")
        if verdict != right:
            if right:
                why = (
                    "this op is right, and central differences agree with it to about 1e-6 "
                    "relative when both sides are weighted alike"
                )
            else:
                why = _GRADCHECK_WHY.get(op, "this op's backward is wrong")
            raise Wrong(f"gradient_check said {verdict} on {what}: {why}")
    if len(runs) < len(found):
        raise Wrong("the results of your answer hold no verdicts for the check's ops")
    return (
        f"✓ your gradient_check accepts the {_count('_GRADCHECK_CASES', True)} right ops "
        f"and rejects the {_count('_GRADCHECK_CASES', False)} wrong ones"
    )


GRADIENT_CHECK = register(
    Exercise(
        check="check_gradient_check",
        chapter="02",
        title="A gradient check of your own",
        probe=_probe_gradient_check,
        judge=_judge_gradient_check,
        cases=lambda seed: {"shift": 0 if seed == LAB_SEED else seed % 100_003},
        forbidden=("gradcheck", "numerical_grad"),
    )
)
check_gradient_check = GRADIENT_CHECK.lab_check
