"""Checks for the exercises of chapter 09 (data and training).

Each check runs the learner's code on small cases built to expose one plausible mistake each,
raises AssertionError with a plain-words message on the first problem, and prints one line on
success. Expected values are computed here and never shown.
"""

from __future__ import annotations

import numpy as np

import minilucid as ml
from minilucid import nn, optim
from minilucid.data import DataLoader, TensorDataset
from minilucid.tensor import Tensor
from minilucid_course.checks.common import call, number, type_name


def _numbered(n: int) -> TensorDataset:
    """Example i is (a row of two copies of i, float32; the label i, int64)."""
    x = np.repeat(np.arange(n, dtype=np.float32)[:, None], 2, axis=1)
    return TensorDataset(Tensor(x), Tensor(np.arange(n)))


# --------------------------------------------------------------------------------------------
# Exercise 1: a DataLoader of your own


def _epoch(loader, what: str) -> list[list[int]]:
    """The labels of every batch of one pass over `loader`, checking each batch's form."""
    batches = call(f"iterating over {what}", lambda: list(iter(loader)), returns=list)
    out = []
    for k, batch in enumerate(batches):
        if not isinstance(batch, tuple) or len(batch) != 2:
            raise AssertionError(
                f"{what}: batch {k} is a {type_name(batch)}"
                + (f" of length {len(batch)}" if isinstance(batch, tuple | list) else "")
                + "; each batch should be a tuple (inputs, labels), one entry per tensor of "
                "the dataset's examples"
            )
        x, y = batch
        if not isinstance(x, Tensor) or not isinstance(y, Tensor):
            raise AssertionError(
                f"{what}: batch {k} holds a {type_name(x)} and a {type_name(y)}; stack the "
                "examples' arrays and wrap each result in a Tensor"
            )
        if x.ndim != 2 or x.shape[1] != 2 or y.shape != (x.shape[0],):
            raise AssertionError(
                f"{what}: batch {k} has inputs of shape {x.shape} and labels of shape "
                f"{y.shape}; for examples of shape (2,) and () a batch of b examples should "
                "be (b, 2) and (b,): stack the examples along a new first axis"
            )
        if x.dtype != np.float32 or y.dtype != np.int64:
            raise AssertionError(
                f"{what}: batch {k} has dtypes {x.dtype} and {y.dtype}; keep the dataset's "
                "dtypes (float32 inputs, int64 labels)"
            )
        labels = [int(v) for v in y.data]
        if any(row[0] != label for row, label in zip(x.data.tolist(), labels, strict=True)):
            raise AssertionError(
                f"{what}: in batch {k} the inputs and labels no longer belong together; take "
                "both from the same examples, in the same order"
            )
        out.append(labels)
    return out


def _make(cls, what: str, *args, **kwargs):
    return call(what, cls, *args, **kwargs)


