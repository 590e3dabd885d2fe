"""Chapter 07's minimal Module gives the package's names, order and state dicts.

The chapter teaches a one-screen `MiniModule` (registration by assignment, the walk, the state
dict) before the package's `nn.Module`, in an untagged cell tagged `minimal:minilucid.nn.module.
Module`. This test runs that cell's text and compares it with the package on the same models.
"""

from __future__ import annotations

import math
from pathlib import Path

import nbformat
import numpy as np
import pytest

import minilucid as ml
from minilucid import nn
from minilucid.nn import functional as F

ROOT = Path(__file__).resolve().parent.parent
CHAPTER = ROOT / "notebooks" / "07_modules_and_parameters.ipynb"
TAG = "minimal:minilucid.nn.module.Module"
SCREEN = 60  # lines: one screen, with registration, the walk and the state dict


def _source() -> str:
    cells = nbformat.read(str(CHAPTER), as_version=4).cells
    found = [c.source for c in cells if TAG in c.metadata.get("tags", [])]
    assert len(found) == 1, f"expected one cell tagged {TAG}, got {len(found)}"
    return found[0]


@pytest.fixture(scope="module")
def mini():
    namespace = {"np": np, "ml": ml, "nn": nn, "F": F, "math": math}
    exec(compile(_source(), "<minimal Module>", "exec"), namespace)
    return namespace["MiniModule"]


def test_the_minimal_module_fits_on_a_screen_without_extras():
    source = _source()
    assert len(source.splitlines()) <= SCREEN
    for extra in ("_buffers", "training", "register_buffer", "strict", "__delattr__"):
        assert extra not in source, f"the minimal Module should not have {extra!r}"


def _pair(mini, tied: bool):
    """The same model twice: on the minimal Module, and on the package's."""

    def layers(base, linear):
        class Net(base):
            def __init__(self):
                super().__init__()
                self.scale = nn.Parameter(np.ones(3, dtype=np.float32))
                self.hidden = linear(3, 4)
                self.out = linear(4, 3)
                if tied:
                    self.again = self.hidden
                self.mask = ml.ones(3)  # a plain tensor: not registered

            def forward(self, x):
                h = self.hidden(x).tanh()
                if tied:
                    h = self.again(self.out(h)).tanh()
                return self.out(h) * self.scale

        return Net

    class MiniLinear(mini):
        def __init__(self, n_in, n_out):
            super().__init__()
            self.weight = nn.Parameter(ml.randn(n_out, n_in).data)
            self.bias = nn.Parameter(ml.randn(n_out).data)

        def forward(self, x):
            return F.linear(x, self.weight, self.bias)

    ml.manual_seed(0)
    ours = layers(mini, MiniLinear)()
    theirs = layers(nn.Module, nn.Linear)()
    return ours, theirs


@pytest.mark.parametrize("tied", [False, True], ids=["plain", "tied"])
def test_the_minimal_module_names_and_saves_as_the_package(mini, tied):
    ours, theirs = _pair(mini, tied)
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    assert [n for n, _ in ours.named_parameters("m")] == [
        n for n, _ in theirs.named_parameters(prefix="m")
    ]
    assert len(ours.parameters()) == len(list(theirs.parameters()))
    assert list(ours.state_dict()) == list(theirs.state_dict())
    theirs.load_state_dict(ours.state_dict())
    x = ml.randn(5, 3)
    np.testing.assert_allclose(theirs(x).data, ours(x).data, rtol=1e-6)


def test_the_minimal_load_checks_first_and_copies_in_place(mini):
    ours, theirs = _pair(mini, tied=False)
    before = {n: p.data.copy() for n, p in ours.named_parameters()}
    bad = {k: v for k, v in theirs.state_dict().items() if k != "out.bias"}
    with pytest.raises(RuntimeError, match="out.bias"):
        ours.load_state_dict(bad)
    assert all(np.array_equal(p.data, before[n]) for n, p in ours.named_parameters())
    params = ours.parameters()
    ours.load_state_dict(theirs.state_dict())
    assert all(p is q for p, q in zip(ours.parameters(), params, strict=True))
    for (name, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters(), strict=True):
        assert np.array_equal(p.data, q.data), name
