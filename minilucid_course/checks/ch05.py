"""Checks for the exercises of chapter 05 (functions and numerics), as probes and judges.

Each probe runs the learner's code on inputs chosen to expose one plausible mistake each (an op
inside the real engine, with NumPy's overflow made an error) and hands back plain data: values,
gradients, what was raised. Each judge recomputes every reference in float64 itself and names
the first mistake and the case that shows it. The pictures are the lab's, never graded.
"""

import numpy as np

import minilucid as ml
from minilucid.function import Function
from minilucid.nn import functional as F
from minilucid.numerical import numerical_grad
from minilucid.ops.softmax import LogSoftmax, logsumexp
from minilucid.tensor import Tensor
from minilucid_course.checks.common import (
    attempt,
    call,
    cases_of,
    frozen,
    judged_entry,
    raised_message,
)
from minilucid_course.checks.common import (
    float_array as _array,
)
from minilucid_course.checks.exercise import Exercise, Wrong, register


def _count(name: str, right: bool | None = None) -> int:
    """How many cases the check ran (for its ✓ line); with `right`, only those so marked."""
    found = cases_of(__name__, name)
    return len(found) if right is None else sum(bool(c[-1]) == right for c in found)


def _runs_of(data, count: int, what: str) -> list:
    """For a judge: data["runs"], a list of 1 to `count` runs, or Wrong."""
    runs = data.get("runs") if isinstance(data, dict) else None
    if not isinstance(runs, list) or not runs or len(runs) > count:
        raise Wrong(f"the results of your answer hold no runs of {what}")
    return runs


def _show(x) -> str:
    """A short, deterministic text for an array or number."""
    text = np.array2string(np.asarray(x), precision=4, separator=", ", max_line_width=10**6)
    return " ".join(text.split())  # rows of a matrix on one line


# --------------------------------------------------------------------------------------------
# Exercise 2: a stable log_softmax forward

_LOG_SOFTMAX_CASES = frozen(
    __name__,
    "_LOG_SOFTMAX_CASES",
    (
        ("a small vector", np.array([1.0, 2.0, 3.0]), -1),
        ("a batch of 2 rows of 3 logits", np.array([[1.0, 2.0, 3.0], [0.5, -1.0, 2.0]]), -1),
        (
            "a 3 x 3 batch (keepdims matters even when the shapes happen to broadcast)",
            np.array([[0.0, 1.0, 2.0], [4.0, 1.0, 0.5], [-1.0, 3.0, 1.0]]),
            -1,
        ),
        ("a 2 x 3 array along dim=0 (columns)", np.array([[1.0, 2.0, 3.0], [0.5, -1.0, 2.0]]), 0),
        ("large logits", np.array([1000.0, 0.0, -1000.0]), -1),
        ("logits far from zero", np.array([[3000.0, 1000.0, 0.0], [-3.0, 0.0, 2.0]]), -1),
        ("very negative logits", np.array([-1000.0, -1001.0, -1003.0]), -1),
        ("float32 logits around 100", np.array([[100.0, 90.0, 95.0]], dtype=np.float32), -1),
    ),
)


_LOG_SOFTMAX_HINT = (
    "A result reduced along dim that loses the dimension may not broadcast against a."
)


def _learner_array(x):
    """What a learner's function returned, as data: its kind and, for arrays, the numbers."""
    if x is None:
        return {"kind": "None"}
    if isinstance(x, Tensor):
        return {"kind": "Tensor"}
    try:
        x = np.asarray(x)
    except Exception:  # noqa: BLE001 (anything that is no array)
        return {"kind": type(x).__name__[:30]}
    if x.dtype.kind not in "biuf":
        return {"kind": f"an array of {x.dtype}"[:40]}
    return {"kind": "array", "out": np.array(x, dtype=np.float64)}


def _probe_log_softmax(cases, log_softmax_forward):
    runs = []
    for description, a, dim in cases_of(__name__, "_LOG_SOFTMAX_CASES"):
        a_in = a.copy()
        what = f"log_softmax_forward on {description} {_show(a)} with dim={dim}"
        record = attempt(log_softmax_forward, a_in, dim)
        if record[0] == "raised":
            runs.append({"raised": [what, *record]})
            break
        runs.append(dict(_learner_array(record[1]), a_after=np.array(a_in, dtype=np.float64)))
    return {"runs": runs}


