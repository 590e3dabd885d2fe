"""minilucid.nn.init: each initialiser's bounds and spread, in place, seeded; torch agrees."""

from __future__ import annotations

import math

import numpy as np
import pytest

import minilucid as ml
from minilucid import nn
from minilucid.nn import init

FAN_OUT, FAN_IN = 200, 300  # a weight of shape (out, in)


def weight(shape=(FAN_OUT, FAN_IN)):
    return nn.Parameter(np.zeros(shape, dtype=np.float32))


def spread_is(values, std, mean=0.0):
    """Sample mean and std within a few standard errors of the target (n = 60 000)."""
    n = values.size
    assert abs(values.mean() - mean) < 5 * std / math.sqrt(n)
    assert abs(values.std() - std) < 0.02 * std


@pytest.mark.parametrize(
    "fill, expected",
    [(init.zeros_, 0.0), (init.ones_, 1.0), (lambda t: init.constant_(t, 2.5), 2.5)],
)
def test_constants_write_in_place(fill, expected):
    w = weight((3, 4))
    array = w.data
    assert fill(w) is w and w.data is array
    assert np.all(w.data == expected)


def test_uniform_and_normal():
    ml.manual_seed(0)
    w = init.uniform_(weight(), -2.0, 3.0)
    assert w.data.min() >= -2.0 and w.data.max() < 3.0
    spread_is(w.data, 5 / math.sqrt(12), mean=0.5)
    w = init.normal_(weight(), mean=1.0, std=0.5)
    spread_is(w.data, 0.5, mean=1.0)


def test_seeded_init_repeats():
    ml.manual_seed(7)
    a = init.normal_(weight((3, 3))).data.copy()
    ml.manual_seed(7)
    assert np.array_equal(a, init.normal_(weight((3, 3))).data)


def test_xavier():
    ml.manual_seed(1)
    std = 1.5 * math.sqrt(2 / (FAN_IN + FAN_OUT))
    w = init.xavier_uniform_(weight(), gain=1.5)
    assert np.abs(w.data).max() <= math.sqrt(3) * std
    assert np.abs(w.data).max() > 0.99 * math.sqrt(3) * std
    spread_is(w.data, std)
    spread_is(init.xavier_normal_(weight(), gain=1.5).data, std)


@pytest.mark.parametrize("mode, fan", [("fan_in", FAN_IN), ("fan_out", FAN_OUT)])
def test_kaiming(mode, fan):
    ml.manual_seed(2)
    std = math.sqrt(2) / math.sqrt(fan)
    w = init.kaiming_uniform_(weight(), mode=mode, nonlinearity="relu")
    assert np.abs(w.data).max() <= math.sqrt(3) * std
    spread_is(w.data, std)
    spread_is(init.kaiming_normal_(weight(), mode=mode, nonlinearity="relu").data, std)


def test_fans_of_a_conv_weight_count_the_kernel():
    ml.manual_seed(3)
    w = init.kaiming_normal_(weight((100, 20, 5, 6)), nonlinearity="linear")
    spread_is(w.data, 1 / math.sqrt(20 * 30))


def test_gains():
    assert init.calculate_gain("relu") == math.sqrt(2)
    assert init.calculate_gain("tanh") == 5 / 3
    assert init.calculate_gain("sigmoid") == init.calculate_gain("conv2d") == 1
    assert init.calculate_gain("leaky_relu", 0.2) == math.sqrt(2 / 1.04)
    with pytest.raises(ValueError, match="unknown nonlinearity 'gelu'"):
        init.calculate_gain("gelu")


def test_bad_input_names_function_and_shape():
    with pytest.raises(ValueError, match=r"xavier_uniform_: .*shape \(5,\)"):
        init.xavier_uniform_(weight((5,)))
    with pytest.raises(ValueError, match="kaiming_normal_: mode must be 'fan_in' or 'fan_out'"):
        init.kaiming_normal_(weight(), mode="fan")


def test_gains_and_bounds_agree_with_torch():
    torch = pytest.importorskip("torch")
    tinit = torch.nn.init
    for name in ["linear", "sigmoid", "tanh", "relu", "selu", "conv2d"]:
        assert init.calculate_gain(name) == pytest.approx(tinit.calculate_gain(name))
    assert init.calculate_gain("leaky_relu", 0.3) == pytest.approx(
        tinit.calculate_gain("leaky_relu", 0.3)
    )
    shape = (FAN_OUT, FAN_IN)
    cases = [  # (name, keyword arguments) - the same call on both
        ("xavier_uniform_", {"gain": 2.0}),
        ("kaiming_uniform_", {"a": math.sqrt(5)}),
        ("xavier_normal_", {}),
        ("kaiming_normal_", {"mode": "fan_out", "nonlinearity": "relu"}),
    ]
    for name, options in cases:
        ml.manual_seed(4)
        torch.manual_seed(4)
        a = getattr(init, name)(weight(shape), **options).data
        b = getattr(tinit, name)(torch.empty(shape), **options).numpy()
        assert abs(a.std() - b.std()) < 0.03 * b.std(), name
        if "uniform" in name:  # the same bound
            assert abs(np.abs(a).max() - np.abs(b).max()) < 0.01 * np.abs(b).max(), name
