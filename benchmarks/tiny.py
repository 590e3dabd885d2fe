"""A chain of 100 ops on one-element tensors: the engine's own cost per op, with almost no maths.

    y_0 = x;  y_{i+1} = exp(tanh(y_i * w_i + b_i))   (25 blocks of 4 ops: mul, add, tanh, exp)

The 50 scalars w_i, b_i need gradients, x does not. The hand-written NumPy version keeps what
backward needs in a list and walks it backwards: the same ufunc calls an engine makes, and
nothing else.
"""

from __future__ import annotations

import numpy as np

import minilucid as ml
from benchmarks import bare
from benchmarks.machine import torch

BLOCKS = 25
OPS = 4 * BLOCKS


def problem(seed: int = 0):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, 1).astype(np.float32)
    w = [rng.uniform(0.5, 1.5, 1).astype(np.float32) for _ in range(BLOCKS)]
    b = [rng.uniform(-0.5, 0.5, 1).astype(np.float32) for _ in range(BLOCKS)]
    return x, w, b


class NumpyTiny:
    def __init__(self, x, w, b):
        self.x, self.w, self.b = x, w, b

    def forward(self):
        y = self.x
        saved = []
        for w, b in zip(self.w, self.b, strict=True):
            t = np.tanh(y * w + b)
            e = np.exp(t)
            saved.append((y, t, e))
            y = e
        return y, saved

    def backward(self, out):
        y, saved = out
        g = np.ones_like(y)
        d_w, d_b = [None] * BLOCKS, [None] * BLOCKS
        for i in range(BLOCKS - 1, -1, -1):
            y_in, t, e = saved[i]
            g = g * e  # exp
            g = g * (1 - t * t)  # tanh
            d_b[i] = g  # add
            d_w[i] = g * y_in  # mul
            g = g * self.w[i]
        return d_w + d_b


class EngineTiny:
    """The model on a PyTorch-shaped engine; `tensor(array, requires_grad)` makes a fresh leaf.
    The same code runs on minilucid, the bare graph engine (benchmarks/bare.py) and PyTorch."""

    def __init__(self, x, w, b, tensor):
        self.x = tensor(x, False)
        self.w = [tensor(v, True) for v in w]
        self.b = [tensor(v, True) for v in b]

    def forward(self):
        y = self.x
        for w, b in zip(self.w, self.b, strict=True):
            y = (y * w + b).tanh().exp()
        return y

    def backward(self, y):
        y.backward()
        grads = [p.grad for p in self.w + self.b]
        for p in self.w + self.b:
            p.grad = None
        return grads


TENSORS = {  # engine -> how it makes a leaf from a NumPy array (a copy)
    "minilucid": lambda a, grad: ml.tensor(a.copy(), requires_grad=grad),
    "bare": lambda a, grad: bare.tensor(a.copy(), requires_grad=grad),
    "torch": lambda a, grad: torch.tensor(a, requires_grad=grad),
}


def engines() -> dict:
    x, w, b = problem()
    models = {"numpy": NumpyTiny(x, w, b)}
    for name, tensor in TENSORS.items():
        if name != "torch" or torch is not None:
            models[name] = EngineTiny(x, w, b, tensor)
    return models


def check_gradients(models: dict) -> None:
    reference = models["numpy"].backward(models["numpy"].forward())
    for name, model in models.items():
        grads = model.backward(model.forward())
        for i, (g, ref) in enumerate(zip(grads, reference, strict=True)):
            g = np.asarray(g)
            if g.shape != ref.shape or not np.allclose(g, ref, rtol=1e-4, atol=1e-6):
                which = f"w[{i}]" if i < BLOCKS else f"b[{i - BLOCKS}]"
                raise AssertionError(
                    f"tiny ops: {name}'s gradient of {which} is {g}, hand-written NumPy gives {ref}"
                )
