"""Checks for the exercises of chapter 11 (regularisation and normalisation), as probes and
judges.

Each probe runs the learner's code on seeded cases built to expose one plausible mistake each
and returns what came out as plain data; each judge rebuilds the cases and computes every
expected value with the package (its batch norm, layer norm and autodiff) in its own process,
and names the first problem in one line. Expected values are never shown.
"""

from __future__ import annotations

import numpy as np

import minilucid as ml
from minilucid import nn
from minilucid.nn import functional as F
from minilucid.tensor import Tensor
from minilucid_course.checks.common import attempt
from minilucid_course.checks.exercise import Exercise, Wrong, register
from minilucid_course.checks.outcomes import (
    array_of,
    called,
    items_of,
    kind,
    package_kinds,
    raised_first,
    record,
)


def _where(got: np.ndarray, want: np.ndarray) -> str:
    """The index of the largest difference, as a learner reads it."""
    index = np.unravel_index(int(np.argmax(np.abs(got - want))), want.shape)
    return str(tuple(int(i) for i in index))


def _seeded(seed: int, *key) -> np.random.Generator:
    return np.random.default_rng([11, *key, seed])


# --------------------------------------------------------------------------------------------
# Exercise 1: dropout


def _dropout_cases(seed: int) -> dict:
    return {"seed": seed}


def _dropout_inputs(seed: int) -> dict:
    rng = _seeded(seed, 1)
    return {
        "x32": rng.standard_normal((4, 6)).astype(np.float32),
        "x": rng.standard_normal((5, 4)),
        "leaf": rng.standard_normal((6, 5)),
    }


def _call_dropout(fn, x_np, p, training) -> dict:
    """The output's record and the input's numbers after the call (unchanged, or not)."""
    x = Tensor(x_np.copy(), requires_grad=False)
    rec = called(fn, x, p, training)
    return {"out": rec, "x_after": np.array(x.data)}


def _probe_dropout(cases, fn):
    inputs = _dropout_inputs(cases["seed"])
    data = {}
    ml.manual_seed(0)
    data["ones"] = _call_dropout(fn, np.ones((200, 500)), 0.3, True)
    data["f32"] = _call_dropout(fn, inputs["x32"], 0.5, True)
    data["eval"] = [_call_dropout(fn, inputs["x"], p, False) for p in (0.3, 0.0)]
    data["p0"] = _call_dropout(fn, inputs["x"], 0.0, True)
    data["p1"] = _call_dropout(fn, inputs["x"], 1.0, True)
    small = np.ones((6, 8))
    ml.manual_seed(3)
    data["first"] = _call_dropout(fn, small, 0.5, True)
    data["second"] = _call_dropout(fn, small, 0.5, True)
    ml.manual_seed(3)
    data["again"] = _call_dropout(fn, small, 0.5, True)
    leaf = Tensor(inputs["leaf"].copy(), requires_grad=True)
    ml.manual_seed(4)
    outcome = attempt(fn, leaf, 0.4, True)
    data["grad_out"] = (
        {"raised": list(outcome[1:])} if outcome[0] == "raised" else record(outcome[1])
    )
    if outcome[0] == "ok" and isinstance(outcome[1], Tensor) and outcome[1].requires_grad:
        data["backward"] = called(lambda: outcome[1].sum().backward())
        data["grad"] = record(leaf.grad)
    return data


def _dropout_out(facts, what: str, x_np: np.ndarray, dtype=np.float64) -> np.ndarray:
    rec = facts["out"]
    raised_first(rec, what)
    if "tensor" not in rec:
        raise Wrong(f"{what} returned {kind(rec)}, not a Tensor")
    out = array_of(rec, what, dtype=None)
    if out.shape != x_np.shape:
        raise Wrong(f"{what} returned shape {out.shape}, where the input has {x_np.shape}")
    after = np.asarray(facts["x_after"])
    if after.shape != x_np.shape or not np.array_equal(after, x_np):
        raise Wrong(f"{what} changed its input x in place")
    return out if dtype is None else out.astype(dtype)


