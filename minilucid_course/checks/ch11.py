"""Checks for the exercises of chapter 11 (regularisation and normalisation).

Each check runs the learner's code on small cases built to expose one plausible mistake each,
raises AssertionError with a plain-words message on the first problem, and prints one line on
success. Expected values come from the package (its autodiff) and from central differences;
they are computed here and never shown.
"""

from __future__ import annotations

import numpy as np

import minilucid as ml
from minilucid import nn
from minilucid.nn import functional as F
from minilucid.numerical import numerical_grad
from minilucid.tensor import Tensor
from minilucid_course.checks.common import call, type_name


def _where(got: np.ndarray, want: np.ndarray) -> str:
    """The index of the largest difference, as a learner reads it."""
    index = np.unravel_index(int(np.argmax(np.abs(got - want))), want.shape)
    return str(tuple(int(i) for i in index))


# --------------------------------------------------------------------------------------------
# Exercise 1: dropout


def _dropout(fn, x, p, training, what):
    out = call(what, fn, x, p, training, returns=Tensor)
    if out.shape != x.shape:
        raise AssertionError(f"{what} returned shape {out.shape}; it should keep {x.shape}")
    return out


def check_my_dropout(fn) -> None:
    """Scaling 1/(1-p), the fraction kept, eval identity, seeds, gradient, dtype, p = 0 and 1."""
    ones = ml.ones(200, 500, dtype=ml.float64)
    what = "my_dropout(ones (200, 500), p=0.3, training=True)"
    ml.manual_seed(0)
    out = _dropout(fn, ones, 0.3, True, what).data
    kept = out != 0
    if kept.all():
        raise AssertionError(f"{what} dropped nothing: zero each entry with probability p")
    share = kept.mean()
    if abs(share - 0.3) < 0.02:
        raise AssertionError(
            f"{what} kept {share:.0%} of the entries: p is the probability of *dropping* an "
            "entry, so about 1 - p of them should survive"
        )
    if abs(share - 0.7) > 0.02:
        raise AssertionError(
            f"{what} kept {share:.0%} of the entries, not about {0.7:.0%}: keep each one "
            "independently with probability 1 - p"
        )
    scales = np.unique(np.round(out[kept], 9))
    if len(scales) != 1 or not np.isclose(scales[0], 1 / 0.7):
        hint = (
            " - they are not scaled at all"
            if np.allclose(scales, 1)
            else " - scaling by (1 - p) shrinks them instead"
            if np.allclose(scales, 0.7)
            else ""
        )
        raise AssertionError(
            f"{what}: the kept entries of an all-ones input should all be 1 / (1 - p), so "
            f"that the expected value stays 1{hint}"
        )
    if out.dtype != np.float64:
        raise AssertionError(f"{what} returned {out.dtype}; keep the input's dtype (float64)")

    x32 = ml.randn(4, 6)
    what32 = "my_dropout(a float32 input, p=0.5, training=True)"
    if _dropout(fn, x32, 0.5, True, what32).dtype != np.float32:
        raise AssertionError(
            f"{what32} changed the dtype; multiply by a mask of the input's dtype "
            "(x.dtype) so float32 stays float32"
        )

    x = Tensor(np.random.default_rng(1).standard_normal((5, 4)))
    for p in (0.3, 0.0):
        what_eval = f"my_dropout(x, p={p}, training=False)"
        got = _dropout(fn, x, p, False, what_eval).data
        if not np.array_equal(got, x.data):
            raise AssertionError(
                f"{what_eval} changed its input; in evaluation mode dropout does nothing "
                "(the scaling during training already keeps the expected value)"
            )
    what0 = "my_dropout(x, p=0.0, training=True)"
    if not np.array_equal(_dropout(fn, x, 0.0, True, what0).data, x.data):
        raise AssertionError(f"{what0} changed its input: with p = 0 nothing is dropped")
    what1 = "my_dropout(x, p=1.0, training=True)"
    got1 = _dropout(fn, x, 1.0, True, what1).data
    if not np.all(got1 == 0):
        raise AssertionError(
            f"{what1} should give all zeros (every entry dropped); 1 / (1 - p) divides by "
            "zero there, so treat p = 1 on its own"
        )

    small = ml.ones(6, 8)
    ml.manual_seed(3)
    first = _dropout(fn, small, 0.5, True, "my_dropout after ml.manual_seed(3)").data
    second = _dropout(fn, small, 0.5, True, "my_dropout, called again").data
    ml.manual_seed(3)
    again = _dropout(fn, small, 0.5, True, "my_dropout after ml.manual_seed(3)").data
    if not np.array_equal(first, again):
        raise AssertionError(
            "my_dropout after ml.manual_seed(3) gave a different mask each time: draw the "
            "random numbers from minilucid (ml.rand), whose stream ml.manual_seed resets"
        )
    if np.array_equal(first, second):
        raise AssertionError(
            "two calls of my_dropout in a row dropped the same entries: draw a new mask on "
            "every call"
        )

    leaf = Tensor(np.random.default_rng(2).standard_normal((6, 5)), requires_grad=True)
    what_grad = "my_dropout(x, p=0.4, training=True).sum().backward()"
    ml.manual_seed(4)
    out = _dropout(fn, leaf, 0.4, True, what_grad)
    if not out.requires_grad:
        raise AssertionError(
            f"after {what_grad}, x.grad is None: the output has no graph behind it. Build it "
            "from x with tensor operations (x * mask), not from x.data"
        )
    call(what_grad, lambda: out.sum().backward())
    if leaf.grad is None:
        raise AssertionError(
            f"after {what_grad}, x.grad is None: build the output from x with tensor "
            "operations (x * mask), not from x.data, so that the gradient flows back"
        )
    want = (out.data != 0) / 0.6
    if not np.allclose(leaf.grad, want):
        raise AssertionError(
            f"after {what_grad}, x.grad is not mask / (1 - p) at position "
            f"{_where(leaf.grad, want)}: the output is x times a constant mask"
        )
    print("✓ my_dropout: keeps 1 - p, scales by 1/(1-p), identity in eval, seeded, gradient")


