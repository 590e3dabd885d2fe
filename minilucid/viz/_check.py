"""Gradcheck one op at a time: each op's backward against central differences of its own forward."""

import numpy as np

from minilucid.numerical import numerical_grad
from minilucid.ops.broadcast import sum_to_shape
from minilucid.tensor import Tensor
from minilucid.viz._graph import _Graph


class _Check:
    """The verdict on one op: "ok", "bad" (gradients disagree) or "error" (backward failed)."""

    def __init__(self, status: str, lines=()):
        self.status, self.lines = status, list(lines)


def _checked_ops(fn, inputs, eps, atol, rtol, max_nodes=60) -> tuple:
    """Build fn(*inputs) and check each drawn op: (the walked graph, {id(op output): _Check})."""
    inputs = tuple(inputs) if isinstance(inputs, list | tuple) else (inputs,)
    out = fn(*inputs)
    if not isinstance(out, Tensor) or out._ctx is None:
        raise ValueError(
            "draw_gradcheck: fn(*inputs) made no graph; give inputs requires_grad=True"
        )
    graph = _Graph(out, max_nodes)
    return graph, {
        id(t): _check_op(t._ctx, getattr(t._ctx, "options", {}), eps, atol, rtol)
        for t in graph.tensors
        if t._ctx is not None
    }


def _check_op(ctx, options: dict, eps: float, atol: float, rtol: float) -> _Check:
    cls, parents = type(ctx), ctx.parents
    arrays = [_float64(p) for p in parents]

    def run(arrays):
        new = cls()
        new.parents = parents
        return new, np.asarray(cls.forward(new, *arrays, **options), dtype=np.float64)

    new, out = run(arrays)
    weights = np.random.default_rng(0).uniform(0.5, 1.5, size=out.shape)
    try:
        grads = cls.backward(new, weights)
    except Exception as error:  # a learner's unfinished backward shows up in the picture
        return _Check("error", [f"backward raised {type(error).__name__}: {error}"])
    grads = grads if isinstance(grads, tuple) else (grads,)
    # the package's one numerical differentiator, on the op's own forward
    numeric = numerical_grad(lambda *xs: Tensor(run([x.data for x in xs])[1]), arrays, eps, weights)
    lines = []
    for i, (p, x) in enumerate(zip(parents, arrays, strict=False)):
        if isinstance(p, Tensor) and p.requires_grad:
            g = grads[i] if i < len(grads) else None
            lines += _compare(i, x, g, numeric[i], atol, rtol)
    return _Check("bad" if lines else "ok", lines)


def _float64(p):
    if isinstance(p, Tensor):
        return p.data.astype(np.float64) if p.dtype.kind == "f" else p.data
    return p


def _compare(i, x, g, numeric, atol, rtol) -> list:
    """Problems with input i's gradient g: missing, wrong shape, or entries off by more than tol."""
    if g is None:
        return [f"input {i}: backward returned None"]
    try:
        g = sum_to_shape(np.asarray(g, dtype=np.float64), np.shape(x))
    except RuntimeError:
        return [f"input {i}: gradient shape {np.shape(g)}, input shape {np.shape(x)}"]
    bad = ~np.isclose(g, numeric, rtol=rtol, atol=atol)
    if not bad.any():
        return []
    where = tuple(int(k) for k in np.unravel_index(int(np.argmax(bad)), np.shape(x)))
    return [
        f"input {i} entry {where}:\nbackward {g[where]:.6g}\nnumerical {numeric[where]:.6g}"
        f"\n({int(bad.sum())} of {np.size(x)} entries differ)"
    ]