def _judge_dropout(cases, data) -> str:  # noqa: C901  (one case after another)
    inputs = _dropout_inputs(cases["seed"])
    what = "my_dropout(ones (200, 500), p=0.3, training=True)"
    out = _dropout_out(data["ones"], what, np.ones((200, 500)), dtype=None)
    kept = out != 0
    if kept.all():
        raise Wrong(f"{what} dropped nothing")
    share = kept.mean()
    if abs(share - 0.3) < 0.02:
        raise Wrong(
            f"{what} kept {share:.0%} of the entries: p is the probability of *dropping* an entry"
        )
    if abs(share - 0.7) > 0.02:
        raise Wrong(
            f"{what} kept {share:.0%} of the entries, not about {0.7:.0%} (each one kept "
            "independently with probability 1 - p)"
        )
    scales = np.unique(np.round(out[kept].astype(np.float64), 9))
    if len(scales) != 1 or not np.isclose(scales[0], 1 / 0.7):
        hint = (
            " - they are not scaled at all"
            if np.allclose(scales, 1)
            else " - they are scaled by (1 - p), which shrinks them"
            if np.allclose(scales, 0.7)
            else ""
        )
        raise Wrong(
            f"{what}: the kept entries of an all-ones input are not all 1 / (1 - p), and the "
            f"expected value is not 1{hint}"
        )
    if out.dtype != np.float64:
        raise Wrong(f"{what} returned {out.dtype}, not the input's dtype (float64)")
    what32 = "my_dropout(a float32 input, p=0.5, training=True)"
    if _dropout_out(data["f32"], what32, inputs["x32"], dtype=None).dtype != np.float32:
        raise Wrong(f"{what32} changed the dtype: float32 did not stay float32")
    x = inputs["x"]
    for p, facts in zip((0.3, 0.0), data["eval"], strict=True):
        what_eval = f"my_dropout(x, p={p}, training=False)"
        if not np.array_equal(_dropout_out(facts, what_eval, x), x):
            raise Wrong(f"{what_eval} changed its input's values: in evaluation mode")
    what0 = "my_dropout(x, p=0.0, training=True)"
    if not np.array_equal(_dropout_out(data["p0"], what0, x), x):
        raise Wrong(f"{what0} changed its input: with p = 0 nothing is dropped")
    what1 = "my_dropout(x, p=1.0, training=True)"
    if not np.all(_dropout_out(data["p1"], what1, x) == 0):
        raise Wrong(f"{what1} did not give all zeros (every entry dropped)")
    small = np.ones((6, 8))
    first = _dropout_out(data["first"], "my_dropout after ml.manual_seed(3)", small)
    second = _dropout_out(data["second"], "my_dropout, called again", small)
    again = _dropout_out(data["again"], "my_dropout after ml.manual_seed(3)", small)
    if not np.array_equal(first, again):
        raise Wrong(
            "my_dropout after ml.manual_seed(3) gave a different mask each time: its mask does "
            "not come from the stream that ml.manual_seed resets"
        )
    if np.array_equal(first, second):
        raise Wrong("two calls of my_dropout in a row dropped the same entries")
    what_grad = "my_dropout(x, p=0.4, training=True).sum().backward()"
    rec = data["grad_out"]
    raised_first(rec, what_grad)
    if "tensor" not in rec or rec["tensor"].shape != inputs["leaf"].shape:
        raise Wrong(f"{what_grad}: my_dropout returned {kind(rec)} of another shape")
    if rec["requires_grad"] is not True:
        raise Wrong(f"after {what_grad}, x.grad is None: the output has no graph behind it")
    raised_first(data["backward"], what_grad)
    grad = array_of(data["grad"], what_grad)
    if grad is None:
        raise Wrong(f"after {what_grad}, x.grad is None: no gradient flows back to x")
    out = rec["tensor"].astype(np.float64)
    kept = np.isclose(out, inputs["leaf"] / 0.6, rtol=1e-9, atol=0) & (out != 0)
    if not np.array_equal(kept | (out == 0), np.ones_like(kept)):
        raise Wrong(f"{what_grad}: the kept entries are not x / (1 - p)")
    want = kept / 0.6
    if grad.shape != want.shape or not np.allclose(grad, want):
        raise Wrong(
            f"after {what_grad}, x.grad is not mask / (1 - p) at position {_where(grad, want)}"
        )
    return "✓ my_dropout: keeps 1 - p, scales by 1/(1-p), identity in eval, seeded, gradient"


EXERCISE_DROPOUT = register(
    Exercise(
        check="check_my_dropout",
        chapter="11",
        title="Dropout",
        probe=_probe_dropout,
        judge=_judge_dropout,
        cases=_dropout_cases,
        forbidden=("dropout", "Dropout"),
    )
)
check_my_dropout = EXERCISE_DROPOUT.lab_check