# --------------------------------------------------------------------------------------------
# Exercise 2: batch norm's forward pass, with running statistics

_FORWARD_CASES = (  # (batch, channels, momentum, eps, what it exposes)
    (8, 3, 0.1, 1e-5, "a batch of 8, momentum 0.1"),
    (5, 2, 0.3, 1e-5, "a batch of 5, momentum 0.3"),
    (4, 3, 0.1, 0.5, "a batch of 4, eps 0.5"),
)


def _state(bn) -> tuple:
    return tuple(np.array(getattr(bn, n).data, dtype=np.float64) for n in _RUNNING)


_RUNNING = ("running_mean", "running_var")


def _check_layout(MyBatchNorm1d) -> None:
    from minilucid.nn.module import Module

    bn = call("MyBatchNorm1d(3)", MyBatchNorm1d, 3)
    if not isinstance(bn, Module):
        raise AssertionError(f"MyBatchNorm1d(3) is a {type_name(bn)}; subclass Module")
    names = sorted(name for name, _ in bn.named_parameters())
    if names != ["bias", "weight"]:
        raise AssertionError(
            f"MyBatchNorm1d(3).named_parameters() gives {names}; it should own two Parameters, "
            "weight and bias (the running statistics are buffers: no optimiser moves them)"
        )
    buffers = sorted(name for name, _ in bn.named_buffers())
    if not set(_RUNNING) <= set(buffers):
        raise AssertionError(
            f"MyBatchNorm1d(3).named_buffers() gives {buffers}; register running_mean and "
            "running_var with self.register_buffer, so that state_dict saves them"
        )
    starts = (("weight", 1.0), ("bias", 0.0), ("running_mean", 0.0), ("running_var", 1.0))
    for name, value in starts:
        data = np.asarray(getattr(bn, name).data)
        if data.shape != (3,) or not np.all(data == value):
            raise AssertionError(
                f"MyBatchNorm1d(3).{name} should start as {value:g} for each of the 3 channels "
                f"(shape (3,)), as nn.BatchNorm1d's does"
            )


def _pair(MyBatchNorm1d, c, momentum, eps, rng):
    """Yours and the package's, with the same non-trivial parameters and running statistics."""
    mine = call(
        f"MyBatchNorm1d({c}, eps={eps}, momentum={momentum})",
        MyBatchNorm1d, c, eps=eps, momentum=momentum,
    )  # fmt: skip
    ref = nn.BatchNorm1d(c, eps=eps, momentum=momentum)
    values = {
        "weight": rng.uniform(0.5, 2.0, c),
        "bias": rng.standard_normal(c),
        "running_mean": rng.standard_normal(c),
        "running_var": rng.uniform(0.5, 2.0, c),
    }
    for name, value in values.items():
        getattr(mine, name).data = value.copy()
        getattr(ref, name).data = value.copy()
    return mine, ref


