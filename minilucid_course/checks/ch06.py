"""Checks for the exercises of chapter 06 (graph hygiene).

Each check runs the learner's code on cases chosen to expose one plausible mistake each, raises
AssertionError with a plain-words message on the first problem, and prints one line on success.
"""

import numpy as np

from minilucid.grad_mode import is_grad_enabled, set_grad_enabled
from minilucid.nn import functional as F
from minilucid.tensor import Tensor
from minilucid_course.checks.common import call, cases_of, frozen


def _count(name: str, right: bool | None = None) -> int:
    """How many cases the check ran (for its ✓ line); with `right`, only those so marked."""
    found = cases_of(__name__, name)
    return len(found) if right is None else sum(bool(c[-1]) == right for c in found)


def _show(x) -> str:
    """A short, deterministic, one-line text for an array or number."""
    text = np.array2string(np.asarray(x), precision=4, separator=", ", max_line_width=10**6)
    return " ".join(text.split())


def _op_name(t: Tensor) -> str:
    return type(t.grad_fn).__name__


# --------------------------------------------------------------------------------------------
# Exercise 1: an SGD step


def _make_problem():
    """Three parameters, a loss that uses two of them, backward already run."""
    a = Tensor(np.array([1.0, -2.0, 0.5], dtype=np.float32), requires_grad=True)
    b = Tensor(np.array([[0.3], [0.7]], dtype=np.float32), requires_grad=True)
    unused = Tensor(np.array([4.0], dtype=np.float32), requires_grad=True)
    loss = (a * Tensor([1.0, 2.0, 3.0])).sum() + (b * b).sum()
    loss.backward()
    return [a, b, unused]


def check_sgd_step(sgd_step) -> None:
    """One update: p <- p - lr * grad in place, grads cleared, recording left on."""
    params = _make_problem()
    originals = list(params)
    before = [p.data.copy() for p in params]
    grads = [None if p.grad is None else p.grad.copy() for p in params]
    lr = 0.1
    try:
        call("sgd_step(params, lr=0.1)", sgd_step, params, lr)
    finally:
        recording = is_grad_enabled()
        set_grad_enabled(True)  # whatever happened, later cells must record again
    if not recording:
        raise AssertionError(
            "after sgd_step, gradient recording is still switched off, so no later forward pass "
            "would build a graph. Use `with ml.no_grad():`, which switches it back on at the end "
            "of the block (a bare ml.set_grad_enabled(False) does not)."
        )
    for i, (p, original) in enumerate(zip(params, originals, strict=True)):
        if p is not original:
            if isinstance(p, Tensor) and p.grad_fn is not None:
                what = (
                    f"a new tensor made by {_op_name(p)} (grad_fn is set, so it is no longer a "
                    "leaf: the next backward would flow through it into the old tensor and leave "
                    "its own .grad empty)"
                )
            elif isinstance(p, Tensor) and not p.requires_grad:
                what = "a new tensor that does not require grad (no gradient would ever reach it)"
            else:
                what = f"a new {type(p).__name__}"
            raise AssertionError(
                f"sgd_step replaced parameter {i} in the list with {what}. Keep the same tensor "
                "and change its numbers in place, with recording off: an in-place operator such "
                "as -= on the tensor itself, inside `with ml.no_grad():`"
            )
    for i, p in enumerate(params):
        if grads[i] is None:
            if not np.array_equal(p.data, before[i]):
                raise AssertionError(
                    f"parameter {i} has no gradient (the loss does not use it), yet sgd_step "
                    f"changed it from {_show(before[i])} to {_show(p.data)}; skip such parameters"
                )
            continue
        expected = before[i] - lr * grads[i]
        got = p.data
        if np.shape(got) != before[i].shape:
            raise AssertionError(
                f"parameter {i} changed shape from {before[i].shape} to {np.shape(got)}"
            )
        if np.allclose(got, expected, rtol=1e-6, atol=1e-7):
            continue
        if np.array_equal(got, before[i]):
            words = (
                "it did not change. `p = p - ...` binds a new tensor to the name p and leaves the "
                "parameter in the list alone; change the tensor itself with an in-place "
                "operator (-=) inside `with ml.no_grad():`"
            )
        elif np.allclose(got, before[i] + lr * grads[i], rtol=1e-6, atol=1e-7):
            words = "it moved uphill: the step goes against the gradient, p - lr * grad"
        else:
            words = f"expected {_show(expected)}, got {_show(got)}"
        raise AssertionError(
            f"parameter {i} = {_show(before[i])} with gradient {_show(grads[i])} and lr = {lr}: "
            + words
        )
    for i, p in enumerate(params):
        if p.grad is not None and np.any(p.grad != 0):
            raise AssertionError(
                f"after sgd_step parameter {i} still holds its gradient {_show(p.grad)}; the next "
                "backward would add to it. Set p.grad = None after the update."
            )
    first, last = _fit_a_line(sgd_step)
    print(
        f"✓ sgd_step updates in place and clears the gradients; in a real training loop it "
        f"takes the loss from {first:.3f} to {last:.4f} in 30 steps"
    )