# --------------------------------------------------------------------------------------------
# Exercise 2: batch norm's forward pass, with running statistics

_FORWARD_CASES = (  # (batch, channels, momentum, eps, what it exposes)
    (8, 3, 0.1, 1e-5, "a batch of 8, momentum 0.1"),
    (5, 2, 0.3, 1e-5, "a batch of 5, momentum 0.3"),
    (4, 3, 0.1, 0.5, "a batch of 4, eps 0.5"),
)
_RUNNING = ("running_mean", "running_var")
_PACKAGE_NORMS = ("BatchNorm1d", "BatchNorm2d")
_STARTS = (("weight", 1.0), ("bias", 0.0), ("running_mean", 0.0), ("running_var", 1.0))


def _forward_cases(seed: int) -> dict:
    return {"seed": seed, "cases": [list(c) for c in _FORWARD_CASES]}


def _forward_arrays(seed: int, index: int, n: int, c: int) -> dict:
    """Starting values, three training batches and their gradients, two eval batches."""
    rng = _seeded(seed, 2, index)
    out = {
        "weight": rng.uniform(0.5, 2.0, c),
        "bias": rng.standard_normal(c),
        "running_mean": rng.standard_normal(c),
        "running_var": rng.uniform(0.5, 2.0, c),
    }
    out["train"] = [rng.standard_normal((n, c)) * rng.uniform(0.5, 3, c) + rng.standard_normal(c)
                    for _ in range(3)]  # fmt: skip
    out["train_grads"] = [rng.standard_normal((n, c)) for _ in range(3)]
    out["eval"] = [rng.standard_normal((size, c)) * 2 + 1 for size in (4, 1)]
    out["eval_grads"] = [rng.standard_normal((size, c)) for size in (4, 1)]
    return out


def _state(bn) -> list:
    return [np.array(getattr(bn, n).data, dtype=np.float64) for n in _RUNNING]


def _layout(MyBatchNorm1d) -> dict:  # noqa: N803
    from minilucid.nn.module import Module

    outcome = attempt(MyBatchNorm1d, 3)
    if outcome[0] == "raised":
        return {"built": {"raised": list(outcome[1:])}}
    bn = outcome[1]
    if not isinstance(bn, Module):
        return {"built": {"type": type(bn).__name__}}
    package = package_kinds(MyBatchNorm1d, _PACKAGE_NORMS, nn) + package_kinds(
        bn, _PACKAGE_NORMS, nn
    )
    facts = {"built": {"module": True}, "package": package}
    facts["parameters"] = _names(bn.named_parameters)
    facts["buffers"] = _names(bn.named_buffers)
    facts["starts"] = {
        name: record(np.asarray(getattr(getattr(bn, name, None), "data", np.zeros(0))))
        for name, _ in _STARTS
    }
    return facts


def _names(method) -> dict:
    outcome = attempt(lambda: [str(n) for n, _ in method()])
    return {"raised": list(outcome[1:])} if outcome[0] == "raised" else {"names": outcome[1]}


def _probe_forward(cases, MyBatchNorm1d):  # noqa: N803
    data = {"layout": _layout(MyBatchNorm1d), "cases": []}
    for index, (n, c, m, eps, _) in enumerate(cases["cases"]):
        arrays = _forward_arrays(cases["seed"], index, n, c)
        outcome = attempt(MyBatchNorm1d, c, eps=eps, momentum=m)
        facts = {"built": {"raised": list(outcome[1:])} if outcome[0] == "raised" else {}}
        data["cases"].append(facts)
        if outcome[0] == "raised":
            continue
        bn = outcome[1]
        set_up = attempt(_set_values, bn, arrays)
        if set_up[0] == "raised":
            facts["built"] = {"raised": list(set_up[1:])}
            continue
        facts["steps"] = []
        for x_np, grad in zip(arrays["train"], arrays["train_grads"], strict=True):
            attempt(bn.train)
            facts["steps"].append(_bn_step(bn, x_np, grad))
        attempt(bn.eval)
        evals = zip(arrays["eval"], arrays["eval_grads"], strict=True)
        facts["eval"] = [_bn_step(bn, x_np, grad) for x_np, grad in evals]
        attempt(bn.train)
    return data


