"""Checks for the exercises of chapter 09 (data and training), as probes and judges.

Each probe runs the learner's code on small seeded cases built to expose one plausible mistake
each and returns what came out as plain data (the batches a loader gives, the numbers evaluate
returns, the losses and final weights of early stopping); each judge rebuilds the cases,
computes every expected value itself and names the first problem in one line.
"""

from __future__ import annotations

import numpy as np

import minilucid as ml
from minilucid import nn, optim
from minilucid.data import DataLoader, TensorDataset
from minilucid.tensor import Tensor
from minilucid_course.checks.common import attempt, call, number
from minilucid_course.checks.exercise import Exercise, Wrong, register
from minilucid_course.checks.outcomes import called, kind, raised_first, value_of


def _numbered(n: int) -> TensorDataset:
    """Example i is (a row of two copies of i, float32; the label i, int64)."""
    x = np.repeat(np.arange(n, dtype=np.float32)[:, None], 2, axis=1)
    return TensorDataset(Tensor(x), Tensor(np.arange(n)))


# --------------------------------------------------------------------------------------------
# Exercise 1: a DataLoader of your own

_PLAIN = ((3, False), (3, True), (5, False), (4, True), (12, False), (12, True), (1, False))


def _loader_cases(seed: int) -> dict:
    rng = np.random.default_rng([9, 1, seed])
    size = 10 if seed == 0 else int(rng.integers(8, 15))
    shuffled = 23 if seed == 0 else int(rng.integers(17, 30))
    generators = [0, 1] if seed == 0 else [int(g) for g in rng.choice(1000, 2, replace=False)]
    return {"size": size, "plain": [list(c) for c in _PLAIN], "shuffled": shuffled,
            "generators": generators}  # fmt: skip


def _batch(batch) -> dict:
    if not isinstance(batch, tuple) or len(batch) != 2:
        length = len(batch) if isinstance(batch, tuple | list) else None
        return {"kind": type(batch).__name__, "length": length}
    x, y = batch
    if not isinstance(x, Tensor) or not isinstance(y, Tensor):
        return {"kind": "tuple", "holds": [type(x).__name__, type(y).__name__]}
    return {"x": np.array(x.data), "y": np.array(y.data)}


def _epoch(loader) -> dict:
    outcome = attempt(lambda: list(iter(loader)))
    if outcome[0] == "raised":
        return {"raised": list(outcome[1:])}
    return {"batches": [_batch(b) for b in outcome[1]]}


def _probe_loader(cases, cls):
    data = {"plain": []}
    for bs, drop in cases["plain"]:
        made = attempt(cls, _numbered(cases["size"]), batch_size=bs, drop_last=drop)
        if made[0] == "raised":
            data["plain"].append({"made": {"raised": list(made[1:])}})
            continue
        data["plain"].append({"made": {}, "epoch": _epoch(made[1]), "len": called(len, made[1])})
    n, (g0, g1) = cases["shuffled"], cases["generators"]
    runs = []
    for g, epochs in ((g0, 3), (g0, 3), (g1, 1)):
        made = attempt(cls, _numbered(n), 5, shuffle=True, generator=np.random.default_rng(g))
        if made[0] == "raised":
            runs.append({"made": {"raised": list(made[1:])}})
            continue
        runs.append({"made": {}, "epochs": [_epoch(made[1]) for _ in range(epochs)]})
    data["shuffled"] = runs
    data["bad"] = [called(cls, _numbered(4), batch_size=bad) for bad in (0, -2)]
    return data


