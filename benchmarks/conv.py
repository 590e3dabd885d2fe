"""A convolution layer forward and backward, where the im2col buffer and two matmuls dominate.

    out = conv2d(x, W, b, padding=1);  x (32, 1, 28, 28), W (16, 1, 3, 3), b (16,), float32

Backward starts from a fixed upstream gradient G of out's shape and gives the gradients of x,
W and b (x's through col2im, as in any layer but the first). The hand-written NumPy version is
the same im2col + matmul written out: one strided copy per kernel position into the buffer,
cols @ W.T + b, then G's rows against the buffer and the weight, and the windows added back.
"""

from __future__ import annotations

import numpy as np

import minilucid as ml
from benchmarks.machine import torch
from minilucid.nn import functional as F

CONFIG = {"batch": 32, "channels": 1, "size": 28, "filters": 16, "kernel": 3, "padding": 1}
TITLE = "Conv2d layer, 32 x (1 x 28 x 28), 16 filters 3x3, padding 1, forward + backward"


def problem(seed: int = 0):
    rng = np.random.default_rng(seed)
    n, c, s = CONFIG["batch"], CONFIG["channels"], CONFIG["size"]
    o, k = CONFIG["filters"], CONFIG["kernel"]
    x = rng.standard_normal((n, c, s, s), dtype=np.float32)
    w = rng.standard_normal((o, c, k, k), dtype=np.float32) / np.float32(k * np.sqrt(c))
    b = rng.standard_normal(o, dtype=np.float32)
    g = rng.standard_normal((n, o, s, s), dtype=np.float32)  # padding 1 keeps the size
    return x, w, b, g


def buffer_bytes(ones_row: bool = False) -> int:
    """Bytes of the im2col buffer, float32: C*kh*kw rows (one more of ones when the bias rides
    in the product, as in minilucid) of one number per output pixel, for every image."""
    n, c, s, k = CONFIG["batch"], CONFIG["channels"], CONFIG["size"], CONFIG["kernel"]
    return n * (c * k * k + ones_row) * s * s * 4


class NumpyConv:
    """im2col + matmul by hand, in the layout a careful person picks for (N, C, H, W) images:
    the buffer is (N, C*kh*kw, H*W), so W @ buffer is the output in its final layout and the
    upstream gradient needs no transpose; the bias is added in place."""

    def __init__(self, x, w, b, g):
        self.x, self.w, self.b, self.g = x, w, b, g
        n, c, s, _ = x.shape
        self.k, self.p = w.shape[-1], CONFIG["padding"]
        self.padded_shape = (n, c, s + 2 * self.p, s + 2 * self.p)

    def forward(self):
        x, w, k, p = self.x, self.w, self.k, self.p
        n, c, s, _ = x.shape
        padded = np.zeros(self.padded_shape, dtype=x.dtype)
        padded[:, :, p : p + s, p : p + s] = x
        cols = np.empty((n, c, k, k, s, s), dtype=x.dtype)
        for i in range(k):
            for j in range(k):
                cols[:, :, i, j] = padded[:, :, i : i + s, j : j + s]
        cols = cols.reshape(n, c * k * k, s * s)
        out = w.reshape(w.shape[0], -1) @ cols  # (N, O, H*W)
        out += self.b[:, None]
        return out.reshape(n, -1, s, s), cols

    def backward(self, result):
        _, cols = result
        x, w, k, p = self.x, self.w, self.k, self.p
        n, c, s, _ = x.shape
        o = w.shape[0]
        g = self.g.reshape(n, o, s * s)
        grad_w = (g @ cols.transpose(0, 2, 1)).sum(axis=0).reshape(w.shape)  # sum over images
        grad_b = g.sum(axis=(0, 2))
        d_cols = (w.reshape(o, -1).T @ g).reshape(n, c, k, k, s, s)
        d_padded = np.zeros(self.padded_shape, dtype=x.dtype)
        for i in range(k):
            for j in range(k):
                d_padded[:, :, i : i + s, j : j + s] += d_cols[:, :, i, j]
        return [d_padded[:, :, p : p + s, p : p + s], grad_w, grad_b]


class EngineConv:
    """The layer on a PyTorch-shaped engine (the same code for minilucid and PyTorch)."""

    def __init__(self, x, w, b, g, tensor, conv2d):
        self.x, self.w, self.b = tensor(x, True), tensor(w, True), tensor(b, True)
        self.g = tensor(g, False)
        self.conv2d = conv2d

    def forward(self):
        return self.conv2d(self.x, self.w, self.b, padding=CONFIG["padding"])

    def backward(self, out):
        out.backward(self.g)
        grads = [self.x.grad, self.w.grad, self.b.grad]
        self.x.grad = self.w.grad = self.b.grad = None
        return grads


def engines() -> dict:
    x, w, b, g = problem()
    models = {"numpy": NumpyConv(x, w, b, g)}
    models["minilucid"] = EngineConv(
        x, w, b, g, lambda a, grad: ml.tensor(a.copy(), requires_grad=grad), F.conv2d
    )
    if torch is not None:
        models["torch"] = EngineConv(
            x,
            w,
            b,
            g,
            lambda a, grad: torch.tensor(a, requires_grad=grad),
            torch.nn.functional.conv2d,
        )
    return models


def check_gradients(models: dict) -> None:
    """Every engine's output and gradients against the hand-written ones (float32 tolerances)."""
    ref_out, _ = models["numpy"].forward()
    reference = models["numpy"].backward(models["numpy"].forward())
    for name, model in models.items():
        out = model.forward()
        if name == "numpy":
            value = out[0]
        else:
            value = out.detach().numpy() if name == "torch" else out.data
        grads = model.backward(out)
        for what, got, ref in zip(
            ("output", "x's gradient", "W's gradient", "b's gradient"),
            [np.asarray(value)] + [np.asarray(g) for g in grads],
            [ref_out, *reference],
            strict=True,
        ):
            scale = float(np.abs(ref).max())
            if got.shape != ref.shape or not np.allclose(got, ref, rtol=1e-4, atol=1e-5 * scale):
                raise AssertionError(
                    f"conv2d: {name}'s {what} differs from the hand-written NumPy one "
                    f"(shapes {got.shape} and {ref.shape})"
                )