def _set_values(bn, arrays) -> None:
    for name in ("weight", "bias", *_RUNNING):
        getattr(bn, name).data = arrays[name].copy()


def _bn_step(bn, x_np, grad) -> dict:
    x = Tensor(x_np.copy(), requires_grad=True)
    outcome = attempt(bn, x)
    facts = {"out": {"raised": list(outcome[1:])} if outcome[0] == "raised" else record(outcome[1])}
    state = attempt(lambda: [*_state(bn), *(
        np.array(bool(getattr(bn, n).requires_grad)) for n in _RUNNING)])  # fmt: skip
    facts["state"] = {"raised": list(state[1:])} if state[0] == "raised" else {"arrays": state[1]}
    out = outcome[1] if outcome[0] == "ok" else None
    if isinstance(out, Tensor) and out.requires_grad and out.shape == x_np.shape:
        facts["backward"] = called(out.backward, grad)
        facts["grads"] = [record(t.grad) for t in (x, bn.weight, bn.bias)]
    return facts


def _judge_layout(facts) -> None:
    raised_first(facts["built"], "MyBatchNorm1d(3)")
    if facts["built"].get("module") is not True:
        raise Wrong(f"MyBatchNorm1d(3) is a {facts['built'].get('type', '?')}, not a Module")
    if facts["package"]:
        raise Wrong(
            f"MyBatchNorm1d is (or keeps) minilucid's own {str(facts['package'][0])} and lets "
            "it do the work: nothing of it is yours"
        )
    raised_first(facts["parameters"], "MyBatchNorm1d(3).named_parameters()")
    names = sorted(facts["parameters"]["names"])
    if names != ["bias", "weight"]:
        raise Wrong(
            f"MyBatchNorm1d(3).named_parameters() gives {names}, where the layer owns two "
            "Parameters, weight and bias (the running statistics are buffers: no optimiser "
            "moves them)"
        )
    raised_first(facts["buffers"], "MyBatchNorm1d(3).named_buffers()")
    buffers = sorted(facts["buffers"]["names"])
    if not set(_RUNNING) <= set(buffers):
        raise Wrong(
            f"MyBatchNorm1d(3).named_buffers() gives {buffers}: running_mean and running_var "
            "are not registered buffers, so state_dict would not save them (register_buffer)"
        )
    for name, value in _STARTS:
        data = array_of(facts["starts"][name], f"MyBatchNorm1d(3).{name}")
        if data is None or data.shape != (3,) or not np.all(data == value):
            raise Wrong(
                f"MyBatchNorm1d(3).{name} should start as {value:g} for each of the 3 channels "
                f"(shape (3,)), as nn.BatchNorm1d's does"
            )


def _running_hint(before, got, batch_mean, batch_var, m) -> str:
    mean0, var0 = before
    if np.allclose(got[0], mean0) and np.allclose(got[1], var0):
        return "they did not move in training"
    if np.allclose(got[0], m * mean0 + (1 - m) * batch_mean):
        return "momentum weighs the old value, where it is the weight of the new batch"
    if np.allclose(got[1], (1 - m) * var0 + m * batch_var):
        return (
            "the running variance moved towards the biased batch variance, where BatchNorm1d "
            "keeps the unbiased one (n - 1)"
        )
    return "they are not those of BatchNorm1d"


def _normalise(x, mean, var, eps, weight, bias, inside=True):
    return (x - mean) / (np.sqrt(var + eps) if inside else np.sqrt(var) + eps) * weight + bias


def _train_hint(got, x, eps, weight, bias) -> str:
    mean, var = x.mean(0), x.var(0)
    wrong = {
        "eps is added outside the square root": _normalise(x, mean, var, eps, weight, bias, False),
        "it normalises with the unbiased variance (n - 1)": _normalise(
            x, mean, x.var(0, ddof=1), eps, weight, bias
        ),
        "weight and bias are swapped": _normalise(x, mean, var, eps, bias, weight),
        "it normalises each example over its channels, not each channel over the batch": (
            (x - x.mean(1, keepdims=True)) / np.sqrt(x.var(1, keepdims=True) + eps) * weight + bias
        ),
    }
    for words, candidate in wrong.items():
        if np.allclose(got, candidate, rtol=1e-6, atol=1e-9):
            return words
    return "it is not batch norm's normalisation with the batch's statistics"


