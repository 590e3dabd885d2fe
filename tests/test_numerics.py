"""Numerical corners and input checks, each as PyTorch defines it.

Stable sigmoid in both tails, pow's gradients at zero, wide counts in float16 reductions, nan in
max/min, `requires_grad` as a checked property, `tensor` copying while `as_tensor`/`from_numpy`
share, `__array__`, foreign tensor types, ragged lists nested deeper than one level.
"""

from __future__ import annotations

import numpy as np
import pytest

import minilucid as ml

torch = None
try:
    import torch
except ImportError:  # pragma: no cover - the oracle is optional
    pass


def leaf(values, dtype=ml.float32):
    return ml.tensor(np.array(values, dtype=dtype), requires_grad=True)


# --------------------------------------------------------------------------------------------
# sigmoid in both tails, and the compositions built on it


def test_sigmoid_keeps_relative_accuracy_in_the_left_tail_float32():
    x = np.array([-10.0, -17.0, -25.0, -50.0, -87.0], dtype=np.float32)
    got = ml.tensor(x).sigmoid().data
    exact = 1 / (1 + np.exp(-x.astype(np.float64)))
    np.testing.assert_allclose(got, exact, rtol=1e-6)
    assert got.dtype == np.float32


def test_sigmoid_saturates_cleanly_at_plus_and_minus_100():
    for dtype in (np.float32, np.float64):
        x = leaf([-100.0, 100.0], dtype)
        y = x.sigmoid()
        assert y.data[1] == 1.0 and 0 < y.data[0] < 1e-43
        y.sum().backward()
        assert np.all(np.isfinite(x.grad)) and np.all(x.grad >= 0)


@pytest.mark.parametrize("x", [-100.0, -25.0, -17.0, 0.0, 17.0, 25.0, 100.0])
def test_log_sigmoid_composition_float32(x):
    t = leaf([x])
    loss = -(t.sigmoid().log())  # the binary cross-entropy of a positive label
    loss.sum().backward()
    exact = np.logaddexp(0.0, -x)  # -log(sigmoid(x)) = log(1 + exp(-x))
    # sigmoid(-100) = 3.7e-44 is a float32 subnormal, with only a few significant bits left
    # (PyTorch's float32 sigmoid gives 0 there, and the loss inf)
    np.testing.assert_allclose(loss.data, [exact], rtol=1e-5 if x > -87 else 1e-3, atol=1e-7)
    if x > -80:  # below, 1/sigmoid(x) exceeds float32 as it does in torch
        np.testing.assert_allclose(t.grad, [-1 / (1 + np.exp(x))], rtol=1e-4, atol=1e-7)


