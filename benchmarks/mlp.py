"""One SGD step of a two-layer perceptron with softmax cross-entropy, in float32.

    h = act(x @ W1 + b1);  logits = h @ W2 + b2;  loss = mean_i(-log softmax(logits_i)[y_i])

The same step is written three times: by hand in NumPy (forward, backward and update as a
careful person writes them), with minilucid, and with PyTorch when it is installed. Before any
timing, each engine's loss and gradients are compared with the hand-written ones (and those
with central differences in float64): a fast but wrong engine fails here.
"""

from __future__ import annotations

import numpy as np

import minilucid as ml
import minilucid.nn.functional as mlF
from benchmarks.machine import torch

LEARNING_RATE = 0.01

CONFIGS = {
    "mlp_small": {
        "title": "MLP step, batch 128, 64-128-10, tanh",
        "batch": 128,
        "sizes": (64, 128, 10),
        "activation": "tanh",
    },
    "mlp_large": {
        "title": "MLP step, batch 64, 784-256-10, relu",
        "batch": 64,
        "sizes": (784, 256, 10),
        "activation": "relu",
    },
}


def problem(config: dict, seed: int = 0, dtype=np.float32):
    """A batch (x, y) and the initial parameters [W1, b1, W2, b2]."""
    rng = np.random.default_rng(seed)
    n_in, n_hidden, n_out = config["sizes"]
    x = rng.standard_normal((config["batch"], n_in)).astype(dtype)
    y = rng.integers(0, n_out, size=config["batch"])
    params = [
        rng.standard_normal((n_in, n_hidden)) / np.sqrt(n_in),
        0.1 * rng.standard_normal(n_hidden),
        rng.standard_normal((n_hidden, n_out)) / np.sqrt(n_hidden),
        0.1 * rng.standard_normal(n_out),
    ]
    return x, y, [p.astype(dtype) for p in params]


class NumpyMLP:
    """The hand-written step: the floor that an engine on NumPy can approach."""

    def __init__(self, config, x, y, params):
        self.x, self.y, self.params = x, y, [p.copy() for p in params]
        self.tanh = config["activation"] == "tanh"
        self.rows = np.arange(len(y))

    def forward(self):
        w1, b1, w2, b2 = self.params
        h = self.x @ w1
        h += b1
        if self.tanh:
            np.tanh(h, out=h)
        else:
            np.maximum(h, 0, out=h)
        logits = h @ w2
        logits += b2
        logits -= logits.max(axis=1, keepdims=True)  # softmax is shift-invariant; exp is safe
        exp = np.exp(logits)
        total = exp.sum(axis=1, keepdims=True)
        loss = np.log(total).mean() - logits[self.rows, self.y].mean()
        return loss, (h, exp, total)

    def backward(self, out):
        _, (h, exp, total) = out
        _, _, w2, _ = self.params
        d_logits = exp
        d_logits /= total  # softmax
        d_logits[self.rows, self.y] -= 1
        d_logits *= d_logits.dtype.type(1 / len(self.y))
        d_h = d_logits @ w2.T
        if self.tanh:
            d_h *= 1 - h * h
        else:
            d_h *= h > 0
        return [self.x.T @ d_h, d_h.sum(axis=0), h.T @ d_logits, d_logits.sum(axis=0)]

    def update(self, grads):
        for p, g in zip(self.params, grads, strict=True):
            p -= LEARNING_RATE * g

    def loss_and_grads(self):
        out = self.forward()
        return float(out[0]), self.backward(out)


class MinilucidMLP:
    def __init__(self, config, x, y, params):
        self.x, self.y = ml.tensor(x), y
        self.params = [ml.tensor(p.copy(), requires_grad=True) for p in params]
        self.act = ml.tanh if config["activation"] == "tanh" else ml.relu

    def forward(self):
        w1, b1, w2, b2 = self.params
        h = self.act(self.x @ w1 + b1)
        return mlF.cross_entropy(h @ w2 + b2, self.y)

    def backward(self, loss):
        loss.backward()
        return [p.grad for p in self.params]

    def update(self, grads):
        for p in self.params:
            p.data -= LEARNING_RATE * p.grad
            p.grad = None

    def loss_and_grads(self):
        loss = self.forward()
        grads = self.backward(loss)
        for p in self.params:
            p.grad = None
        return loss.item(), grads