def _judge_log_softmax(cases, data) -> str:
    found = cases_of(__name__, "_LOG_SOFTMAX_CASES")
    runs = _runs_of(data, len(found), "log_softmax_forward")
    for (description, a, dim), run in zip(found, runs, strict=False):
        what = f"log_softmax_forward on {description} {_show(a)} with dim={dim}"
        record = run.get("raised") if isinstance(run, dict) else None
        if isinstance(record, list) and len(record) == 4 and record[1] == "raised":
            record = [str(r) for r in record]
            raise Wrong(raised_message(record[0], record[1:], _LOG_SOFTMAX_HINT))
        judged_entry(run, what)
        kind = run.get("kind")
        if kind == "Tensor":
            raise Wrong(f"{what} returned a Tensor, not a NumPy array")
        if kind == "None":
            raise Wrong(f"{what} returned None; did you forget `return`?")
        got, after = run.get("out"), run.get("a_after")
        if kind != "array" or not isinstance(got, np.ndarray):
            raise Wrong(f"{what} returned {str(kind)[:40]}, not an array of numbers")
        if not isinstance(after, np.ndarray) or after.shape != a.shape:
            raise Wrong(f"the results of your answer hold no input for {what}")
        if not np.array_equal(after, a):
            raise Wrong(f"{what} changed its input in place")
        expected = a - logsumexp(a.astype(np.float64), dim)
        if got.shape != a.shape:
            raise Wrong(
                f"{what}: expected shape {a.shape} (one log-probability per logit), "
                f"got shape {got.shape}"
            )
        if not np.isfinite(got).all():
            raise Wrong(
                f"{what}: expected {_show(expected)}, got {_show(got)}: exp overflowed or a "
                "log met 0 on these logits"
            )
        tolerance = 1e-4 if a.dtype == np.float32 else 1e-9
        if not np.allclose(got, expected, rtol=tolerance, atol=tolerance):
            hint = ""
            with np.errstate(all="ignore"):
                if not np.allclose(np.exp(got).sum(axis=dim), 1, atol=1e-6):
                    hint = f" The probabilities exp(result) do not sum to 1 along dim={dim}."
            raise Wrong(f"{what}: expected {_show(expected)}, got {_show(got)}.{hint}")
    if len(runs) < len(found):
        raise Wrong("the results of your answer hold fewer runs than the check has cases")
    return (
        f"✓ log_softmax_forward is right on {_count('_LOG_SOFTMAX_CASES')} inputs, "
        "including logits of ±1000 and float32 logits of 100"
    )


LOG_SOFTMAX = register(
    Exercise(
        check="check_log_softmax",
        chapter="05",
        title="A stable log_softmax",
        probe=_probe_log_softmax,
        judge=_judge_log_softmax,
        forbidden=("log_softmax", "logsumexp", "LogSoftmax"),
    )
)
check_log_softmax = LOG_SOFTMAX.lab_check


def your_log_softmax_graph(log_softmax_forward):
    """Your forward in a real op inside a cross-entropy graph; returns the backward picture."""
    from minilucid import viz

    class YourLogSoftmax(Function):
        """z = your log_softmax(a);  backward: the package's g - softmax(a) * sum(g)"""

        @staticmethod
        def forward(ctx, a, dim=-1):
            ctx.dim = dim % a.ndim
            out = np.asarray(log_softmax_forward(a, dim))
            ctx.save_for_backward(out)
            return out

        backward = staticmethod(LogSoftmax.backward)

    logits_data = np.array([[2.0, 0.5, -1.0], [0.1, 0.2, 3.0]])
    targets = np.array([0, 2])
    rows = np.arange(len(targets))

    mine = Tensor(logits_data, requires_grad=True, name="logits")
    log_probs = YourLogSoftmax.apply(mine, dim=1)
    log_probs.name = "log_probs"
    loss = -log_probs[rows, targets].mean()
    reference = Tensor(logits_data, requires_grad=True)
    expected_loss = F.cross_entropy(reference, targets)
    expected_loss.backward()
    (got,) = ml.grad(loss, [mine], retain_graph=True)
    if not np.allclose(loss.item(), expected_loss.item()) or not np.allclose(got, reference.grad):
        raise AssertionError(
            f"with your log_softmax in a cross-entropy graph the loss is {loss.item():.6g} and "
            f"d(loss)/d(logits) is {_show(got)}; the fused CrossEntropy op gives "
            f"{expected_loss.item():.6g} and {_show(reference.grad)}"
        )
    loss.name = "loss"
    return viz.draw_backward(loss)


# --------------------------------------------------------------------------------------------
# Exercise 1: a sigmoid op that survives float32, forward and backward


def _sigmoid(a: np.ndarray) -> np.ndarray:
    """The sigmoid in float64, right to the last digit in both tails."""
    a = np.asarray(a, dtype=np.float64)
    e = np.exp(-np.abs(a))
    return np.where(a >= 0, 1 / (1 + e), e / (1 + e))


_SIGMOID_INPUTS = frozen(
    __name__,
    "_SIGMOID_INPUTS",
    (
        np.array([-2.0, -0.5, 0.0, 0.7, 3.0]),
        np.array([[0.3, -1.2, 2.5], [-4.0, 1.0, 0.1]]),
        np.array([-30.0, -8.0, 8.0, 30.0]),
    ),
)
_SIGMOID_EXTREMES = frozen(
    __name__,
    "_SIGMOID_EXTREMES",
    np.array([-100.0, -88.0, -30.0, -5.0, 0.0, 5.0, 30.0, 89.0, 100.0]),
)


def _wrong_value(name: str, what: str, data, expected, got, where: tuple, words: str):
    return Wrong(
        f"{name} forward on {what} is wrong at a = {float(data[where]):g}: expected "
        f"{float(expected[where]):.6g}, got {float(got[where]):.6g}.{words}"
    )


def _gradient_shape(name: str, data, got) -> None:
    if not isinstance(got, np.ndarray) or np.shape(got) != data.shape:
        raise Wrong(
            f"{name}.backward on an input of shape {data.shape} returned a gradient of "
            f"shape {np.shape(got)}, not the input's shape"
        )


