"""The chapters' minimal versions give the package's results on the chapters' examples.

Chapter 02 teaches a minimal `Function` (its `apply`) and chapter 03 a minimal `backward`
before the package's. Each is an untagged teaching cell marked with a tag
`minimal:<the package object it stands for>`. This test takes the cell's text from the chapter,
runs it, and compares it with the package on the graphs the chapters use.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import numpy as np
import pytest

import minilucid as ml
from minilucid import Tensor
from minilucid.autograd import topological_order
from minilucid.ops import elementwise

ROOT = Path(__file__).resolve().parent.parent
SCREEN = 30  # lines: "readable in one screen"


def _minimal(chapter: str, name: str) -> str:
    nb = nbformat.read(str(ROOT / "notebooks" / chapter), as_version=4)
    found = [c.source for c in nb.cells if f"minimal:{name}" in c.metadata.get("tags", [])]
    assert len(found) == 1, f"{chapter}: expected one cell tagged minimal:{name}, got {len(found)}"
    return found[0]


def _run(source: str) -> dict:
    namespace = {"np": np, "ml": ml, "Tensor": Tensor, "topological_order": topological_order}
    exec(compile(source, "<minimal>", "exec"), namespace)
    return namespace


@pytest.fixture(scope="module")
def minimal_ops():
    """The package's elementwise ops, rebuilt on the chapter's minimal Function."""
    base = _run(_minimal("02_local_derivatives.ipynb", "minilucid.function.Function"))["Function"]
    ops = {}
    for name in ("Add", "Sub", "Neg", "Mul", "Div"):
        op = getattr(elementwise, name)
        body = {"forward": staticmethod(op.forward), "backward": staticmethod(op.backward)}
        ops[name] = type(name, (base,), body)
    return ops


@pytest.fixture(scope="module")
def minimal_backward():
    return _run(_minimal("03_reverse_mode.ipynb", "minilucid.autograd.backward"))["backward"]


@pytest.mark.parametrize(
    "chapter, name",
    [
        ("02_local_derivatives.ipynb", "minilucid.function.Function"),
        ("03_reverse_mode.ipynb", "minilucid.autograd.backward"),
    ],
)
def test_minimal_versions_fit_on_a_screen_without_extras(chapter, name):
    source = _minimal(chapter, name)
    assert len(source.splitlines()) <= SCREEN
    for extra in ("hook", "inputs=", "trace", "retain", "no_grad", "__slots__"):
        assert extra not in source, f"{name}'s minimal version should not have {extra!r}"


# --- chapter 02: apply -----------------------------------------------------------------------


def _leaves():
    a = Tensor(np.array([1.0, -2.0, 0.5]), requires_grad=True, name="a")
    b = Tensor(np.array([3.0, 4.0, -1.0]), requires_grad=True, name="b")
    c = Tensor(np.array([4.0, 1.0, -2.0]), requires_grad=True, name="c")  # no broadcasting
    k = Tensor([10.0, 20.0, 30.0], name="k")  # a constant tensor
    return a, b, c, k


# the chapter's examples: a product, constants, the Add/Sub/Neg chain, f = (a*b + c)*a
EXAMPLES = {
    "a * b": lambda o, a, b, c, k: o["Mul"].apply(a, b),
    "a * 2.0": lambda o, a, b, c, k: o["Mul"].apply(a, 2.0),
    "-(a + k - 1)": lambda o, a, b, c, k: o["Neg"].apply(o["Sub"].apply(o["Add"].apply(a, k), 1.0)),
    "(a * b + c) * a": lambda o, a, b, c, k: o["Mul"].apply(
        o["Add"].apply(o["Mul"].apply(a, b), c), a
    ),
    "a / b - b / 2": lambda o, a, b, c, k: o["Sub"].apply(
        o["Div"].apply(a, b), o["Div"].apply(b, 2.0)
    ),
    "k * k (no grad)": lambda o, a, b, c, k: o["Mul"].apply(k, k),
}


def _structure(t):
    """(op name, parents as labels) for every op of t's graph, walked from t."""
    out, todo = [], [t]
    while todo:
        node = todo.pop()
        if node.grad_fn is None:
            continue
        labels = [
            p.name
            if isinstance(p, Tensor) and p.name
            else repr(p)
            if not isinstance(p, Tensor)
            else "tensor"
            for p in node.grad_fn.parents
        ]
        out.append((type(node.grad_fn).__name__, labels))
        todo.extend(p for p in node.grad_fn.parents if isinstance(p, Tensor))
    return out