def check_my_data_loader(cls) -> None:
    """Batches in order, sizes, drop_last, len, shuffling per epoch, seeds, bad batch sizes."""
    ds = _numbered(10)
    for bs, drop in [
        (3, False),
        (3, True),
        (5, False),
        (4, True),
        (12, False),
        (12, True),
        (1, False),
    ]:
        what = f"MyDataLoader(10 examples, batch_size={bs}, drop_last={drop})"
        loader = _make(cls, what, ds, batch_size=bs, drop_last=drop)
        got = _epoch(loader, what)
        full, rest = divmod(10, bs)
        sizes = [bs] * full + ([rest] if rest and not drop else [])
        if [len(b) for b in got] != sizes:
            tail = (
                " With drop_last=True the last, short batch is left out."
                if drop
                else " Without drop_last the last batch keeps the examples that are left."
            )
            raise AssertionError(
                f"{what} gave batches of sizes {[len(b) for b in got]}, expected {sizes}.{tail}"
            )
        if sum(got, []) != list(range(sum(sizes))):
            raise AssertionError(
                f"{what} without shuffle gave the examples {sum(got, [])}; it should give "
                "them in the dataset's order, 0, 1, 2, ..."
            )
        length = call(f"len({what})", len, loader)
        if length != len(sizes):
            raise AssertionError(
                f"len({what}) is {length}, but it gives {len(sizes)} batches; len is the "
                "number of batches (rounded up, or down with drop_last)"
            )

    what = "MyDataLoader(23 examples, batch_size=5, shuffle=True, generator=default_rng(0))"
    loader = _make(cls, what, _numbered(23), 5, shuffle=True, generator=np.random.default_rng(0))
    epochs = [_epoch(loader, what) for _ in range(3)]
    for e, epoch in enumerate(epochs, start=1):
        if sorted(sum(epoch, [])) != list(range(23)):
            raise AssertionError(
                f"{what}: epoch {e} did not give every example exactly once. Shuffle a "
                "permutation of the indices 0..n-1, then cut it into batches."
            )
    if sum(epochs[0], []) == list(range(23)):
        raise AssertionError(f"{what} gave the examples in order: shuffle=True should shuffle")
    if epochs[0] == epochs[1] or epochs[1] == epochs[2]:
        raise AssertionError(
            f"{what} gave the same order in two epochs. Draw a new permutation each time "
            "iteration starts (in __iter__), not once in __init__."
        )
    again = _make(cls, what, _numbered(23), 5, shuffle=True, generator=np.random.default_rng(0))
    if [_epoch(again, what) for _ in range(3)] != epochs:
        raise AssertionError(
            "two loaders made with generator=np.random.default_rng(0) gave different "
            "epochs. Draw every permutation from the generator you were given, so that the "
            "same seed repeats the same epochs."
        )
    other = _make(cls, what, _numbered(23), 5, shuffle=True, generator=np.random.default_rng(1))
    if _epoch(other, what) == epochs[0]:
        raise AssertionError(
            "loaders made with default_rng(0) and default_rng(1) shuffled alike: use the "
            "generator you were given"
        )

    for bad in (0, -2):
        try:
            with np.errstate(all="ignore"):
                cls(_numbered(4), batch_size=bad)
        except NotImplementedError:
            raise
        except ValueError as error:
            if str(bad) not in str(error):
                raise AssertionError(
                    f"MyDataLoader(batch_size={bad}) raised ValueError({str(error)!r}); say "
                    f"which value was wrong: the message should contain {bad}"
                ) from None
            continue
        except Exception as error:
            raise AssertionError(
                f"MyDataLoader(batch_size={bad}) raised {type(error).__name__}; raise a "
                "ValueError that names the value"
            ) from None
        raise AssertionError(
            f"MyDataLoader(batch_size={bad}) was accepted; refuse it in __init__ with a "
            "ValueError that names the value (a loader that cannot make a batch would loop "
            "forever or give nothing)"
        )
    print("✓ MyDataLoader: batches in order, sizes, drop_last, len, fresh seeded shuffles")


# --------------------------------------------------------------------------------------------
# Exercise 2: evaluate


class _Spy(nn.Module):
    """A fixed linear classifier that notes the mode and grad recording of each forward."""

    def __init__(self):
        super().__init__()
        self.layer = nn.Linear(2, 3)
        self.layer.weight.data[...] = [[1.0, -1.0], [-0.5, 0.5], [0.2, 0.3]]
        self.layer.bias.data[...] = [0.1, -0.2, 0.0]
        self.seen = []

    def forward(self, x):
        self.seen.append((self.training, ml.is_grad_enabled()))
        return self.layer(x)


def _eval_data():
    """Nine examples; the last batch of a batch-4 loader has one, badly classified, example."""
    rng = np.random.default_rng(9)
    x = rng.normal(size=(9, 2)).astype(np.float32)
    y = np.array([0, 1, 2, 0, 1, 2, 0, 0, 1])
    x[8] = [4.0, -4.0]  # class 0 by far; labelled 1: a large loss in a batch of one
    return TensorDataset(Tensor(x), Tensor(y))


def _reference(model, dataset) -> tuple[float, float]:
    x, y = dataset.tensors
    with ml.no_grad():
        logits = model.layer(x)
        log_p = nn.functional.log_softmax(logits).data
    loss = -log_p[np.arange(len(y)), y.data]  # one loss per example
    return float(loss.mean()), float((logits.data.argmax(axis=1) == y.data).mean())