def _display_now(picture) -> None:
    """Show a picture at once in a notebook (so it stays when the check then fails)."""
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:
        return
    if get_ipython() is not None:
        display(picture)


def _sigmoid_cases() -> list:
    cases = [(d, f"input {_show(d)}") for d in cases_of(__name__, "_SIGMOID_INPUTS")]
    extremes = cases_of(__name__, "_SIGMOID_EXTREMES")
    cases.append((extremes.astype(np.float32), f"float32 input {_show(extremes)}"))
    return cases


def _probe_sigmoid(cases, sigmoid_op):
    found = _sigmoid_cases()
    return _probe_runs(
        sigmoid_op, [(d, _weights(k, d.shape), {}) for k, (d, _) in enumerate(found)]
    )


def _judge_sigmoid(cases, data) -> str:
    found = _sigmoid_cases()
    runs = _runs_of(data, len(found), "your sigmoid")
    name = _named_op(data)
    for k, ((a, what), run) in enumerate(zip(found, runs, strict=False)):
        weights = _weights(k, a.shape)
        z_got, got = _op_result(run, name, what, a)
        z = _sigmoid(a)
        if z_got.dtype != a.dtype:
            raise Wrong(
                f"{name} forward on {what} returned {z_got.dtype}, not the input's dtype "
                f"({a.dtype}): a float32 model should stay float32"
            )
        if z_got.shape != a.shape:
            raise Wrong(f"{name} forward on {what}: expected shape {a.shape}, got {z_got.shape}")
        wrong = ~np.isclose(z_got, z, rtol=1e-5 if a.dtype == np.float32 else 1e-9, atol=1e-44)
        if wrong.any():
            where = tuple(int(i) for i in np.unravel_index(int(np.argmax(wrong)), a.shape))
            words = ""
            if a[where] < -10 and np.isfinite(z_got[where]):
                words = (
                    " The left tail lost its digits: there the sigmoid is tiny, and a formula "
                    "that adds two numbers close to 1 and -1 (such as 1 + tanh(a/2)) cancels."
                )
            raise _wrong_value(name, what, a, z, z_got, where, words)
        _gradient_shape(name, a, got)
        expected = weights * z * (1 - z)
        tolerance = (1e-4, 1e-7) if a.dtype == np.float32 else (1e-6, 1e-12)
        bad = ~np.isclose(got, expected, rtol=tolerance[0], atol=tolerance[1])
        if bad.any():
            where = tuple(int(i) for i in np.unravel_index(int(np.argmax(bad)), a.shape))
            raise Wrong(
                f"{name}.backward is wrong at entry {where} of {what}: "
                f"with a = {float(a[where]):.4g}, z = {float(z[where]):.4g} and incoming "
                f"gradient {weights[where]:.4g}, expected {float(expected[where]):.6g}, got "
                f"{float(got[where]):.6g}."
                + _sigmoid_diagnosis(got, a.astype(np.float64), z, weights)
            )
    if len(runs) < len(found):
        raise Wrong("the results of your answer hold fewer runs than the check has inputs")
    return (
        f"✓ {name}: values and gradients right on {len(found)} inputs, float32 from -100 to 100 "
        "included, with no overflow on the way"
    )


SIGMOID = register(
    Exercise(
        check="check_sigmoid",
        chapter="05",
        title="A sigmoid that survives float32",
        probe=_probe_sigmoid,
        judge=_judge_sigmoid,
        forbidden=("Sigmoid", "sigmoid"),
    )
)


def check_sigmoid(sigmoid_op) -> None:
    """Forward and backward of the learner's sigmoid, in float64 and at float32's extremes.

    First shows draw_gradcheck of an expression built with the learner's op: green where its
    backward agrees with central differences, red where it does not.
    """
    _display_now(your_sigmoid_picture(sigmoid_op))
    SIGMOID.lab_check(sigmoid_op)


def _sigmoid_diagnosis(got, a, z, w) -> str:
    candidates = (
        (w * z * (1 + z), " It looks like z * (1 + z); the derivative is z * (1 - z)."),
        (w * a * (1 - a), " It looks like you used the input a; the formula needs the output z."),
        (z * (1 - z), " It looks like the incoming gradient was not multiplied in."),
        (w * (1 - z * z), " That is tanh's derivative 1 - z**2; sigmoid's is z * (1 - z)."),
        (-w * z * (1 - z), " The sign is flipped."),
    )
    for value, words in candidates:
        if np.allclose(got, value):
            return words
    return ""


def your_sigmoid_picture(sigmoid_op):
    """viz.draw_gradcheck of a small expression built around your op."""
    from minilucid import viz

    x = Tensor(np.array([[0.5, -1.0], [2.0, 0.3]]), requires_grad=True, name="x")
    w = Tensor(np.array([[1.5, -0.5], [0.25, 1.0]]), requires_grad=True, name="w")

    def expression(x, w):
        return (sigmoid_op.apply(x @ w) * x).sum()

    what = f"drawing gradcheck of sum(sigmoid(x @ w) * x) with your {sigmoid_op.__name__}"
    return call(what, viz.draw_gradcheck, expression, (x, w))


# --------------------------------------------------------------------------------------------
# Exercise 4: cross_entropy from log_softmax and indexing

