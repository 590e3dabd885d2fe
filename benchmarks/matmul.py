"""A chain of large matrix products, forward and backward: the engine's cost where BLAS dominates.

    loss = sum(X @ W1 @ W2 @ W3 @ W4),  X and W_i of size n x n (1024 by default), float32

X needs no gradient, so backward makes 7 products (2 per W_i but one for W1), forward 4.
"""

from __future__ import annotations

import numpy as np

import minilucid as ml
from benchmarks.machine import torch

DEPTH = 4


def problem(size: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((size, size), dtype=np.float32)
    scale = np.float32(1 / np.sqrt(size))  # keeps the products near unit size
    ws = [rng.standard_normal((size, size), dtype=np.float32) * scale for _ in range(DEPTH)]
    return x, ws


class NumpyMatmul:
    def __init__(self, x, ws):
        self.x, self.ws = x, ws

    def forward(self):
        inputs = [self.x]
        for w in self.ws:
            inputs.append(inputs[-1] @ w)
        loss = inputs[-1].sum()
        return loss, inputs

    def backward(self, out):
        _, inputs = out
        g = np.ones_like(inputs[-1])  # d sum / d entry
        grads = [None] * DEPTH
        for i in range(DEPTH - 1, -1, -1):
            grads[i] = inputs[i].T @ g
            if i > 0:
                g = g @ self.ws[i].T
        return grads


class EngineMatmul:
    """The chain on a PyTorch-shaped engine; `tensor(array, requires_grad)` makes a fresh leaf.
    The same code runs on minilucid and PyTorch."""

    def __init__(self, x, ws, tensor):
        self.x = tensor(x, False)
        self.ws = [tensor(w, True) for w in ws]

    def forward(self):
        y = self.x
        for w in self.ws:
            y = y @ w
        return y.sum()

    def backward(self, loss):
        loss.backward()
        grads = [w.grad for w in self.ws]
        for w in self.ws:
            w.grad = None
        return grads


TENSORS = {  # engine -> how it makes a leaf from a NumPy array (a copy)
    "minilucid": lambda a, grad: ml.tensor(a.copy(), requires_grad=grad),
    "torch": lambda a, grad: torch.tensor(a, requires_grad=grad),
}


def engines(size: int) -> dict:
    x, ws = problem(size)
    models = {"numpy": NumpyMatmul(x, ws)}
    for name, tensor in TENSORS.items():
        if name != "torch" or torch is not None:
            models[name] = EngineMatmul(x, ws, tensor)
    return models


def check_gradients(models: dict) -> None:
    reference = models["numpy"].backward(models["numpy"].forward())
    for name, model in models.items():
        grads = model.backward(model.forward())
        for i, (g, ref) in enumerate(zip(grads, reference, strict=True)):
            g = np.asarray(g)
            scale = float(np.abs(ref).max())
            if g.shape != ref.shape or not np.allclose(g, ref, rtol=1e-3, atol=1e-4 * scale):
                raise AssertionError(
                    f"matmul chain: {name}'s gradient of W{i + 1} differs from the hand-written "
                    f"NumPy one (largest difference {np.abs(g - ref).max():.3g})"
                )
