"""Checks for the exercises of chapter 06 (graph hygiene), as probes and judges.

Each probe runs the learner's code inside the real engine (an update between backward and the
next forward, an op in a graph, a hook on a tensor, hooks on a whole graph) and hands back plain
data: numbers after the call, gradients as arrays, what was replaced or raised. Each judge
rebuilds the same tensors in its own process, computes every reference itself and names the
first mistake and the case that shows it.
"""

import numpy as np

from minilucid.grad_mode import is_grad_enabled, no_grad, set_grad_enabled
from minilucid.nn import functional as F
from minilucid.tensor import Tensor
from minilucid_course.checks.common import (
    attempt,
    cases_of,
    frozen,
    judged_entry,
    raised_message,
)
from minilucid_course.checks.common import (
    float_array as _array,
)
from minilucid_course.checks.exercise import LAB_SEED, Exercise, Wrong, register


def _show(x) -> str:
    """A short, deterministic, one-line text for an array or number."""
    text = np.array2string(np.asarray(x), precision=4, separator=", ", max_line_width=10**6)
    return " ".join(text.split())


def _given(value, shape, what: str) -> np.ndarray:
    """For a judge: an array of numbers of exactly `shape`, or Wrong."""
    if not isinstance(value, np.ndarray) or value.dtype.kind not in "biuf":
        raise Wrong(f"the results of your answer hold no array for {what}")
    if value.shape != tuple(shape):
        raise Wrong(f"{what}: expected shape {tuple(shape)}, got shape {value.shape}")
    return value.astype(np.float64)


def _entries(data, key: str, count: int, what: str) -> list:
    """For a judge: data[key], a list of exactly `count` dicts, or Wrong."""
    found = data.get(key) if isinstance(data, dict) else None
    if not isinstance(found, list) or not found:
        raise Wrong(f"the results of your answer hold nothing for {what}")
    for entry in found:
        judged_entry(entry, what)
    if len(found) > count:
        raise Wrong(f"the results of your answer hold more runs than {what} has cases")
    return found


# --------------------------------------------------------------------------------------------
# Exercise 1: an SGD step

LR = 0.1
FIT_STEPS, FIT_LR = 30, 0.3


def _problem_values(seed: int) -> list:
    fixed = [[1.0, -2.0, 0.5], [[0.3], [0.7]], [4.0]]
    if seed == LAB_SEED:
        return fixed
    rng = np.random.default_rng([seed, 6])
    return [np.round(rng.uniform(-2.0, 2.0, np.shape(v)), 3).tolist() for v in fixed]


def _make_problem(seed: int = LAB_SEED):
    """Three parameters, a loss that uses two of them, backward already run."""
    a, b, unused = (
        Tensor(np.array(v, dtype=np.float32), requires_grad=True) for v in _problem_values(seed)
    )
    loss = (a * Tensor([1.0, 2.0, 3.0])).sum() + (b * b).sum()
    loss.backward()
    return [a, b, unused]


def line_data() -> tuple:
    """20 points near the line y = 2x + 1 (x in [-1, 1]), as float32 tensors."""
    rng = np.random.default_rng(6)
    x = np.linspace(-1.0, 1.0, 20).astype(np.float32)
    y = (2 * x + 1 + 0.1 * rng.standard_normal(20)).astype(np.float32)
    return Tensor(x), Tensor(y)


def _fit_a_line(step) -> list:
    """FIT_STEPS steps of least squares on a line, each update made by `step(params, lr)`."""
    x, y = line_data()
    w = Tensor(np.zeros((), dtype=np.float32), requires_grad=True)
    b = Tensor(np.zeros((), dtype=np.float32), requires_grad=True)
    losses = []
    for _ in range(FIT_STEPS):
        loss = F.mse_loss(w * x + b, y)
        loss.backward()
        losses.append(loss.item())
        step([w, b], FIT_LR)
    return losses


def _reference_step(params, lr) -> None:
    with no_grad():
        for p in params:
            if p.grad is not None:
                p -= lr * p.grad
                p.grad = None


