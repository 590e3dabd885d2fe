"""Chapter 09 (Data and training): every exercise check accepts the solution and rejects wrong
answers.

Each wrong answer below is a mistake people make when they write a data loader, an evaluation
or early stopping; the check must reject it and, where it can tell, name it.
"""

import functools
from pathlib import Path

import pytest
from nbharness import edited, rejected, run_check, unanswered

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


def test_ex1_unanswered_raises_not_implemented():
    _unanswered(*EX1)


def test_ex1_rejects_a_loader_that_never_shuffles():
    wrong = _loader((ORDER, "order = np.arange(n)"))
    _rejected(*EX1, wrong, "gave the examples in order")


def test_ex1_rejects_one_permutation_for_every_epoch():
    wrong = _loader(
        (
            "self.generator = np.random.default_rng() if generator is None else generator",
            "self.generator = np.random.default_rng() if generator is None else generator\n"
            "        self.order = self.generator.permutation(len(dataset))",
        ),
        (ORDER, "order = self.order if self.shuffle else np.arange(n)"),
    )
    _rejected(*EX1, wrong, "same order in two epochs", "__iter__")


def test_ex1_rejects_numpys_global_random_numbers():
    wrong = _loader((ORDER, "order = np.random.permutation(n) if self.shuffle else np.arange(n)"))
    _rejected(*EX1, wrong, "default_rng(0) gave different epochs")


def test_ex1_rejects_a_fresh_unseeded_generator_per_epoch():
    wrong = _loader(
        (ORDER, "order = np.random.default_rng().permutation(n) if self.shuffle else np.arange(n)")
    )
    _rejected(*EX1, wrong, "generator")


def test_ex1_rejects_ignoring_drop_last():
    wrong = _loader(("return n // b if self.drop_last else -(-n // b)", "return -(-n // b)"))
    _rejected(*EX1, wrong, "drop_last=True", "batches of sizes")


def test_ex1_rejects_always_dropping_the_short_batch():
    wrong = _loader(("return n // b if self.drop_last else -(-n // b)", "return n // b"))
    _rejected(*EX1, wrong, "Without drop_last the last batch keeps")


def test_ex1_rejects_a_len_that_is_not_the_number_of_batches():
    wrong = _loader(
        ("return n // b if self.drop_last else -(-n // b)", "return n"),
        (
            "for k in range(len(self)):",
            "for k in range(n // self.batch_size if self.drop_last else -(-n // self.batch_size)):",
        ),
    )
    _rejected(*EX1, wrong, "len(", "number of batches")


def test_ex1_rejects_accepting_batch_size_zero():
    wrong = _loader(("if batch_size <= 0:", "if batch_size < 0:"))
    _rejected(*EX1, wrong, "batch_size=0", "was accepted")


def test_ex1_rejects_an_error_that_does_not_name_the_value():
    wrong = _loader(
        (
            'f"MyDataLoader: batch_size must be positive, got {batch_size}"',
            '"batch_size must be positive"',
        )
    )
    _rejected(*EX1, wrong, "should contain")


def test_ex1_rejects_an_error_of_another_kind():
    wrong = _loader(("raise ValueError(", "raise TypeError("))
    _rejected(*EX1, wrong, "raised TypeError", "ValueError")


def test_ex1_rejects_batches_as_lists():
    wrong = _loader((STACK, STACK.replace("yield tuple(", "yield list(")))
    _rejected(*EX1, wrong, "batch 0 is a list", "tuple")


def test_ex1_rejects_batches_of_arrays():
    wrong = _loader(
        (STACK, "yield tuple(np.stack([t.data for t in column]) for column in zip(*examples))")
    )
    _rejected(*EX1, wrong, "holds a ndarray", "Tensor")


def test_ex1_rejects_batches_that_change_the_dtype():
    wrong = _loader(
        (
            STACK,
            "yield tuple(Tensor(np.stack([t.data for t in column]), "
            "dtype=np.float64) for column in zip(*examples))",
        )
    )
    _rejected(*EX1, wrong, "dtypes float64 and float64")


def test_ex1_rejects_examples_concatenated_instead_of_stacked():
    wrong = _loader(
        (
            STACK,
            "yield tuple(Tensor(np.concatenate([t.data.reshape(-1) for t in "
            "column])) for column in zip(*examples))",
        )
    )
    _rejected(*EX1, wrong, "shape", "new first axis")


def test_ex1_rejects_inputs_and_labels_shuffled_apart():
    wrong = _loader(
        (
            STACK,
            "xs, ys = zip(*examples)\n"
            "            ys = [ys[j] for j in self.generator.permutation(len(ys))] if self.shuffle "
            "else ys\n"
            "            yield Tensor(np.stack([t.data for t in xs])), "
            "Tensor(np.stack([t.data for t in ys]))",
        )
    )
    _rejected(*EX1, wrong, "no longer belong together")


# --------------------------------------------------------------------------------------------
# Exercise 2: evaluate

EX2 = ("ex09_2_evaluate_check", "ex09_2_evaluate_answer")


def _evaluate(*edits):
    return edited(NB, EX2[1], list(edits))