def _running_hint(before, got, batch_mean, batch_var, m) -> str:
    mean0, var0 = before
    if np.allclose(got[0], mean0) and np.allclose(got[1], var0):
        return "they did not move: in training, move them towards the batch's statistics"
    if np.allclose(got[0], m * mean0 + (1 - m) * batch_mean):
        return (
            "momentum is the weight of the new batch: running = (1 - momentum) * running + "
            "momentum * batch statistic"
        )
    if np.allclose(got[1], (1 - m) * var0 + m * batch_var):
        return (
            "the running variance takes the unbiased batch variance, n / (n - 1) times the "
            "biased one"
        )
    return "running = (1 - momentum) * running + momentum * batch statistic, for both"


def check_batch_norm_forward(MyBatchNorm1d) -> None:
    """Train mode (batch statistics, running statistics updated) and eval mode, as BatchNorm1d."""
    _check_layout(MyBatchNorm1d)
    rng = np.random.default_rng(21)
    for n, c, m, eps, what in _FORWARD_CASES:
        mine, ref = _pair(MyBatchNorm1d, c, m, eps, rng)
        for step in range(1, 4):
            x_np = rng.standard_normal((n, c)) * rng.uniform(0.5, 3, c) + rng.standard_normal(c)
            where = f"MyBatchNorm1d in training mode, step {step} on {what}"
            before = _state(mine)
            x, xr = Tensor(x_np.copy(), requires_grad=True), Tensor(x_np.copy(), requires_grad=True)
            mine.train()
            out = call(where, mine, x, returns=Tensor)
            want = ref(xr)
            if out.shape != want.shape:
                raise AssertionError(
                    f"{where} returned shape {out.shape}; it should keep {x_np.shape}"
                )
            if not np.allclose(out.data, want.data, rtol=1e-7, atol=1e-9):
                raise AssertionError(
                    f"{where}: the output differs, most at {_where(out.data, want.data)}. In "
                    "training, normalise each channel with the batch's own mean and biased "
                    "variance (divide by n), eps inside the square root, then * weight + bias"
                )
            got = _state(mine)
            if any(
                not np.allclose(g, w, rtol=1e-9, atol=1e-12)
                for g, w in zip(got, _state(ref), strict=True)
            ):
                hint = _running_hint(before, got, x_np.mean(0), x_np.var(0), m)
                raise AssertionError(f"{where}: the running statistics are wrong: {hint}")
            if mine.running_mean.requires_grad or mine.running_var.requires_grad:
                raise AssertionError(
                    f"{where}: running_mean or running_var requires grad; they are plain "
                    "numbers kept beside the graph: compute them from .data (arrays)"
                )
            grad = rng.standard_normal((n, c))
            call(f"{where}: backward", out.backward, grad)
            want.backward(grad)
            for name, a, b in (("x", x, xr), ("weight", mine.weight, ref.weight),
                               ("bias", mine.bias, ref.bias)):  # fmt: skip
                if a.grad is None or not np.allclose(a.grad, b.grad, rtol=1e-6, atol=1e-9):
                    raise AssertionError(
                        f"{where}: {name}.grad differs from batch norm's; compute the output "
                        "with tensor operations on x, self.weight and self.bias"
                    )
        mine.eval()
        ref.eval()
        for size in (4, 1):
            x_np = rng.standard_normal((size, c)) * 2 + 1
            where = f"MyBatchNorm1d in eval mode on a batch of {size} after {what}"
            before = _state(mine)
            x, xr = Tensor(x_np.copy(), requires_grad=True), Tensor(x_np.copy(), requires_grad=True)
            out = call(where, mine, x, returns=Tensor)
            want = ref(xr)
            if not np.allclose(_state(mine), before):
                raise AssertionError(
                    f"{where}: the running statistics changed; evaluation only reads them"
                )
            if out.shape != want.shape or not np.allclose(
                out.data, want.data, rtol=1e-7, atol=1e-9
            ):
                raise AssertionError(
                    f"{where}: the output differs from batch norm's. In eval mode normalise "
                    "with the running statistics, not the batch's: (x - running_mean) / "
                    "sqrt(running_var + eps), then * weight + bias"
                )
            grad = rng.standard_normal(x_np.shape)
            call(f"{where}: backward", out.backward, grad)
            want.backward(grad)
            if x.grad is None or not np.allclose(x.grad, xr.grad, rtol=1e-6, atol=1e-9):
                raise AssertionError(f"{where}: x.grad differs from batch norm's")
        mine.train()
    print("✓ MyBatchNorm1d: batch statistics and running statistics in training, running in eval")