def _labels(epoch, what: str) -> list[list[int]]:
    """The labels of every batch of one recorded pass, checking each batch's form."""
    raised_first(epoch, f"iterating over {what}")
    out = []
    for k, batch in enumerate(epoch["batches"]):
        if "kind" in batch:
            if batch["kind"] != "tuple" or "holds" not in batch:
                length = batch.get("length")
                raise Wrong(
                    f"{what}: batch {k} is a {batch['kind']}"
                    + (f" of length {length}" if length is not None else "")
                    + ", where the contract asks for a tuple (inputs, labels), one entry per "
                    "tensor of the dataset's examples"
                )
            a, b = batch["holds"]
            raise Wrong(f"{what}: batch {k} holds a {a} and a {b}, not two Tensors")
        x, y = batch["x"], batch["y"]
        if x.ndim != 2 or x.shape[1] != 2 or y.shape != (x.shape[0],):
            raise Wrong(
                f"{what}: batch {k} has inputs of shape {x.shape} and labels of shape "
                f"{y.shape}; for examples of shape (2,) and () a batch of b examples is "
                "(b, 2) and (b,): the examples along a new first axis"
            )
        if x.dtype != np.float32 or y.dtype != np.int64:
            raise Wrong(
                f"{what}: batch {k} has dtypes {x.dtype} and {y.dtype}, not the dataset's "
                "(float32 inputs, int64 labels)"
            )
        labels = [int(v) for v in y]
        if any(row[0] != label or row[1] != label for row, label in zip(x.tolist(), labels,
                                                                         strict=True)):  # fmt: skip
            raise Wrong(f"{what}: in batch {k} the inputs and labels no longer belong together")
        out.append(labels)
    return out


def _judge_loader(cases, data) -> str:  # noqa: C901  (one case after another)
    size = cases["size"]
    for (bs, drop), facts in zip(cases["plain"], data["plain"], strict=True):
        what = f"MyDataLoader({size} examples, batch_size={bs}, drop_last={drop})"
        raised_first(facts["made"], what)
        got = _labels(facts["epoch"], what)
        full, rest = divmod(size, bs)
        sizes = [bs] * full + ([rest] if rest and not drop else [])
        if [len(b) for b in got] != sizes:
            tail = (
                " With drop_last=True the last, short batch is left out."
                if drop
                else " Without drop_last the last batch keeps the examples that are left."
            )
            raise Wrong(
                f"{what} gave batches of sizes {[len(b) for b in got]}, expected {sizes}.{tail}"
            )
        if sum(got, []) != list(range(sum(sizes))):
            raise Wrong(
                f"{what} without shuffle gave the examples {sum(got, [])}, not in the "
                "dataset's order, 0, 1, 2, ..."
            )
        length = value_of(facts["len"], f"len({what})")
        if length != len(sizes):
            raise Wrong(
                f"len({what}) is {length}, but it gives {len(sizes)} batches: len is the "
                "number of batches"
            )
    n, (g0, g1) = cases["shuffled"], cases["generators"]
    what = f"MyDataLoader({n} examples, batch_size=5, shuffle=True, generator=default_rng({g0}))"
    runs = data["shuffled"]
    if len(runs) != 3:
        raise Wrong(f"{what}: the epochs could not be read")
    for run in runs:
        raised_first(run["made"], what)
    epochs = [_labels(e, what) for e in runs[0]["epochs"]]
    if len(epochs) != 3:
        raise Wrong(f"{what}: the epochs could not be read")
    for e, epoch in enumerate(epochs, start=1):
        if sorted(sum(epoch, [])) != list(range(n)):
            raise Wrong(f"{what}: epoch {e} did not give every example exactly once")
    if sum(epochs[0], []) == list(range(n)):
        raise Wrong(f"{what} gave the examples in order, though shuffle=True")
    if epochs[0] == epochs[1] or epochs[1] == epochs[2]:
        raise Wrong(
            f"{what} gave the same order in two epochs: is the permutation drawn once, in "
            "__init__, rather than each time iteration starts (__iter__)?"
        )
    if [_labels(e, what) for e in runs[1]["epochs"]] != epochs:
        raise Wrong(
            f"two loaders made with generator=np.random.default_rng({g0}) gave different "
            "epochs: the permutations do not come from the generator it was given"
        )
    if [_labels(e, what) for e in runs[2]["epochs"]] == epochs[:1]:
        raise Wrong(
            f"loaders made with default_rng({g0}) and default_rng({g1}) shuffled alike: the "
            "generator it was given is not the one it draws from"
        )
    for bad, rec in zip((0, -2), data["bad"], strict=True):
        what = f"MyDataLoader(batch_size={bad})"
        if not isinstance(rec, dict):
            raise Wrong(f"{what}: its result has a form no answer gives")
        if "raised" not in rec:
            raise Wrong(
                f"{what} was accepted (a loader that cannot make a batch would loop forever or "
                "give nothing); the contract refuses it with a ValueError"
            )
        name, text = rec["raised"]
        if name != "ValueError":
            raise Wrong(f"{what} raised {name}, where the contract asks for a ValueError")
        if str(bad) not in str(text):
            raise Wrong(
                f"{what} raised ValueError({str(text)!r}), which does not say which value was "
                f"wrong: the message should contain {bad}"
            )
    return "✓ MyDataLoader: batches in order, sizes, drop_last, len, fresh seeded shuffles"