def _eval_hint(got, x, eps, weight, bias, running) -> str:
    """Eval mode: name the mistake among the usual ones (ε, the statistics, the variance)."""
    mean, var = running
    wrong = {
        "it normalises with the batch's statistics, not the running ones": _normalise(
            x, x.mean(0), x.var(0), eps, weight, bias
        ),
        "eps is added outside the square root": _normalise(x, mean, var, eps, weight, bias, False),
        "eps is left out": _normalise(x, mean, var, 0.0, weight, bias),
        "weight and bias are swapped": _normalise(x, mean, var, eps, bias, weight),
    }
    for words, candidate in wrong.items():
        if got.shape == candidate.shape and np.allclose(got, candidate, rtol=1e-6, atol=1e-9):
            return words
    return "it is not (x - running_mean) / sqrt(running_var + eps) * weight + bias"


def _reference_forward(arrays, c, m, eps):
    ref = nn.BatchNorm1d(c, eps=eps, momentum=m)
    for name in ("weight", "bias", *_RUNNING):
        getattr(ref, name).data = arrays[name].copy()
    return ref


def _judge_step(facts, where, ref, x_np, grad, before) -> np.ndarray:
    raised_first(facts["out"], where)
    if "tensor" not in facts["out"]:
        raise Wrong(f"{where} returned {kind(facts['out'])}, not a Tensor")
    out = array_of(facts["out"], where)
    xr = Tensor(x_np.copy(), requires_grad=True)
    want = ref(xr)
    if out.shape != want.shape:
        raise Wrong(f"{where} returned shape {out.shape}, where the input has {x_np.shape}")
    raised_first(facts["state"], where)
    state = facts["state"]["arrays"]
    if len(state) != 4:
        raise Wrong(f"{where}: its running statistics could not be read")
    return out, want, xr, [np.asarray(a, dtype=np.float64) for a in state]


def _judge_grads(facts, where, want, xr, ref, grad, names) -> None:
    if facts["out"].get("requires_grad") is not True:
        raise Wrong(f"{where}: the output has no graph behind it, so no gradient reaches x")
    raised_first(facts["backward"], f"{where}: backward")
    want.backward(grad)
    leaves = {"x": xr, "weight": ref.weight, "bias": ref.bias}
    for name, rec in zip(("x", "weight", "bias"), facts["grads"], strict=True):
        if name not in names:
            continue
        got = array_of(rec, f"{where}: {name}.grad")
        expected = leaves[name].grad
        if (
            got is None
            or got.shape != expected.shape
            or not np.allclose(got, expected, rtol=1e-6, atol=1e-9)
        ):
            raise Wrong(f"{where}: {name}.grad differs from batch norm's")


def _judge_forward(cases, data) -> str:
    _judge_layout(data["layout"])
    for index, ((n, c, m, eps, what), facts) in enumerate(
        zip(cases["cases"], data["cases"], strict=True)
    ):
        arrays = _forward_arrays(cases["seed"], index, n, c)
        raised_first(facts["built"], f"MyBatchNorm1d({c}, eps={eps}, momentum={m})")
        ref = _reference_forward(arrays, c, m, eps)
        steps = zip(arrays["train"], arrays["train_grads"], facts["steps"], strict=True)
        for step, (x_np, grad, step_facts) in enumerate(steps, start=1):
            where = f"MyBatchNorm1d in training mode, step {step} on {what}"
            before = _state(ref)
            ref.train()
            out, want, xr, state = _judge_step(step_facts, where, ref, x_np, grad, before)
            if not np.allclose(out, want.data, rtol=1e-7, atol=1e-9):
                hint = _train_hint(out, x_np, eps, ref.weight.data, ref.bias.data)
                raise Wrong(
                    f"{where}: the output differs, most at {_where(out, want.data)}: {hint}"
                )
            if any(not np.allclose(g, w, rtol=1e-9, atol=1e-12)
                   for g, w in zip(state[:2], _state(ref), strict=True)):  # fmt: skip
                hint = _running_hint(before, state[:2], x_np.mean(0), x_np.var(0), m)
                raise Wrong(f"{where}: the running statistics are wrong: {hint}")
            if state[2].any() or state[3].any():
                raise Wrong(
                    f"{where}: running_mean or running_var requires grad, where they are plain "
                    "numbers kept beside the graph"
                )
            _judge_grads(step_facts, where, want, xr, ref, grad, ("x", "weight", "bias"))
        ref.eval()
        evals = zip(arrays["eval"], arrays["eval_grads"], facts["eval"], strict=True)
        for x_np, grad, step_facts in evals:
            where = f"MyBatchNorm1d in eval mode on a batch of {len(x_np)} after {what}"
            before = _state(ref)
            out, want, xr, state = _judge_step(step_facts, where, ref, x_np, grad, before)
            if not np.allclose(np.array(state[:2]), np.array(before)):
                raise Wrong(f"{where}: the running statistics changed in evaluation")
            if not np.allclose(out, want.data, rtol=1e-7, atol=1e-9):
                hint = _eval_hint(out, x_np, eps, ref.weight.data, ref.bias.data, before)
                raise Wrong(f"{where}: the output differs from batch norm's: {hint}")
            _judge_grads(step_facts, where, want, xr, ref, grad, ("x",))
    return "✓ MyBatchNorm1d: batch statistics and running statistics in training, running in eval"