def _fit_a_line(sgd_step) -> tuple:
    """30 steps of least squares on a line, driven by the learner's sgd_step."""
    x, y = line_data()
    w = Tensor(np.zeros((), dtype=np.float32), requires_grad=True)
    b = Tensor(np.zeros((), dtype=np.float32), requires_grad=True)
    losses = []
    for _ in range(30):
        loss = F.mse_loss(w * x + b, y)
        loss.backward()
        losses.append(loss.item())
        call("sgd_step in a training loop", sgd_step, [w, b], 0.3)
    if not losses[-1] < 0.05:
        raise AssertionError(
            f"in a training loop of 30 steps (lr 0.3) on points near y = 2x + 1, the loss went "
            f"from {losses[0]:.3f} to {losses[-1]:.3f}; it should fall below 0.05"
        )
    return losses[0], losses[-1]


def line_data() -> tuple:
    """20 points near the line y = 2x + 1 (x in [-1, 1]), as float32 tensors."""
    rng = np.random.default_rng(6)
    x = np.linspace(-1.0, 1.0, 20).astype(np.float32)
    y = (2 * x + 1 + 0.1 * rng.standard_normal(20)).astype(np.float32)
    return Tensor(x), Tensor(y)


# --------------------------------------------------------------------------------------------
# Exercise 3: a gradient-clipping hook

_CLIP_CASES = frozen(
    __name__,
    "_CLIP_CASES",
    (
        ("a gradient of norm 5", np.array([3.0, 4.0]), 1.0, np.array([0.6, 0.8])),
        ("a short gradient (norm 0.5)", np.array([0.3, -0.4]), 1.0, np.array([0.3, -0.4])),
        ("a gradient with a negative entry", np.array([-6.0, 8.0]), 5.0, np.array([-3.0, 4.0])),
        (
            "a 2 x 2 gradient of norm 5",
            np.array([[1.0, 2.0], [2.0, 4.0]]),
            2.5,
            np.array([[0.5, 1.0], [1.0, 2.0]]),
        ),
        ("a zero gradient", np.zeros(3), 1.0, np.zeros(3)),
    ),
)


def check_clip_hook(clip_hook) -> None:
    """clip_hook(max_norm) returns hook(grad): grad scaled to norm max_norm when longer."""
    for description, g, max_norm, expected in cases_of(__name__, "_CLIP_CASES"):
        hook = call(f"clip_hook({max_norm})", clip_hook, max_norm)
        if not callable(hook):
            raise AssertionError(
                f"clip_hook({max_norm}) returned {type(hook).__name__}; it should return a "
                "function that takes a gradient array and returns the clipped array"
            )
        given = g.copy()
        what = f"clip_hook({max_norm}) on {description} {_show(g)}"
        out = call(what, hook, given)
        if not np.array_equal(given, g):
            raise AssertionError(
                f"{what} changed the array it was given in place (it is now {_show(given)}). "
                "That array may also be on its way to other tensors (Add sends the same array to "
                "both inputs); return a new array instead."
            )
        if out is None:
            raise AssertionError(
                f"{what} returned None; when a hook returns None the engine passes the original "
                "gradient on unchanged. Return the clipped gradient."
            )
        out = np.asarray(out.data if isinstance(out, Tensor) else out)
        if out.shape != g.shape:
            raise AssertionError(f"{what}: expected shape {g.shape}, got {out.shape}")
        if not np.allclose(out, expected, rtol=1e-6, atol=1e-9):
            words = f"expected {_show(expected)}, got {_show(out)}"
            if not np.isfinite(out).all():
                words += ". A zero gradient has norm 0: do not divide by it, return it as it is"
            elif np.allclose(out, np.clip(g, -max_norm, max_norm)):
                words += (
                    ". That clips each entry; clip the norm (the length of the whole gradient, "
                    "np.sqrt((g * g).sum())) and keep its direction"
                )
            elif np.linalg.norm(g) <= max_norm:
                words += ". A gradient that is already short enough must pass unchanged"
            raise AssertionError(f"{what}: {words}")
    _clip_in_a_graph(clip_hook)
    print(
        f"✓ clip_hook is right on {_count('_CLIP_CASES')} gradients and clips the gradient "
        "flowing through a real graph"
    )


