"""Chapter 13 (Attention): every check accepts the solution, raises NotImplementedError on the
stub, and rejects each plausible wrong answer below, naming the mistake where it can tell; every
judge rejects forged data; the training run reaches the held-out bar and an untrained one does
not."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import nbformat
import numpy as np
import pytest
from nbharness import Wrong, mutation_tests, run_check

from minilucid_course.checks import ch13
from minilucid_course.checks.exercise import LAB_SEED

NB = Path(__file__).resolve().parents[1] / "solutions" / "13_attention.ipynb"

EXERCISES = {
    "embedding": ("ex13_1_embedding_backward_answer", "ex13_1_embedding_backward_check"),
    "attention": ("ex13_2_attention_answer", "ex13_2_attention_check"),
    "backward": ("ex13_3_attention_backward_answer", "ex13_3_attention_backward_check"),
    "head": ("ex13_4_head_answer", "ex13_4_head_check"),
    "heads": ("ex13_5_multi_head_answer", "ex13_5_multi_head_check"),
    "block": ("ex13_6_block_answer", "ex13_6_block_check"),
    "gpt": ("ex13_7_tiny_gpt_answer", "ex13_7_tiny_gpt_check"),
    "loss": ("ex13_8_sort_loss_answer", "ex13_8_sort_loss_check"),
    "decode": ("ex13_9_sort_with_answer", "ex13_9_sort_with_check"),
    "training": ("ex13_10_train_answer", "ex13_10_training_check"),
}
DONE = {
    "embedding": "✓ embedding_backward",
    "attention": "✓ attention",
    "backward": "✓ attention_backward",
    "head": "✓ Head",
    "heads": "✓ MultiHeadAttention",
    "block": "✓ Block",
    "gpt": "✓ TinyGPT",
    "loss": "✓ sort_loss",
    "decode": "✓ sort_with",
    "training": "✓ the trained model sorts at least 99%",
}

ADD_AT = "np.add.at(d_weight, indices, grad)"
SCORES = "scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])"
FUTURE = "future = ml.tensor(np.triu(np.ones((L, S), dtype=bool), 1))"
FILL = "scores = scores.masked_fill(future, -math.inf)"
SOFTMAX = "weights = scores.softmax(dim=-1)"
MASK_NP = "        s = np.where(np.tri(*s.shape, dtype=bool), s, -np.inf)\n"
DS = "ds = w * (dw - (dw * w).sum(axis=-1, keepdims=True))"
QKV = "q, k, v = self.query(x), self.key(x), self.value(x)"
HEADS = "self.heads = nn.ModuleList([Head(width, size) for _ in range(heads)])"
JOIN = "joined = ml.cat([head(x) for head in self.heads], dim=-1)"
ATTEND = "h = x + self.attention(self.norm1(x))"
FEED = "return h + self.mlp(self.norm2(h))"
EMBED = "x = self.tokens(idx) + self.positions(ml.arange(T))"
PLACES = "scores = model(tokens)[:, LENGTH:]"
CE = "return F.cross_entropy(scores.reshape(-1, scores.shape[-1]), ml.tensor(answers.reshape(-1)))"
KEEP = "        losses.append(loss.item())\n"
NEXT = "tokens = ml.cat([tokens, scores.argmax(dim=-1).unsqueeze(1)], dim=1)"

MUTANTS = {
    "embedding": {
        "assignment keeps one gradient of a repeated token": Wrong(
            [(ADD_AT, "d_weight[indices] += grad")], "only one of its uses"
        ),
        "starts from ones instead of zeros": Wrong(
            [("np.zeros((num_embeddings", "np.ones((num_embeddings")], "appear nowhere"
        ),
        "a table of the wrong shape (dim, num_embeddings)": Wrong(
            [("np.zeros((num_embeddings, grad.shape[-1]))", "np.zeros((grad.shape[-1], 4))")]
            + [(ADD_AT, "pass")],
            "has shape",
        ),
        "returns the incoming gradient": Wrong([("return d_weight", "return grad")], "shape"),
        "averages over the uses instead of adding": Wrong(
            [
                (
                    "return d_weight",
                    "return d_weight / np.maximum(1, np.bincount(indices.ravel(), "
                    "minlength=num_embeddings))[:, None]",
                ),
            ],  # fmt: skip
            "mean",
        ),
        "each row scaled by its count": Wrong(
            [(ADD_AT, ADD_AT + "; d_weight *= 2")], "row 0 (token 0, used 1 time)"
        ),
    },
    "attention": {
        "scores not scaled": Wrong(
            [(SCORES, "scores = q @ k.transpose(-2, -1)")], "not scaled", "(4, 3)"
        ),
        "scores divided by E, not its square root": Wrong(
            [(SCORES, "scores = q @ k.transpose(-2, -1) / q.shape[-1]")], "divided by E"
        ),
        "scores scaled by the number of keys S": Wrong(
            [(SCORES, "scores = q @ k.transpose(-2, -1) / math.sqrt(S)")], "number of keys"
        ),
        "softmax over the queries": Wrong(
            [(SOFTMAX, "weights = scores.softmax(dim=-2)")], "over the queries"
        ),
        "the diagonal masked too": Wrong(
            [(FUTURE, "future = ml.tensor(np.triu(np.ones((L, S), dtype=bool), 0))")],
            "diagonal",
        ),
        "the mask applied after the softmax": Wrong(
            [
                (f"        {FILL}\n    {SOFTMAX}\n", f"    {SOFTMAX}\n"),
                (
                    "    return weights @ v",
                    "    if causal:\n        weights = weights.masked_fill(future, 0.0)\n"
                    "    return weights @ v",
                ),
            ],  # fmt: skip
            "after the softmax",
        ),
        "a bool mask of allowed keys read the other way": Wrong(
            [(FUTURE, "future = ml.tensor(np.tril(np.ones((L, S), dtype=bool)))")],
            "the other way",
        ),
        "the mask hides the past": Wrong(
            [(FUTURE, "future = ml.tensor(np.tril(np.ones((L, S), dtype=bool), -1))")],
            "hides the past",
        ),
        "masked scores set to 0": Wrong([("-math.inf", "0.0")], "exp(0)"),
        "an (L, L) mask, right only when L = S": Wrong(
            [(FUTURE, "future = ml.tensor(np.triu(np.ones((L, L), dtype=bool), 1))")],
            "3 queries, 5 keys",
        ),
        "masks even when not causal": Wrong(
            [("    if causal:\n", "    if True:\n")], "although causal=False"
        ),
        "never masks": Wrong([("    if causal:\n", "    if False:\n")], "no mask"),
        "returns a NumPy array": Wrong(
            [("return weights @ v", "return (weights @ v).data")], "NumPy array"
        ),
        "keys not transposed": Wrong(
            [(SCORES, "scores = q @ k / math.sqrt(q.shape[-1])")], "raised"
        ),
    },
    "backward": {
        "softmax's backward without its second term": Wrong(
            [(DS, "ds = w * dw")], "its own score only"
        ),
        "the scale forgotten in dq and dk": Wrong(
            [("dq = ds @ k * c", "dq = ds @ k"), ("dk = ds.T @ q * c", "dk = ds.T @ q")],
            "leaves out the scores' scale",
        ),
        "dv scaled like the scores": Wrong(
            [("dv = w.T @ dout", "dv = w.T @ dout * c")], "dv carries"
        ),
        "the mask forgotten": Wrong(
            [("    if causal:\n" + MASK_NP, "")], "unmasked", "causal=True"
        ),
        "dk and dq swapped": Wrong([("return dq, dk, dv", "return dk, dq, dv")], "shape"),
        "weights not normalised": Wrong(
            [("w = w / w.sum(axis=-1, keepdims=True)", "pass")], "dq is wrong"
        ),
        "returns two of the three": Wrong([("return dq, dk, dv", "return dq, dk")], "three"),
    },
    "head": {
        "not causal": Wrong(
            [("attention(q, k, v, True)", "attention(q, k, v, False)")], "not causal"
        ),
        "queries and keys swapped": Wrong(
            [(QKV, "q, k, v = self.key(x), self.query(x), self.value(x)")], "swapped"
        ),
        "the keys used as values": Wrong(
            [(QKV, "q, k, v = self.query(x), self.key(x), self.key(x)")], "values are the keys"
        ),
        "linear maps with a bias": Wrong([("bias=False", "bias=True")], "does not name"),
        "the maps named otherwise": Wrong([("self.query", "self.q")], "lacks", "query.weight"),
        "the scores scaled by the model's width": Wrong(
            [(QKV, QKV + "\n        q = q * math.sqrt(q.shape[-1] / 8)")], "model's width"
        ),
    },
    "heads": {
        "one head repeated": Wrong(
            [(HEADS, "self.heads = nn.ModuleList([Head(width, size)] * heads)")], "one head"
        ),
        "heads joined in the other order": Wrong(
            [(JOIN, "joined = ml.cat([head(x) for head in reversed(list(self.heads))], dim=-1)")],
            "other order",
        ),
        "no projection": Wrong([("return self.proj(joined)", "return joined")], "not projected"),
        "heads joined along the places": Wrong([("dim=-1)", "dim=1)")], "shape"),
        "heads of the full width": Wrong([("size = width // heads", "size = width")], "shape"),
        "the heads in a plain list": Wrong(
            [(HEADS, "self.heads = [Head(width, size) for _ in range(heads)]")], "lacks"
        ),
    },
    "block": {
        "post-norm": Wrong(
            [
                (ATTEND, "h = self.norm1(x + self.attention(x))"),
                (FEED, "return self.norm2(h + self.mlp(h))"),
            ],  # fmt: skip
            "post-norm",
        ),
        "no residuals": Wrong(
            [
                (ATTEND, "h = self.attention(self.norm1(x))"),
                (FEED, "return self.mlp(self.norm2(h))"),
            ],  # fmt: skip
            "replaces its input",
        ),
        "one norm for both branches": Wrong(
            [(FEED, "return h + self.mlp(self.norm1(h))")], "norm1"
        ),
        "the MLP reads x instead of h": Wrong(
            [(FEED, "return h + self.mlp(self.norm2(x))")], "block's input"
        ),
        "ReLU in place of GELU": Wrong(
            [('nn.GELU(approximate="tanh")', "nn.ReLU()")], "wrong values"
        ),
        "an MLP that does not widen": Wrong([("4 * width", "width")], "statement's is"),
    },
    "gpt": {
        "positions not added": Wrong([(EMBED, "x = self.tokens(idx)")], "positions are not added"),
        "no last norm": Wrong(
            [("return self.head(self.norm(x))", "return self.head(x)")], "last norm"
        ),
        "only the first block runs": Wrong(
            [("for block in self.blocks:", "for block in self.blocks[:1]:")], "first block"
        ),
        "positions for the whole block_size": Wrong(
            [("ml.arange(T)", "ml.arange(self.positions.num_embeddings)")], "raised"
        ),
        "a head with a bias": Wrong(
            [("nn.Linear(width, vocab, bias=False)", "nn.Linear(width, vocab)")], "head.bias"
        ),
    },
    "loss": {
        "scores taken one place early": Wrong(
            [(PLACES, "scores = model(tokens)[:, LENGTH - 1 : -1]")], "place before"
        ),
        "a sum over the predictions": Wrong(
            [(CE, CE.replace("return ", "return answers.size * "))], "adds"
        ),
        "feeds all six answers": Wrong(
            [("answers[:, :-1]]", "answers]"), (PLACES, "scores = model(tokens)[:, LENGTH:-1]")],
            "shape (4, 13)",
        ),
        "feeds the digits unsorted after the separator": Wrong(
            [("answers[:, :-1]]", "rows[:, :-1]]")], "after the separator"
        ),
        "returns a float": Wrong(
            [(CE, CE.replace("return ", "return float(") + ".item())")], "gradient"
        ),
        "scores every place against the next token": Wrong(
            [
                (PLACES, "scores = model(tokens)"),
                (
                    "ml.tensor(answers.reshape(-1))",
                    "ml.tensor(np.concatenate([tokens.data[:, 1:], answers[:, -1:]], 1)"
                    ".reshape(-1))",
                ),
            ],  # fmt: skip
            "places that read the digits",
        ),
    },
    "decode": {
        "returns the true answers": Wrong(
            [
                ("for _ in range(LENGTH):", "for i in range(LENGTH):"),
                (
                    NEXT,
                    "tokens = ml.cat([tokens, ml.tensor(np.sort(rows, 1)[:, i : i + 1])], dim=1)",
                ),
            ],  # fmt: skip
            "sorted digits themselves",
        ),
        "feeds the true answers, returns the model's": Wrong(
            [
                ("for _ in range(LENGTH):", "said = []\n        for i in range(LENGTH):"),
                (
                    NEXT,
                    "said.append(scores.argmax(dim=-1).data)\n"
                    "            true = ml.tensor(np.sort(rows, 1)[:, i : i + 1])\n"
                    "            tokens = ml.cat([tokens, true], 1)",
                ),
                ("return tokens.data[:, LENGTH + 1 :]", "return np.stack(said, 1)"),
            ],  # fmt: skip
            "true answers",
        ),
        "reads the first place's scores": Wrong(
            [("scores = model(tokens)[:, -1]", "scores = model(tokens)[:, 0]")], "first place"
        ),
        "returns SEP too": Wrong([("[:, LENGTH + 1 :]", "[:, LENGTH:]")], "has shape"),
        "never appends": Wrong(
            [
                (NEXT, "new = scores.argmax(dim=-1).unsqueeze(1)"),
                ("return tokens.data[:, LENGTH + 1 :]", "return np.repeat(new.data, LENGTH, 1)"),
            ],  # fmt: skip
            "one length only",
        ),
    },
    "training": {  # each a loop that runs, so the held-out judge is what rejects it
        "returns after the first step": Wrong(
            [(KEEP, KEEP + "        return losses\n")],
            "held-out sequences exactly",
        ),
        "the optimiser never steps": Wrong(
            # without a step the weights stay the seed's whatever the number of steps, so the
            # judge gets the same data from 20 steps as from 400, in a twentieth of the time
            [("        optimizer.step()\n", ""), ("range(steps)", "range(min(steps, 20))")],
            "held-out sequences exactly",
        ),
    },
}
assert set(MUTANTS) == set(EXERCISES)

test_the_solution_passes, test_a_wrong_answer_is_rejected, test_the_stub_raises = mutation_tests(
    NB,
    EXERCISES,
    MUTANTS,
    stand_ins={check: "pass" for _, check in EXERCISES.values()},  # each check judged alone
    done=DONE,
)


# --- the judges on forged data: only a right answer's data passes -------------------------

PROBED = {
    "embedding": (ch13.EMBEDDING, "embedding_backward"),
    "attention": (ch13.ATTENTION, "attention"),
    "backward": (ch13.BACKWARD, "attention_backward"),
    "head": (ch13.HEAD, "Head"),
    "heads": (ch13.MULTI, "MultiHeadAttention"),
    "block": (ch13.BLOCK, "Block"),
    "gpt": (ch13.GPT, "TinyGPT"),
    "loss": (ch13.LOSS, "sort_loss"),
    "decode": (ch13.DECODE, "sort_with"),
}


@pytest.fixture(scope="module")
def solved() -> dict:
    """The solution notebook's namespace, every answer defined (up to the last quick check)."""
    with contextlib.redirect_stdout(io.StringIO()):
        return run_check(NB, "ex13_9_sort_with_check")