EXERCISE_FORWARD = register(
    Exercise(
        check="check_batch_norm_forward",
        chapter="11",
        title="Batch norm's forward pass, with running statistics",
        probe=_probe_forward,
        judge=_judge_forward,
        cases=_forward_cases,
        forbidden=("BatchNorm1d", "BatchNorm2d", "batch_norm"),
    )
)
check_batch_norm_forward = EXERCISE_FORWARD.lab_check


# --------------------------------------------------------------------------------------------
# Exercise 3: batch norm's backward by hand

_BACKWARD_CASES = (((6, 3), 1e-5, 1.0), ((2, 4), 1e-5, 1.0), ((40, 2), 1e-5, 3.0),
                   ((5, 3), 0.5, 1.0))  # fmt: skip


def _backward_cases(seed: int) -> dict:
    return {"seed": seed, "cases": [[list(s), eps, scale] for s, eps, scale in _BACKWARD_CASES]}


def _backward_arrays(seed: int, index: int, n: int, c: int, scale: float) -> tuple:
    rng = _seeded(seed, 3, index)
    x = rng.standard_normal((n, c)) * scale + rng.standard_normal(c)
    gamma = rng.uniform(0.5, 2.0, c) * np.where(np.arange(c) % 2, -1, 1)
    beta = rng.standard_normal(c)
    dout = rng.standard_normal((n, c))
    return x, gamma, beta, dout


def _probe_backward(cases, fn):
    out = []
    for index, ((n, c), eps, scale) in enumerate(cases["cases"]):
        x, gamma, _, dout = _backward_arrays(cases["seed"], index, n, c, scale)
        out.append(called(fn, dout.copy(), x.copy(), gamma.copy(), eps))
    return out


def _package_grads(x, gamma, beta, dout, eps):
    xs = [Tensor(a.copy(), requires_grad=True) for a in (x, gamma, beta)]
    out = F.batch_norm(xs[0], None, None, xs[1], xs[2], training=True, eps=eps)
    out.backward(dout)
    return [t.grad for t in xs]


def _naive_dx(x, gamma, dout, eps):
    """dx if the batch's mean and variance were constants: the mistake to name."""
    return dout * gamma / np.sqrt(x.var(axis=0) + eps)