def _clip_in_a_graph(clip_hook) -> None:
    w = Tensor(np.array([1.0, 2.0]), requires_grad=True)
    h = w * 10.0
    h.register_hook(clip_hook(1.0))
    (h * h).sum().backward()
    arriving = 2 * h.data
    expected = 10.0 * arriving / np.linalg.norm(arriving)
    if not np.allclose(w.grad, expected):
        raise AssertionError(
            f"with clip_hook(1.0) on h = 10 w (w = [1., 2.]) and loss sum(h * h), the gradient "
            f"{_show(arriving)} arriving at h should be clipped to norm 1 and w.grad be "
            f"{_show(expected)}; got {_show(w.grad)}"
        )


def your_clip_hook_picture(clip_hook):
    """The backward pass of a small graph with your hook on h: see the clipped gradient."""
    from minilucid import viz

    w = Tensor(np.array([1.0, 2.0]), requires_grad=True, name="w")
    h = w * 10.0
    h.name = "h (hooked)"
    h.register_hook(clip_hook(1.0))
    loss = (h * Tensor(np.array([3.0, 4.0]), name="c")).sum()
    loss.name = "loss"
    return viz.draw_backward(loss)


# --------------------------------------------------------------------------------------------
# Exercise 2: StopGradient, an op


def check_stop_gradient(StopGradient) -> None:
    """StopGradient.apply(x): the same numbers in a new array; no gradient back to x."""
    for x, kind in (
        (Tensor(np.array([1.0, 2.0, 3.0]), requires_grad=True), "a leaf that requires grad"),
        (Tensor(np.array([[0.5, -1.0]]), requires_grad=True) * 2.0, "computed by an op"),
    ):
        what = f"StopGradient.apply(x) with x = {_show(x.data)} ({kind})"
        s = call(what, StopGradient.apply, x, returns=Tensor)
        if s.shape != x.shape or not np.array_equal(s.data, x.data):
            raise AssertionError(
                f"{what}: forward should give the same numbers {_show(x.data)}, got {_show(s.data)}"
            )
        if np.shares_memory(s.data, x.data):
            raise AssertionError(
                f"{what}: forward returned the input's own array, so an in-place change of the "
                "result would change x too. Return a new array with the same numbers."
            )
        if not x.requires_grad:
            raise AssertionError(f"{what} switched off x.requires_grad; leave x as it is")

    # in an expression: y = sum(x * stop(x)) has dy/dx = x, not 2 x
    x = Tensor(np.array([1.0, -2.0, 3.0]), requires_grad=True)
    y = (x * call("StopGradient.apply(x)", StopGradient.apply, x, returns=Tensor)).sum()
    call(
        "backward of sum(x * StopGradient.apply(x))",
        y.backward,
        hint="Your backward must return one array of the input's shape (or None).",
    )
    if x.grad is None or x.grad.shape != x.shape:
        got = "no gradient" if x.grad is None else f"a gradient of shape {x.grad.shape}"
        raise AssertionError(
            f"for y = sum(x * StopGradient.apply(x)) with x of shape {x.shape}, x got {got}; "
            "backward must return one gradient of the input's shape (or None)"
        )
    if np.allclose(x.grad, 2 * x.data):
        raise AssertionError(
            "for y = sum(x * StopGradient.apply(x)), dy/dx came out as 2 x: your backward "
            "passes the gradient through. A constant sends nothing back: zeros (or None)."
        )
    if not np.allclose(x.grad, x.data):
        raise AssertionError(
            f"for y = sum(x * StopGradient.apply(x)) with x = {_show(x.data)}, dy/dx should "
            f"be x itself (only the first factor passes a gradient); got {_show(x.grad)}"
        )
    print("✓ StopGradient passes the numbers and stops the gradient, on leaves and non-leaves")