EXERCISE_LOADER = register(
    Exercise(
        check="check_my_data_loader",
        chapter="09",
        title="A DataLoader of your own",
        probe=_probe_loader,
        judge=_judge_loader,
        cases=_loader_cases,
        forbidden=("DataLoader",),
    )
)
check_my_data_loader = EXERCISE_LOADER.lab_check


# --------------------------------------------------------------------------------------------
# Exercise 2: evaluate

_WEIGHT = ((1.0, -1.0), (-0.5, 0.5), (0.2, 0.3))
_BIAS = (0.1, -0.2, 0.0)


class _Spy(nn.Module):
    """A fixed linear classifier that notes the mode and grad recording of each forward."""

    def __init__(self):
        super().__init__()
        self.layer = nn.Linear(2, 3)
        self.layer.weight.data[...] = _WEIGHT
        self.layer.bias.data[...] = _BIAS
        self.seen = []

    def forward(self, x):
        self.seen.append((self.training, ml.is_grad_enabled()))
        return self.layer(x)


def _eval_cases(seed: int) -> dict:
    return {"seed": seed}


def _eval_data(seed: int):
    """Nine examples; the last batch of a batch-4 loader has one, badly classified, example."""
    rng = np.random.default_rng(9 if seed == 0 else [9, 2, seed])
    x = rng.normal(size=(9, 2)).astype(np.float32)
    y = np.array([0, 1, 2, 0, 1, 2, 0, 0, 1]) if seed == 0 else rng.integers(0, 3, 9)
    x[8], y[8] = [4.0, -4.0], 1  # class 0 by far; labelled 1: a large loss in a batch of one
    return x, y


def _probe_eval(cases, evaluate):
    x, y = _eval_data(cases["seed"])
    model = _Spy()
    model.train()
    loader = DataLoader(TensorDataset(Tensor(x), Tensor(y)), batch_size=4)
    rec = called(evaluate, model, loader, nn.CrossEntropyLoss())
    still_off = not ml.is_grad_enabled()
    if still_off:
        ml.set_grad_enabled(True)
    return {
        "result": rec,
        "seen": [[bool(t), bool(r)] for t, r in model.seen],
        "recording_off_after": still_off,
    }


def _reference(x, y) -> tuple[float, float, float]:
    """(mean loss per example, accuracy, mean of the batches' mean losses)."""
    w, b = np.array(_WEIGHT), np.array(_BIAS)
    logits = x.astype(np.float64) @ w.T + b
    top = logits.max(1, keepdims=True)
    log_p = logits - top - np.log(np.exp(logits - top).sum(1, keepdims=True))
    loss = -log_p[np.arange(len(y)), y]
    batches = [loss[i : i + 4].mean() for i in range(0, len(y), 4)]
    return float(loss.mean()), float((logits.argmax(1) == y).mean()), float(np.mean(batches))