def _judge_backward(cases, data) -> str:
    for index, (((n, c), eps, scale), rec) in enumerate(zip(cases["cases"], data, strict=True)):
        x, gamma, beta, dout = _backward_arrays(cases["seed"], index, n, c, scale)
        what = f"batch_norm_backward on a ({n}, {c}) batch" + (
            f" with eps={eps}" if eps > 1e-3 else ""
        )
        items = items_of(rec, what)
        if items is None:
            raise Wrong(f"{what} returned {kind(rec)}, where the contract asks for a tuple")
        if len(items) != 3:
            raise Wrong(f"{what} returned {len(items)} values, where the contract asks for three")
        names, shapes = ("dx", "dgamma", "dbeta"), ((n, c), (c,), (c,))
        got = []
        for name, item, shape in zip(names, items, shapes, strict=True):
            array = array_of(item, f"{what}: {name}", tensor_ok=False)
            if array is None:
                raise Wrong(f"{what}: {name} is a {kind(item)}, not a NumPy array")
            if array.shape != shape:
                raise Wrong(
                    f"{what}: {name} has shape {array.shape}, it should have {shape}"
                    + (" - one number per channel, for the whole batch" if array.shape == (n, c)
                       else "")
                )  # fmt: skip
            got.append(array)
        dx, dgamma, dbeta = got
        want = _package_grads(x, gamma, beta, dout, eps)
        if not np.allclose(dbeta, want[2], rtol=1e-6, atol=1e-9):
            hint = " - a mean over the batch, not a sum" if np.allclose(dbeta * n, want[2]) else ""
            channel = int(np.argmax(np.abs(dbeta - want[2])))
            raise Wrong(f"{what}: dbeta is wrong for channel {channel}{hint}")
        if not np.allclose(dgamma, want[1], rtol=1e-6, atol=1e-9):
            raise Wrong(_dgamma_message(what, dgamma, want[1], x, dout, eps))
        if not np.allclose(dx, want[0], rtol=1e-6, atol=1e-9):
            if np.allclose(dx, _naive_dx(x, gamma, dout, eps)):
                hint = (
                    "your dx treats the batch's mean and variance as constants, but both are "
                    "computed from x: every x[i] moves them, and through them every output"
                )
            elif not np.allclose(dx.sum(axis=0), 0, atol=1e-8):
                hint = (
                    "dx of one channel does not sum to zero over the batch (adding a constant "
                    "to a channel changes nothing after normalisation)"
                )
            else:
                hint = "which path from x to the output (direct, through mu, through var) is off?"
            raise Wrong(f"{what}: dx differs from autodiff, most at {_where(dx, want[0])}: {hint}")
    return "✓ batch_norm_backward: dx, dgamma, dbeta equal autodiff"


def _dgamma_message(what, dgamma, want, x, dout, eps) -> str:
    channel = int(np.argmax(np.abs(dgamma - want)))
    for words, var, inside in (
        ("x_hat there uses the unbiased variance, where the forward pass uses the biased one",
         x.var(0, ddof=1), True),
        ("x_hat there has eps outside the square root, where the forward pass has it inside",
         x.var(0), False),
    ):  # fmt: skip
        x_hat = (x - x.mean(0)) / (np.sqrt(var + eps) if inside else np.sqrt(var) + eps)
        if np.allclose(dgamma, (dout * x_hat).sum(0), rtol=1e-6, atol=1e-9):
            return f"{what}: dgamma is wrong for channel {channel}: {words}"
    return f"{what}: dgamma is wrong for channel {channel}"


EXERCISE_BACKWARD = register(
    Exercise(
        check="check_batch_norm_backward",
        chapter="11",
        title="Batch norm's backward pass by hand",
        probe=_probe_backward,
        judge=_judge_backward,
        cases=_backward_cases,
        forbidden=("batch_norm", "BatchNorm1d", "backward", "grad"),
    )
)
check_batch_norm_backward = EXERCISE_BACKWARD.lab_check


# --------------------------------------------------------------------------------------------
# Exercise 4: layer norm

_LAYER_CASES = (
    ("an input (4, 5), normalized_shape (5,)", (4, 5), (5,), False, 1.0),
    ("an input (2, 3, 4), normalized_shape (3, 4), with weight and bias", (2, 3, 4), (3, 4),
     True, 1.0),
    ("an input (3, 6) whose rows vary by about 0.001", (3, 6), (6,), False, 1e-3),
)  # fmt: skip


def _layer_cases(seed: int) -> dict:
    return {"seed": seed, "cases": [[t, list(s), list(n), a, k] for t, s, n, a, k in _LAYER_CASES]}


def _layer_arrays(seed: int, index: int, shape, normalized, affine, scale):
    rng = _seeded(seed, 4, index)
    x = rng.standard_normal(shape) * scale + rng.standard_normal(shape[-1:])
    w = rng.standard_normal(normalized) if affine else None
    b = rng.standard_normal(normalized) if affine else None
    return x, w, b, rng.standard_normal(shape)


def _leaves(*arrays) -> list:
    return [None if a is None else Tensor(a.copy(), requires_grad=True) for a in arrays]