_CROSS_ENTROPY_CASES = frozen(
    __name__,
    "_CROSS_ENTROPY_CASES",
    (
        (
            "4 examples of 3 classes",
            np.array([[2.0, 0.5, -1.0], [0.1, 0.2, 3.0], [-0.3, 1.4, 0.0], [1.0, 1.0, 1.0]]),
            np.array([0, 2, 1, 1]),
        ),
        (
            "a 3 x 3 batch (row and class indices have the same range)",
            np.array([[0.2, 1.5, -0.4], [2.2, 0.1, 0.8], [-1.0, 0.3, 1.9]]),
            np.array([1, 2, 0]),
        ),
        ("one example", np.array([[0.5, -0.5, 1.5, 0.0]]), np.array([3])),
        ("large logits", np.array([[1000.0, 0.0, -1000.0], [0.0, 1000.0, 0.0]]), np.array([2, 0])),
    ),
)


def _expected_cross_entropy(logits: np.ndarray, targets: np.ndarray):
    log_probs = logits - logsumexp(logits, 1)
    n = len(targets)
    loss = -log_probs[np.arange(n), targets].mean()
    onehot = np.zeros_like(logits)
    onehot[np.arange(n), targets] = 1
    return loss, (np.exp(log_probs) - onehot) / n


def _probe_cross_entropy(cases, cross_entropy):
    runs = []
    for description, data, targets in cases_of(__name__, "_CROSS_ENTROPY_CASES"):
        logits = Tensor(data.copy(), requires_grad=True)
        what = (
            f"your cross_entropy on {description}, logits {_show(data)}, targets {_show(targets)}"
        )
        record = attempt(cross_entropy, logits, targets.copy())
        if record[0] == "raised":
            runs.append({"raised": [what, *record]})
            break
        loss = record[1]
        if not isinstance(loss, Tensor):
            runs.append({"kind": type(loss).__name__[:30]})
            break
        run = {
            "kind": "Tensor",
            "shape": list(loss.shape),
            "value": _array(loss.data),
            "requires_grad": bool(loss.requires_grad),
        }
        if loss.shape == () and loss.requires_grad:
            done = attempt(loss.backward)
            if done[0] == "raised":
                run["backward"] = {"raised": [f"backward through {what}", *done]}
            else:
                run["grad"] = _array(logits.grad)
        runs.append(run)
    return {"runs": runs}


def _judge_cross_entropy(cases, data) -> str:
    found = cases_of(__name__, "_CROSS_ENTROPY_CASES")
    runs = _runs_of(data, len(found), "your cross_entropy")
    for (description, logits, targets), run in zip(found, runs, strict=False):
        what = (
            f"your cross_entropy on {description}, logits {_show(logits)}, targets {_show(targets)}"
        )
        judged_entry(run, what)
        if run.get("kind") != "Tensor":
            raise Wrong(f"{what} returned {str(run.get('kind'))[:30]}, not a Tensor")
        shape = run.get("shape")
        if shape != []:
            raise Wrong(f"{what}: the loss should be one number (shape ()), got shape {shape}")
        value = run.get("value")
        if not isinstance(value, np.ndarray) or value.shape != ():
            raise Wrong(f"the results of your answer hold no loss for {what}")
        value = float(value)
        expected, expected_grad = _expected_cross_entropy(logits, targets)
        if not np.isfinite(value):
            raise Wrong(
                f"{what}: expected {expected:.6g}, got {value}: a probability underflowed "
                "to 0 and its log is -inf (the log of softmax on large logits)"
            )
        if run.get("requires_grad") is not True:
            raise Wrong(
                f"{what}: the loss has no graph behind it, so no gradient can reach the "
                "logits (it was computed from arrays, not from the tensor)"
            )
        if not np.isclose(value, expected, rtol=1e-9, atol=1e-9):
            raise Wrong(
                f"{what}: expected {expected:.6g}, got {value:.6g}."
                + _cross_entropy_diagnosis(value, logits, targets)
            )
        if "backward" in run:
            judged_entry(run["backward"], f"backward through {what}")
        got = run.get("grad")
        if (
            not isinstance(got, np.ndarray)
            or got.shape != expected_grad.shape
            or not np.allclose(got, expected_grad, rtol=1e-7, atol=1e-12)
        ):
            shown = _show(got) if isinstance(got, np.ndarray) else "None"
            raise Wrong(f"{what}: d(loss)/d(logits) should be {_show(expected_grad)}, got {shown}")
    if len(runs) < len(found):
        raise Wrong("the results of your answer hold fewer runs than the check has batches")
    return (
        f"✓ cross_entropy matches the fused op in value and gradient on "
        f"{_count('_CROSS_ENTROPY_CASES')} batches, including logits of ±1000"
    )


CROSS_ENTROPY = register(
    Exercise(
        check="check_cross_entropy",
        chapter="05",
        title="Cross-entropy from log-softmax and indexing",
        probe=_probe_cross_entropy,
        judge=_judge_cross_entropy,
        forbidden=("cross_entropy", "CrossEntropy", "nll_loss"),
    )
)
check_cross_entropy = CROSS_ENTROPY.lab_check