def _judge_eval(cases, data) -> str:
    x, y = _eval_data(cases["seed"])
    what = "evaluate(model, loader, loss_fn) on 9 examples in batches of 4, 4, 1"
    rec = data["result"]
    raised_first(rec, what)
    if rec.get("sequence") != "tuple":
        extra = " (did you forget `return`?)" if rec == {"type": "None"} else ""
        raise Wrong(f"{what} returned {kind(rec)}{extra}; it should return a tuple")
    items = rec["items"]
    if len(items) != 2:
        raise Wrong(f"{what} returned {len(items)} values, where the contract asks for two")
    values = []
    for name, item in zip(("loss", "accuracy"), items, strict=True):
        value = value_of(item, what)
        if type(value) not in (int, float):
            raise Wrong(f"{what}: the {name} is a {kind(item)}, not a plain Python number")
        values.append(float(value))
    loss, accuracy = values
    seen = data["seen"]
    if not isinstance(seen, list) or not seen:
        raise Wrong(f"{what} never called the model")
    if any(training is not False for training, _ in seen):
        raise Wrong(
            f"{what} ran the model in training mode (no model.eval()): layers such as dropout "
            "and batch norm (chapter 11) behave differently when evaluating"
        )
    if any(recording is not False for _, recording in seen):
        raise Wrong(
            f"{what} recorded a graph for every batch (no no_grad): evaluation needs no "
            "gradients, and the graph costs time and memory"
        )
    if data["recording_off_after"] is not False:
        raise Wrong(f"after {what}, gradient recording was still off")
    want_loss, want_accuracy, batch_means = _reference(x, y)
    if 1 < accuracy <= 100:
        raise Wrong(f"{what}: accuracy {number(accuracy)} looks like a percentage")
    if not np.isclose(accuracy, want_accuracy, atol=1e-9):
        raise Wrong(
            f"{what}: accuracy {number(accuracy)} is not the fraction of the 9 examples whose "
            "largest logit is at their label"
        )
    if not np.isclose(loss, want_loss, rtol=1e-5):
        if np.isclose(loss, batch_means, rtol=1e-5):
            raise Wrong(
                f"{what}: the loss is the mean of the batches' mean losses, which gives the "
                "last batch of 1 example as much weight as a batch of 4"
            )
        raise Wrong(
            f"{what}: the loss {number(loss)} is not the mean loss per example over the whole "
            "loader"
        )
    return "✓ evaluate: loss per example and accuracy, in eval mode, without a graph"


EXERCISE_EVALUATE = register(
    Exercise(
        check="check_evaluate",
        chapter="09",
        title="evaluate",
        probe=_probe_eval,
        judge=_judge_eval,
        cases=_eval_cases,
    )
)
check_evaluate = EXERCISE_EVALUATE.lab_check


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


class _ModeWatchingAdam(optim.Adam):
    """Adam that counts the steps it takes while `self.model` is in eval mode."""

    model, steps_in_eval = None, 0

    def step(self) -> None:
        if not self.model.training:
            self.steps_in_eval += 1
        super().step()


_RUNS = ((0, 3, 60), (1, 5, 60), (2, 2, 60), (0, 100, 12))  # (problem seed, patience, epochs)


def _early_cases(seed: int) -> dict:
    return {"runs": [[s + 10 * seed, p, e] for s, p, e in _RUNS], "plateau": 10 * seed}


def _fit(fit_early_stopping, problem, patience, max_epochs) -> dict:
    model, optimizer, train_loader, val_loader, loss_fn = problem
    rec = called(fit_early_stopping, model, optimizer, train_loader, val_loader, loss_fn,
                 patience=patience, max_epochs=max_epochs)  # fmt: skip
    state = attempt(lambda: {str(k): np.array(v.data) for k, v in model.state_dict().items()})
    return {
        "losses": rec,
        "steps_in_eval": int(getattr(optimizer, "steps_in_eval", 0)),
        "final": {"raised": list(state[1:])} if state[0] == "raised" else state[1],
    }


