"""The multi-seed experiments of chapters 10 and 11, run once and stored beside this file.

A chapter sets one result against another only as mean ± sd over several seeds. Training every
seed again would take the chapter past a minute, so the runs live here, the chapter loads the
stored figures (ch10_seeds.json, ch11_seeds.json), and tests/test_experiments_ch10_ch11.py
re-runs a few of them: each lands in the band its ten stored seeds span (another CPU or BLAS
library rounds differently, and a long run turns that into a run of its own).

    python notebooks/experiments/seeds.py ch10     # about a minute on one core
    python notebooks/experiments/seeds.py ch11     # about two minutes

Each run is seeded by its seed alone (ml.manual_seed for the weights and dropout masks, a NumPy
generator for the shuffling), with the chapter's own model, optimiser and loop.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

import minilucid as ml  # noqa: E402
from minilucid import Tensor, nn, optim  # noqa: E402
from minilucid.data import DataLoader, TensorDataset  # noqa: E402
from minilucid.datasets import digits  # noqa: E402
from minilucid.nn import functional as F  # noqa: E402
from minilucid.nn import init  # noqa: E402

HERE = Path(__file__).resolve().parent
SEEDS = tuple(range(10))


def _evaluate(model, dataset) -> tuple[float, float]:
    """(loss, accuracy) of the model on a whole dataset, in eval mode."""
    x, y = dataset.tensors
    model.eval()
    with ml.no_grad():
        logits = model(x)
        loss = F.cross_entropy(logits, y).item()
    return loss, float((logits.data.argmax(axis=1) == y.data).mean())


def _train(model, optimizer, dataset, epochs: int, seed: int, scheduler=None, batch=32) -> None:
    loader = DataLoader(dataset, batch, shuffle=True, generator=np.random.default_rng(seed))
    for _ in range(epochs):
        model.train()
        for x, y in loader:
            loss = F.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        if scheduler is not None:
            scheduler.step()


# --- chapter 10: the CNN against chapter 09's MLP ------------------------------------------


def as_images(split: str) -> TensorDataset:
    x, y = digits(split).tensors
    return TensorDataset(x.reshape(-1, 1, 8, 8), y)


def make_cnn() -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(64 * 2 * 2, 10),
    )  # fmt: skip


def cnn_run(seed: int) -> dict:
    """Chapter 10's CNN: ten epochs of Adam (lr 0.003), batches of 32."""
    sets = [as_images(s) for s in ("train", "val", "test")]
    ml.manual_seed(seed)
    model = make_cnn()
    _train(model, optim.Adam(model.parameters(), lr=3e-3), sets[0], 10, seed)
    return _scores(model, sets[1], sets[2])


def mlp_run(seed: int) -> dict:
    """Chapter 09's MLP: 64-128-10, thirty epochs of Adam (lr 0.003) with a cosine schedule."""
    sets = [digits(s) for s in ("train", "val", "test")]
    ml.manual_seed(seed)
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
    optimizer = optim.Adam(model.parameters(), lr=3e-3)
    scheduler = optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=30)
    _train(model, optimizer, sets[0], 30, seed, scheduler)
    return _scores(model, sets[1], sets[2])


def _scores(model, val_set, test_set) -> dict:
    val_loss, val_acc = _evaluate(model, val_set)
    return {"val_loss": val_loss, "val_acc": val_acc, "test_acc": _evaluate(model, test_set)[1]}


def ch10(seeds=SEEDS) -> dict:
    return {
        "seeds": list(seeds),
        "cnn": [cnn_run(s) for s in seeds],
        "mlp": [mlp_run(s) for s in seeds],
    }


# --- chapter 11: the regularisers, and batch norm's range of learning rates ----------------


def mlp(p: float = 0.0) -> nn.Sequential:
    drop = [nn.Dropout(p)] if p else []
    return nn.Sequential(
        nn.Linear(64, 128), nn.ReLU(), *drop, nn.Linear(128, 128), nn.ReLU(), *drop,
        nn.Linear(128, 10),
    )  # fmt: skip