def _cross_entropy_diagnosis(got: float, logits: np.ndarray, targets: np.ndarray) -> str:
    log_probs = logits - logsumexp(logits, 1)
    n = len(targets)
    picked = log_probs[np.arange(n), targets]
    candidates = [
        (picked.mean(), " The sign is flipped."),
        (-picked.sum(), " That is the sum over the batch, not the mean."),
        (
            -log_probs[:, targets].mean(),
            " That averages a whole n x n block: every row at every target.",
        ),
    ]
    if targets.max() < n and n <= logits.shape[1]:
        candidates.append(
            (
                -log_probs[targets, np.arange(n)].mean(),
                " The row and target indices are swapped.",
            )
        )
    for value, words in candidates:
        if np.isclose(got, value):
            return words
    return ""


def your_cross_entropy_graph(cross_entropy):
    """The backward picture of your loss on a batch of two."""
    from minilucid import viz

    logits = Tensor(np.array([[2.0, 0.5, -1.0], [0.1, 0.2, 3.0]]), requires_grad=True)
    logits.name = "logits"
    loss = cross_entropy(logits, np.array([0, 2]))
    loss.name = "loss"
    return viz.draw_backward(loss)


# --------------------------------------------------------------------------------------------
# Exercise 5 (optional): gradcheck's comparison loop

_COMPARE_CASES = frozen(
    __name__,
    "_COMPARE_CASES",
    (
        (
            "two inputs that agree up to rounding",
            [np.array([1.0, -2.0, 3.0]), np.array([[0.5, 0.25], [2.0, -1.0]])],
            [np.array([1.0 + 3e-9, -2.0, 3.0 - 1e-8]), np.array([[0.5, 0.25 + 1e-9], [2.0, -1.0]])],
            None,
        ),
        (
            "input 1 wrong at one entry",
            [np.array([1.0, 2.0]), np.array([[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]])],
            [np.array([1.0, 2.0]), np.array([[0.1, 0.2, 0.9], [0.4, 0.5, 0.6]])],
            (1, (0, 2)),
        ),
        (
            "large gradients that agree to 6 significant digits",
            [np.array([12345.6, -98765.4])],
            [np.array([12345.61, -98765.38])],
            None,
        ),
        (
            "gradients near zero that agree to 1e-9",
            [np.array([[1e-9, 0.0], [0.0, -2e-9]])],
            [np.array([[0.0, 1e-9], [0.0, 0.0]])],
            None,
        ),
        (
            "gradients that agree to 4 significant digits, and near zero to 5e-6",
            [np.array([1.0, -250.0, 2e-6]), np.array([0.0, 3e-6])],
            [np.array([1.0005, -250.1, -3e-6]), np.array([4e-6, -1e-6])],
            None,
        ),
        (
            "input 0 wrong at two entries, the later one more so",
            [np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])],
            [np.array([[1.0, 2.0, 3.0], [4.5, 5.0, 9.0]])],
            (0, (1, 0)),
        ),
        (
            "both inputs wrong",
            [np.array([1.0, 2.0, 3.0]), np.array([7.0])],
            [np.array([1.0, 2.0, -3.0]), np.array([-7.0])],
            (0, (2,)),
        ),
    ),
)


class _LeakyReluWithABug(Function):
    """z = a if a > 0 else 0.1 a;  backward says 0.01 where it should say 0.1"""

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a > 0)
        return np.where(a > 0, a, 0.1 * a)

    @staticmethod
    def backward(ctx, grad):
        (positive,) = ctx.saved_tensors
        return grad * np.where(positive, 1.0, 0.01)


_REAL_OP_X = ((0.5, 1.5), (-2.0, 0.7))


def _real_op_gradients() -> tuple[list, list]:
    """Backward's and central differences' gradients of the LeakyRelu with a wrong slope."""
    x = Tensor(np.array(_REAL_OP_X), requires_grad=True)
    weights = np.random.default_rng(0).uniform(0.5, 1.5, size=x.shape)
    analytic = list(ml.grad(_LeakyReluWithABug.apply(x), [x], weights))
    numeric = numerical_grad(_LeakyReluWithABug.apply, [x], grad_output=weights)
    return analytic, list(numeric)


def _reference_disagreement(analytic, numeric, rtol=1e-3, atol=1e-5):
    for k, (a, n) in enumerate(zip(analytic, numeric, strict=True)):
        bad = np.abs(a - n) > atol + rtol * np.abs(n)
        if bad.any():
            return k, tuple(int(i) for i in np.unravel_index(int(np.argmax(bad)), a.shape))
    return None


def _found(result) -> dict:
    """What first_disagreement returned, as data."""
    if result is None:
        return {"none": True}
    try:
        index, entry = result
        return {"index": int(index), "entry": [int(i) for i in np.atleast_1d(entry)]}
    except (TypeError, ValueError):
        return {"form": repr(result)[:80]}


def _probe_disagreement(cases, first_disagreement):
    runs = []
    for description, analytic, numeric, _ in cases_of(__name__, "_COMPARE_CASES"):
        record = attempt(
            first_disagreement, [a.copy() for a in analytic], [n.copy() for n in numeric]
        )
        if record[0] == "raised":
            runs.append({"raised": [f"first_disagreement on {description}", *record]})
            break
        runs.append(_found(record[1]))
    analytic, numeric = _real_op_gradients()
    record = attempt(first_disagreement, analytic, numeric)
    real = (
        {"raised": ["first_disagreement on a real op", *record]}
        if record[0] == "raised"
        else _found(record[1])
    )
    return {"runs": runs, "real": real}