def _probe_early(cases, fit_early_stopping):
    runs = []
    for seed, patience, max_epochs in cases["runs"]:
        problem = early_stopping_problem(seed, _ModeWatchingAdam)
        problem[1].model = problem[0]
        runs.append(_fit(fit_early_stopping, problem, patience, max_epochs))
    model, optimizer, train_loader, val_loader, loss_fn = early_stopping_problem(cases["plateau"])
    for group in optimizer.param_groups:
        group["lr"] = 0.0
    plateau = called(fit_early_stopping, model, optimizer, train_loader, val_loader, loss_fn,
                     patience=2, max_epochs=10)  # fmt: skip
    return {"runs": runs, "plateau": plateau}


def _floats(rec, what: str) -> list:
    raised_first(rec, what)
    if rec.get("sequence") != "list":
        extra = " (did you forget `return`?)" if rec == {"type": "None"} else ""
        raise Wrong(f"{what} returned {kind(rec)}{extra}; it should return a list")
    out = [value_of(item, what) for item in rec["items"]] if len(rec["items"]) < 64 else None
    if out is None or any(type(v) not in (int, float) for v in out):
        raise Wrong(f"{what}: the list does not hold one number per epoch")
    return [float(v) for v in out]


def _judge_early(cases, data) -> str:
    for (seed, patience, max_epochs), facts in zip(cases["runs"], data["runs"], strict=True):
        want, best_epoch, best_state = _reference_run(seed, patience, max_epochs)
        what = f"fit_early_stopping(..., patience={patience}, max_epochs={max_epochs})"
        got = _floats(facts["losses"], what)
        if facts["steps_in_eval"] != 0:
            raise Wrong(
                f"{what}: the optimiser stepped while the model was in eval mode (evaluate "
                "leaves it there), so dropout and batch norm would train as if evaluating"
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
            raise Wrong(
                f"{what} trained {len(got)} epochs; the best validation loss came in epoch "
                f"{best_epoch + 1}, so with patience {patience} it should stop after "
                f"{min(best_epoch + 1 + patience, max_epochs)} epochs: {hint}"
            )
        if not np.allclose(got, want, rtol=1e-4, atol=1e-6):
            raise Wrong(
                f"{what}: the validation losses it returned are not those of the model after "
                "each epoch (the mean loss per example on val_loader)"
            )
        final = facts["final"]
        raised_first(final if "raised" in final else {}, f"{what}: reading the model")
        if set(final) != set(best_state) or not all(
            final[k].shape == best_state[k].shape
            and np.allclose(final[k], best_state[k], atol=1e-6)
            for k in best_state
        ):
            model, _, _, val_loader, loss_fn = early_stopping_problem(seed)
            if set(final) == set(best_state) and all(
                final[k].shape == best_state[k].shape for k in best_state
            ):
                model.load_state_dict({k: Tensor(v) for k, v in final.items()})
            end = _val_loss(model, val_loader, loss_fn)
            aliased = np.isclose(end, got[-1], rtol=1e-6) and best_epoch != len(got) - 1
            raise Wrong(
                f"{what}: the model ends with validation loss {number(end)}, not the best "
                f"one, {number(min(got))} (epoch {best_epoch + 1}): the best weights are not "
                "loaded back at the end"
                + (
                    ", or the copy kept of them shares the model's arrays, which the optimiser "
                    "keeps changing"
                    if aliased
                    else ""
                )
            )
    what = "fit_early_stopping(..., patience=2, max_epochs=10) with lr=0"
    got = _floats(data["plateau"], what)
    if len(got) != 3:
        raise Wrong(
            f"{what}, so the validation loss never changes: it trained {len(got)} epochs, not "
            "3 (the first, then patience epochs without improvement). Is a loss equal to the "
            "best one counted as an improvement? Only a strictly smaller one is"
        )
    return "✓ fit_early_stopping: stops patience epochs after the best one, best weights back"


EXERCISE_EARLY = register(
    Exercise(
        check="check_early_stopping",
        chapter="09",
        title="Early stopping",
        probe=_probe_early,
        judge=_judge_early,
        cases=_early_cases,
    )
)
check_early_stopping = EXERCISE_EARLY.lab_check


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