def check_evaluate(evaluate) -> None:
    """Mean loss per example and accuracy as floats, in eval mode, without recording."""
    dataset = _eval_data()
    model = _Spy()
    model.train()
    loader = DataLoader(dataset, batch_size=4)
    what = "evaluate(model, loader, loss_fn) on 9 examples in batches of 4, 4, 1"
    result = call(what, evaluate, model, loader, nn.CrossEntropyLoss(), returns=tuple)
    if len(result) != 2:
        raise AssertionError(f"{what} returned {len(result)} values; return (loss, accuracy)")
    loss, accuracy = result
    for name, value in (("loss", loss), ("accuracy", accuracy)):
        if isinstance(value, Tensor) or not isinstance(value, float | int):
            raise AssertionError(
                f"{what}: the {name} is a {type_name(value)}; return a plain Python number "
                "(.item() of a one-element tensor, float(...) of a NumPy number)"
            )
    if not model.seen:
        raise AssertionError(f"{what} never called the model")
    if any(training for training, _ in model.seen):
        raise AssertionError(
            f"{what} ran the model in training mode. Call model.eval() first: layers such as "
            "dropout and batch norm (chapter 11) behave differently when evaluating."
        )
    if any(recording for _, recording in model.seen):
        raise AssertionError(
            f"{what} recorded a graph for every batch. Wrap the loop in `with ml.no_grad():`: "
            "evaluation needs no gradients, and the graph costs time and memory."
        )
    if not ml.is_grad_enabled():
        ml.set_grad_enabled(True)
        raise AssertionError(f"after {what}, gradient recording was still off; use no_grad")
    want_loss, want_accuracy = _reference(model, dataset)
    if 1 < accuracy <= 100:
        raise AssertionError(
            f"{what}: accuracy {number(accuracy)} looks like a percentage; "
            "return the fraction correct, between 0 and 1"
        )
    if not np.isclose(accuracy, want_accuracy, atol=1e-9):
        raise AssertionError(
            f"{what}: accuracy {number(accuracy)} is not the fraction of the 9 examples whose "
            "largest logit is at their label. Count correct answers over all batches, then "
            "divide by the number of examples."
        )
    if not np.isclose(loss, want_loss, rtol=1e-5):
        batch_means = [nn.functional.cross_entropy(model.layer(x), y).item() for x, y in loader]
        if np.isclose(loss, np.mean(batch_means), rtol=1e-5):
            raise AssertionError(
                f"{what}: the loss is the mean of the batches' mean losses, which gives the "
                "last batch of 1 example as much weight as a batch of 4. Weight each batch's "
                "mean by its size, then divide by the number of examples."
            )
        raise AssertionError(
            f"{what}: the loss {number(loss)} is not the mean loss per example over the "
            "whole loader"
        )
    print("✓ evaluate: loss per example and accuracy, in eval mode, without a graph")


# --------------------------------------------------------------------------------------------
# Exercise 3: early stopping


