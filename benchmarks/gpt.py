"""One training step of chapter 13's tiny GPT: minilucid against PyTorch, the same program.

    loss = cross-entropy of the six answers;  zero_grad, backward, clip_grad_norm_, AdamW step

The model is the capstone program `notebooks/capstone/tiny_gpt.py` (width 64, 4 heads, 2
pre-norm blocks, batch 64 of 12 tokens), written once with PyTorch's names. It is loaded twice:
as it is (`import minilucid as torch`) and with its import line changed, so both engines run
the same model code. Before any timing, from the same weights and the same batch, both must give
the same loss and the same gradients. There is no hand-written NumPy version: the row reports
minilucid's time as a ratio to PyTorch's.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from benchmarks.machine import torch
from benchmarks.timing import phased

PROGRAM = Path(__file__).resolve().parents[1] / "notebooks" / "capstone" / "tiny_gpt.py"
TITLE = "Tiny GPT training step (chapter 13): batch 64 x 12 tokens, width 64, 4 heads, 2 blocks"
OURS, THEIRS = "import minilucid as torch\n", "import torch\n"
TANH_GELU = 'torch.nn.GELU(approximate="tanh")'
GELUS = {  # the program's GELU line as it is, and changed to the exact GELU (erf)
    "tanh": (TITLE, TANH_GELU),
    "exact": (f"{TITLE}, exact GELU (erf)", "torch.nn.GELU()"),
}


def program(framework: str, gelu: str = "tanh") -> dict:
    """The capstone program's namespace, importing minilucid or torch, with the GELU chosen."""
    text = PROGRAM.read_text(encoding="utf-8")
    if TANH_GELU not in text:
        raise AssertionError(f"tiny GPT: {PROGRAM.name} no longer has the line {TANH_GELU}")
    text = text.replace(TANH_GELU, GELUS[gelu][1], 1)
    if framework == "torch":
        text = text.replace(OURS, THEIRS, 1)
    namespace = {"__name__": f"tiny_gpt_{framework}"}
    exec(compile(text, str(PROGRAM), "exec"), namespace)
    return namespace


class Step:
    """The program's training step on one fixed batch, from given weights."""

    def __init__(self, framework: str, weights: dict, rows: np.ndarray, gelu: str = "tanh"):
        self.ns = program(framework, gelu)
        fw = self.ns["torch"]
        fw.manual_seed(0)
        self.model = self.ns["TinyGPT"]()
        self.model.load_state_dict({k: fw.tensor(v) for k, v in weights.items()})
        self.batch = self.ns["as_training"](rows)
        self.optimizer = fw.optim.AdamW(self.model.parameters(), lr=3e-3, weight_decay=0.01)

    def forward(self):
        return self.ns["loss_of"](self.model, *self.batch)

    def backward(self, loss):
        self.optimizer.zero_grad()
        loss.backward()

    def update(self, _):
        self.ns["torch"].nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.optimizer.step()

    def grads(self) -> list:
        return [np.asarray(p.grad) for p in self.model.parameters()]


def engines(gelu: str = "tanh") -> dict:
    """minilucid's step and (when installed) PyTorch's, from minilucid's initial weights."""
    ours = program("minilucid", gelu)
    ours["torch"].manual_seed(0)
    weights = {k: v.data.copy() for k, v in ours["TinyGPT"]().state_dict().items()}
    rows = ours["problems"](64, np.random.default_rng(0))
    names = ["minilucid"] + (["torch"] if torch is not None else [])
    return {name: Step(name, weights, rows, gelu) for name in names}


def check_gradients(models: dict) -> None:
    """The same loss and gradients in every engine (float32: small differences allowed)."""
    results = {}
    for name, model in models.items():
        loss = model.forward()
        model.backward(loss)
        results[name] = (float(loss.item()), model.grads())
    loss, grads = results["minilucid"]
    for name, (their_loss, their_grads) in results.items():
        if not np.isclose(their_loss, loss, rtol=1e-4):
            raise AssertionError(f"tiny GPT: {name}'s loss {their_loss} differs from {loss}")
        for i, (g, h) in enumerate(zip(grads, their_grads, strict=True)):
            if g.shape != h.shape or not np.allclose(g, h, rtol=1e-3, atol=1e-5):
                raise AssertionError(f"tiny GPT: {name}'s gradient of parameter {i} differs")


def cases(models: dict) -> dict:
    return {n: phased(m.forward, m.backward, m.update) for n, m in models.items()}