# --------------------------------------------------------------------------------------------
# Exercise 3: batch norm's backward by hand


def _package_grads(x, gamma, beta, dout, eps):
    xs = [Tensor(a.copy(), requires_grad=True) for a in (x, gamma, beta)]
    out = F.batch_norm(xs[0], None, None, xs[1], xs[2], training=True, eps=eps)
    out.backward(dout)
    return [t.grad for t in xs]


def _naive_dx(x, gamma, dout, eps):
    """dx if the batch's mean and variance were constants: the mistake to name."""
    return dout * gamma / np.sqrt(x.var(axis=0) + eps)


def check_batch_norm_backward(fn) -> None:
    """dx, dgamma, dbeta against autodiff and central differences, several shapes and scales."""
    rng = np.random.default_rng(11)
    cases = [((6, 3), 1e-5, 1.0), ((2, 4), 1e-5, 1.0), ((40, 2), 1e-5, 3.0), ((5, 3), 0.5, 1.0)]
    for (n, c), eps, scale in cases:
        x = rng.standard_normal((n, c)) * scale + rng.standard_normal(c)
        gamma = rng.uniform(0.5, 2.0, c) * np.where(np.arange(c) % 2, -1, 1)
        beta = rng.standard_normal(c)
        dout = rng.standard_normal((n, c))
        what = f"batch_norm_backward on a ({n}, {c}) batch" + (
            f" with eps={eps}" if eps > 1e-3 else ""
        )
        result = call(what, fn, dout.copy(), x.copy(), gamma.copy(), eps, returns=(tuple, list))
        if len(result) != 3:
            raise AssertionError(
                f"{what} returned {len(result)} values; return three: (dx, dgamma, dbeta)"
            )
        names = ("dx", "dgamma", "dbeta")
        shapes = ((n, c), (c,), (c,))
        for name, got, shape in zip(names, result, shapes, strict=True):
            if not isinstance(got, np.ndarray):
                raise AssertionError(f"{what}: {name} is a {type_name(got)}; return NumPy arrays")
            if got.shape != shape:
                raise AssertionError(
                    f"{what}: {name} has shape {got.shape}, it should have {shape}"
                    + (" - sum over the batch (axis 0)" if got.shape == (n, c) else "")
                )
        want = _package_grads(x, gamma, beta, dout, eps)
        dx, dgamma, dbeta = (np.asarray(r, dtype=np.float64) for r in result)
        if not np.allclose(dbeta, want[2], rtol=1e-6, atol=1e-9):
            hint = (
                " - it is a sum over the batch, not a mean"
                if np.allclose(dbeta * n, want[2])
                else ""
            )
            channel = int(np.argmax(np.abs(dbeta - want[2])))
            raise AssertionError(f"{what}: dbeta is wrong for channel {channel}{hint}")
        if not np.allclose(dgamma, want[1], rtol=1e-6, atol=1e-9):
            raise AssertionError(
                f"{what}: dgamma is wrong for channel {int(np.argmax(np.abs(dgamma - want[1])))}"
                "; follow y = gamma * x_hat + beta back to gamma, for every example of the "
                "batch, with x_hat as in the forward pass (biased variance, eps inside the "
                "square root)"
            )
        if not np.allclose(dx, want[0], rtol=1e-6, atol=1e-9):
            if np.allclose(dx, _naive_dx(x, gamma, dout, eps)):
                hint = (
                    "your dx treats the batch's mean and variance as constants, but both are "
                    "computed from x: every x[i] moves them, and through them every output"
                )
            elif not np.allclose(dx.sum(axis=0), 0, atol=1e-8):
                hint = (
                    "dx of one channel should sum to zero over the batch (adding a constant "
                    "to a channel changes nothing after normalisation)"
                )
            else:
                hint = "compare each term of your formula with the chain rule through mu and var"
            raise AssertionError(
                f"{what}: dx differs from autodiff, most at {_where(dx, want[0])}: {hint}"
            )
    # the package's autodiff is itself checked once against central differences
    x = rng.standard_normal((4, 2))
    gamma, beta, dout = rng.standard_normal(2), rng.standard_normal(2), rng.standard_normal((4, 2))
    numeric = numerical_grad(
        lambda x: F.batch_norm(x, None, None, Tensor(gamma), Tensor(beta), training=True),
        [x],
        grad_output=dout,
    )[0]
    dx = np.asarray(call("batch_norm_backward on a (4, 2) batch", fn, dout, x, gamma, 1e-5)[0])
    if not np.allclose(dx, numeric, rtol=1e-5, atol=1e-7):
        raise AssertionError(
            f"batch_norm_backward on a (4, 2) batch: dx differs from central differences, "
            f"most at {_where(dx, numeric)}"
        )
    print("✓ batch_norm_backward: dx, dgamma, dbeta equal autodiff and central differences")