def early_stopping_problem(seed: int = 0, adam=optim.Adam):
    """A small, overfitting problem: (model, optimizer, train_loader, val_loader, loss_fn)."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(3, 4)) * 1.2
    labels = rng.integers(0, 3, size=80)
    x = (centres[labels] + rng.normal(size=(80, 4))).astype(np.float32)
    noisy = labels.copy()
    flip = rng.random(80) < 0.25
    noisy[flip] = rng.integers(0, 3, size=flip.sum())  # wrong labels: something to overfit
    train = TensorDataset(Tensor(x[:40]), Tensor(noisy[:40]))
    val = TensorDataset(Tensor(x[40:]), Tensor(labels[40:]))
    ml.manual_seed(seed)
    model = nn.Sequential(nn.Linear(4, 64), nn.ReLU(), nn.Linear(64, 3))
    optimizer = adam(model.parameters(), lr=0.004)
    train_loader = DataLoader(
        train, batch_size=8, shuffle=True, generator=np.random.default_rng(seed)
    )
    return model, optimizer, train_loader, DataLoader(val, batch_size=20), nn.CrossEntropyLoss()


def _val_loss(model, loader, loss_fn) -> float:
    model.eval()
    total, count = 0.0, 0
    with ml.no_grad():
        for x, y in loader:
            total += loss_fn(model(x), y).item() * len(y)
            count += len(y)
    return total / count


def _reference_run(seed, patience, max_epochs):
    """The val losses a correct early stopping sees, the best epoch, and the best weights."""
    model, optimizer, train_loader, val_loader, loss_fn = early_stopping_problem(seed)
    losses, best, best_state, waited = [], float("inf"), None, 0
    for _ in range(max_epochs):
        model.train()
        for x, y in train_loader:
            loss = loss_fn(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        losses.append(_val_loss(model, val_loader, loss_fn))
        if losses[-1] < best:
            best, waited = losses[-1], 0
            best_state = {k: v.data.copy() for k, v in model.state_dict().items()}
        else:
            waited += 1
            if waited >= patience:
                break
    return losses, int(np.argmin(losses)), best_state


def check_early_stopping(fit_early_stopping) -> None:
    """Stops `patience` epochs after the best validation loss, with the best weights back."""
    for seed, patience, max_epochs in [(0, 3, 60), (1, 5, 60), (2, 2, 60), (0, 100, 12)]:
        want, best_epoch, best_state = _reference_run(seed, patience, max_epochs)
        problem = early_stopping_problem(seed, _ModeWatchingAdam)
        model, optimizer, train_loader, val_loader, loss_fn = problem
        optimizer.model = model
        what = f"fit_early_stopping(..., patience={patience}, max_epochs={max_epochs})"
        got = call(
            what,
            fit_early_stopping,
            model,
            optimizer,
            train_loader,
            val_loader,
            loss_fn,
            patience=patience,
            max_epochs=max_epochs,
            returns=list,
        )
        if optimizer.steps_in_eval:
            raise AssertionError(
                f"{what}: the optimiser stepped while the model was in eval mode (evaluate "
                "leaves it there), so dropout and batch norm would train as if evaluating. "
                "Call model.train() at the start of every epoch"
            )
        if len(got) != len(want):
            stop = len(want)
            if len(got) == max_epochs:
                hint = "it never stopped early"
            elif len(got) == stop - 1:
                hint = "it stopped one epoch too early"
            elif len(got) == stop + 1:
                hint = "it stopped one epoch too late"
            else:
                hint = "it stopped at another epoch"
            raise AssertionError(
                f"{what} trained {len(got)} epochs; the best validation loss came in epoch "
                f"{best_epoch + 1}, so with patience {patience} it should stop after "
                f"{min(best_epoch + 1 + patience, max_epochs)} epochs: {hint}. Count the "
                "epochs since the best one, and stop when that count reaches patience."
            )
        if not np.allclose(got, want, rtol=1e-4, atol=1e-6):
            raise AssertionError(
                f"{what}: the validation losses it returned are not those of the model after "
                "each epoch: return, for every epoch, the mean loss per example on "
                "val_loader, measured after that epoch's training"
            )
        final = {k: v.data for k, v in model.state_dict().items()}
        if not all(np.allclose(final[k], best_state[k], atol=1e-6) for k in best_state):
            end = _val_loss(model, val_loader, loss_fn)
            aliased = np.isclose(end, got[-1], rtol=1e-6) and best_epoch != len(got) - 1
            raise AssertionError(
                f"{what}: the model ends with validation loss {number(end)}, not the best "
                f"one, {number(min(got))} (epoch {best_epoch + 1}). Keep a copy of the best "
                "weights and load them back at the end"
                + (
                    ": a state_dict shares the model's arrays, which the optimiser keeps "
                    "changing, so copy the arrays ({k: v.data.copy() ...})."
                    if aliased
                    else "."
                )
            )
    _plateau_problem(fit_early_stopping)
    print("✓ fit_early_stopping: stops patience epochs after the best one, best weights back")


class _ModeWatchingAdam(optim.Adam):
    """Adam that counts the steps it takes while `self.model` is in eval mode."""

    model, steps_in_eval = None, 0

    def step(self) -> None:
        if not self.model.training:
            self.steps_in_eval += 1
        super().step()


def _plateau_problem(fit_early_stopping) -> None:
    """With lr = 0 the validation loss never changes: equal is not better."""
    model, optimizer, train_loader, val_loader, loss_fn = early_stopping_problem(0)
    for group in optimizer.param_groups:
        group["lr"] = 0.0
    what = "fit_early_stopping(..., patience=2, max_epochs=10) with lr=0"
    got = call(
        what, fit_early_stopping, model, optimizer, train_loader, val_loader, loss_fn,
        patience=2, max_epochs=10, returns=list,
    )  # fmt: skip
    if len(got) != 3:
        raise AssertionError(
            f"{what}, so the validation loss never changes: it trained {len(got)} epochs, not "
            "3 (the first, then patience epochs without improvement). A loss equal to the best "
            "one is no improvement: only a strictly smaller one resets the count"
        )


def your_early_stopping_picture(fit_early_stopping) -> None:
    """What your early stopping saw on the problem of seed 1: the validation loss per epoch."""
    import matplotlib.pyplot as plt

    model, optimizer, train_loader, val_loader, loss_fn = early_stopping_problem(seed=1)
    seen = call(
        "fit_early_stopping(..., patience=5, max_epochs=60)",
        fit_early_stopping,
        model,
        optimizer,
        train_loader,
        val_loader,
        loss_fn,
        patience=5,
        max_epochs=60,
        returns=list,
    )
    best = int(np.argmin(seen))
    fig, ax = plt.subplots(figsize=(5, 2.8))
    ax.plot(range(1, len(seen) + 1), seen, "C1.-", label="validation loss")
    ax.axvline(best + 1, color="gray", ls="--", label=f"best: epoch {best + 1}")
    ax.set(xlabel="epoch", title=f"stopped after {len(seen)} epochs (patience 5)")
    ax.legend(fontsize=9)
    fig.tight_layout()
    plt.show()
