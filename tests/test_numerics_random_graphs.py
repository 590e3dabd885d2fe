"""Random expression graphs: values and gradients agree with PyTorch (or central differences).

Each program is 5 to 30 ops drawn at random over a growing pool of values: operands are reused
(`h * h`, diamonds), shapes broadcast ((), (3,), (1, 3), (2, 1), (2, 3)), and the inputs hold
exact zeros and ties (kinks of relu/abs/clamp, ties of max) - where PyTorch defines the
gradient by convention, minilucid must follow it. With PyTorch installed every program runs on
both engines, in float64 and float32; without it, programs on smooth inputs (no zeros, no
ties) are checked against central differences in float64.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
from gradients import assert_grads_match

import minilucid as ml

HAS_TORCH = importlib.util.find_spec("torch") is not None
SHAPES = [(), (3,), (1, 3), (2, 1), (2, 3)]  # all broadcast together to (2, 3)

UNARY = {  # name: the same line on minilucid and on torch
    "neg": lambda x: -x,
    "square": lambda x: x * x,
    "cube": lambda x: x**3,
    "pow0": lambda x: x**0,
    "tanh": lambda x: x.tanh(),
    "sigmoid": lambda x: x.sigmoid(),
    "relu": lambda x: x.relu(),
    "abs": lambda x: x.abs(),
    "clamp": lambda x: x.clamp(-0.5, 0.5),
    "exp_tanh": lambda x: x.tanh().exp(),
    "log1p_square": lambda x: (x * x + 1).log(),
    "sqrt1p_square": lambda x: (x * x + 1).sqrt(),
    "scale": lambda x: 0.5 * x - 1.5,
}
BINARY = {
    "add": lambda x, y: x + y,
    "sub": lambda x, y: x - y,
    "mul": lambda x, y: x * y,
    "div": lambda x, y: x / (y * y + 1),
}
KINKS = {"relu", "abs", "clamp"}  # not differentiable at 0 / +-0.5: torch-only


def reduce_ops(lib):
    amax = "max" if lib is ml else "amax"
    return {  # name: (the op, the least ndim it needs)
        "sum_all": (lambda x: x.sum(), 0),
        "sum_last": (lambda x: x.sum(dim=-1, keepdim=True), 1),
        "mean_first": (lambda x: x.mean(dim=0, keepdim=True), 1),
        "max_last": (lambda x: getattr(x, amax)(dim=-1, keepdim=True), 1),
        "max_all": (lambda x: getattr(x, amax)(), 0),
        "softmax": (lambda x: x.softmax(-1), 1),
        "log_softmax": (lambda x: x.log_softmax(-1), 1),
        "first_row": (lambda x: x[0], 1),
        "where": (lambda x: lib.where(x > 0, x, x * 0.25), 0),
    }


def make_program(rng: np.random.Generator, smooth: bool):
    """Leaves (arrays) and a list of steps (op kind, name, operand indices)."""
    n_leaves = int(rng.integers(1, 4))
    arrays = []
    for _ in range(n_leaves):
        shape = SHAPES[int(rng.integers(len(SHAPES)))]
        a = rng.standard_normal(shape)
        if not smooth:  # exact zeros and ties
            pool = np.array([0.0, 0.0, 0.5, -0.5, 1.25, 1.25, -2.0])
            a = np.where(rng.random(shape) < 0.5, rng.choice(pool, shape), a)
        arrays.append(np.round(a, 3))
    names_unary = [n for n in UNARY if not (smooth and n in KINKS)]
    names_reduce = [n for n in reduce_ops(ml) if not (smooth and n in ("max_last", "max_all"))]
    shapes = [a.shape for a in arrays]
    steps = []
    for _ in range(int(rng.integers(5, 31))):
        kind = rng.choice(["unary", "binary", "reduce"], p=[0.45, 0.4, 0.15])
        i = int(rng.integers(len(shapes)))
        if kind == "unary":
            name = str(rng.choice(names_unary))
            shapes.append(shapes[i])
            steps.append(("unary", name, (i,)))
        elif kind == "binary":
            j = int(rng.integers(len(shapes)))  # may equal i: x * x
            name = str(rng.choice(list(BINARY)))
            shapes.append(np.broadcast_shapes(shapes[i], shapes[j]))
            steps.append(("binary", name, (i, j)))
        else:
            name = str(rng.choice(names_reduce))
            op, least = reduce_ops(ml)[name]
            if len(shapes[i]) < least:
                name, op = "sum_all", reduce_ops(ml)["sum_all"][0]
            shapes.append(op(ml.zeros(shapes[i])).shape)
            steps.append(("reduce", name, (i,)))
    return arrays, steps


def run(lib, steps, leaves):
    """The program on minilucid or torch: sum over the last three values, each weighted."""
    values = list(leaves)
    reductions = reduce_ops(lib)
    for kind, name, args in steps:
        xs = [values[k] for k in args]
        if kind == "unary":
            values.append(UNARY[name](*xs))
        elif kind == "binary":
            values.append(BINARY[name](*xs))
        else:
            values.append(reductions[name][0](*xs))
    out = values[-1].sum()
    for k, v in enumerate(values[-3:-1]):
        out = out + (v * (0.75 - 0.5 * k)).sum()
    for leaf in leaves:  # every leaf takes part, even one no step used
        out = out + (leaf * 0.125).sum()
    return out


def describe(arrays, steps) -> str:
    leaves = ", ".join(f"{a.tolist()}" for a in arrays)
    ops = "; ".join(
        f"v{len(arrays) + k} = {name}({', '.join(f'v{i}' for i in args)})"
        for k, (_, name, args) in enumerate(steps)
    )
    return f"leaves {leaves}; {ops}"


@pytest.mark.skipif(not HAS_TORCH, reason="PyTorch is not installed")
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_random_graphs_agree_with_torch(dtype):
    import torch

    rng = np.random.default_rng(2024 if dtype == "float64" else 7)
    rtol, atol = (1e-9, 1e-11) if dtype == "float64" else (2e-4, 2e-5)
    for _ in range(80):
        arrays, steps = make_program(rng, smooth=False)
        ours = [ml.tensor(a.astype(dtype), requires_grad=True) for a in arrays]
        theirs = [torch.tensor(a.astype(dtype), requires_grad=True) for a in arrays]
        out_ours, out_theirs = run(ml, steps, ours), run(torch, steps, theirs)
        out_ours.backward()
        out_theirs.backward()
        where = describe(arrays, steps)
        assert out_ours.dtype == np.dtype(dtype), where
        scale = 1 + abs(out_theirs.item()) if np.isfinite(out_theirs.item()) else 1
        np.testing.assert_allclose(
            out_ours.item(), out_theirs.item(), rtol=rtol, atol=atol * scale, err_msg=where
        )
        for k, (a, b) in enumerate(zip(ours, theirs, strict=True)):
            expected = np.zeros(a.shape) if b.grad is None else b.grad.numpy()
            got = np.zeros(a.shape) if a.grad is None else a.grad
            assert got.dtype == np.dtype(dtype) or a.grad is None, where
            g_scale = 1 + np.abs(expected[np.isfinite(expected)]).max(initial=0)
            np.testing.assert_allclose(
                got, expected, rtol=rtol, atol=atol * g_scale, err_msg=f"leaf {k}: {where}"
            )


def test_random_smooth_graphs_agree_with_central_differences():
    rng = np.random.default_rng(11)
    for _ in range(25):
        arrays, steps = make_program(rng, smooth=True)
        assert_grads_match(
            lambda *xs, steps=steps: run(ml, steps, xs),
            arrays,
            rtol=1e-5,
            atol=1e-6,
            label=describe(arrays, steps),
        )