def _read_found(entry, what: str):
    judged_entry(entry, what)
    if entry.get("none") is True:
        return None
    if "form" in entry:
        raise Wrong(
            f"{what}: return None or (input index, entry tuple), got {str(entry['form'])[:80]}"
        )
    index, found = entry.get("index"), entry.get("entry")
    if type(index) is not int or not isinstance(found, list):
        raise Wrong(f"the results of your answer hold no answer for {what}")
    if not all(type(i) is int for i in found):
        raise Wrong(f"the results of your answer hold no entry for {what}")
    return index, tuple(found)


def _judge_disagreement(cases, data) -> str:
    found = cases_of(__name__, "_COMPARE_CASES")
    runs = _runs_of(data, len(found), "first_disagreement")
    for (description, analytic, numeric, _), run in zip(found, runs, strict=False):
        what = (
            f"first_disagreement on {description}: analytic "
            f"[{', '.join(map(_show, analytic))}], numeric [{', '.join(map(_show, numeric))}]"
        )
        if isinstance(run, dict) and "raised" in run:
            judged_entry(run, what)
        got = _read_found(run, what)
        expected = _reference_disagreement(analytic, numeric)
        if got != expected:
            if expected is None:
                words = (
                    f"expected None (every entry agrees within rtol=1e-3, atol=1e-5: "
                    f"|a - n| <= atol + rtol * |n|), got {got}"
                )
            else:
                words = f"expected input {expected[0]}, entry {expected[1]}; got {got}"
                if got is not None and got[0] == expected[0] and len(got[1]) == 1:
                    words += ". That is a flat position, not an index of the array's shape"
            raise Wrong(f"{what}: {words}")
    if len(runs) < len(found):
        raise Wrong("the results of your answer hold fewer runs than the check has cases")
    analytic, numeric = _real_op_gradients()
    expected = _reference_disagreement(analytic, numeric)
    got = _read_found(data.get("real"), "first_disagreement on a real op")
    if got != expected:
        raise Wrong(
            f"on a LeakyRelu whose backward uses the wrong slope for negative inputs, "
            f"x = {_show(np.array(_REAL_OP_X))}, expected input {expected[0]}, entry "
            f"{expected[1]}; got {got}"
        )
    return (
        f"✓ first_disagreement is right on {len(found)} cases and finds the bug in a real op: "
        f"input {expected[0]}, entry {expected[1]}"
    )


FIRST_DISAGREEMENT = register(
    Exercise(
        check="check_first_disagreement",
        chapter="05",
        title="gradcheck's comparison loop",
        probe=_probe_disagreement,
        judge=_judge_disagreement,
        forbidden=("gradcheck", "GradcheckError"),
    )
)
check_first_disagreement = FIRST_DISAGREEMENT.lab_check


# --------------------------------------------------------------------------------------------
# Exercise 3 (a real problem): a stable op of your own, softplus (3a) or log-sum-exp (3b)


def _softplus(a: np.ndarray) -> np.ndarray:
    """log(1 + e^a) in float64, right to the last digit at both ends."""
    a = np.asarray(a, dtype=np.float64)
    return np.maximum(a, 0) + np.log1p(np.exp(-np.abs(a)))


_SOFTPLUS_CASES = frozen(
    __name__,
    "_SOFTPLUS_CASES",
    (
        ("moderate inputs", np.array([-3.0, -0.5, 0.0, 0.25, 2.0])),
        ("a 2 x 3 batch", np.array([[0.3, -1.2, 4.0], [-7.0, 1.0, 0.1]])),
        ("large inputs", np.array([-1000.0, -50.0, 50.0, 1000.0])),
        ("inputs whose results are tiny", np.array([-40.0, -37.0, -745.0])),
        (
            "float32 inputs",
            np.array([-100.0, -20.0, -1.0, 0.0, 1.0, 20.0, 100.0], dtype=np.float32),
        ),
    ),
)


def _op_run(op, data: np.ndarray, weights: np.ndarray, **kwargs) -> dict:
    """For a probe: forward and backward of a learner's op, overflow and nan made errors."""
    a = Tensor(data.copy(), requires_grad=True)
    stage = "forward"
    try:
        with np.errstate(over="raise", invalid="raise", divide="raise", under="ignore"):
            out = op.apply(a, **kwargs)
            stage = "backward"
            (got,) = ml.grad(out, [a], np.asarray(weights, dtype=data.dtype))
    except NotImplementedError:
        raise
    except FloatingPointError as error:
        return {"overflow": stage, "error": " ".join(str(error).split())[:100]}
    except Exception as error:  # noqa: BLE001 (the learner's own bug, kept as data)
        text = str(error).strip().splitlines()
        return {"raised": ["raised", type(error).__name__, text[0][:300] if text else ""]}
    out = out.data if isinstance(out, Tensor) else None
    numbers = isinstance(out, np.ndarray) and out.dtype.kind in "biuf"
    return {"out": np.array(out) if numbers else None, "grad": _array(got), "a_after": _array(a)}


