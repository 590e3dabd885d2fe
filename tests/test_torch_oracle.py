"""PyTorch as a second oracle (optional): every op of the table in test_ops.py agrees with torch.

Skipped when torch is not installed (`pip install -e .[torch]`). Each case's line runs
unchanged on torch; the few that torch spells differently are listed in TORCH_SPELLING.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as TF  # noqa: E402
from gradients import weights_for  # noqa: E402
from test_ops import C_MAT, C_POS, CASES, MF, C, run  # noqa: E402

import minilucid as ml  # noqa: E402


def _t(array):
    return torch.tensor(array)


TORCH_SPELLING = {  # name: fn(torch, F, *xs) where torch differs from minilucid
    "max dim tuple": lambda m, F, x: x.amax(dim=(0, 2)),
    "min dim tuple": lambda m, F, x: x.amin(dim=(1, 2)),
    "T 3-d": lambda m, F, x: x.permute(2, 1, 0),  # x.T on 3-d is deprecated in torch
    # torch has no operators with a NumPy array: the array becomes a tensor
    "add array": lambda m, F, x: x + _t(C),
    "radd array": lambda m, F, x: _t(C) + x,
    "rsub array": lambda m, F, x: _t(C) - x,
    "rmul array": lambda m, F, x: _t(C) * x,
    "rtruediv array": lambda m, F, x: _t(C) / x,
    "rpow array": lambda m, F, x: _t(C_POS) ** x,
    "pow array exponent": lambda m, F, x: x ** _t(C),
    "rmatmul array": lambda m, F, x: _t(C_MAT) @ x,
    "rsub array broadcast": lambda m, F, x: _t(C) - x,
}


def torch_fn(case):
    return TORCH_SPELLING[case.name] if case.name in TORCH_SPELLING else case.fn


def test_every_case_has_a_torch_spelling():
    differs = {c.name for c in CASES if not c.torch or c.numpy_operand}
    assert differs == set(TORCH_SPELLING)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_forward_and_gradients_agree_with_torch(case):
    arrays = case.arrays()
    xs = [ml.tensor(a, requires_grad=True) for a in arrays]
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    out = run(case, xs)
    expected = torch_fn(case)(torch, TF, *ts)
    assert out.shape == tuple(expected.shape)
    assert str(out.dtype) == str(expected.dtype).removeprefix("torch.")
    np.testing.assert_allclose(out.data, expected.detach().numpy(), rtol=1e-10, atol=1e-12)

    w = weights_for(out.shape)
    out.backward(w)
    expected.backward(torch.tensor(w))
    for i, (x, t) in enumerate(zip(xs, ts, strict=True)):
        assert t.grad is not None and x.grad is not None, f"input {i}"
        np.testing.assert_allclose(
            x.grad, t.grad.numpy(), rtol=1e-10, atol=1e-12, err_msg=f"input {i}"
        )


@pytest.mark.parametrize("case", [c for c in CASES if not c.numpy_operand], ids=lambda c: c.name)
def test_float32_results_have_torchs_dtype(case):
    arrays = [a.astype(np.float32) for a in case.arrays()]
    out = run(case, [ml.tensor(a) for a in arrays])
    expected = torch_fn(case)(torch, TF, *[torch.tensor(a) for a in arrays])
    assert str(out.dtype) == str(expected.dtype).removeprefix("torch.")
    np.testing.assert_allclose(out.data, expected.numpy(), rtol=2e-5, atol=1e-6)


# --------------------------------------------------------------------------------------------
# A few optimiser steps (DESIGN section 9), once minilucid.optim exists


@pytest.mark.skipif(
    importlib.util.find_spec("minilucid.optim") is None, reason="minilucid.optim not written yet"
)
@pytest.mark.parametrize(
    ("name", "options"),
    [("SGD", {"lr": 0.1}), ("SGD", {"lr": 0.1, "momentum": 0.9}), ("Adam", {"lr": 0.05})],
)
def test_optimiser_steps_agree_with_torch(name, options):
    import minilucid.optim as optim

    rng = np.random.default_rng(0)
    x, w0, targets = rng.standard_normal((6, 4)), rng.standard_normal((4, 3)), [0, 1, 2, 0, 1, 2]
    w = ml.tensor(w0.copy(), requires_grad=True)
    tw = torch.tensor(w0.copy(), requires_grad=True)
    opt = getattr(optim, name)([w], **options)
    topt = getattr(torch.optim, name)([tw], **options)
    for _ in range(5):
        opt.zero_grad()
        MF.cross_entropy(ml.tensor(x) @ w, ml.tensor(targets)).backward()
        opt.step()
        topt.zero_grad()
        TF.cross_entropy(torch.tensor(x) @ tw, torch.tensor(targets)).backward()
        topt.step()
    np.testing.assert_allclose(w.data, tw.detach().numpy(), rtol=1e-8, atol=1e-10)


# --------------------------------------------------------------------------------------------
# argmax (no gradient): the same indices, ties and nan included


@pytest.mark.parametrize(
    ("dim", "keepdim"), [(None, False), (None, True), (0, False), (1, True), (-1, False)]
)
def test_argmax_agrees_with_torch(dim, keepdim):
    rng = np.random.default_rng(5)
    x = rng.integers(0, 3, size=(4, 5, 3)).astype(np.float64)  # small integers: many ties
    x[2, 1, 0] = np.nan
    out = ml.tensor(x).argmax(dim=dim, keepdim=keepdim)
    expected = torch.tensor(x).argmax(dim=dim, keepdim=keepdim)
    assert out.shape == tuple(expected.shape)
    assert str(out.dtype) == str(expected.dtype).removeprefix("torch.")
    np.testing.assert_array_equal(out.data, expected.numpy())


# --------------------------------------------------------------------------------------------
# What both refuse (each engine with its own words), and what mixing the two libraries does


def refusals(lib):
    """Programs that PyTorch refuses; each takes the library (torch or minilucid)."""

    def hook_of_another_shape():
        x = lib.ones(3, requires_grad=True)
        x.register_hook(lambda g: lib.zeros(2, 3))
        (x * 2).sum().backward()

    def grad_of_another_shape():
        x = lib.ones(3, requires_grad=True)
        x.grad = lib.zeros(2, 3) if lib is torch else np.zeros((2, 3))
        (x * 2).sum().backward()

    return {
        "iterating a 0-d tensor": lambda: list(lib.tensor(1.0)),
        "a hook returning another shape": hook_of_another_shape,
        "a .grad of another shape": grad_of_another_shape,
    }


@pytest.mark.parametrize("name", list(refusals(ml)))
def test_what_torch_refuses_minilucid_refuses(name):
    with pytest.raises((RuntimeError, TypeError)):
        refusals(torch)[name]()
    with pytest.raises((RuntimeError, TypeError)):
        refusals(ml)[name]()


def test_a_torch_tensor_and_a_minilucid_tensor_do_not_mix_either_way():
    """The README says so: each order is a clear error naming the op (torch 2.13)."""
    for mixed in (lambda: torch.ones(2) + ml.ones(2), lambda: ml.ones(2) + torch.ones(2)):
        with pytest.raises(TypeError, match=r"^add: cannot combine a minilucid tensor with torch"):
            mixed()