def _probe_sgd(cases, sgd_step):
    params = _make_problem(cases["seed"])
    originals = list(params)
    try:
        record = attempt(sgd_step, params, LR)
    finally:
        recording = is_grad_enabled()
        set_grad_enabled(True)  # whatever happened, later cells must record again
    if record[0] == "raised":
        return {"raised": list(record)}
    found = []
    for p, original in zip(params, originals, strict=False):
        op = type(p.grad_fn).__name__ if isinstance(p, Tensor) and p.grad_fn else None
        found.append(
            {
                "same": p is original,
                "made_by": op,
                "requires_grad": bool(getattr(p, "requires_grad", False)),
                "kind": type(p).__name__,
                "data": _array(original.data),
                "grad": _array(original.grad),
            }
        )
    try:
        fit = attempt(_fit_a_line, sgd_step)
    finally:
        set_grad_enabled(True)
    fit = (
        {"raised": ["sgd_step in a training loop", *fit]}
        if fit[0] == "raised"
        else {"losses": [float(v) for v in fit[1]]}
    )
    return {"recording": bool(recording), "params": found, "length": len(params), "fit": fit}


def _judge_sgd(cases, data) -> str:
    what = f"sgd_step(params, lr={LR})"
    if not isinstance(data, dict):
        raise Wrong(f"the results of your answer hold nothing for {what}")
    judged_entry(data, what)
    if data.get("recording") is not True:
        raise Wrong(
            "after sgd_step, gradient recording is still switched off, so no later forward pass "
            "would build a graph"
        )
    problem = _make_problem(cases["seed"])
    found = data.get("params")
    if not isinstance(found, list) or len(found) != len(problem) or data.get("length") != 3:
        raise Wrong(f"after {what} the list of parameters no longer holds its 3 parameters")
    for i, entry in enumerate(found):
        if not isinstance(entry, dict):
            raise Wrong(f"the results of your answer hold nothing for parameter {i}")
        if entry.get("same") is not True:
            made_by = entry.get("made_by")
            if isinstance(made_by, str):
                replaced = (
                    f"a new tensor made by {made_by[:30]} (grad_fn is set, so it is no longer a "
                    "leaf: the next backward would flow through it into the old tensor and leave "
                    "its own .grad empty)"
                )
            elif entry.get("requires_grad") is False:
                replaced = (
                    "a new tensor that does not require grad (no gradient would ever reach it)"
                )
            else:
                replaced = f"a new {str(entry.get('kind'))[:30]}"
            raise Wrong(
                f"sgd_step replaced parameter {i} in the list with {replaced}; the model that owns "
                "the old tensor would never see the update"
            )
    for i, (p, entry) in enumerate(zip(problem, found, strict=True)):
        before = p.data.astype(np.float64)
        got = entry.get("data")
        if not isinstance(got, np.ndarray) or got.dtype.kind not in "biuf":
            raise Wrong(f"the results of your answer hold no numbers for parameter {i}")
        if got.shape != before.shape:
            raise Wrong(f"parameter {i} changed shape from {before.shape} to {got.shape}")
        grad_after = entry.get("grad")
        if grad_after is not None:
            grad_after = _given(grad_after, before.shape, f"the gradient of parameter {i}")
        if p.grad is None:
            if not np.array_equal(got, before):
                raise Wrong(
                    f"parameter {i} has no gradient (the loss does not use it), yet sgd_step "
                    f"changed it from {_show(before)} to {_show(got)}"
                )
            continue
        grad = p.grad.astype(np.float64)
        expected = before - LR * grad
        if np.allclose(got, expected, rtol=1e-6, atol=1e-7):
            continue
        if np.array_equal(got, before) and grad_after is not None and not np.any(grad_after):
            words = (
                "it did not change, and its .grad is now all zeros: the gradient was zeroed in "
                "place before the step used it"
            )
        elif np.array_equal(got, before):
            words = (
                "it did not change: the tensor in the list still holds its old numbers (a name "
                "bound to a new tensor changes nothing in the list)"
            )
        elif np.allclose(got, before + LR * grad, rtol=1e-6, atol=1e-7):
            words = "it moved uphill, along the gradient instead of against it"
        else:
            words = f"expected {_show(expected)}, got {_show(got)}"
        raise Wrong(
            f"parameter {i} = {_show(before)} with gradient {_show(grad)} and lr = {LR}: " + words
        )
    for i, entry in enumerate(found):
        grad_after = entry.get("grad")
        if grad_after is not None and np.any(grad_after != 0):
            raise Wrong(
                f"after sgd_step parameter {i} still holds its gradient {_show(grad_after)}; the "
                "next backward would add to it"
            )
    fit = data.get("fit")
    judged_entry(fit, "sgd_step in a training loop")
    losses = fit.get("losses")
    reference = _fit_a_line(_reference_step)
    if (
        not isinstance(losses, list)
        or len(losses) != FIT_STEPS
        or not all(type(v) is float for v in losses)
    ):
        raise Wrong(f"the results of your answer hold no {FIT_STEPS} losses of the training loop")
    if not np.allclose(losses, reference, rtol=1e-3, atol=1e-6):
        raise Wrong(
            f"in a training loop of {FIT_STEPS} steps (lr {FIT_LR}) on points near y = 2x + 1, "
            f"the loss went from {losses[0]:.3f} to {losses[-1]:.3f}; gradient descent takes it "
            f"from {reference[0]:.3f} to {reference[-1]:.4f}"
        )
    return (
        f"✓ sgd_step updates in place and clears the gradients; in a real training loop it "
        f"takes the loss from {reference[0]:.3f} to {reference[-1]:.4f} in {FIT_STEPS} steps"
    )


