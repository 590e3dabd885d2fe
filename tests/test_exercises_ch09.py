"""Chapter 09 (Data and training): every exercise check accepts the solution and rejects wrong
answers.

Each wrong answer below is a mistake people make when they write a data loader, an evaluation
or early stopping; the check must reject it and, where it can tell, name it.
"""

import functools
from pathlib import Path

import pytest
from forged_data import forged_data_test
from nbharness import Wrong, edited, mutation_tests, rejected, run_check, unanswered

import minilucid as ml

NB = Path(__file__).resolve().parents[1] / "solutions" / "09_data_and_training.ipynb"

_rejected = functools.partial(rejected, NB)
_unanswered = functools.partial(unanswered, NB)


@pytest.fixture(autouse=True)
def recording_stays_on():
    """A wrong answer may switch recording off; never let that leak into other tests."""
    yield
    ml.set_grad_enabled(True)


# --------------------------------------------------------------------------------------------
# Exercise 1: MyDataLoader

EX1 = ("ex09_1_data_loader_check", "ex09_1_data_loader_answer")
ORDER = "order = self.generator.permutation(n) if self.shuffle else np.arange(n)"
STACK = "yield tuple(Tensor(np.stack([t.data for t in column])) for column in zip(*examples))"


def _loader(*edits):
    return edited(NB, EX1[1], list(edits))


def test_ex1_solution_passes(capsys):
    run_check(NB, EX1[0])
    assert "✓ MyDataLoader" in capsys.readouterr().out


# --------------------------------------------------------------------------------------------
# Exercise 2: evaluate

EX2 = ("ex09_2_evaluate_check", "ex09_2_evaluate_answer")


def _evaluate(*edits):
    return edited(NB, EX2[1], list(edits))


def test_ex2_solution_passes(capsys):
    run_check(NB, EX2[0])
    assert "✓ evaluate" in capsys.readouterr().out


# --------------------------------------------------------------------------------------------
# Exercise 3: early stopping

EX3 = ("ex09_3_early_stopping_check", "ex09_3_early_stopping_answer")
COPY = "best_state = {k: v.data.copy() for k, v in model.state_dict().items()}"


def _fit(*edits):
    return edited(NB, EX3[1], list(edits))


def test_ex3_solution_passes(capsys):
    run_check(NB, EX3[0])
    assert "✓ fit_early_stopping" in capsys.readouterr().out


# --- the one style: every wrong answer above, fed to its check ---------------------------

EXERCISES = {
    "data_loader": ("ex09_1_data_loader_answer", "ex09_1_data_loader_check"),
    "evaluate": ("ex09_2_evaluate_answer", "ex09_2_evaluate_check"),
    "early_stopping": ("ex09_3_early_stopping_answer", "ex09_3_early_stopping_check"),
}

