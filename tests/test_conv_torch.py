"""Convolution and pooling against PyTorch in float64: values and gradients (skipped without it)."""

from __future__ import annotations

import numpy as np
import pytest

import minilucid as ml
from minilucid import nn
from minilucid.nn import functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional

CONV_CASES = [
    ((4, 3, 9, 8), (5, 3, 3, 3), 2, 1, 1, 1),  # stride 2, padding 1, several channels
    ((2, 2, 7, 10), (3, 2, 2, 4), 1, 1, 1, 1),  # non-square kernel
    ((2, 3, 8, 8), (4, 3, 3, 2), (2, 1), (0, 2), 1, 1),
    ((2, 4, 9, 9), (6, 2, 3, 3), 1, 2, 2, 2),  # dilation and groups
]


def both(*arrays):
    ours = [ml.tensor(a, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    return ours, theirs


def assert_same(ours, theirs, what):
    np.testing.assert_allclose(ours, theirs.detach().numpy(), rtol=1e-12, atol=1e-12, err_msg=what)


@pytest.mark.parametrize("case", CONV_CASES)
def test_conv2d_values_and_gradients_equal_torchs(case):
    xs, ws, stride, padding, dilation, groups = case
    rng = np.random.default_rng(0)
    x, w, b = rng.standard_normal(xs), rng.standard_normal(ws), rng.standard_normal(ws[0])
    (mx, mw, mb), (tx, tw, tb) = both(x, w, b)
    out = F.conv2d(mx, mw, mb, stride, padding, dilation, groups)
    ref = TF.conv2d(tx, tw, tb, stride, padding, dilation, groups)
    assert_same(out.data, ref, "output")
    g = rng.standard_normal(out.shape)
    out.backward(g)
    ref.backward(torch.tensor(g))
    for name, a, t in (("input", mx, tx), ("weight", mw, tw), ("bias", mb, tb)):
        assert_same(a.grad, t.grad, f"{name} gradient")


@pytest.mark.parametrize(
    "ours, theirs", [(F.max_pool2d, TF.max_pool2d), (F.avg_pool2d, TF.avg_pool2d)]
)
@pytest.mark.parametrize(
    "kernel, stride, padding", [(2, None, 0), (3, 2, 1), ((2, 3), (1, 2), (1, 0))]
)
def test_pools_equal_torchs(ours, theirs, kernel, stride, padding):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 2, 9, 8))
    (mx,), (tx,) = both(x)
    out = ours(mx, kernel, stride, padding)
    ref = theirs(tx, kernel, stride, padding)
    assert_same(out.data, ref, "output")
    g = rng.standard_normal(out.shape)
    out.backward(g)
    ref.backward(torch.tensor(g))
    assert_same(mx.grad, tx.grad, "input gradient")


def test_conv2d_module_has_torchs_names_shapes_and_initial_range():
    ours = nn.Conv2d(3, 16, (5, 3), stride=2, padding=1)
    theirs = torch.nn.Conv2d(3, 16, (5, 3), stride=2, padding=1)
    assert [(n, p.shape) for n, p in ours.named_parameters()] == [
        (n, tuple(p.shape)) for n, p in theirs.named_parameters()
    ]
    assert repr(ours) == repr(theirs)
    for a, t in zip(ours.parameters(), theirs.parameters(), strict=True):
        bound = float(t.detach().abs().max())  # torch's draw reaches close to its bound
        assert float(np.abs(a.data).max()) <= 1 / np.sqrt(3 * 5 * 3) + 1e-7
        assert bound <= 1 / np.sqrt(3 * 5 * 3) + 1e-7
    assert repr(nn.MaxPool2d(2)) == repr(torch.nn.MaxPool2d(2)).replace(
        ", dilation=1, ceil_mode=False", ""
    )