@pytest.mark.parametrize("x", [-100.0, -20.0, 0.0, 20.0])
def test_softplus_style_composition_float32(x):
    t = leaf([x])
    softplus = (1 + t.exp()).log()
    softplus.sum().backward()
    # 1 + exp(x) rounds to 1 in float32 for x < -17: the composition loses the value there
    # (an op of its own, softplus, would not), but must not lose more
    np.testing.assert_allclose(softplus.data, [np.logaddexp(0.0, x)], rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(t.grad, [1 / (1 + np.exp(-x))], rtol=1e-5, atol=1e-30)


@pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_sigmoid_compositions_agree_with_torch_at_the_extremes(dtype):
    values = [-40.0, -25.0, -17.0, -1.0, 0.0, 1.0, 17.0, 25.0, 40.0]
    if dtype == "float64":  # in float32 PyTorch's sigmoid(-100) is 0; ours keeps the subnormal
        values = [-100.0, *values, 100.0]
    programs = {
        "sigmoid": lambda t: t.sigmoid(),
        "log sigmoid": lambda t: t.sigmoid().log(),
        "log(1 - sigmoid)": lambda t: (1 - t.sigmoid()).log(),
        "sigmoid * (1 - sigmoid)": lambda t: t.sigmoid() * (1 - t.sigmoid()),
    }
    for name, program in programs.items():
        ours = ml.tensor(np.array(values, dtype=dtype), requires_grad=True)
        theirs = torch.tensor(values, dtype=getattr(torch, dtype), requires_grad=True)
        out_ours, out_theirs = program(ours), program(theirs)
        out_ours.sum().backward()
        out_theirs.sum().backward()
        np.testing.assert_allclose(
            out_ours.data, out_theirs.detach().numpy(), rtol=2e-6, err_msg=name
        )
        np.testing.assert_allclose(ours.grad, theirs.grad.numpy(), rtol=2e-5, err_msg=name)


# --------------------------------------------------------------------------------------------
# pow at zero


def test_pow_zero_exponent_at_zero_has_gradient_zero():
    x = leaf([0.0, 2.0], ml.float64)
    (x**0).sum().backward()
    np.testing.assert_array_equal(x.grad, [0.0, 0.0])


def test_relu_to_the_power_zero_does_not_spread_nan():
    x = leaf([-1.0, 0.0, 3.0], ml.float64)
    (x.relu() ** 0 * x).sum().backward()  # relu(x) ** 0 = 1 everywhere (0 ** 0 = 1)
    np.testing.assert_array_equal(x.grad, [1.0, 1.0, 1.0])


def test_pow_exponent_gradient_at_base_zero():
    base = ml.tensor(np.array([0.0, 0.0, 2.0]))
    e = leaf([2.0, 0.0, 3.0], ml.float64)
    (base**e).sum().backward()
    np.testing.assert_allclose(e.grad, [0.0, 0.0, 8 * np.log(2.0)])


@pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
def test_pow_gradients_at_zero_agree_with_torch():
    bases = [0.0, 0.0, 0.0, 0.0, 1.5, 2.0]
    exponents = [0.0, 1.0, 2.0, 0.5, 0.0, -1.0]
    a, b = leaf(bases, ml.float64), leaf(exponents, ml.float64)
    (a**b).sum().backward()
    ta = torch.tensor(bases, dtype=torch.float64, requires_grad=True)
    tb = torch.tensor(exponents, dtype=torch.float64, requires_grad=True)
    (ta**tb).sum().backward()
    np.testing.assert_allclose(a.grad, ta.grad.numpy())
    np.testing.assert_allclose(b.grad, tb.grad.numpy())


# --------------------------------------------------------------------------------------------
# requires_grad is a checked property


def test_requires_grad_attribute_on_integers_is_refused():
    t = ml.tensor([1, 2])
    with pytest.raises(TypeError, match=r"^requires_grad: only floating-point .*int64"):
        t.requires_grad = True
    assert not t.requires_grad


def test_requires_grad_attribute_works_on_floats_and_refuses_switching_off_a_non_leaf():
    t = ml.tensor([1.0, 2.0])
    t.requires_grad = True
    (t * t).sum().backward()
    np.testing.assert_allclose(t.grad, [2.0, 4.0])
    with pytest.raises(RuntimeError, match="detach"):
        (t * 2).requires_grad = False


# --------------------------------------------------------------------------------------------
# tensor copies; as_tensor and from_numpy share


def test_tensor_copies_arrays_and_tensors():
    a = np.array([1.0, 2.0])
    t = ml.tensor(a)
    a[0] = 99.0
    assert t.data[0] == 1.0
    u = ml.tensor(t)
    t.data[1] = 42.0
    assert u.data[1] == 2.0
    assert u.is_leaf and not u.requires_grad


def test_as_tensor_and_from_numpy_share_memory():
    a = np.array([1.0, 2.0])
    for t in (ml.as_tensor(a), ml.from_numpy(a)):
        assert np.shares_memory(t.data, a) and t.dtype == np.float64
    t = ml.tensor([3.0])
    assert ml.as_tensor(t) is t
    assert ml.as_tensor(a, dtype=ml.float32).dtype == np.float32  # a conversion must copy
    assert ml.as_tensor([1.0, 2.0]).dtype == np.float32
    with pytest.raises(TypeError, match=r"^from_numpy: expected a NumPy array, got list"):
        ml.from_numpy([1.0, 2.0])


# --------------------------------------------------------------------------------------------
# float16 reductions count in a wide type


def test_mean_of_many_float16_numbers_has_a_gradient():
    x = ml.tensor(np.ones(70_000, dtype=np.float16), requires_grad=True)
    m = x.mean()
    m.backward()
    assert m.dtype == np.float16 and m.item() == 1.0
    np.testing.assert_allclose(x.grad.astype(np.float64), 1 / 70_000, rtol=1e-2)


def test_sum_of_float16_accumulates_wide():
    x = ml.tensor(np.full(5000, 1.0, dtype=np.float16))
    assert x.sum().item() == 5000.0
    assert x.sum().dtype == np.float16
    y = ml.tensor(np.full((4, 3000), 1.0, dtype=np.float16))
    np.testing.assert_array_equal(y.sum(dim=1).data, [3000.0] * 4)


# --------------------------------------------------------------------------------------------
# max/min with nan


@pytest.mark.parametrize("op", ["max", "min"])
def test_nan_wins_max_and_min_and_takes_the_gradient(op):
    x = leaf([1.0, np.nan, 3.0])
    y = getattr(x, op)()
    assert np.isnan(y.item())
    y.backward()
    np.testing.assert_array_equal(x.grad, [0.0, 1.0, 0.0])


def test_nan_rows_along_a_dim():
    x = leaf([[1.0, np.nan, 3.0], [4.0, 5.0, 2.0]])
    x.max(dim=1).sum().backward()
    np.testing.assert_array_equal(x.grad, [[0.0, 1.0, 0.0], [0.0, 1.0, 0.0]])


@pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
def test_nan_in_max_agrees_with_torch():
    values = [[1.0, np.nan, np.nan], [4.0, 5.0, 5.0]]
    x = leaf(values, ml.float64)
    x.max().backward()
    t = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    t.max().backward()
    np.testing.assert_array_equal(x.grad, t.grad.numpy())


# --------------------------------------------------------------------------------------------
# NumPy interop and foreign tensors


def test_numpy_asarray_gives_the_numbers():
    t = ml.tensor([[1.0, 2.0], [3.0, 4.0]])
    a = np.asarray(t)
    assert a.dtype == np.float32 and a.shape == (2, 2) and np.shares_memory(a, t.data)
    assert np.asarray(t, dtype=np.float64).dtype == np.float64
    np.testing.assert_array_equal(np.array([ml.tensor(1.0), ml.tensor(2.0)]), [1.0, 2.0])


def test_array_plus_tensor_still_makes_a_tensor():
    out = np.array([1.0, 2.0]) + ml.tensor([1.0, 1.0], requires_grad=True)
    assert isinstance(out, ml.Tensor) and out.requires_grad


class ForeignTensor:
    """Stands in for another library's tensor (what torch.Tensor looks like to minilucid)."""

    __module__ = "otherlib"

    def __array__(self, dtype=None, copy=None):
        return np.array([1.0, 2.0])


@pytest.mark.parametrize(
    "combine",
    [
        lambda t, f: t + f,
        lambda t, f: t * f,
        lambda t, f: ml.where(t > 0, t, f),
        lambda t, f: t @ f,
    ],
)
def test_a_foreign_tensor_type_gets_a_clear_error(combine):
    t = ml.tensor([1.0, 2.0])
    with pytest.raises(
        TypeError, match=r"cannot combine a minilucid tensor with otherlib\.ForeignTensor"
    ):
        combine(t, ForeignTensor())


@pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
def test_a_torch_tensor_gets_a_clear_error():
    t = ml.tensor([1.0, 2.0])
    with pytest.raises(
        TypeError, match=r"^add: cannot combine a minilucid tensor with torch\.Tensor"
    ):
        t + torch.tensor([1.0, 2.0])
    with pytest.raises(TypeError, match=r"cannot combine a minilucid tensor with torch\.Tensor"):
        t * torch.tensor([1.0, 2.0])


# --------------------------------------------------------------------------------------------
# ragged lists


def test_ragged_lists_nested_two_deep_report_where():
    with pytest.raises(ValueError) as info:
        ml.tensor([[[1.0, 2.0], [3.0, 4.0]], [[5.0, 6.0], [7.0]]])
    message = str(info.value)
    assert "ragged" in message and "[1][1]" in message and "length 1" in message
    assert "row lengths 2, 2" not in message


def test_ragged_top_level_still_reported():
    with pytest.raises(ValueError, match=r"row lengths 2, 1"):
        ml.tensor([[1.0, 2.0], [3.0]])