def test_ex2_solution_passes(capsys):
    run_check(NB, EX2[0])
    assert "✓ evaluate" in capsys.readouterr().out


def test_ex2_unanswered_raises_not_implemented():
    _unanswered(*EX2)


def test_ex2_rejects_the_mean_of_batch_means():
    wrong = _evaluate(
        ("total += loss_fn(logits, y).item() * len(y)", "total += loss_fn(logits, y).item()"),
        (
            "return total / count, correct / count",
            "return total / len(loader_batches), correct / count",
        ),
        ("model.eval()", "model.eval()\n    loader_batches = list(loader)"),
    )
    _rejected(*EX2, wrong, "mean of the batches' mean losses")


def test_ex2_rejects_the_mean_of_batch_accuracies():
    wrong = _evaluate(
        (
            "correct += int((logits.data.argmax(axis=1) == y.data).sum())",
            "correct += float((logits.data.argmax(axis=1) == y.data).mean())\n"
            "            batches += 1",
        ),
        ("return total / count, correct / count", "return total / count, correct / batches"),
        ("model.eval()", "model.eval()\n    batches = 0"),
    )
    _rejected(*EX2, wrong, "accuracy", "not the fraction")


def test_ex2_rejects_forgetting_eval_mode():
    wrong = _evaluate(("model.eval()", "pass"))
    _rejected(*EX2, wrong, "training mode", "model.eval()")


def test_ex2_rejects_recording_a_graph():
    wrong = _evaluate(("with ml.no_grad():", "if True:"))
    _rejected(*EX2, wrong, "recorded a graph", "no_grad")


def test_ex2_rejects_switching_recording_off_for_good():
    wrong = _evaluate(("with ml.no_grad():", "ml.set_grad_enabled(False)\n    if True:"))
    _rejected(*EX2, wrong, "still off")


def test_ex2_rejects_a_percentage():
    wrong = _evaluate(
        ("return total / count, correct / count", "return total / count, 100 * correct / count")
    )
    _rejected(*EX2, wrong, "percentage")


def test_ex2_rejects_a_tensor_loss():
    wrong = _evaluate(
        (
            "total += loss_fn(logits, y).item() * len(y)",
            "total = total + loss_fn(logits, y) * len(y)",
        ),
    )
    _rejected(*EX2, wrong, "the loss is a Tensor", "plain Python number")


def test_ex2_rejects_returning_nothing():
    wrong = _evaluate(("return total / count, correct / count", "pass"))
    _rejected(*EX2, wrong, "returned None", "forget `return`")


# --------------------------------------------------------------------------------------------
# Exercise 3: early stopping

EX3 = ("ex09_3_early_stopping_check", "ex09_3_early_stopping_answer")
COPY = "best_state = {k: v.data.copy() for k, v in model.state_dict().items()}"


def _fit(*edits):
    return edited(NB, EX3[1], list(edits))


def test_ex3_solution_passes(capsys):
    run_check(NB, EX3[0])
    assert "✓ fit_early_stopping" in capsys.readouterr().out


def test_ex3_unanswered_raises_not_implemented():
    _unanswered(*EX3)


def test_ex3_rejects_keeping_the_last_weights():
    wrong = _fit(("model.load_state_dict(best_state)", "pass"))
    _rejected(*EX3, wrong, "not the best one", "load them back")


def test_ex3_rejects_a_best_state_dict_that_shares_the_arrays():
    wrong = _fit((COPY, "best_state = model.state_dict()"))
    _rejected(*EX3, wrong, "not the best one", "shares the model's arrays")


def test_ex3_rejects_stopping_one_epoch_late():
    wrong = _fit(("if waited >= patience:", "if waited > patience:"))
    _rejected(*EX3, wrong, "one epoch too late")


def test_ex3_rejects_stopping_one_epoch_early():
    wrong = _fit(("if waited >= patience:", "if waited >= patience - 1:"))
    _rejected(*EX3, wrong, "one epoch too early")


def test_ex3_rejects_never_stopping():
    wrong = _fit(("break", "pass"))
    _rejected(*EX3, wrong, "never stopped early")


def test_ex3_rejects_a_counter_that_is_not_reset_by_a_new_best():
    wrong = _fit(("best, waited = val_loss, 0", "best = val_loss"))
    _rejected(*EX3, wrong, "trained", "should stop after")


def test_ex3_rejects_measuring_before_training():
    wrong = _fit(
        (
            "        model.train()\n        for x, y in train_loader:",
            "        val_loss, _ = evaluate(model, val_loader, loss_fn)\n"
            "        model.train()\n        for x, y in train_loader:",
        ),
        (
            "        val_loss, _ = evaluate(model, val_loader, loss_fn)\n        val_losses",
            "        val_losses",
        ),
    )
    _rejected(*EX3, wrong)


def test_ex3_rejects_stopping_on_the_training_loss():
    wrong = _fit(
        (
            "val_loss, _ = evaluate(model, val_loader, loss_fn)",
            "val_loss, _ = evaluate(model, train_loader, loss_fn)",
        )
    )
    _rejected(*EX3, wrong)
