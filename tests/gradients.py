"""The gradient oracle of the tests: central differences on whole tensors, in float64.

Independent of the engine's own `numerical_grad`/`gradcheck` (those are under test too): every
entry of every input is nudged, and the output is weighted by a fixed random array so that
every output entry matters - a gradient wrong in one output entry or one input entry fails.
"""

from __future__ import annotations

import numpy as np

import minilucid as ml

EPS = 1e-6


def f64(shape, rng: np.random.Generator, domain: str = "real") -> np.ndarray:
    """A float64 array of `shape` drawn from a domain where the ops are smooth.

    real: standard normal;  positive: [0.5, 2);  apart: standard normal kept at least 0.1 away
    from the kinks 0 and +-0.5 (abs, relu, clamp).
    """
    shape = tuple(shape)
    if domain == "real":
        return np.asarray(rng.standard_normal(shape))  # asarray: shape () gives a float
    if domain == "positive":
        return np.asarray(rng.uniform(0.5, 2.0, shape))
    if domain == "apart":
        x = np.asarray(rng.standard_normal(shape))
        for kink in (-0.5, 0.0, 0.5):
            near = np.abs(x - kink) < 0.1
            x = np.where(near, kink + np.where(x >= kink, 0.15, -0.15), x)
        return x
    raise ValueError(f"unknown domain {domain!r}")


def weights_for(shape, seed: int = 1234) -> np.ndarray:
    """The fixed random weights of the output entries (distinct, both signs, none zero)."""
    w = np.random.default_rng(seed).uniform(0.5, 1.5, tuple(shape))
    signs = np.where(np.arange(w.size).reshape(w.shape) % 2 == 0, 1.0, -1.0)
    return w * signs


def leaves(arrays, dtype=ml.float64) -> list:
    """Fresh leaf tensors that require grad, one per array."""
    return [ml.tensor(np.array(a, dtype=dtype), requires_grad=True) for a in arrays]


def analytic_grads(fn, arrays, weights=None) -> tuple[list, np.ndarray]:
    """The engine's gradients of sum(fn(*inputs) * weights): (grads, output data)."""
    xs = leaves(arrays)
    out = fn(*xs)
    w = weights_for(out.shape) if weights is None else weights
    out.backward(w)
    return [x.grad for x in xs], out.data


def central_differences(fn, arrays, weights, eps: float = EPS) -> list:
    """d sum(fn(*inputs) * weights) / d input, entry by entry: (f(x+eps) - f(x-eps)) / 2 eps."""
    arrays = [np.array(a, dtype=np.float64) for a in arrays]  # copies we may nudge

    def value() -> float:
        with ml.no_grad():
            out = fn(*[ml.tensor(a) for a in arrays])
        return float((np.asarray(out.data, dtype=np.float64) * weights).sum())

    grads = []
    for a in arrays:
        g = np.zeros_like(a)
        for index in np.ndindex(a.shape):
            kept = a[index]
            a[index] = kept + eps
            up = value()
            a[index] = kept - eps
            down = value()
            a[index] = kept
            g[index] = (up - down) / (2 * eps)
        grads.append(g)
    return grads


def assert_grads_match(fn, arrays, rtol: float = 1e-5, atol: float = 1e-6, label: str = ""):
    """Backward equals central differences for every entry of every input (float64)."""
    grads, out = analytic_grads(fn, arrays)
    w = weights_for(out.shape)
    numeric = central_differences(fn, arrays, w)
    for i, (a, g, n) in enumerate(zip(arrays, grads, numeric, strict=True)):
        shape = np.shape(a)
        assert g is not None, f"{label}: input {i} got no gradient"
        assert g.shape == shape, f"{label}: input {i} has shape {shape}, its grad {g.shape}"
        assert g.dtype == np.float64, f"{label}: input {i} grad is {g.dtype}, not float64"
        bad = ~np.isclose(g, n, rtol=rtol, atol=atol)
        if bad.any():
            where = tuple(int(k) for k in np.unravel_index(int(np.argmax(bad)), shape))
            raise AssertionError(
                f"{label}: input {i} (shape {shape}) entry {where}: backward {g[where]!r}, "
                f"central differences {n[where]!r} ({int(bad.sum())} of {g.size} differ)"
            )
    return grads