@pytest.mark.parametrize("example", EXAMPLES)
def test_minimal_apply_builds_what_the_package_builds(example, minimal_ops, minimal_backward):
    package = {name: getattr(elementwise, name) for name in minimal_ops}
    mine_leaves, their_leaves = _leaves(), _leaves()
    mine = EXAMPLES[example](minimal_ops, *mine_leaves)
    theirs = EXAMPLES[example](package, *their_leaves)
    assert np.array_equal(mine.data, theirs.data) and mine.dtype == theirs.dtype
    assert mine.requires_grad == theirs.requires_grad
    assert (mine.grad_fn is None) == (theirs.grad_fn is None)
    assert _structure(mine) == _structure(theirs)
    if theirs.requires_grad:  # gradients: chapter 03's minimal backward against the package's
        minimal_backward(mine)  # seeds ones: the gradient of the sum of mine's entries
        theirs.backward(np.ones_like(theirs.data))
        for m, t in zip(mine_leaves, their_leaves, strict=True):
            assert (m.grad is None) == (t.grad is None)
            if t.grad is not None:
                np.testing.assert_allclose(m.grad, t.grad, rtol=1e-12)


# --- chapter 03: backward --------------------------------------------------------------------


def _diamond():
    x = Tensor(2.0, dtype=ml.float64, requires_grad=True, name="x")
    a = x * 3.0
    b = a * 2.0
    return [x], a * b


def _square():
    x = Tensor(2.0, dtype=ml.float64, requires_grad=True, name="x")
    h = x * 3.0
    return [x], h * h


def _chain():
    x = Tensor(1.0, dtype=ml.float64, requires_grad=True, name="x")
    y = x
    for _ in range(100_000):
        y = y * 1.00001
    return [x], y


def _small_graph():  # the graph of chapter 03's pencil-and-paper exercises
    x = Tensor(2.0, dtype=ml.float64, requires_grad=True, name="x")
    w = Tensor(3.0, dtype=ml.float64, requires_grad=True, name="w")
    h = x * w
    return [x, w], h * (h + x)


def _vectors():  # the step-through graph of chapter 03, with w the same shape as a
    a = Tensor([1.0, -2.0], dtype=ml.float64, requires_grad=True, name="a")
    w = Tensor([0.5, 0.5], dtype=ml.float64, requires_grad=True, name="w")
    p = a * w
    return [a, w], ((p * p + a) / w).sum()


def _chain_rule():  # chapter 02's f = (a*b + c)*a, and a power with a constant exponent
    a, b, c = (Tensor(v, dtype=ml.float64, requires_grad=True) for v in (2.0, -3.0, 4.0))
    return [a, b, c], (a * b + c) * a + a**2 - 1 / b


GRAPHS = {
    "diamond": _diamond,
    "h * h": _square,
    "100,000-deep chain": _chain,
    "pencil-and-paper graph": _small_graph,
    "step-through graph": _vectors,
    "chapter 02's chain rule": _chain_rule,
}


@pytest.mark.parametrize("graph", GRAPHS)
def test_minimal_backward_gives_the_packages_gradients(graph, minimal_backward):
    mine_leaves, mine_root = GRAPHS[graph]()
    their_leaves, their_root = GRAPHS[graph]()
    minimal_backward(mine_root)
    their_root.backward()
    for m, t in zip(mine_leaves, their_leaves, strict=True):
        assert t.grad is not None and m.grad is not None
        np.testing.assert_allclose(m.grad, t.grad, rtol=1e-12)


def test_minimal_backward_accumulates_into_grad_like_the_package(minimal_backward):
    (x,), y = _square()
    minimal_backward(y)
    (x2,), y2 = _square()
    y2.backward(retain_graph=True)
    y2.backward()
    minimal_backward(y)
    assert float(x.grad) == float(x2.grad) == 72.0