def _shifted(data):
    """The same data with every number moved: the reference's shapes, wrong values."""
    if isinstance(data, np.ndarray):
        return data + (1 if data.dtype.kind in "iu" else 0.5) if data.dtype.kind != "b" else ~data
    if isinstance(data, dict):
        return {k: _shifted(v) for k, v in data.items()}
    if isinstance(data, list):
        return [_shifted(v) for v in data]
    return data


def _retyped(data):
    """The same structure with every array replaced by a string."""
    if isinstance(data, np.ndarray):
        return "forged"
    if isinstance(data, dict):
        return {k: _retyped(v) for k, v in data.items()}
    if isinstance(data, list):
        return [_retyped(v) for v in data]
    return data


@pytest.mark.parametrize("key", list(PROBED))
def test_a_judge_rejects_forged_data(key, solved):
    exercise, name = PROBED[key]
    data = exercise.run_probe(LAB_SEED, (solved[name],))
    assert exercise.verdict(LAB_SEED, data)[0], "the solution's own data must pass"
    for forged in (_shifted(data), _retyped(data), {}, [], None, "forged", [data], {"x": data}):
        passed, message = exercise.verdict(LAB_SEED, forged)
        assert not passed, f"{key}: forged data passed: {str(forged)[:200]}"
        assert message


