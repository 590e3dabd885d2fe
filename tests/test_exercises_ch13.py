"""Chapter 13 (Attention): every check accepts the solution, raises NotImplementedError on the
stub, and rejects each plausible wrong answer below (naming the mistake where it can tell)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from nbharness import Wrong, edited, mutant_parts, rejected, run_check, unanswered

ROOT = Path(__file__).resolve().parents[1]
NB = ROOT / "solutions" / "13_attention.ipynb"

EXERCISES = {
    "embedding": ("ex13_1_embedding_backward_answer", "ex13_1_embedding_backward_check"),
    "attention": ("ex13_2_attention_answer", "ex13_2_attention_check"),
    "backward": ("ex13_3_attention_backward_answer", "ex13_3_attention_backward_check"),
    "heads": ("ex13_4_multi_head_answer", "ex13_4_multi_head_check"),
    "block": ("ex13_5_block_answer", "ex13_5_block_check"),
}
DONE = {
    "embedding": "✓ embedding_backward",
    "attention": "✓ attention",
    "backward": "✓ attention_backward",
    "heads": "✓ MultiHeadSelfAttention",
    "block": "✓ Block",
}

ADD_AT = "np.add.at(d_weight, indices, grad)"
SCORES = "scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])"
FUTURE = "future = ml.tensor(np.triu(np.ones((L, S), dtype=bool), 1))"
D_SCORES = "d_scores = weights * (d_weights - (d_weights * weights).sum(axis=-1, keepdims=True))"
SPLIT = "{0} = {0}.view(B, T, self.heads, d).transpose(1, 2)"
MERGE = "y = y.transpose(1, 2).contiguous().view(B, T, C)"
ATTEND = "h = x + self.attention(self.norm1(x))"
FEED = "return h + self.mlp(self.norm2(h))"

MUTANTS = {
    "embedding": {
        "assignment keeps one gradient of a repeated token": Wrong(
            [(ADD_AT, "d_weight[indices] += grad")], "collects only one"
        ),
        "starts from ones instead of zeros": Wrong(
            [("np.zeros((num_embeddings", "np.ones((num_embeddings")], "start from zeros"
        ),
        "a table of the wrong shape (dim, num_embeddings)": Wrong(
            [
                ("np.zeros((num_embeddings, grad.shape[-1]))", "np.zeros((grad.shape[-1], 4))"),
                (ADD_AT, "pass"),
            ],
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
            "row",
        ),
    },
    "attention": {
        "scores not scaled": Wrong([(SCORES, "scores = q @ k.transpose(-2, -1)")], "not scaled"),
        "scores divided by E, not its square root": Wrong(
            [(SCORES, "scores = q @ k.transpose(-2, -1) / q.shape[-1]")], "divided by E"
        ),
        "softmax over the queries": Wrong(
            [("scores.softmax(dim=-1)", "scores.softmax(dim=-2)")], "wrong dimension"
        ),
        "the mask hides the past": Wrong(
            [(FUTURE, "future = ml.tensor(np.tril(np.ones((L, S), dtype=bool), -1))")],
            "hides the past",
        ),
        "masked scores set to 0": Wrong([('float("-inf")', "0.0")], "-inf"),
        "masks even when not causal": Wrong(
            [("    if causal:\n", "    if True:\n")], "causal=False"
        ),
        "returns a NumPy array": Wrong(
            [("return weights @ v", "return (weights @ v).data")], "returned ndarray"
        ),
        "keys not transposed": Wrong(
            [(SCORES, "scores = q @ k / math.sqrt(q.shape[-1])")], "raised"
        ),
    },
    "backward": {
        "softmax's backward without its second term": Wrong(
            [(D_SCORES, "d_scores = weights * d_weights")], "softmax's backward"
        ),
        "the scale forgotten in dq and dk": Wrong(
            [
                ("dq = d_scores @ k * scale", "dq = d_scores @ k"),
                ("dk = d_scores.T @ q * scale", "dk = d_scores.T @ q"),
            ],  # fmt: skip
            "forgets the scale",
        ),
        "dv scaled like the scores": Wrong(
            [("dv = weights.T @ dout", "dv = weights.T @ dout * scale")], "dv is wrong"
        ),
        "dk and dq swapped": Wrong([("return dq, dk, dv", "return dk, dq, dv")], "shape"),
        "weights not normalised": Wrong(
            [("weights /= weights.sum(axis=-1, keepdims=True)", "pass")], "dq"
        ),
    },
    "heads": {
        "heads made by a view alone": Wrong(
            [(SPLIT.format(x), f"{x} = {x}.view(B, self.heads, T, d)") for x in "qkv"],
            "view to (B, heads, T, d) alone",
        ),
        "heads merged by a view alone": Wrong(
            [(MERGE, "y = y.contiguous().view(B, T, C)")], "merged with a view alone"
        ),
        "attention not causal": Wrong([("is_causal=True", "is_causal=False")], "not causal"),
        "heads split along the wrong side of the features": Wrong(
            [
                (SPLIT.format(x), f"{x} = {x}.view(B, T, d, self.heads).transpose(1, 3)")
                for x in "qkv"
            ]
            + [(MERGE, "y = y.transpose(1, 3).contiguous().view(B, T, C)")],  # fmt: skip
            "wrong values",
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
            "residual",
        ),
        "one norm for both branches": Wrong(
            [(FEED, "return h + self.mlp(self.norm1(h))")], "norm2"
        ),
        "the MLP reads x instead of h": Wrong(
            [(FEED, "return h + self.mlp(self.norm2(x))")], "one after the other"
        ),
    },
}
assert set(MUTANTS) == set(EXERCISES)


@pytest.mark.parametrize("key", list(EXERCISES))
def test_solution_passes_and_stub_is_not_done(key, capsys):
    answer, check = EXERCISES[key]
    run_check(NB, check)
    assert DONE[key] in capsys.readouterr().out
    unanswered(NB, check, answer)


CASES = [(key, label) for key, mutants in MUTANTS.items() for label in mutants]


@pytest.mark.parametrize(("key", "label"), CASES, ids=[f"{k}: {w}" for k, w in CASES])
def test_check_rejects_the_wrong_answer(key, label):
    answer, check = EXERCISES[key]
    edits, words = mutant_parts(MUTANTS[key][label])
    rejected(NB, check, answer, edited(NB, answer, edits), *words)


def test_no_line_of_an_answer_appears_elsewhere_in_the_exercise_notebook():
    """Lines of 16 or more characters (not a def, import or comment) of each answer are nowhere
    else in the learner's notebook: not in a statement, a hint, a stub or another cell."""
    exercise = json.loads((ROOT / "exercises" / NB.name).read_text(encoding="utf-8"))
    others = "\n".join("".join(c["source"]) for c in exercise["cells"])
    solutions = json.loads(NB.read_text(encoding="utf-8"))
    for cell in solutions["cells"]:
        source = "".join(cell["source"])
        if "### BEGIN SOLUTION" not in source:
            continue
        body = source.split("### BEGIN SOLUTION")[1].split("### END SOLUTION")[0]
        for line in body.splitlines():
            line = line.strip()
            if len(line) >= 16 and not line.startswith(("def ", "import ", "from ", "#")):
                assert line not in others, f"an answer line is on screen: {line!r}"
