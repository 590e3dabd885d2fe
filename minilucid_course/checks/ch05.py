"""Checks for the exercises of chapter 05 (functions and numerics).

Each check runs the learner's code on inputs chosen to expose one plausible mistake each, raises
AssertionError with a plain-words message on the first problem, and prints one line on success.
"""

import numpy as np

import minilucid as ml
from minilucid.function import Function
from minilucid.gradcheck import GradcheckError
from minilucid.nn import functional as F
from minilucid.numerical import numerical_grad
from minilucid.ops.softmax import LogSoftmax, logsumexp
from minilucid.tensor import Tensor
from minilucid_course.checks.common import call, cases_of, frozen


def _count(name: str, right: bool | None = None) -> int:
    """How many cases the check ran (for its ✓ line); with `right`, only those so marked."""
    found = cases_of(__name__, name)
    return len(found) if right is None else sum(bool(c[-1]) == right for c in found)


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


def check_log_softmax(log_softmax_forward) -> None:
    """log_softmax_forward(a, dim) must equal a - logsumexp(a) and stay finite for any logits."""
    for description, a, dim in cases_of(__name__, "_LOG_SOFTMAX_CASES"):
        a_in = a.copy()
        what = f"log_softmax_forward on {description} {_show(a)} with dim={dim}"
        hint = "Keep the reduced dimension (keepdims=True) so that it broadcasts back against a."
        got = call(what, log_softmax_forward, a_in, dim, hint=hint)
        if isinstance(got, Tensor):
            raise AssertionError(f"{what} returned a Tensor; work on NumPy arrays and return one")
        if got is None:
            raise AssertionError(f"{what} returned None; did you forget `return`?")
        got = np.asarray(got)
        if not np.array_equal(a_in, a):
            raise AssertionError(f"{what} changed its input in place; compute a new array")
        expected = a - logsumexp(a.astype(np.float64), dim)
        if got.shape != a.shape:
            raise AssertionError(
                f"{what}: expected shape {a.shape} (one log-probability per logit), "
                f"got shape {got.shape}. Reduce with keepdims=True so the result broadcasts back."
            )
        if not np.isfinite(got).all():
            raise AssertionError(
                f"{what}: expected {_show(expected)}, got {_show(got)}. exp overflowed or a "
                "log met 0: shift the logits by their maximum before exponentiating."
            )
        tolerance = 1e-4 if a.dtype == np.float32 else 1e-9
        if not np.allclose(got, expected, rtol=tolerance, atol=tolerance):
            hint = ""
            if not np.allclose(np.exp(got).sum(axis=dim), 1, atol=1e-6):
                hint = f" The probabilities exp(result) should sum to 1 along dim={dim}."
            raise AssertionError(f"{what}: expected {_show(expected)}, got {_show(got)}.{hint}")
    print(
        f"✓ log_softmax_forward is right on {_count('_LOG_SOFTMAX_CASES')} inputs, "
        "including logits of ±1000 and float32 logits of 100"
    )


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
    return AssertionError(
        f"{name} forward on {what} is wrong at a = {float(data[where]):g}: expected "
        f"{float(expected[where]):.6g}, got {float(got[where]):.6g}.{words}"
    )