def your_stop_gradient_graph(StopGradient):
    """The backward pass of y = sum(h * stopped), stopped = StopGradient.apply(h), h = 2 x."""
    from minilucid import viz

    x = Tensor(np.array([1.0, 2.0, 3.0]), requires_grad=True, name="x")
    h = x * 2.0
    h.name = "h"
    s = StopGradient.apply(h)
    s.name = "stopped"
    y = (h * s).sum()
    y.name = "y"
    return viz.draw_backward(y)


# --------------------------------------------------------------------------------------------
# Exercise 4 (optional): the gradients of intermediate tensors, caught by hooks


def _hook_graph():
    """x -> h = x * w -> u = tanh(h) -> loss = sum(h * u + u); h and u are used twice."""
    x = Tensor(np.array([0.5, -1.0, 2.0]), requires_grad=True, name="x")
    w = Tensor(np.array([1.5, 0.5, -0.25]), requires_grad=True, name="w")
    h = x * w
    u = h.tanh()
    loss = (h * u + u).sum()
    return loss, {"x": x, "h": h, "u": u}


def _expected_hook_grads() -> dict:
    loss, tensors = _hook_graph()
    for t in tensors.values():
        t.retain_grad()
    loss.backward()
    return {name: np.array(t.grad) for name, t in tensors.items()}


def _refuse_retain_grad(self) -> None:
    raise AssertionError(
        "grads_by_hooks called retain_grad(); catch each gradient with register_hook instead"
    )


def check_hook_grads(grads_by_hooks) -> None:
    """grads_by_hooks(loss, tensors) -> {name: gradient}: by hooks, one backward, no change."""
    expected = _expected_hook_grads()
    loss, tensors = _hook_graph()
    names = ", ".join(tensors)
    what = f"grads_by_hooks(loss, {{{names}}}) for loss = sum(h * u + u), u = tanh(h), h = x * w"
    kept = Tensor.retain_grad
    Tensor.retain_grad = _refuse_retain_grad
    try:
        caught = call(what, grads_by_hooks, loss, tensors, returns=dict)
    finally:
        Tensor.retain_grad = kept
    if set(caught) != set(tensors):
        missing = sorted(set(tensors) - set(caught))
        extra = sorted(set(caught) - set(tensors))
        raise AssertionError(
            f"{what} returned the names {sorted(caught)}; expected {sorted(tensors)}"
            + (f" (missing {missing})" if missing else "")
            + (f" (not asked for {extra})" if extra else "")
            + (
                ". A hook defined in a loop sees the loop variable's last value when it runs, "
                "unless it keeps its own (a default argument, name=name)."
                if caught and missing
                else ". Register one hook per tensor before the backward."
            )
        )
    for name, t in tensors.items():
        got = caught[name]
        if got is None or np.shape(got) != t.shape:
            raise AssertionError(
                f"{what}: the gradient for {name!r} is "
                + ("None" if got is None else f"of shape {np.shape(got)}")
                + f"; expected an array of shape {t.shape}"
            )
    if tensors["x"].grad is None or not np.allclose(tensors["x"].grad, expected["x"]):
        raise AssertionError(
            f"{what}: afterwards x.grad is not d(loss)/d(x): your hooks changed the gradients "
            "on their way (a hook that only records must return None), or backward ran more "
            "than once (each run adds into .grad). Register, then one backward."
        )
    wrong = [n for n in tensors if not np.allclose(caught[n], expected[n], rtol=1e-9, atol=1e-12)]
    if wrong:
        hint = " Each hook must record the gradient that arrives at its own tensor."
        raise AssertionError(
            f"{what}: the gradient for {wrong[0]!r} is not d(loss)/d({wrong[0]}).{hint}"
        )
    print(f"✓ grads_by_hooks catches the gradients at {names} with one backward")