def test_every_judge_reads_malformed_data_as_wrong_not_as_a_crash():
    for exercise, _ in [*PROBED.values(), (ch13.TRAINING, "")]:
        for forged in ({}, [], None, 3, {"out": {"array": "x"}}, [{"raised": ["x"]}]):
            with pytest.raises(ch13.Wrong):
                exercise.judge(exercise.cases(LAB_SEED), forged)


def test_the_cases_change_with_the_seed():
    for exercise, _ in [*PROBED.values(), (ch13.TRAINING, "")]:
        one, two = exercise.cases(0), exercise.cases(1)
        assert repr(one) != repr(two), exercise.check


# --- training: a forged model does not pass --------------------------------------------


def test_the_training_judge_rejects_forged_models(solved):
    import minilucid as ml

    ml.manual_seed(0)
    untrained = solved["TinyGPT"](11, 12, 16, 2, 1)
    data = ch13.TRAINING.run_probe(LAB_SEED, (lambda: untrained,))
    assert not ch13.TRAINING.verdict(LAB_SEED, data)[0]
    renamed = {"params": {f"x.{k}": v for k, v in data["params"].items()}}
    assert not ch13.TRAINING.verdict(LAB_SEED, renamed)[0]
    nan = {"params": {k: v * np.nan for k, v in data["params"].items()}}
    assert not ch13.TRAINING.verdict(LAB_SEED, nan)[0]