SGD_STEP = register(
    Exercise(
        check="check_sgd_step",
        chapter="06",
        title="One step of gradient descent",
        probe=_probe_sgd,
        judge=_judge_sgd,
        cases=lambda seed: {"seed": seed},
        forbidden=("SGD",),
    )
)
check_sgd_step = SGD_STEP.lab_check


# --------------------------------------------------------------------------------------------
# Exercise 2: StopGradient, an op

_STOP_INPUTS = frozen(
    __name__,
    "_STOP_INPUTS",
    (
        ([1.0, 2.0, 3.0], "a leaf that requires grad"),
        ([[0.5, -1.0]], "computed by an op"),
    ),
)
_STOP_EXPRESSION = (1.0, -2.0, 3.0)


def _stop_input(values, kind: str) -> Tensor:
    x = Tensor(np.array(values), requires_grad=True)
    return x if kind == "a leaf that requires grad" else x * 2.0


def _stop_cases(seed: int) -> dict:
    expression = np.array(_STOP_EXPRESSION)
    if seed != LAB_SEED:
        expression = np.round(np.random.default_rng([seed, 62]).uniform(-3.0, 3.0, 3), 3)
    return {"inputs": [list(c) for c in cases_of(__name__, "_STOP_INPUTS")], "x": expression}


def _probe_stop(cases, StopGradient):
    runs = []
    for values, kind in cases["inputs"]:
        x = _stop_input(values, kind)
        what = f"StopGradient.apply(x) with x = {_show(x.data)} ({kind})"
        record = attempt(StopGradient.apply, x)
        if record[0] == "raised":
            runs.append({"raised": [what, *record]})
            break
        s = record[1]
        if not isinstance(s, Tensor):
            runs.append({"kind": type(s).__name__})
            break
        run = {"kind": "Tensor", "out": _array(s.data), "requires_grad": bool(x.requires_grad)}
        # change the result in place: does x change with it?
        attempt(np.copyto, s.data, s.data + 1.0)
        run["x_after"] = _array(x.data)
        runs.append(run)
    x = Tensor(np.array(cases["x"]), requires_grad=True)
    record = attempt(StopGradient.apply, x)
    if record[0] == "raised":
        return {"runs": runs, "expression": {"raised": ["StopGradient.apply(x)", *record]}}
    if not isinstance(record[1], Tensor):
        return {"runs": runs, "expression": {"kind": type(record[1]).__name__}}
    y = (x * record[1]).sum()
    done = attempt(y.backward)
    if done[0] == "raised":
        what = "backward of sum(x * StopGradient.apply(x))"
        return {"runs": runs, "expression": {"raised": [what, *done]}}
    return {"runs": runs, "expression": {"kind": "Tensor", "grad": _array(x.grad)}}