# --------------------------------------------------------------------------------------------
# Exercise 4: layer norm


def _normalised(x, axes, ddof=0, eps_inside=True, eps=1e-5):
    centred = x - x.mean(axis=axes, keepdims=True)
    var = x.var(axis=axes, keepdims=True, ddof=ddof)
    return centred / (np.sqrt(var + eps) if eps_inside else np.sqrt(var) + eps)


def _layer_norm_hint(got, x, normalized, weight, bias) -> str:
    """Name the mistake when the output equals a plausible wrong layer norm."""
    k = len(normalized)
    right = tuple(range(x.ndim - k, x.ndim))
    wrong = [
        ((0,), {}, "normalise each example over its last dimensions, not over the batch"),
        (
            (x.ndim - 1,),
            {},
            f"normalise over all the last {k} dimensions {normalized}, not only the last one",
        ),
        (right, {"ddof": 1}, "use the biased variance (divide by n, not n - 1)"),
        (right, {"eps_inside": False}, "add eps inside the square root: sqrt(var + eps)"),
    ]
    for axes, options, hint in wrong:
        candidate = _normalised(x, axes, **options)
        if weight is not None:
            candidate = candidate * weight + bias
        if (axes, options) != (right, {}) and np.allclose(got, candidate, rtol=1e-6, atol=1e-8):
            return hint
    return "after normalising, multiply by weight and add bias (when they are given)"


def _leaves(*arrays) -> list:
    return [None if a is None else Tensor(a.copy(), requires_grad=True) for a in arrays]


def check_my_layer_norm(fn) -> None:
    """Values over the right axes, biased variance, eps inside the root, affine, gradients."""
    rng = np.random.default_rng(12)
    cases = [
        ("an input (4, 5), normalized_shape (5,)", (4, 5), (5,), False, 1.0),
        (
            "an input (2, 3, 4), normalized_shape (3, 4), with weight and bias",
            (2, 3, 4),
            (3, 4),
            True,
            1.0,
        ),
        ("an input (3, 6) whose rows vary by about 0.001", (3, 6), (6,), False, 1e-3),
    ]
    for text, shape, normalized, affine, scale in cases:
        x_np = rng.standard_normal(shape) * scale + rng.standard_normal(shape[-1:])
        w_np = rng.standard_normal(normalized) if affine else None
        b_np = rng.standard_normal(normalized) if affine else None
        what = f"my_layer_norm on {text}"

        x, w, b = _leaves(x_np, w_np, b_np)
        out = call(what, fn, x, normalized, w, b, 1e-5, returns=Tensor)
        xr, wr, br = _leaves(x_np, w_np, b_np)
        want = F.layer_norm(xr, normalized, wr, br, 1e-5)
        if out.shape != want.shape:
            raise AssertionError(f"{what} returned shape {out.shape}; it should keep {shape}")
        if not np.allclose(out.data, want.data, rtol=1e-6, atol=1e-8):
            hint = _layer_norm_hint(out.data, x_np, normalized, w_np, b_np)
            raise AssertionError(
                f"{what}: the output differs from layer norm's, most at "
                f"{_where(out.data, want.data)}: {hint}"
            )
        if not out.requires_grad:
            raise AssertionError(
                f"{what}: x.grad is None after backward: the output has no graph behind it. "
                "Compute with tensor operations (x.mean, -, *, /, .sqrt()), not on .data"
            )
        grad = rng.standard_normal(shape)
        call(f"{what}: backward", out.backward, grad)
        want.backward(grad)
        for name, mine, ref in (("x", x, xr), ("weight", w, wr), ("bias", b, br)):
            if mine is None:
                continue
            if mine.grad is None:
                raise AssertionError(
                    f"{what}: after backward, {name}.grad is None; compute with tensor "
                    "operations (x.mean, -, *, /, .sqrt()), not on .data, so autodiff "
                    "can follow"
                )
            if not np.allclose(mine.grad, ref.grad, rtol=1e-6, atol=1e-8):
                raise AssertionError(
                    f"{what}: {name}.grad differs from layer norm's, most at "
                    f"{_where(mine.grad, ref.grad)}; is anything computed on .data or "
                    "detached?"
                )
    print("✓ my_layer_norm: normalises the last dims, affine, gradients flow")