class TorchMLP:
    def __init__(self, config, x, y, params):
        self.x, self.y = torch.from_numpy(x), torch.from_numpy(y)
        self.params = [torch.tensor(p, requires_grad=True) for p in params]
        self.act = torch.tanh if config["activation"] == "tanh" else torch.relu

    def forward(self):
        w1, b1, w2, b2 = self.params
        h = self.act(self.x @ w1 + b1)
        return torch.nn.functional.cross_entropy(h @ w2 + b2, self.y)

    def backward(self, loss):
        loss.backward()
        return [p.grad for p in self.params]

    def update(self, grads):
        with torch.no_grad():
            for p in self.params:
                p -= LEARNING_RATE * p.grad
                p.grad = None

    def loss_and_grads(self):
        loss = self.forward()
        grads = [g.numpy().copy() for g in self.backward(loss)]
        for p in self.params:
            p.grad = None
        return loss.item(), grads


ENGINES = {"numpy": NumpyMLP, "minilucid": MinilucidMLP, "torch": TorchMLP}
PARAM_NAMES = ("W1", "b1", "W2", "b2")


def engines(config: dict) -> dict:
    x, y, params = problem(config)
    names = [n for n in ENGINES if n != "torch" or torch is not None]
    return {name: ENGINES[name](config, x, y, params) for name in names}


def check_numpy_by_differences(config: dict, entries: int = 6) -> None:
    """The hand-written gradients agree with central differences (float64, a few entries)."""
    x, y, params = problem(config, dtype=np.float64)
    model = NumpyMLP(config, x, y, params)
    _, grads = model.loss_and_grads()
    rng = np.random.default_rng(1)
    step = 1e-6
    for k, name in enumerate(PARAM_NAMES):
        p = model.params[k]
        for _ in range(entries):
            i = tuple(rng.integers(0, s) for s in p.shape)
            keep = p[i]
            p[i] = keep + step
            up = model.forward()[0]
            p[i] = keep - step
            down = model.forward()[0]
            p[i] = keep
            numeric = (up - down) / (2 * step)
            if not np.isclose(grads[k][i], numeric, rtol=1e-5, atol=1e-8):
                raise AssertionError(
                    f"{config['title']}: the hand-written NumPy gradient of {name}{list(i)} is "
                    f"{grads[k][i]:.8g}, central differences give {numeric:.8g}"
                )


def check_gradients(config: dict, models: dict) -> None:
    """Every engine's loss and gradients match the hand-written NumPy ones, or we stop here."""
    check_numpy_by_differences(config)
    ref_loss, ref_grads = models["numpy"].loss_and_grads()
    for name, model in models.items():
        if name == "numpy":
            continue
        loss, grads = model.loss_and_grads()
        if not np.isclose(loss, ref_loss, rtol=1e-5):
            raise AssertionError(
                f"{config['title']}: {name} loss {loss:.8g} != hand-written NumPy {ref_loss:.8g}"
            )
        for pname, g, ref in zip(PARAM_NAMES, grads, ref_grads, strict=True):
            g = np.asarray(g)
            scale = float(np.abs(ref).max())
            bad = g.shape != ref.shape or g.dtype != ref.dtype
            if not bad:
                bad = not np.allclose(g, ref, rtol=1e-4, atol=1e-5 * scale)
            if bad:
                diff = np.abs(g - ref).max() if g.shape == ref.shape else float("nan")
                raise AssertionError(
                    f"{config['title']}: {name}'s gradient of {pname} differs from the "
                    f"hand-written NumPy one ({g.dtype}{g.shape} vs {ref.dtype}{ref.shape}, "
                    f"largest difference {diff:.3g} for entries up to {scale:.3g})"
                )