MUTANTS = {
    "data_loader": {
        "a loader that never shuffles": Wrong(
            _loader((ORDER, "order = np.arange(n)")),
            "gave the examples in order",
        ),
        "one permutation for every epoch": Wrong(
            _loader(
                (
                    "self.generator = np.random.default_rng() if generator is None else generator",
                    "self.generator = np.random.default_rng() if generator is None else generator\n"
                    "        self.order = self.generator.permutation(len(dataset))",
                ),
                (ORDER, "order = self.order if self.shuffle else np.arange(n)"),
            ),
            "same order in two epochs",
            "__iter__",
        ),
        "numpys global random numbers": Wrong(
            _loader((ORDER, "order = np.random.permutation(n) if self.shuffle else np.arange(n)")),
            "default_rng(0) gave different epochs",
        ),
        "a fresh unseeded generator per epoch": Wrong(
            _loader(
                (
                    ORDER,
                    "order = np.random.default_rng().permutation(n) if self.shuffle "
                    "else np.arange(n)",
                )
            ),
            "generator",
        ),
        "ignoring drop last": Wrong(
            _loader(("return n // b if self.drop_last else -(-n // b)", "return -(-n // b)")),
            "drop_last=True",
            "batches of sizes",
        ),
        "always dropping the short batch": Wrong(
            _loader(("return n // b if self.drop_last else -(-n // b)", "return n // b")),
            "Without drop_last the last batch keeps",
        ),
        "a len that is not the number of batches": Wrong(
            _loader(
                ("return n // b if self.drop_last else -(-n // b)", "return n"),
                (
                    "for k in range(len(self)):",
                    "for k in range(n // self.batch_size if self.drop_last "
                    "else -(-n // self.batch_size)):",
                ),
            ),
            "len(",
            "number of batches",
        ),
        "accepting batch size zero": Wrong(
            _loader(("if batch_size <= 0:", "if batch_size < 0:")),
            "batch_size=0",
            "was accepted",
        ),
        "refusing a batch of one": Wrong(
            _loader(("if batch_size <= 0:", "if batch_size <= 1:")), "batch_size=1"
        ),
        "an error that does not name the value": Wrong(
            _loader(
                (
                    'f"MyDataLoader: batch_size must be positive, got {batch_size}"',
                    '"batch_size must be positive"',
                )
            ),
            "should contain",
        ),
        "an error of another kind": Wrong(
            _loader(("raise ValueError(", "raise TypeError(")),
            "raised TypeError",
            "ValueError",
        ),
        "batches as lists": Wrong(
            _loader((STACK, STACK.replace("yield tuple(", "yield list("))),
            "batch 0 is a list",
            "tuple",
        ),
        "batches of arrays": Wrong(
            _loader(
                (
                    STACK,
                    "yield tuple(np.stack([t.data for t in column]) for column in zip(*examples))",
                )
            ),
            "holds a ndarray",
            "Tensor",
        ),
        "batches that change the dtype": Wrong(
            _loader(
                (
                    STACK,
                    "yield tuple(Tensor(np.stack([t.data for t in column]), "
                    "dtype=np.float64) for column in zip(*examples))",
                )
            ),
            "dtypes float64 and float64",
        ),
        "examples concatenated instead of stacked": Wrong(
            _loader(
                (
                    STACK,
                    "yield tuple(Tensor(np.concatenate([t.data.reshape(-1) for t in "
                    "column])) for column in zip(*examples))",
                )
            ),
            "shape",
            "new first axis",
        ),
        "inputs and labels shuffled apart": Wrong(
            _loader(
                (
                    STACK,
                    "xs, ys = zip(*examples)\n"
                    "            ys = [ys[j] for j in self.generator.permutation(len(ys))] "
                    "if self.shuffle "
                    "else ys\n"
                    "            yield Tensor(np.stack([t.data for t in xs])), "
                    "Tensor(np.stack([t.data for t in ys]))",
                )
            ),
            "no longer belong together",
        ),
    },
    "evaluate": {
        "the mean of batch means": Wrong(
            _evaluate(
                (
                    "total += loss_fn(logits, y).item() * len(y)",
                    "total += loss_fn(logits, y).item()",
                ),
                (
                    "return total / count, correct / count",
                    "return total / len(loader_batches), correct / count",
                ),
                ("model.eval()", "model.eval()\n    loader_batches = list(loader)"),
            ),
            "mean of the batches' mean losses",
        ),
        "the mean of batch accuracies": Wrong(
            _evaluate(
                (
                    "correct += int((logits.data.argmax(axis=1) == y.data).sum())",
                    "correct += float((logits.data.argmax(axis=1) == y.data).mean())\n"
                    "            batches += 1",
                ),
                (
                    "return total / count, correct / count",
                    "return total / count, correct / batches",
                ),
                ("model.eval()", "model.eval()\n    batches = 0"),
            ),
            "accuracy",
            "not the fraction",
        ),
        "forgetting eval mode": Wrong(
            _evaluate(("model.eval()", "pass")),
            "training mode",
            "model.eval()",
        ),
        "recording a graph": Wrong(
            _evaluate(("with ml.no_grad():", "if True:")),
            "recorded a graph",
            "no_grad",
        ),
        "switching recording off for good": Wrong(
            _evaluate(("with ml.no_grad():", "ml.set_grad_enabled(False)\n    if True:")),
            "still off",
        ),
        "a percentage": Wrong(
            _evaluate(
                (
                    "return total / count, correct / count",
                    "return total / count, 100 * correct / count",
                )
            ),
            "percentage",
        ),
        "a tensor loss": Wrong(
            _evaluate(
                (
                    "total += loss_fn(logits, y).item() * len(y)",
                    "total = total + loss_fn(logits, y) * len(y)",
                ),
            ),
            "the loss is a Tensor",
            "plain Python number",
        ),
        "returning nothing": Wrong(
            _evaluate(("return total / count, correct / count", "pass")),
            "returned None",
            "forget `return`",
        ),
    },
    "early_stopping": {
        "keeping the last weights": Wrong(
            _fit(("model.load_state_dict(best_state)", "pass")),
            "not the best one",
            "not loaded back",
        ),
        "a best state dict that shares the arrays": Wrong(
            _fit((COPY, "best_state = model.state_dict()")),
            "not the best one",
            "shares the model's arrays",
        ),
        "stopping one epoch late": Wrong(
            _fit(("if waited >= patience:", "if waited > patience:")),
            "one epoch too late",
        ),
        "stopping one epoch early": Wrong(
            _fit(("if waited >= patience:", "if waited >= patience - 1:")),
            "one epoch too early",
        ),
        "never stopping": Wrong(
            _fit(("break", "pass")),
            "never stopped early",
        ),
        "a counter that is not reset by a new best": Wrong(
            _fit(("best, waited = val_loss, 0", "best = val_loss")),
            "trained",
            "should stop after",
        ),
        "measuring before training": _fit(
            (
                "        model.train()\n        for x, y in train_loader:",
                "        val_loss, _ = evaluate(model, val_loader, loss_fn)\n"
                "        model.train()\n        for x, y in train_loader:",
            ),
            (
                "        val_loss, _ = evaluate(model, val_loader, loss_fn)\n        val_losses",
                "        val_losses",
            ),
        ),
        "training in eval mode after the first evaluation": Wrong(
            _fit(
                (
                    "        model.train()\n        for x, y in train_loader:",
                    "        for x, y in train_loader:",
                )
            ),
            "eval mode",
        ),
        "an equal loss counts as an improvement": Wrong(
            _fit(("if val_loss < best:", "if val_loss <= best:")), "never changes", "strictly"
        ),
        "stopping on the training loss": _fit(
            (
                "val_loss, _ = evaluate(model, val_loader, loss_fn)",
                "val_loss, _ = evaluate(model, train_loader, loss_fn)",
            )
        ),
    },
}

test_the_solution_passes, test_a_wrong_answer_is_rejected, test_the_stub_raises = mutation_tests(
    NB, EXERCISES, MUTANTS
)


test_forged_data_is_wrong = forged_data_test(
    NB, EXERCISES, seeded=("data_loader", "evaluate", "early_stopping")
)