def _op_result(run, name: str, what: str, a: np.ndarray, hint: str = "") -> tuple:
    """For a judge: (forward's values, backward's gradient) of one run on input `a`, or Wrong."""
    if not isinstance(run, dict):
        raise Wrong(f"the results of your answer hold nothing for {name} on {what}")
    if run.get("overflow") in ("forward", "backward"):
        error = str(run.get("error"))[:100]
        if run["overflow"] == "backward":
            raise Wrong(
                f"{name}.backward on {what}: NumPy reports {error} (an exp overflowed, "
                "or a log met 0, or inf met inf). Your forward got through; it is the backward "
                "that computes something too large."
            )
        raise Wrong(
            f"{name} forward on {what}: NumPy reports {error} (an exp overflowed, or "
            "a log met 0, or inf met inf; float32 overflows above exp(88.7)). np.where "
            "computes both of its branches for every entry."
        )
    record = run.get("raised")
    if isinstance(record, list) and len(record) == 3 and record[0] == "raised":
        raise Wrong(raised_message(f"{name} on {what}", [str(r) for r in record], hint))
    out, after = run.get("out"), run.get("a_after")
    if not isinstance(out, np.ndarray) or out.dtype.kind not in "biuf":
        raise Wrong(f"{name} forward on {what} gave no array of numbers")
    if not isinstance(after, np.ndarray) or after.shape != a.shape:
        raise Wrong(f"the results of your answer hold no input for {name} on {what}")
    if not np.array_equal(after, a):
        raise Wrong(
            f"{name} forward on {what} changed its input in place: afterwards the input tensor "
            f"holds {_show(after)}"
        )
    return out, run.get("grad")


def _op_name(op) -> str:
    name = getattr(op, "__name__", None)
    return name[:40] if isinstance(name, str) else "your op"


def _named_op(data) -> str:
    """For a judge: the op's name from the probe's data; Wrong unless it was a Function class."""
    name = data.get("name")
    if not isinstance(name, str) or data.get("is_op") is not True:
        raise Wrong("the results of your answer do not say which op they come from")
    return name[:40]


def _weights(seed: int, shape) -> np.ndarray:
    """The gradient arriving from above in a check's run: fixed random numbers per case."""
    return np.random.default_rng(seed).uniform(0.5, 1.5, size=shape)


def _probe_runs(op, inputs) -> dict:
    """For a probe: the op's runs on (data, weights, keyword arguments), to the first failure."""
    runs = []
    for data, weights, kwargs in inputs:
        runs.append(_op_run(op, data, weights, **kwargs))
        if "out" not in runs[-1]:
            break
    return {"name": _op_name(op), "is_op": isinstance(op, type), "runs": runs}


def _first_bad(got, expected, rtol, atol):
    bad = ~np.isclose(got, expected, rtol=rtol, atol=atol)
    if not bad.any():
        return None
    return tuple(int(i) for i in np.unravel_index(int(np.argmax(bad)), np.shape(expected)))


def _probe_softplus(cases, softplus_op):
    found = cases_of(__name__, "_SOFTPLUS_CASES")
    inputs = [(d, _weights(10 + k, d.shape), {}) for k, (_, d) in enumerate(found)]
    return _probe_runs(softplus_op, inputs)


def _judge_softplus(cases, data) -> str:
    """softplus(a) = log(1 + e^a) and its gradient sigmoid(a), right at every scale."""
    found = cases_of(__name__, "_SOFTPLUS_CASES")
    runs = _runs_of(data, len(found), "your softplus")
    name = _named_op(data)
    for k, ((description, data), run) in enumerate(zip(found, runs, strict=False)):
        what = f"{description} {_show(data)}" + (" (float32)" if data.dtype == np.float32 else "")
        weights = _weights(10 + k, data.shape)
        z_got, got = _op_result(run, name, what, data)
        if z_got.dtype != data.dtype:
            raise Wrong(
                f"{name} forward on {what} returned {z_got.dtype}, "
                f"not the input's dtype {data.dtype}"
            )
        if z_got.shape != data.shape:
            raise Wrong(f"{name} forward on {what}: expected shape {data.shape}, got {z_got.shape}")
        # float32 keeps ~7 digits, and below 1e-38 fewer still (its subnormal numbers)
        rtol, atol = (1e-5, 1e-44) if data.dtype == np.float32 else (1e-9, 1e-300)
        z = _softplus(data)
        where = _first_bad(z_got, z, rtol, atol)
        if where is not None:
            words = ""
            if np.isfinite(z_got[where]) and z[where] < 1e-15 and z_got[where] == 0:
                words = " The result is tiny but not 0: for a tiny x, 1 + x rounds to 1."
            raise _wrong_value(name, what, data, z, z_got, where, words)
        _gradient_shape(name, data, got)
        expected = weights * _sigmoid(data)
        where = _first_bad(got, expected, 1e-4 if data.dtype == np.float32 else 1e-7, atol)
        if where is not None:
            words = ""
            if np.isclose(got[where], weights[where] * float(data[where])):
                words = " That is grad * a."
            elif expected[where] < 1e-15 and got[where] == 0:
                words = " The gradient here is tiny, not 0: its digits were lost."
            raise Wrong(
                f"{name}.backward is wrong at entry {where} of {what}: with a = "
                f"{float(data[where]):.4g} and incoming gradient {weights[where]:.4g}, expected "
                f"{float(expected[where]):.6g}, got {float(got[where]):.6g}.{words}"
            )
    if len(runs) < len(found):
        raise Wrong("the results of your answer hold fewer runs than the check has inputs")
    return (
        f"✓ {name}: values and gradients right on {_count('_SOFTPLUS_CASES')} inputs from -1000 to "
        "1000, float32 and tiny results that keep their digits included"
    )


