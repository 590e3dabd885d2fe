"""minilucid.nn: dropout, batch norm and layer norm (chapter 11).

The layers are compositions of the engine's ops, so their gradients are checked whole against
central differences in float64; PyTorch, when installed, is a second oracle for values, running
statistics, gradients and state_dict names.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradients import assert_grads_match, f64

import minilucid as ml
from minilucid import nn
from minilucid.nn import functional as F

RNG = np.random.default_rng(11)


def t64(a, requires_grad=False):
    return ml.tensor(np.array(a, dtype=np.float64), requires_grad=requires_grad)


def _bn_reference(x, axes, eps=1e-5):
    mean = x.mean(axis=axes, keepdims=True)
    var = x.var(axis=axes, keepdims=True)
    return (x - mean) / np.sqrt(var + eps)


# --- dropout -----------------------------------------------------------------------------------


def test_dropout_keeps_1_minus_p_and_scales_them_by_1_over_1_minus_p():
    ml.manual_seed(0)
    x = ml.ones(200, 500, dtype=ml.float64)
    out = nn.Dropout(0.3)(x).data
    kept = out != 0
    assert np.allclose(out[kept], 1 / 0.7)
    assert abs(kept.mean() - 0.7) < 0.005  # 100 000 draws: sd 0.0015
    assert abs(out.mean() - 1.0) < 0.01  # the expected value is kept
    assert out.dtype == np.float64


def test_dropout_is_the_identity_in_eval_mode_and_for_p_0():
    x = t64(RNG.standard_normal((4, 6)))
    layer = nn.Dropout(0.5).eval()
    assert layer(x) is x
    assert F.dropout(x, 0.0) is x
    assert F.dropout(x, 0.9, training=False) is x
    assert np.all(F.dropout(x, 1.0).data == 0)


def test_dropout_is_reproducible_from_manual_seed_and_differs_between_calls():
    x = ml.ones(8, 8)
    ml.manual_seed(5)
    a, b = F.dropout(x, 0.5).data, F.dropout(x, 0.5).data
    ml.manual_seed(5)
    assert np.array_equal(F.dropout(x, 0.5).data, a)
    assert not np.array_equal(a, b)


def test_dropout_gradient_is_the_mask_over_1_minus_p():
    ml.manual_seed(3)
    x = t64(RNG.standard_normal((5, 7)), requires_grad=True)
    out = F.dropout(x, 0.4)
    out.sum().backward()
    mask = (out.data != 0) / 0.6
    assert np.allclose(x.grad, mask)


def test_dropout_refuses_a_p_outside_0_1():
    with pytest.raises(ValueError, match=r"Dropout: p is the probability .* got 1.5"):
        nn.Dropout(1.5)
    with pytest.raises(ValueError, match=r"dropout: .* got -0.1"):
        F.dropout(ml.ones(2), -0.1)


# --- batch norm: values ------------------------------------------------------------------------


def test_batchnorm1d_normalises_each_feature_over_the_batch():
    x = RNG.standard_normal((16, 3)) * [1, 5, 0.1] + [0, 3, -2]
    layer = nn.BatchNorm1d(3, dtype=ml.float64)
    out = layer(t64(x)).data
    assert np.allclose(out, _bn_reference(x, (0,)))
    assert np.allclose(out.mean(0), 0) and np.allclose(out.var(0), 1, atol=2e-3)  # eps


def test_batchnorm2d_normalises_each_channel_over_batch_and_pixels():
    x = RNG.standard_normal((4, 3, 5, 5)) * 2 + 1
    out = nn.BatchNorm2d(3, dtype=ml.float64)(t64(x)).data
    assert np.allclose(out, _bn_reference(x, (0, 2, 3)))


def test_running_statistics_move_by_momentum_with_the_unbiased_variance():
    layer = nn.BatchNorm1d(2, momentum=0.2, dtype=ml.float64)
    mean, var = np.zeros(2), np.ones(2)
    for _ in range(4):
        x = RNG.standard_normal((10, 2)) * 3 + 1
        layer(t64(x))
        mean = 0.8 * mean + 0.2 * x.mean(0)
        var = 0.8 * var + 0.2 * x.var(0, ddof=1)
    assert np.allclose(layer.running_mean.data, mean)
    assert np.allclose(layer.running_var.data, var)
    assert int(layer.num_batches_tracked.data) == 4


def test_eval_mode_uses_the_running_statistics_and_changes_nothing():
    layer = nn.BatchNorm1d(3, dtype=ml.float64)
    for _ in range(3):
        layer(t64(RNG.standard_normal((8, 3)) + 2))
    state = {k: v.data.copy() for k, v in layer.state_dict().items()}
    layer.eval()
    x = RNG.standard_normal((1, 3))  # a batch of one is fine in eval mode
    out = layer(t64(x)).data
    expected = (x - state["running_mean"]) / np.sqrt(state["running_var"] + 1e-5)
    assert np.allclose(out, expected)
    for key, value in layer.state_dict().items():
        assert np.array_equal(value.data, state[key]), key


def test_batchnorm_state_dict_holds_the_buffers_and_loads_them():
    layer = nn.BatchNorm2d(4)
    assert list(layer.state_dict()) == [
        "weight",
        "bias",
        "running_mean",
        "running_var",
        "num_batches_tracked",
    ]
    assert [n for n, _ in layer.named_parameters()] == ["weight", "bias"]
    layer(ml.randn(3, 4, 2, 2))
    other = nn.BatchNorm2d(4)
    other.load_state_dict({k: v.data.copy() for k, v in layer.state_dict().items()})
    assert np.array_equal(other.running_var.data, layer.running_var.data)
    assert list(nn.BatchNorm1d(2, affine=False).state_dict()) == [
        "running_mean",
        "running_var",
        "num_batches_tracked",
    ]


def test_without_running_statistics_the_batch_statistics_are_always_used():
    layer = nn.BatchNorm1d(2, track_running_stats=False, dtype=ml.float64).eval()
    x = RNG.standard_normal((6, 2))
    assert np.allclose(layer(t64(x)).data, _bn_reference(x, (0,)))
    assert list(layer.state_dict()) == ["weight", "bias"]


def test_layernorm_normalises_each_example_over_its_last_dims():
    x = RNG.standard_normal((3, 4, 5)) * 4 + 2
    one = nn.LayerNorm(5, dtype=ml.float64)(t64(x)).data
    two = nn.LayerNorm((4, 5), dtype=ml.float64)(t64(x)).data
    assert np.allclose(one, _bn_reference(x, (2,)))
    assert np.allclose(two, _bn_reference(x, (1, 2)))
    layer = nn.LayerNorm(5, elementwise_affine=False)
    assert layer.weight is None and list(layer.parameters()) == []


# --- gradients: whole-tensor central differences -----------------------------------------------


_EVAL_STATS = (t64([0.3, -1.0, 0.5]), t64([0.7, 1.9, 1.2]))  # running mean and variance

GRADIENT_CASES = {
    "batch_norm (N, C), training": (
        lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True),
        [(6, 3), (3,), (3,)],
    ),
    "batch_norm (N, C, H, W), training": (
        lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True),
        [(3, 2, 3, 2), (2,), (2,)],
    ),
    "batch_norm (N, C, L), eval": (
        lambda x, w, b: F.batch_norm(x, *_EVAL_STATS, w, b, training=False),
        [(4, 3, 2), (3,), (3,)],
    ),
    "layer_norm over (2, 4)": (
        lambda x, w, b: F.layer_norm(x, (2, 4), w, b),
        [(3, 2, 4), (2, 4), (2, 4)],
    ),
}


@pytest.mark.parametrize("label", list(GRADIENT_CASES))
def test_normalisation_gradients_match_central_differences(label):
    fn, shapes = GRADIENT_CASES[label]
    rng = np.random.default_rng(len(label))
    assert_grads_match(fn, [f64(shape, rng) for shape in shapes], label=label)


def test_dropout_gradient_matches_central_differences_for_a_fixed_mask():
    rng = np.random.default_rng(4)

    def fn(x):
        ml.manual_seed(9)  # the same mask on every call
        return F.dropout(x, 0.3)

    assert_grads_match(fn, [f64((4, 5), rng)], label="dropout")


# --- bad input ---------------------------------------------------------------------------------


def test_batchnorm_with_the_wrong_number_of_features_names_the_layer_and_shapes():
    with pytest.raises(ValueError, match=r"BatchNorm1d\(4, .*\(8, 3\) with 3 channels.*= 4"):
        nn.BatchNorm1d(4)(ml.zeros(8, 3))
    with pytest.raises(ValueError, match=r"BatchNorm2d\(3, .*\(2, 5, 4, 4\) with 5 channels"):
        nn.BatchNorm2d(3)(ml.zeros(2, 5, 4, 4))
    with pytest.raises(ValueError, match=r"batch_norm: the input \(8, 3\) has 3 .*\(4,\)"):
        F.batch_norm(ml.zeros(8, 3), ml.zeros(4), ml.ones(4), training=True)


def test_batchnorm_with_inputs_of_the_wrong_rank_says_which_it_takes():
    with pytest.raises(ValueError, match=r"BatchNorm2d\(3, .*4-D \(N, C, H, W\).*\(3, 8, 8\)"):
        nn.BatchNorm2d(3)(ml.zeros(3, 8, 8))
    with pytest.raises(ValueError, match=r"BatchNorm1d\(3, .*2-D \(N, C\) or 3-D.*\(3,\)"):
        nn.BatchNorm1d(3)(ml.zeros(3))


def test_batchnorm_momentum_none_is_refused_with_a_reason():
    with pytest.raises(ValueError, match=r"BatchNorm1d: momentum must be a number.*None"):
        nn.BatchNorm1d(3, momentum=None)


def test_batchnorm_in_training_mode_on_a_batch_of_one_is_refused():
    with pytest.raises(
        ValueError, match=r"BatchNorm1d\(4, .*more than 1 value per channel.*\(1, 4\)"
    ):
        nn.BatchNorm1d(4)(ml.zeros(1, 4))
    with pytest.raises(ValueError, match=r"batch_norm: .*more than 1 value per channel"):
        F.batch_norm(ml.zeros(1, 2), None, None, training=True)
    nn.BatchNorm2d(2)(ml.zeros(1, 2, 2, 2))  # one image, but four values per channel


def test_layernorm_whose_shape_does_not_match_the_input_names_both():
    with pytest.raises(
        ValueError, match=r"LayerNorm\(\(5,\), .*\(3, 4\).*normalized_shape = \(5,\)"
    ):
        nn.LayerNorm(5)(ml.zeros(3, 4))
    with pytest.raises(ValueError, match=r"layer_norm: normalized_shape \(2, 4\) .*\(3, 4\)"):
        F.layer_norm(ml.zeros(3, 4), (2, 4))


# --- against PyTorch ---------------------------------------------------------------------------


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


@pytest.mark.parametrize("dims", [(7, 3), (5, 3, 4)], ids=["1d", "1d-L"])
def test_batchnorm1d_train_and_eval_equal_torchs(torch, dims):
    _batchnorm_against_torch(torch, nn.BatchNorm1d, torch.nn.BatchNorm1d, dims)


def test_batchnorm2d_train_and_eval_equal_torchs(torch):
    _batchnorm_against_torch(torch, nn.BatchNorm2d, torch.nn.BatchNorm2d, (4, 3, 5, 5))


def _batchnorm_against_torch(torch, ours_cls, theirs_cls, dims):
    rng = np.random.default_rng(7)
    ours = ours_cls(3, momentum=0.3, dtype=ml.float64)
    theirs = theirs_cls(3, momentum=0.3).double()
    _same_parameters(torch, ours, theirs, rng.standard_normal(3), rng.standard_normal(3))
    assert list(ours.state_dict()) == list(theirs.state_dict())
    for step in range(5):
        _same_step(
            torch, ours, theirs, rng.standard_normal(dims) * 2 + step, rng.standard_normal(dims)
        )
    assert np.allclose(ours.weight.grad, theirs.weight.grad.numpy(), atol=1e-10)
    assert np.allclose(ours.bias.grad, theirs.bias.grad.numpy(), atol=1e-10)
    for key, value in theirs.state_dict().items():
        assert np.allclose(ours.state_dict()[key].data, value.numpy(), atol=1e-12), key
    ours.eval(), theirs.eval()
    x = rng.standard_normal(dims)
    assert np.allclose(ours(t64(x)).data, theirs(torch.tensor(x)).detach().numpy(), atol=1e-12)


def test_layernorm_equals_torchs(torch):
    rng = np.random.default_rng(8)
    ours, theirs = nn.LayerNorm((3, 4), dtype=ml.float64), torch.nn.LayerNorm((3, 4)).double()
    _same_parameters(torch, ours, theirs, rng.standard_normal((3, 4)), rng.standard_normal((3, 4)))
    _same_step(
        torch, ours, theirs, rng.standard_normal((2, 3, 4)) * 3, rng.standard_normal((2, 3, 4))
    )
    assert np.allclose(ours.weight.grad, theirs.weight.grad.numpy(), atol=1e-10)


def _same_parameters(torch, ours, theirs, w, b) -> None:
    """Give our layer and torch's the same weight and bias; their reprs must agree too."""
    ours.weight.data[...], ours.bias.data[...] = w, b
    with torch.no_grad():
        theirs.weight.copy_(torch.tensor(w))
        theirs.bias.copy_(torch.tensor(b))
    assert repr(ours) == repr(theirs)


def _same_step(torch, ours, theirs, x, g) -> None:
    """One forward and backward (gradient g) of both layers: equal outputs and input gradients;
    the parameters' gradients accumulate for the caller to compare."""
    xo, xt = t64(x, True), torch.tensor(x, requires_grad=True)
    out_o, out_t = ours(xo), theirs(xt)
    assert np.allclose(out_o.data, out_t.detach().numpy(), atol=1e-12)
    out_o.backward(g)
    out_t.backward(torch.tensor(g))
    assert np.allclose(xo.grad, xt.grad.numpy(), atol=1e-10)


def test_dropout_scaling_and_eval_equal_torchs(torch):
    torch.manual_seed(0)
    x = torch.ones(400, 400, dtype=torch.float64)
    theirs = torch.nn.functional.dropout(x, 0.25).numpy()
    ml.manual_seed(0)
    ours = F.dropout(t64(np.ones((400, 400))), 0.25).data
    assert set(np.unique(ours)) == set(np.unique(theirs))  # {0, 1 / 0.75}
    assert abs((ours == 0).mean() - (theirs == 0).mean()) < 0.01
    assert np.array_equal(nn.Dropout(0.25).eval()(t64(x.numpy())).data, x.numpy())
