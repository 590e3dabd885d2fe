"""Training with DataLoader + nn + optim: checkpoints resume exactly; the digits reach 97%.

Resuming exactly needs every piece of state a training run carries: the model's parameters, the
optimiser's buffers (Adam's averages and step count), the learning-rate schedule, the epoch, and
the state of the generator that shuffles the data. The test trains 2 epochs straight and
1 epoch + save + load into fresh objects + 1 epoch, and asks for identical parameters; then
shows that leaving out the optimiser or the generator state breaks it (so the test can fail).
"""

import time

import numpy as np
import pytest

import minilucid as ml
from minilucid import nn, optim
from minilucid.data import DataLoader, TensorDataset
from minilucid.datasets import digits


def small_digits(n: int = 256) -> TensorDataset:
    x, y = digits("train").tensors
    return TensorDataset(ml.tensor(x.data[:n]), ml.tensor(y.data[:n]))


class Run:
    """Everything one training run holds; `seed` decides the initial weights and the order."""

    def __init__(self, seed: int):
        ml.manual_seed(seed)
        self.model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))
        self.optimizer = optim.Adam(self.model.parameters(), lr=0.01)
        self.scheduler = optim.lr_scheduler.StepLR(self.optimizer, step_size=2, gamma=0.5)
        self.generator = np.random.default_rng(seed)
        self.loader = DataLoader(
            small_digits(), batch_size=24, shuffle=True, generator=self.generator
        )
        self.loss_fn = nn.CrossEntropyLoss()
        self.epoch = 0

    def train_epoch(self):
        self.model.train()
        for x, y in self.loader:
            loss = self.loss_fn(self.model(x), y)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
        self.scheduler.step()
        self.epoch += 1

    def checkpoint(self, leave_out=()) -> dict:
        state = {
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "scheduler": self.scheduler.state_dict(),
            "epoch": self.epoch,
            "generator": self.generator.bit_generator.state,
        }
        return {k: v for k, v in state.items() if k not in leave_out}

    def restore(self, checkpoint: dict):
        self.model.load_state_dict(checkpoint["model"])
        if "optimizer" in checkpoint:
            self.optimizer.load_state_dict(checkpoint["optimizer"])
        if "scheduler" in checkpoint:
            self.scheduler.load_state_dict(checkpoint["scheduler"])
        if "generator" in checkpoint:
            self.generator.bit_generator.state = checkpoint["generator"]
        self.epoch = checkpoint["epoch"]

    def weights(self) -> dict:
        return {k: v.data.copy() for k, v in self.model.state_dict().items()}


def straight(epochs: int = 2) -> dict:
    run = Run(seed=0)
    for _ in range(epochs):
        run.train_epoch()
    return run.weights()


def resumed(tmp_path, after: int = 1, leave_out=()) -> dict:
    first = Run(seed=0)
    first.train_epoch()
    path = tmp_path / "checkpoint.npz"
    ml.save(first.checkpoint(leave_out), path)
    del first
    second = Run(seed=123)  # other weights, another order: all of it must come from the file
    second.restore(ml.load(path))
    assert second.epoch == 1
    for _ in range(after):
        second.train_epoch()
    return second.weights()


def test_two_epochs_straight_equal_one_plus_save_load_plus_one(tmp_path):
    a, b = straight(), resumed(tmp_path)
    assert a.keys() == b.keys() == {"0.weight", "0.bias", "2.weight", "2.bias"}
    for name in a:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)
    assert not np.array_equal(a["0.weight"], Run(seed=0).weights()["0.weight"])  # it trained
    a, b = straight(3), resumed(tmp_path, after=2)  # the schedule's state counts from here on
    for name in a:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)


@pytest.mark.parametrize("missing", ["optimizer", "generator", "scheduler"])
def test_resuming_without_a_piece_of_state_is_not_exact(tmp_path, missing):
    a, b = straight(3), resumed(tmp_path, after=2, leave_out=(missing,))
    assert any(not np.array_equal(a[k], b[k]) for k in a)


def test_checkpoint_file_holds_no_pickles(tmp_path):
    run = Run(seed=0)
    run.train_epoch()
    path = tmp_path / "checkpoint.npz"
    ml.save(run.checkpoint(), path)
    with np.load(path, allow_pickle=False) as stored:  # raises on an object array
        arrays = [stored[key] for key in stored.files if not key.startswith("__")]
    assert arrays and all(a.dtype != object for a in arrays)
    back = ml.load(path)
    assert back["epoch"] == 1 and back["generator"] == run.generator.bit_generator.state


def test_an_mlp_reaches_97_percent_on_the_digits_within_30_seconds():
    """Chapter 09's run: 64-128-10 ReLU, Adam 3e-3 with cosine decay, batch 32, 30 epochs, seed 3
    (the best of seeds 0-4 on the validation split)."""
    start = time.perf_counter()
    ml.manual_seed(3)
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
    optimizer = optim.Adam(model.parameters(), lr=3e-3)
    epochs = 30
    scheduler = optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=epochs)
    loader = DataLoader(
        digits("train"), batch_size=32, shuffle=True, generator=np.random.default_rng(3)
    )
    loss_fn = nn.CrossEntropyLoss()
    for _ in range(epochs):
        for x, y in loader:
            loss = loss_fn(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        scheduler.step()
    seconds = time.perf_counter() - start
    x, y = digits("test").tensors
    model.eval()
    with ml.no_grad():
        accuracy = (model(x).data.argmax(axis=1) == y.data).mean()
    assert accuracy >= 0.97, f"test accuracy {accuracy:.2%}"
    assert seconds < 30, f"training took {seconds:.1f} s"


def test_training_benchmark_stops_a_wrong_engine_before_timing(monkeypatch):
    """benchmarks/training.py: one epoch of each engine must end at the hand-written weights."""
    from benchmarks import training

    training.check_epoch()  # the real engines agree
    monkeypatch.setattr(training.MinilucidTraining, "update", lambda self, _: None)
    with pytest.raises(AssertionError, match="after one epoch minilucid's W1 differs"):
        training.check_epoch()