def _judge_stop(cases, data) -> str:
    inputs = cases["inputs"]
    runs = _entries(data, "runs", len(inputs), "StopGradient.apply")
    for (values, kind), run in zip(inputs, runs, strict=False):
        x = _stop_input(values, kind).data.astype(np.float64)
        what = f"StopGradient.apply(x) with x = {_show(x)} ({kind})"
        if run.get("kind") != "Tensor":
            raise Wrong(f"{what} returned {str(run.get('kind'))[:30]}, not a Tensor")
        out = run.get("out")
        if not isinstance(out, np.ndarray) or out.shape != x.shape or not np.array_equal(out, x):
            shown = _show(out) if isinstance(out, np.ndarray) else "nothing"
            raise Wrong(f"{what}: forward should give the same numbers {_show(x)}, got {shown}")
        after = run.get("x_after")
        if not isinstance(after, np.ndarray) or after.shape != x.shape:
            raise Wrong(f"the results of your answer hold no numbers of x for {what}")
        if not np.array_equal(after, x):
            raise Wrong(
                f"{what}: forward returned the input's own array, so an in-place change of the "
                "result would change x too"
            )
        if run.get("requires_grad") is not True:
            raise Wrong(f"{what} switched off x.requires_grad")
    if len(runs) < len(inputs):
        raise Wrong("the results of your answer hold fewer runs than the check has inputs")
    x = np.asarray(cases["x"], dtype=np.float64)
    expression = data.get("expression")
    record = expression.get("raised") if isinstance(expression, dict) else None
    if isinstance(record, list) and len(record) == 4 and record[1] == "raised":
        record = [str(r) for r in record]
        hint = "Your backward must return one array of the input's shape (or None)."
        raise Wrong(raised_message(record[0], record[1:], hint))
    judged_entry(
        expression,
        "sum(x * StopGradient.apply(x))",
        "backward of sum(x * StopGradient.apply(x))",
    )
    if expression.get("kind") != "Tensor":
        raise Wrong(f"StopGradient.apply(x) returned {str(expression.get('kind'))[:30]}")
    grad = expression.get("grad")
    if not isinstance(grad, np.ndarray) or grad.dtype.kind not in "biuf" or grad.shape != x.shape:
        got = "no gradient" if grad is None else "a gradient of another shape"
        raise Wrong(
            f"for y = sum(x * StopGradient.apply(x)) with x of shape {x.shape}, x got {got}; "
            "backward must return one gradient of the input's shape (or None)"
        )
    if np.allclose(grad, 2 * x):
        raise Wrong(
            "for y = sum(x * StopGradient.apply(x)), dy/dx came out as 2 x: your backward "
            "passes the gradient through, as if the value were not a constant"
        )
    if not np.allclose(grad, x):
        raise Wrong(
            f"for y = sum(x * StopGradient.apply(x)) with x = {_show(x)}, dy/dx should "
            f"be x itself (only the first factor passes a gradient); got {_show(grad)}"
        )
    return "✓ StopGradient passes the numbers and stops the gradient, on leaves and non-leaves"


STOP_GRADIENT = register(
    Exercise(
        check="check_stop_gradient",
        chapter="06",
        title="Stop the gradient: an op of your own",
        probe=_probe_stop,
        judge=_judge_stop,
        cases=_stop_cases,
    )
)
check_stop_gradient = STOP_GRADIENT.lab_check


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
# Exercise 3: a gradient-clipping hook

_CLIP_CASES = frozen(
    __name__,
    "_CLIP_CASES",
    (
        ("a gradient of norm 5", [3.0, 4.0], 1.0),
        ("a short gradient (norm 0.5)", [0.3, -0.4], 1.0),
        ("a gradient with a negative entry", [-6.0, 8.0], 5.0),
        ("a 2 x 2 gradient of norm 5", [[1.0, 2.0], [2.0, 4.0]], 2.5),
        ("a zero gradient", [0.0, 0.0, 0.0], 1.0),
    ),
)
_CLIP_W = (1.0, 2.0)  # the graph: h = 10 w, loss = sum(h * h), clip_hook(1.0) on h


def _clipped(g: np.ndarray, max_norm: float) -> np.ndarray:
    norm = float(np.sqrt((g * g).sum()))
    return g * (max_norm / norm) if norm > max_norm else g


def _clip_cases(seed: int) -> dict:
    return {"cases": [list(c) for c in cases_of(__name__, "_CLIP_CASES")], "w": list(_CLIP_W)}


def _clip_in_a_graph(clip_hook, w_values) -> np.ndarray | None:
    w = Tensor(np.array(w_values), requires_grad=True)
    h = w * 10.0
    h.register_hook(clip_hook(1.0))
    (h * h).sum().backward()
    return _array(w.grad)