REGULARISERS = {  # name: (dropout p, optimiser class, weight_decay)
    "no regularisation": (0.0, "Adam", 0.0),
    "dropout p=0.5": (0.5, "Adam", 0.0),
    "Adam, weight_decay=0.001": (0.0, "Adam", 0.001),
    "Adam, weight_decay=0.01": (0.0, "Adam", 0.01),
    "Adam, weight_decay=0.1": (0.0, "Adam", 0.1),
    "AdamW, weight_decay=0.2": (0.0, "AdamW", 0.2),
    "AdamW, weight_decay=2": (0.0, "AdamW", 2.0),
    "AdamW, weight_decay=20": (0.0, "AdamW", 20.0),
}


def regulariser_run(name: str, seed: int) -> dict:
    """Chapter 11 section 3: 100 full-batch Adam steps (lr 0.003) on the first 100 digits."""
    p, kind, decay = REGULARISERS[name]
    train_set, val_set = digits("train"), digits("val")
    x, y = (Tensor(t.data[:100]) for t in train_set.tensors)
    x_val, y_val = val_set.tensors
    ml.manual_seed(seed)
    model = mlp(p)
    optimizer = getattr(optim, kind)(model.parameters(), lr=3e-3, weight_decay=decay)
    val_losses = []
    for step in range(1, 101):
        model.train()
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 2 == 0:
            model.eval()
            with ml.no_grad():
                logits = model(x_val)
                val_losses.append(F.cross_entropy(logits, y_val).item())
    accuracy = float((logits.data.argmax(1) == y_val.data).mean())
    norm = float(np.sqrt(sum(float((w.data**2).sum()) for w in model.parameters())))
    return {
        "best_val_loss": min(val_losses),
        "final_val_loss": val_losses[-1],
        "final_val_acc": accuracy,
        "weight_norm": norm,
    }


LEARNING_RATES = (0.01, 0.03, 0.1, 0.3, 1.0, 3.0)


def deep_mlp(depth: int, width: int = 64, norm: bool = False, he: bool = False):
    """Chapter 11's deep MLP; he=True re-initialises each hidden Linear for ReLU (chapter 07)."""
    layers, fan_in = [], 64
    for _ in range(depth):
        linear = nn.Linear(fan_in, width, bias=not norm)
        if he:
            init.kaiming_normal_(linear.weight, nonlinearity="relu")
            init.zeros_(linear.bias)
        layers += [linear, *([nn.BatchNorm1d(width)] if norm else []), nn.ReLU()]
        fan_in = width
    return nn.Sequential(*layers, nn.Linear(fan_in, 10))


SWEEP_MODELS = {  # name: (batch norm, He initialisation)
    "plain": (False, False),
    "plain, He init": (False, True),
    "with batch norm": (True, False),
}


def sweep_run(name: str, lr: float, seed: int, epochs: int = 3) -> float:
    """Chapter 11 section 7: SGD at one learning rate, batches of 64; validation accuracy."""
    norm, he = SWEEP_MODELS[name]
    train_set, (x_val, y_val) = digits("train"), digits("val").tensors
    ml.manual_seed(seed)
    model = deep_mlp(4, norm=norm, he=he)
    optimizer = optim.SGD(model.parameters(), lr=lr)
    _train(model, optimizer, train_set, epochs, seed, batch=64)
    model.eval()
    with ml.no_grad():
        predicted = model(x_val).data.argmax(1)
    return float(np.nan_to_num((predicted == y_val.data).mean()))


def ch11(seeds=SEEDS) -> dict:
    return {
        "seeds": list(seeds),
        "regularisers": {n: [regulariser_run(n, s) for s in seeds] for n in REGULARISERS},
        "learning_rates": list(LEARNING_RATES),
        "sweep": {
            n: [[sweep_run(n, lr, s) for s in seeds] for lr in LEARNING_RATES] for n in SWEEP_MODELS
        },
    }


def main(argv: list[str]) -> int:
    for chapter in argv or ["ch10", "ch11"]:
        results = {"ch10": ch10, "ch11": ch11}[chapter]()
        path = HERE / f"{chapter}_seeds.json"
        path.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
        print("wrote", path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
