"""One epoch of training an MLP on the 8x8 digits: data loading, forward, backward, Adam.

    logits = relu(x @ W1.T + b1) @ W2.T + b2;  loss = cross-entropy;  Adam (PyTorch's equations)

The training split (1,259 images) is shuffled and cut into mini-batches of 32, as chapter 09
trains it. The same epoch is written three times: by hand in NumPy (fancy indexing for the
batches, forward, backward and Adam written out, in place where it is natural), with
minilucid's `DataLoader`, `nn` and `optim`, and with PyTorch's when it is installed. Before any
timing, one epoch of each from the same weights and the same order must end at the same weights
as the hand-written one: a fast but wrong engine stops the run.
"""

from __future__ import annotations

import math

import numpy as np

import minilucid as ml
from benchmarks import timing
from benchmarks.machine import torch
from minilucid import nn, optim
from minilucid.data import DataLoader, TensorDataset
from minilucid.datasets import digits

CONFIG = {
    "title": "Training epoch on the digits, 1,259 images, batch 32, 64-128-10, relu, Adam",
    "batch": 32,
    "hidden": 128,
    "lr": 3e-3,
}
BETAS, EPS = (0.9, 0.999), 1e-8


def problem(seed: int = 0):
    """The training split (x float32 (n, 64), y int64) and initial [W1, b1, W2, b2] (torch's
    layout: weights are (out, in)), drawn by minilucid's own Linear layers."""
    x, y = (t.data for t in digits("train").tensors)
    ml.manual_seed(seed)
    model = _minilucid_model(CONFIG["hidden"])
    return x, y, [p.data.copy() for p in model.parameters()]


def _minilucid_model(hidden: int):
    return nn.Sequential(nn.Linear(64, hidden), nn.ReLU(), nn.Linear(hidden, 10))


class NumpyTraining:
    """The epoch by hand: the floor that an engine on NumPy can approach."""

    def __init__(self, x, y, params, seed: int = 0):
        self.x, self.y = x, y
        self.params = [p.copy() for p in params]
        self.m = [np.zeros_like(p) for p in params]
        self.v = [np.zeros_like(p) for p in params]
        self.t = 0
        self.rng = np.random.default_rng(seed)

    def batches(self, order=None):
        if order is None:
            order = self.rng.permutation(len(self.y))
        batch = CONFIG["batch"]
        for start in range(0, len(order), batch):
            idx = order[start : start + batch]
            yield self.x[idx], self.y[idx]

    def forward(self, batch):
        x, y = batch
        w1, b1, w2, b2 = self.params
        h = x @ w1.T
        h += b1
        np.maximum(h, 0, out=h)
        logits = h @ w2.T
        logits += b2
        logits -= logits.max(axis=1, keepdims=True)  # softmax is shift-invariant
        exp = np.exp(logits)
        total = exp.sum(axis=1, keepdims=True)
        loss = np.log(total).mean() - logits[np.arange(len(y)), y].mean()
        return loss, (x, y, h, exp, total)

    def backward(self, out):
        _, (x, y, h, exp, total) = out
        w2 = self.params[2]
        rows = np.arange(len(y))
        exp /= total
        d_logits = exp  # d loss / d logits = (softmax - one_hot) / batch
        d_logits[rows, y] -= 1
        d_logits *= d_logits.dtype.type(1 / len(y))
        d_h = d_logits @ w2
        d_h *= h > 0
        return [d_h.T @ x, d_h.sum(axis=0), d_logits.T @ h, d_logits.sum(axis=0)]

    def update(self, grads):
        (beta1, beta2), lr = BETAS, CONFIG["lr"]
        self.t += 1
        bias1, bias2 = 1 - beta1**self.t, 1 - beta2**self.t
        for p, g, m, v in zip(self.params, grads, self.m, self.v, strict=True):
            m *= beta1
            m += (1 - beta1) * g
            v *= beta2
            v += (1 - beta2) * (g * g)
            denom = np.sqrt(v)
            denom /= math.sqrt(bias2)
            denom += EPS
            p -= (lr / bias1) * m / denom


class PyTorchShaped:
    """The loop of chapter 09, as a learner writes it: the same code for minilucid and torch."""

    def forward(self, batch):
        xb, yb = batch
        return self.loss_fn(self.model(xb), yb)

    def backward(self, loss):
        self.optimizer.zero_grad()
        loss.backward()

    def update(self, _):
        self.optimizer.step()