def _probe_clip(cases, clip_hook):
    runs = []
    for description, g, max_norm in cases["cases"]:
        g = np.array(g, dtype=np.float64)
        record = attempt(clip_hook, max_norm)
        if record[0] == "raised":
            runs.append({"raised": [f"clip_hook({max_norm})", *record]})
            break
        hook = record[1]
        if not callable(hook):
            runs.append({"hook": type(hook).__name__})
            break
        given = g.copy()
        record = attempt(hook, given)
        if record[0] == "raised":
            runs.append({"raised": [f"clip_hook({max_norm}) on {description}", *record]})
            break
        out = record[1]
        runs.append({"hook": "function", "given": given, "out": _array(out), "none": out is None})
    graph = attempt(_clip_in_a_graph, clip_hook, cases["w"])
    graph = (
        {"raised": ["clip_hook(1.0) on a tensor of a graph", *graph]}
        if graph[0] == "raised"
        else {"grad": graph[1]}
    )
    return {"runs": runs, "graph": graph}


def _judge_clip(cases, data) -> str:
    found = cases["cases"]
    runs = _entries(data, "runs", len(found), "clip_hook")
    for (description, g, max_norm), run in zip(found, runs, strict=False):
        g = np.array(g, dtype=np.float64)
        expected = _clipped(g, max_norm)
        if run.get("hook") != "function":
            raise Wrong(
                f"clip_hook({max_norm}) returned {str(run.get('hook'))[:30]}, not a function "
                "of the gradient"
            )
        what = f"clip_hook({max_norm}) on {description} {_show(g)}"
        given = _given(run.get("given"), g.shape, f"the array given to {what}")
        if not np.array_equal(given, g):
            raise Wrong(
                f"{what} changed the array it was given in place (it is now {_show(given)}). "
                "That array may also be on its way to other tensors (Add sends the same array to "
                "both inputs)."
            )
        if run.get("none") is True:
            raise Wrong(
                f"{what} returned None; when a hook returns None the engine passes the original "
                "gradient on unchanged"
            )
        out = run.get("out")
        if not isinstance(out, np.ndarray) or out.dtype.kind not in "biuf":
            raise Wrong(f"{what} returned no array of numbers")
        if out.shape != g.shape:
            raise Wrong(f"{what}: expected shape {g.shape}, got {out.shape}")
        if not np.allclose(out, expected, rtol=1e-6, atol=1e-9):
            words = f"expected {_show(expected)}, got {_show(out)}"
            if not np.isfinite(out).all():
                words += " (a zero gradient, whose norm is 0)"
            elif np.allclose(out, np.clip(g, -max_norm, max_norm)):
                words += ". That clips each entry, not the length of the whole gradient"
            elif np.linalg.norm(g) <= max_norm:
                words += ". This gradient is already short enough"
            raise Wrong(f"{what}: {words}")
    if len(runs) < len(found):
        raise Wrong("the results of your answer hold fewer runs than the check has cases")
    graph = data.get("graph")
    judged_entry(graph, "clip_hook(1.0) on a tensor of a graph")
    w = np.array(cases["w"], dtype=np.float64)
    arriving = 2 * (10.0 * w)
    expected = 10.0 * _clipped(arriving, 1.0)
    got = graph.get("grad")
    if not isinstance(got, np.ndarray) or got.shape != w.shape or not np.allclose(got, expected):
        raise Wrong(
            f"with clip_hook(1.0) on h = 10 w (w = {_show(w)}) and loss sum(h * h), the gradient "
            f"{_show(arriving)} arriving at h should be clipped to norm 1 and w.grad be "
            f"{_show(expected)}; got {_show(got) if isinstance(got, np.ndarray) else 'none'}"
        )
    return (
        f"✓ clip_hook is right on {len(found)} gradients and clips the gradient flowing through "
        "a real graph"
    )


CLIP_HOOK = register(
    Exercise(
        check="check_clip_hook",
        chapter="06",
        title="A gradient-clipping hook",
        probe=_probe_clip,
        judge=_judge_clip,
        cases=_clip_cases,
        forbidden=("clip_grad_norm_",),
    )
)
check_clip_hook = CLIP_HOOK.lab_check


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
# Exercise 4 (optional): the gradients of intermediate tensors, caught by hooks

_HOOK_VALUES = ((0.5, -1.0, 2.0), (1.5, 0.5, -0.25))