def _gradient_shape(name: str, data, got) -> None:
    if got is None or np.shape(got) != data.shape:
        raise AssertionError(
            f"{name}.backward on an input of shape {data.shape} returned a gradient of "
            f"shape {np.shape(got)}; return one gradient with the input's shape"
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


def check_sigmoid(sigmoid_op) -> None:
    """Forward and backward of the learner's sigmoid, in float64 and at float32's extremes.

    First shows draw_gradcheck of an expression built with the learner's op: green where its
    backward agrees with central differences, red where it does not.
    """
    name = sigmoid_op.__name__
    _display_now(your_sigmoid_picture(sigmoid_op))
    cases = [(d, f"input {_show(d)}") for d in cases_of(__name__, "_SIGMOID_INPUTS")]
    cases.append(
        (
            cases_of(__name__, "_SIGMOID_EXTREMES").astype(np.float32),
            f"float32 input {_show(cases_of(__name__, '_SIGMOID_EXTREMES'))}",
        )
    )
    for k, (data, what) in enumerate(cases):
        weights = np.random.default_rng(k).uniform(0.5, 1.5, size=data.shape)
        z_got, got = _run_op(sigmoid_op, data, weights, what)
        z = _sigmoid(data)
        if z_got.dtype != data.dtype:
            raise AssertionError(
                f"{name} forward on {what} returned {z_got.dtype}; keep the input's dtype "
                f"({data.dtype}): a float32 model should stay float32"
            )
        wrong = ~np.isclose(z_got, z, rtol=1e-5 if data.dtype == np.float32 else 1e-9, atol=1e-44)
        if wrong.any():
            where = tuple(int(i) for i in np.unravel_index(int(np.argmax(wrong)), data.shape))
            words = ""
            if data[where] < -10 and np.isfinite(z_got[where]):
                words = (
                    " The left tail lost its digits: there the sigmoid is tiny, and a formula "
                    "that adds two numbers close to 1 and -1 (such as 1 + tanh(a/2)) cancels. "
                    "For a < 0 compute it from exp(a), which is small there."
                )
            raise _wrong_value(name, what, data, z, z_got, where, words)
        _gradient_shape(name, data, got)
        expected = weights * z * (1 - z)
        tolerance = (1e-4, 1e-7) if data.dtype == np.float32 else (1e-6, 1e-12)
        bad = ~np.isclose(got, expected, rtol=tolerance[0], atol=tolerance[1])
        if bad.any():
            where = tuple(int(i) for i in np.unravel_index(int(np.argmax(bad)), data.shape))
            raise AssertionError(
                f"{name}.backward is wrong at entry {where} of {what}: "
                f"with a = {float(data[where]):.4g}, z = {float(z[where]):.4g} and incoming "
                f"gradient {weights[where]:.4g}, expected {float(expected[where]):.6g}, got "
                f"{float(got[where]):.6g}."
                + _sigmoid_diagnosis(got, data.astype(np.float64), z, weights)
            )
        if data.dtype == np.float64:  # the same verdict from the oracle, as a learner would run it
            try:
                ml.gradcheck(sigmoid_op.apply, (Tensor(data.copy(), requires_grad=True),))
            except GradcheckError as error:
                raise AssertionError(f"{name} fails gradcheck: {error}") from None
    print(
        f"✓ {name}: values and gradients right on {len(cases)} inputs, float32 from -100 to 100 "
        "included, with no overflow on the way"
    )


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


def check_cross_entropy(cross_entropy) -> None:
    """Value and gradient of the learner's loss against the fused op, on tricky batches."""
    for description, data, targets in cases_of(__name__, "_CROSS_ENTROPY_CASES"):
        logits = Tensor(data.copy(), requires_grad=True)
        what = (
            f"your cross_entropy on {description}, logits {_show(data)}, targets {_show(targets)}"
        )
        loss = call(what, cross_entropy, logits, targets.copy())
        if not isinstance(loss, Tensor):
            raise AssertionError(f"{what} returned {type(loss).__name__}; return a Tensor")
        if loss.shape != ():
            raise AssertionError(
                f"{what}: the loss should be one number (shape ()), got shape {loss.shape}. "
                "Pick one log-probability per row, then average them."
            )
        expected, expected_grad = _expected_cross_entropy(data, targets)
        if not np.isfinite(loss.item()):
            raise AssertionError(
                f"{what}: expected {expected:.6g}, got {loss.item()}. Taking log of softmax "
                "underflows to log(0); use log_softmax, which never exponentiates the big ones."
            )
        if not loss.requires_grad:
            raise AssertionError(
                f"{what}: the loss has no graph behind it, so no gradient can reach the "
                "logits. Compute it with tensor operations on `logits`, not on logits.data."
            )
        if not np.isclose(loss.item(), expected, rtol=1e-9, atol=1e-9):
            raise AssertionError(
                f"{what}: expected {expected:.6g}, got {loss.item():.6g}."
                + _cross_entropy_diagnosis(loss.item(), data, targets)
            )
        call(f"backward through {what}", loss.backward)
        got = logits.grad
        if got is None or not np.allclose(got, expected_grad, rtol=1e-7, atol=1e-12):
            raise AssertionError(
                f"{what}: d(loss)/d(logits) should be (softmax - onehot) / n = "
                f"{_show(expected_grad)}, got {_show(got)}"
            )
    print(
        f"✓ cross_entropy matches the fused op in value and gradient on "
        f"{_count('_CROSS_ENTROPY_CASES')} batches, including logits of ±1000"
    )


def _cross_entropy_diagnosis(got: float, logits: np.ndarray, targets: np.ndarray) -> str:
    log_probs = logits - logsumexp(logits, 1)
    n = len(targets)
    picked = log_probs[np.arange(n), targets]
    candidates = [
        (picked.mean(), " The sign is flipped: the loss is minus the mean log-probability."),
        (-picked.sum(), " That is the sum over the batch; cross-entropy takes the mean."),
        (-log_probs[:, targets].mean(), " log_probs[:, targets] picks a whole n x n block."),
    ]
    if targets.max() < n and n <= logits.shape[1]:
        candidates.append(
            (
                -log_probs[targets, np.arange(n)].mean(),
                " The indices are swapped: rows first (np.arange(n)), then the targets.",
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


def check_first_disagreement(first_disagreement) -> None:
    """(input index, entry) of the first entry where analytic and numeric gradients differ."""
    for description, analytic, numeric, expected in cases_of(__name__, "_COMPARE_CASES"):
        what = (
            f"first_disagreement on {description}: analytic "
            f"[{', '.join(map(_show, analytic))}], numeric [{', '.join(map(_show, numeric))}]"
        )
        got = call(
            what, first_disagreement, [a.copy() for a in analytic], [n.copy() for n in numeric]
        )
        if got is not None:
            try:
                index, entry = got
                got = (int(index), tuple(int(i) for i in np.atleast_1d(entry)))
            except (TypeError, ValueError):
                raise AssertionError(
                    f"{what}: return None or (input index, entry tuple), got {got!r}"
                ) from None
        if got != expected:
            if expected is None:
                words = (
                    f"expected None (every entry agrees within rtol=1e-3, atol=1e-5: "
                    f"|a - n| <= atol + rtol * |n|), got {got}"
                )
            else:
                words = f"expected input {expected[0]}, entry {expected[1]}; got {got}"
                if got is not None and got[0] == expected[0] and len(got[1]) == 1:
                    words += ". Turn the flat position into an index with np.unravel_index"
            raise AssertionError(f"{what}: {words}")

    # plugged into a real check: your comparison finds a bug in an op
    class LeakyReluWithABug(Function):
        """z = a if a > 0 else 0.1 a;  backward says 0.01 where it should say 0.1"""

        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a > 0)
            return np.where(a > 0, a, 0.1 * a)

        @staticmethod
        def backward(ctx, grad):
            (positive,) = ctx.saved_tensors
            return grad * np.where(positive, 1.0, 0.01)

    x = Tensor(np.array([[0.5, 1.5], [-2.0, 0.7]]), requires_grad=True)
    weights = np.random.default_rng(0).uniform(0.5, 1.5, size=x.shape)
    analytic = list(ml.grad(LeakyReluWithABug.apply(x), [x], weights))
    numeric = numerical_grad(LeakyReluWithABug.apply, [x], grad_output=weights)
    found = call("first_disagreement on a real op", first_disagreement, analytic, numeric)
    if found is None or (int(found[0]), tuple(int(i) for i in found[1])) != (0, (1, 0)):
        raise AssertionError(
            f"on a LeakyRelu whose backward uses the wrong slope for negative inputs, "
            f"x = {_show(x.data)}, expected input 0, entry (1, 0); got {found}"
        )
    print(
        "✓ first_disagreement is right on 6 cases and finds the bug in a real op: "
        "input 0, entry (1, 0)"
    )


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


def _run_op(op, data: np.ndarray, weights: np.ndarray, what: str, hint: str = "", **kwargs):
    """Forward and backward of a learner's op; overflow and nan are errors, not warnings."""
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
        if stage == "backward":
            raise AssertionError(
                f"{op.__name__}.backward on {what}: NumPy reports {error} (an exp overflowed, "
                "or a log met 0, or inf met inf). Your forward got through; it is the backward "
                "that computes something too large. Write the derivative from what forward "
                "saved (its output, for instance), so that backward needs no exp of a large "
                "number."
            ) from None
        raise AssertionError(
            f"{op.__name__} forward on {what}: NumPy reports {error} (an exp overflowed, or "
            "a log met 0, or inf met inf). Rearrange so that exp only ever sees numbers <= 0, "
            "such as -|a| (float32 overflows above exp(88.7)). Careful: np.where computes both "
            "of its branches for every entry."
        ) from None
    except Exception as error:
        raise AssertionError(
            f"{op.__name__} on {what} raised {type(error).__name__}: {str(error).strip()}"
            + (f". {hint}" if hint else "")
        ) from None
    return out.data, got


def _first_bad(got, expected, rtol, atol):
    bad = ~np.isclose(got, expected, rtol=rtol, atol=atol)
    if not bad.any():
        return None
    return tuple(int(i) for i in np.unravel_index(int(np.argmax(bad)), np.shape(expected)))


def check_softplus(softplus_op) -> None:
    """softplus(a) = log(1 + e^a) and its gradient sigmoid(a), right at every scale."""
    name = softplus_op.__name__
    for k, (description, data) in enumerate(cases_of(__name__, "_SOFTPLUS_CASES")):
        what = f"{description} {_show(data)}" + (" (float32)" if data.dtype == np.float32 else "")
        weights = np.random.default_rng(10 + k).uniform(0.5, 1.5, size=data.shape)
        z_got, got = _run_op(softplus_op, data, weights, what)
        if z_got.dtype != data.dtype:
            raise AssertionError(
                f"{name} forward on {what} returned {z_got.dtype}; keep the input's dtype"
            )
        # float32 keeps ~7 digits, and below 1e-38 fewer still (its subnormal numbers)
        rtol, atol = (1e-5, 1e-44) if data.dtype == np.float32 else (1e-9, 1e-300)
        z = _softplus(data)
        where = _first_bad(z_got, z, rtol, atol)
        if where is not None:
            words = ""
            if np.isfinite(z_got[where]) and z[where] < 1e-15 and z_got[where] == 0:
                words = (
                    " The result is tiny but not 0: log(1 + x) for a tiny x rounds 1 + x to 1. "
                    "NumPy has a log that takes x itself."
                )
            raise _wrong_value(name, what, data, z, z_got, where, words)
        _gradient_shape(name, data, got)
        expected = weights * _sigmoid(data)
        where = _first_bad(got, expected, 1e-4 if data.dtype == np.float32 else 1e-7, atol)
        if where is not None:
            words = ""
            if np.isclose(got[where], weights[where] * float(data[where])):
                words = " That is grad * a; softplus' derivative is the sigmoid of a."
            elif expected[where] < 1e-15 and got[where] == 0:
                words = (
                    " The sigmoid of a very negative a is tiny, not 0: compute it so that it "
                    "keeps its digits."
                )
            raise AssertionError(
                f"{name}.backward is wrong at entry {where} of {what}: with a = "
                f"{float(data[where]):.4g} and incoming gradient {weights[where]:.4g}, expected "
                f"{float(expected[where]):.6g}, got {float(got[where]):.6g}.{words}"
            )
    try:
        ml.gradcheck(
            softplus_op.apply,
            (Tensor(cases_of(__name__, "_SOFTPLUS_CASES")[1][1].copy(), requires_grad=True),),
        )
    except GradcheckError as error:
        raise AssertionError(f"{name} fails gradcheck: {error}") from None
    print(
        f"✓ {name}: values and gradients right on {_count('_SOFTPLUS_CASES')} inputs from -1000 to "
        "1000, float32 and tiny results that keep their digits included"
    )


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


def check_logsumexp(logsumexp_op) -> None:
    """log(sum(exp(a))) along dim as an op: values, keepdim, and its gradient softmax(a)."""
    name = logsumexp_op.__name__
    for k, (description, data, dim, keepdim) in enumerate(cases_of(__name__, "_LOGSUMEXP_CASES")):
        what = f"{description} {_show(data)} with dim={dim}, keepdim={keepdim}"
        expected_z = _logsumexp(data, dim, keepdim)
        weights = np.random.default_rng(20 + k).uniform(0.5, 1.5, size=expected_z.shape)
        hint = (
            "The output loses `dim` unless keepdim=True; backward's incoming gradient has the "
            "output's shape: put the reduced dimension back (np.expand_dims) before broadcasting."
        )
        z_got, got = _run_op(logsumexp_op, data, weights, what, hint, dim=dim, keepdim=keepdim)
        if z_got.shape != expected_z.shape:
            raise AssertionError(
                f"{name} forward on {what}: expected shape {expected_z.shape}, got shape "
                f"{z_got.shape}. The reduced dimension stays (as size 1) only with keepdim=True."
            )
        rtol = 1e-5 if data.dtype == np.float32 else 1e-9
        where = _first_bad(z_got, expected_z, rtol, 1e-12)
        if where is not None:
            raise AssertionError(
                f"{name} forward on {what}: expected {_show(expected_z)}, got {_show(z_got)}"
            )
        restored = weights if keepdim else np.expand_dims(weights, dim)
        softmax = np.exp(data - _logsumexp(data, dim, True))
        expected = restored * softmax
        if got is None or np.shape(got) != data.shape:
            raise AssertionError(
                f"{name}.backward on {what} returned a gradient of shape {np.shape(got)}; "
                f"it must have the input's shape {data.shape}"
            )
        where = _first_bad(got, expected, 1e-4 if data.dtype == np.float32 else 1e-7, 1e-12)
        if where is not None:
            raise AssertionError(
                f"{name}.backward on {what}, incoming gradient {_show(weights)}: expected "
                f"{_show(expected)}, got {_show(got)}. Each a_j receives softmax(a)_j times the "
                "gradient of the output it went into; put the reduced dimension back before "
                "broadcasting."
            )
    x = Tensor(np.array([[0.3, -1.2, 2.5], [-4.0, 1.0, 0.1]]), requires_grad=True)
    try:
        ml.gradcheck(lambda t: logsumexp_op.apply(t, dim=0), (x,))
    except GradcheckError as error:
        raise AssertionError(f"{name} fails gradcheck along dim=0: {error}") from None
    print(
        f"✓ {name}: values and gradients right on {_count('_LOGSUMEXP_CASES')} inputs, logits of "
        "±1000, float32, keepdim and dim=0 included"
    )