class MinilucidTraining(PyTorchShaped):
    def __init__(self, x, y, params, seed: int = 0):
        self.dataset = TensorDataset(ml.tensor(x), ml.tensor(y))
        self.model = _minilucid_model(CONFIG["hidden"])
        for p, value in zip(self.model.parameters(), params, strict=True):
            p.data[...] = value
        self.optimizer = optim.Adam(self.model.parameters(), lr=CONFIG["lr"], betas=BETAS)
        self.loss_fn = nn.CrossEntropyLoss()
        self.loader = DataLoader(
            self.dataset,
            batch_size=CONFIG["batch"],
            shuffle=True,
            generator=np.random.default_rng(seed),
        )

    def batches(self, order=None):
        return self.loader if order is None else _in_order(self.dataset, order)

    @property
    def params(self):
        return [p.data for p in self.model.parameters()]


def _in_order(dataset, order):
    batch = CONFIG["batch"]
    return [dataset.get_batch(order[s : s + batch]) for s in range(0, len(order), batch)]


class TorchTraining(PyTorchShaped):
    def __init__(self, x, y, params, seed: int = 0):
        hidden = CONFIG["hidden"]
        self.dataset = torch.utils.data.TensorDataset(torch.from_numpy(x), torch.from_numpy(y))
        self.model = torch.nn.Sequential(
            torch.nn.Linear(64, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, 10)
        )
        with torch.no_grad():
            for p, value in zip(self.model.parameters(), params, strict=True):
                p.copy_(torch.from_numpy(value))
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=CONFIG["lr"], betas=BETAS)
        self.loss_fn = torch.nn.CrossEntropyLoss()
        self.loader = torch.utils.data.DataLoader(
            self.dataset,
            batch_size=CONFIG["batch"],
            shuffle=True,
            generator=torch.Generator().manual_seed(seed),
        )

    def batches(self, order=None):
        if order is None:
            return self.loader
        return torch.utils.data.DataLoader(
            self.dataset, batch_size=CONFIG["batch"], sampler=order.tolist()
        )

    @property
    def params(self):
        return [p.detach().numpy() for p in self.model.parameters()]


ENGINES = {"numpy": NumpyTraining, "minilucid": MinilucidTraining, "torch": TorchTraining}
PARAM_NAMES = ("W1", "b1", "W2", "b2")
PHASES = ("data", "forward", "backward", "update")


def engines() -> dict:
    x, y, params = problem()
    names = [n for n in ENGINES if n != "torch" or torch is not None]
    return {name: ENGINES[name](x, y, params) for name in names}


def check_epoch() -> None:
    """From the same weights and in the same order, one epoch of every engine ends at the
    hand-written epoch's weights (Adam divides by small numbers: float32 noise is allowed)."""
    x, y, params = problem()
    order = np.random.default_rng(1).permutation(len(y))
    models = {name: ENGINES[name](x, y, params) for name in engines()}
    for model in models.values():
        epoch(model, order)
    reference = models["numpy"].params
    moved = max(float(np.abs(a - b).max()) for a, b in zip(reference, params, strict=True))
    if moved < 1e-3:
        raise AssertionError("training: the hand-written epoch did not change the weights")
    for name, model in models.items():
        for pname, got, ref in zip(PARAM_NAMES, model.params, reference, strict=True):
            if got.shape != ref.shape or not np.allclose(got, ref, rtol=1e-3, atol=1e-4):
                diff = np.abs(got - ref).max() if got.shape == ref.shape else float("nan")
                raise AssertionError(
                    f"training: after one epoch {name}'s {pname} differs from the hand-written "
                    f"NumPy one by up to {diff:.3g}"
                )


def epoch(model, order=None) -> None:
    for batch in model.batches(order):
        model.update(model.backward(model.forward(batch)))


def case(model):
    """A timing case (see benchmarks.timing): `number` epochs, with the seconds spent fetching
    batches, in forward, in backward and in the update kept apart."""

    def run(number: int) -> dict:
        now = timing.clock
        spent = dict.fromkeys(PHASES, 0.0)
        for _ in range(number):
            batches = iter(model.batches())
            while True:
                t0 = now()
                batch = next(batches, None)
                t1 = now()
                if batch is None:
                    break
                out = model.forward(batch)
                t2 = now()
                grads = model.backward(out)
                t3 = now()
                model.update(grads)
                t4 = now()
                spent["data"] += t1 - t0
                spent["forward"] += t2 - t1
                spent["backward"] += t3 - t2
                spent["update"] += t4 - t3
            spent["data"] += now() - t0  # the loader's final, empty fetch
        return spent

    return run