def _hook_graph(values=_HOOK_VALUES):
    """x -> h = x * w -> u = tanh(h) -> loss = sum(h * u + u); h and u are used twice."""
    x = Tensor(np.array(values[0]), requires_grad=True, name="x")
    w = Tensor(np.array(values[1]), requires_grad=True, name="w")
    h = x * w
    u = h.tanh()
    loss = (h * u + u).sum()
    return loss, {"x": x, "h": h, "u": u}


def _hook_cases(seed: int) -> dict:
    if seed == LAB_SEED:
        return {"values": [list(v) for v in _HOOK_VALUES]}
    rng = np.random.default_rng([seed, 64])
    return {"values": np.round(rng.uniform(-2.0, 2.0, (2, 3)), 3).tolist()}


def _refuse_retain_grad(self) -> None:
    raise AssertionError("grads_by_hooks called retain_grad(), which this exercise rules out")


def _probe_hooks(cases, grads_by_hooks):
    loss, tensors = _hook_graph(cases["values"])
    kept = Tensor.retain_grad
    Tensor.retain_grad = _refuse_retain_grad
    try:
        record = attempt(grads_by_hooks, loss, tensors)
    finally:
        Tensor.retain_grad = kept
    if record[0] == "raised":
        return {"raised": list(record)}
    caught = record[1]
    if not isinstance(caught, dict):
        return {"kind": type(caught).__name__}
    names = [k if isinstance(k, str) else repr(k)[:40] for k in caught]
    grads = {k: _array(v) for k, v in caught.items() if isinstance(k, str) and k in tensors}
    return {"kind": "dict", "names": names, "grads": grads, "x_grad": _array(tensors["x"].grad)}


def _judge_hooks(cases, data) -> str:
    loss, tensors = _hook_graph(cases["values"])
    names = ", ".join(tensors)
    what = f"grads_by_hooks(loss, {{{names}}}) for loss = sum(h * u + u), u = tanh(h), h = x * w"
    judged_entry(data, what)
    if data.get("kind") != "dict":
        raise Wrong(f"{what} returned {str(data.get('kind'))[:30]}, not a dict")
    for t in tensors.values():
        t.retain_grad()
    loss.backward()
    expected = {name: np.array(t.grad, dtype=np.float64) for name, t in tensors.items()}
    caught, grads = data.get("names"), data.get("grads")
    if not isinstance(caught, list) or not all(isinstance(n, str) for n in caught):
        raise Wrong(f"the results of your answer hold no names for {what}")
    if not isinstance(grads, dict):
        raise Wrong(f"the results of your answer hold no gradients for {what}")
    if set(caught) != set(tensors) or len(caught) != len(tensors):
        missing = sorted(set(tensors) - set(caught))
        extra = sorted(set(caught) - set(tensors))
        raise Wrong(
            f"{what} returned the names {sorted(caught)}; expected {sorted(tensors)}"
            + (f" (missing {missing})" if missing else "")
            + (f" (not asked for {extra})" if extra else "")
            + (
                ". The hooks stored their gradients under the loop variable's last value, which "
                "they read when they ran"
                if caught and missing
                else ". No hook caught a gradient during the backward"
            )
        )
    for name, t in tensors.items():
        got = grads.get(name)
        if not isinstance(got, np.ndarray) or got.shape != t.shape:
            shown = "None" if got is None else f"of shape {np.shape(got)}"
            raise Wrong(
                f"{what}: the gradient for {name!r} is {shown}; expected an array of shape "
                f"{t.shape}"
            )
    x_grad = data.get("x_grad")
    if (
        not isinstance(x_grad, np.ndarray)
        or x_grad.shape != expected["x"].shape
        or not np.allclose(x_grad, expected["x"])
    ):
        raise Wrong(
            f"{what}: afterwards x.grad is not d(loss)/d(x): your hooks changed the gradients "
            "on their way, or backward ran more than once (each run adds into .grad)"
        )
    wrong = [n for n in tensors if not np.allclose(grads[n], expected[n], rtol=1e-9, atol=1e-12)]
    if wrong:
        raise Wrong(f"{what}: the gradient for {wrong[0]!r} is not d(loss)/d({wrong[0]})")
    return f"✓ grads_by_hooks catches the gradients at {names} with one backward"


HOOK_GRADS = register(
    Exercise(
        check="check_hook_grads",
        chapter="06",
        title="The gradients on the way, caught by hooks",
        probe=_probe_hooks,
        judge=_judge_hooks,
        cases=_hook_cases,
    )
)
check_hook_grads = HOOK_GRADS.lab_check