SOFTPLUS = register(
    Exercise(
        check="check_softplus",
        chapter="05",
        title="A stable op of your own: softplus",
        probe=_probe_softplus,
        judge=_judge_softplus,
        forbidden=("softplus", "Softplus"),
    )
)
check_softplus = SOFTPLUS.lab_check


def _logsumexp(a: np.ndarray, dim: int, keepdim: bool) -> np.ndarray:
    out = logsumexp(np.asarray(a, dtype=np.float64), dim)
    return out if keepdim else np.squeeze(out, axis=dim)


_LOGSUMEXP_CASES = frozen(
    __name__,
    "_LOGSUMEXP_CASES",
    (
        ("a small vector", np.array([1.0, 2.0, 3.0]), -1, False),
        ("large logits", np.array([1000.0, 999.0, 998.0]), -1, False),
        ("very negative logits", np.array([-1000.0, -1001.0, -1003.0]), -1, False),
        ("rows far apart", np.array([[1000.0, 0.0, -1000.0], [-3.0, 0.0, 2.0]]), 1, False),
        ("rows, keepdim=True", np.array([[0.5, -1.0, 2.0], [800.0, 801.0, 799.0]]), 1, True),
        (
            "a 3 x 3 array along dim=0 (columns)",
            np.array([[0.0, 1.0, 2.0], [4.0, 1.0, 0.5], [-1.0, 3.0, 1.0]]),
            0,
            False,
        ),
        ("float32 logits around 100", np.array([[100.0, 90.0, 95.0]], dtype=np.float32), -1, False),
    ),
)


_LSE_HINT = (
    "The output loses `dim` unless keepdim=True, and backward's incoming gradient has the "
    "output's shape."
)


def _probe_logsumexp(cases, logsumexp_op):
    inputs = [
        (d, _weights(20 + k, _logsumexp(d, dim, keepdim).shape), {"dim": dim, "keepdim": keepdim})
        for k, (_, d, dim, keepdim) in enumerate(cases_of(__name__, "_LOGSUMEXP_CASES"))
    ]
    return _probe_runs(logsumexp_op, inputs)


def _judge_logsumexp(cases, data) -> str:
    """log(sum(exp(a))) along dim as an op: values, keepdim, and its gradient softmax(a)."""
    found = cases_of(__name__, "_LOGSUMEXP_CASES")
    runs = _runs_of(data, len(found), "your log-sum-exp")
    name = _named_op(data)
    for k, ((description, data, dim, keepdim), run) in enumerate(zip(found, runs, strict=False)):
        what = f"{description} {_show(data)} with dim={dim}, keepdim={keepdim}"
        expected_z = _logsumexp(data, dim, keepdim)
        weights = _weights(20 + k, expected_z.shape)
        z_got, got = _op_result(run, name, what, data, _LSE_HINT)
        if z_got.shape != expected_z.shape:
            raise Wrong(
                f"{name} forward on {what}: expected shape {expected_z.shape}, got shape "
                f"{z_got.shape}. The reduced dimension stays (as size 1) only with keepdim=True."
            )
        rtol = 1e-5 if data.dtype == np.float32 else 1e-9
        where = _first_bad(z_got, expected_z, rtol, 1e-12)
        if where is not None:
            raise Wrong(
                f"{name} forward on {what}: expected {_show(expected_z)}, got {_show(z_got)}"
            )
        restored = weights if keepdim else np.expand_dims(weights, dim)
        softmax = np.exp(data - _logsumexp(data, dim, True))
        expected = restored * softmax
        if not isinstance(got, np.ndarray) or np.shape(got) != data.shape:
            raise Wrong(
                f"{name}.backward on {what} returned a gradient of shape {np.shape(got)}; "
                f"it must have the input's shape {data.shape}"
            )
        where = _first_bad(got, expected, 1e-4 if data.dtype == np.float32 else 1e-7, 1e-12)
        if where is not None:
            raise Wrong(
                f"{name}.backward on {what}, incoming gradient {_show(weights)}: expected "
                f"{_show(expected)}, got {_show(got)}"
            )
    if len(runs) < len(found):
        raise Wrong("the results of your answer hold fewer runs than the check has inputs")
    return (
        f"✓ {name}: values and gradients right on {_count('_LOGSUMEXP_CASES')} inputs, logits of "
        "±1000, float32, keepdim and dim=0 included"
    )


LOGSUMEXP = register(
    Exercise(
        check="check_logsumexp",
        chapter="05",
        title="A stable op of your own: log-sum-exp",
        probe=_probe_logsumexp,
        judge=_judge_logsumexp,
        forbidden=("logsumexp", "LogSumExp", "log_softmax", "LogSoftmax"),
    )
)
check_logsumexp = LOGSUMEXP.lab_check