def _probe_layer(cases, fn):
    out = []
    for index, (_, shape, normalized, affine, scale) in enumerate(cases["cases"]):
        x_np, w_np, b_np, grad = _layer_arrays(
            cases["seed"], index, tuple(shape), tuple(normalized), affine, scale
        )
        x, w, b = _leaves(x_np, w_np, b_np)
        outcome = attempt(fn, x, tuple(normalized), w, b, 1e-5)
        facts = {"out": {"raised": list(outcome[1:])} if outcome[0] == "raised" else
                 record(outcome[1])}  # fmt: skip
        result = outcome[1] if outcome[0] == "ok" else None
        if isinstance(result, Tensor) and result.requires_grad and result.shape == x_np.shape:
            facts["backward"] = called(result.backward, grad)
            facts["grads"] = [record(None if t is None else t.grad) for t in (x, w, b)]
        out.append(facts)
    return out


def _normalised(x, axes, ddof=0, eps_inside=True, eps=1e-5):
    centred = x - x.mean(axis=axes, keepdims=True)
    var = x.var(axis=axes, keepdims=True, ddof=ddof)
    return centred / (np.sqrt(var + eps) if eps_inside else np.sqrt(var) + eps)


def _layer_norm_hint(got, x, normalized, weight, bias) -> str:
    """Name the mistake when the output equals a plausible wrong layer norm."""
    k = len(normalized)
    right = tuple(range(x.ndim - k, x.ndim))
    wrong = [
        ((0,), {}, "it normalises over the batch, not each example over its last dimensions"),
        ((x.ndim - 1,), {},
         f"it normalises over the last dimension only, not over all the last {k} {normalized}"),
        (right, {"ddof": 1}, "it uses the unbiased variance (n - 1)"),
        (right, {"eps_inside": False}, "eps is added outside the square root"),
    ]  # fmt: skip
    for axes, options, hint in wrong:
        candidate = _normalised(x, axes, **options)
        if weight is not None:
            candidate = candidate * weight + bias
        if (axes, options) != (right, {}) and np.allclose(got, candidate, rtol=1e-6, atol=1e-8):
            return hint
    return "the normalised values are right, weight and bias are not applied as layer norm does"


def _judge_layer(cases, data) -> str:
    for index, ((text, shape, normalized, affine, scale), facts) in enumerate(
        zip(cases["cases"], data, strict=True)
    ):
        shape, normalized = tuple(shape), tuple(normalized)
        x_np, w_np, b_np, grad = _layer_arrays(
            cases["seed"], index, shape, normalized, affine, scale
        )
        what = f"my_layer_norm on {text}"
        raised_first(facts["out"], what)
        if "tensor" not in facts["out"]:
            raise Wrong(f"{what} returned {kind(facts['out'])}, not a Tensor")
        out = array_of(facts["out"], what)
        xr, wr, br = _leaves(x_np, w_np, b_np)
        want = F.layer_norm(xr, normalized, wr, br, 1e-5)
        if out.shape != want.shape:
            raise Wrong(f"{what} returned shape {out.shape}, where the input has {shape}")
        if not np.allclose(out, want.data, rtol=1e-6, atol=1e-8):
            hint = _layer_norm_hint(out, x_np, normalized, w_np, b_np)
            raise Wrong(
                f"{what}: the output differs from layer norm's, most at "
                f"{_where(out, want.data)}: {hint}"
            )
        if facts["out"].get("requires_grad") is not True:
            raise Wrong(f"{what}: x.grad is None after backward: the output has no graph")
        raised_first(facts["backward"], f"{what}: backward")
        want.backward(grad)
        for name, rec, ref in zip(("x", "weight", "bias"), facts["grads"], (xr, wr, br),
                                  strict=True):  # fmt: skip
            if ref is None:
                continue
            got = array_of(rec, f"{what}: {name}.grad")
            if got is None:
                raise Wrong(f"{what}: after backward, {name}.grad is None: no graph reaches it")
            if got.shape != ref.grad.shape or not np.allclose(got, ref.grad, rtol=1e-6, atol=1e-8):
                raise Wrong(
                    f"{what}: {name}.grad differs from layer norm's, most at "
                    f"{_where(got, ref.grad) if got.shape == ref.grad.shape else 'every entry'}"
                    "; is anything computed on .data or detached?"
                )
    return "✓ my_layer_norm: normalises the last dims, affine, gradients flow"


EXERCISE_LAYER_NORM = register(
    Exercise(
        check="check_my_layer_norm",
        chapter="11",
        title="Layer norm",
        probe=_probe_layer,
        judge=_judge_layer,
        cases=_layer_cases,
        forbidden=("layer_norm", "LayerNorm"),
    )
)
check_my_layer_norm = EXERCISE_LAYER_NORM.lab_check