# --- nothing of an answer on the learner's screen ------------------------------------------

TOKEN = re.compile(r"\"[^\"\n]*\"|'[^'\n]*'|[A-Za-z_]\w*|\d+(?:\.\d+)?|[^\w\s]")
RUN = 10  # tokens of an answer, in order, that may not stand anywhere in the exercise notebook


def test_no_run_of_answer_tokens_in_the_exercise_notebook():
    solutions = nbformat.read(str(NB), as_version=4)
    runs = set()
    for cell in solutions.cells:
        for body in re.findall(r"### BEGIN SOLUTION\n(.*?)### END SOLUTION", cell.source, re.S):
            tokens = TOKEN.findall(body)
            runs |= {tuple(tokens[i : i + RUN]) for i in range(len(tokens) - RUN + 1)}
    exercise = nbformat.read(str(NB.parents[1] / "exercises" / NB.name), as_version=4)
    for index, cell in enumerate(exercise.cells):
        shown = [cell.source] + [
            str(out.get("text", "")) + str(out.get("data", {}).get("text/plain", ""))
            for out in cell.get("outputs", [])
        ]
        for text in shown:
            tokens = TOKEN.findall(text)
            for i in range(len(tokens) - RUN + 1):
                run = tuple(tokens[i : i + RUN])
                assert run not in runs, f"cell {index} shows answer tokens: {' '.join(run)}"
