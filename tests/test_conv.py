"""Convolution and pooling: forward against a plain loop, gradients against central
differences on whole float64 tensors, everything against PyTorch when it is installed, and
errors that name the layer and the shapes."""

from __future__ import annotations

import numpy as np
import pytest
from gradients import assert_grads_match

import minilucid as ml
from minilucid import nn
from minilucid.nn import functional as F
from minilucid.ops.conv import Col2Im, Im2Col, col2im_array, im2col_array

# (N, C, H, W), (O, C/groups, kh, kw), stride, padding, dilation, groups
CASES = [
    ((2, 3, 7, 6), (4, 3, 3, 2), 2, 1, 1, 1),  # stride 2, padding 1, non-square kernel
    ((1, 2, 5, 5), (3, 2, 3, 3), 1, 0, 1, 1),
    ((2, 4, 8, 7), (6, 2, 3, 3), (1, 2), (2, 1), (2, 1), 2),  # pairs, dilation, groups
    ((1, 1, 4, 4), (2, 1, 4, 4), 1, 0, 1, 1),  # kernel as large as the image
]


def loop_conv2d(x, w, b, stride, padding, dilation, groups):
    """The definition, written as loops: one dot product per output pixel and filter."""
    (sh, sw), (ph, pw), (dh, dw) = (
        ml.ops.conv.pair(v, "v", "loop") for v in (stride, padding, dilation)
    )
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    ho = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    wo = (wd + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros((n, o, ho, wo))
    per_group = o // groups
    for i in range(n):
        for f in range(o):
            g = f // per_group
            for y in range(ho):
                for z in range(wo):
                    window = xp[
                        i,
                        g * cg : (g + 1) * cg,
                        y * sh : y * sh + dh * (kh - 1) + 1 : dh,
                        z * sw : z * sw + dw * (kw - 1) + 1 : dw,
                    ]
                    out[i, f, y, z] = (window * w[f]).sum() + b[f]
    return out


@pytest.mark.parametrize("case", CASES)
def test_conv2d_equals_the_loop(case):
    xs, ws, stride, padding, dilation, groups = case
    rng = np.random.default_rng(0)
    x, w, b = rng.standard_normal(xs), rng.standard_normal(ws), rng.standard_normal(ws[0])
    out = F.conv2d(ml.tensor(x), ml.tensor(w), ml.tensor(b), stride, padding, dilation, groups)
    expected = loop_conv2d(x, w, b, stride, padding, dilation, groups)
    assert out.shape == expected.shape
    np.testing.assert_allclose(out.data, expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("case", CASES)
def test_conv2d_gradients_for_input_weight_and_bias(case):
    xs, ws, stride, padding, dilation, groups = case
    rng = np.random.default_rng(1)
    arrays = [rng.standard_normal(xs), rng.standard_normal(ws), rng.standard_normal(ws[0])]
    assert_grads_match(
        lambda x, w, b: F.conv2d(x, w, b, stride, padding, dilation, groups),
        arrays,
        label=f"conv2d {case}",
    )


def test_conv2d_without_bias_gradients():
    rng = np.random.default_rng(2)
    arrays = [rng.standard_normal((2, 2, 5, 4)), rng.standard_normal((3, 2, 2, 3))]
    assert_grads_match(lambda x, w: F.conv2d(x, w, stride=2, padding=1), arrays, label="no bias")


@pytest.mark.parametrize(
    "stride, padding, dilation", [(1, 0, 1), (2, 1, 1), ((2, 1), (1, 0), (1, 2))]
)
def test_im2col_and_col2im_are_adjoint_and_each_others_backward(stride, padding, dilation):
    """<im2col(x), c> = <x, col2im(c)> for all x, c: the pair is a linear map and its transpose."""
    geometry = [ml.ops.conv.pair(v, "v", "test") for v in (stride, padding, dilation)]
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 3, 6, 5))
    cols = im2col_array(x, (3, 2), *geometry)
    c = rng.standard_normal(cols.shape)
    lhs = (cols * c).sum()
    rhs = (x * col2im_array(c, x.shape, *geometry)).sum()
    assert lhs == pytest.approx(rhs, rel=1e-12)
    options = dict(zip(("stride", "padding", "dilation"), geometry, strict=True))
    assert_grads_match(lambda t: Im2Col.apply(t, kernel=(3, 2), **options), [x], label="im2col")
    assert_grads_match(
        lambda t: Col2Im.apply(t, image_shape=x.shape, **options), [c], label="col2im"
    )


def test_overlapping_windows_add_up_in_col2im():
    ones = np.ones((1, 1, 3, 3, 2, 2))  # 3x3 windows, stride 1, of a 4x4 image
    counts = col2im_array(ones, (1, 1, 4, 4), (1, 1), (0, 0), (1, 1))
    assert counts[0, 0].tolist() == [[1, 2, 2, 1], [2, 4, 4, 2], [2, 4, 4, 2], [1, 2, 2, 1]]


@pytest.mark.parametrize("pool", [F.max_pool2d, F.avg_pool2d])
@pytest.mark.parametrize("kernel, stride, padding", [(2, None, 0), (3, 2, 1), ((2, 3), (1, 2), 0)])
def test_pool_gradients(pool, kernel, stride, padding):
    rng = np.random.default_rng(4)
    x = rng.permutation(2 * 3 * 7 * 6).reshape(2, 3, 7, 6) / 10.0  # distinct: max has no ties
    assert_grads_match(lambda t: pool(t, kernel, stride, padding), [x], label=pool.__name__)


def test_max_pool_picks_the_largest_and_padding_never_wins():
    x = -np.arange(16.0).reshape(1, 1, 4, 4) - 1  # all negative: zero padding would win
    out = F.max_pool2d(ml.tensor(x), 3, stride=2, padding=1)
    assert out.data[0, 0].tolist() == [[-1.0, -2.0], [-5.0, -6.0]]  # top-left of each window
    out = F.avg_pool2d(ml.tensor(np.ones((1, 1, 4, 4))), 2)
    assert out.data.tolist() == [[[[1.0, 1.0], [1.0, 1.0]]]]


def test_modules_use_the_functions_and_torchs_names():
    ml.manual_seed(0)
    conv = nn.Conv2d(3, 8, (3, 2), stride=2, padding=1)
    assert [name for name, _ in conv.named_parameters()] == ["weight", "bias"]
    assert conv.weight.shape == (8, 3, 3, 2) and conv.bias.shape == (8,)
    bound = 1 / np.sqrt(3 * 3 * 2)
    assert np.abs(conv.weight.data).max() <= bound and np.abs(conv.bias.data).max() <= bound
    assert np.abs(conv.weight.data).max() > 0.8 * bound  # uniform over the whole range
    assert conv.weight.dtype == ml.float32
    x = ml.randn(2, 3, 6, 5)
    expected = F.conv2d(x, conv.weight, conv.bias, stride=2, padding=1)
    np.testing.assert_array_equal(conv(x).data, expected.data)
    assert repr(conv) == "Conv2d(3, 8, kernel_size=(3, 2), stride=(2, 2), padding=(1, 1))"
    assert nn.Conv2d(1, 2, 3, bias=False).bias is None
    np.testing.assert_array_equal(nn.MaxPool2d(2)(x).data, F.max_pool2d(x, 2).data)
    np.testing.assert_array_equal(nn.AvgPool2d(3, 1, 1)(x).data, F.avg_pool2d(x, 3, 1, 1).data)
    assert repr(nn.MaxPool2d(2)) == "MaxPool2d(kernel_size=2, stride=2, padding=0)"


def test_a_cnn_on_a_batch_trains_end_to_end():
    ml.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(64, 3)
    )
    x, y = ml.randn(6, 1, 8, 8), np.array([0, 1, 2, 0, 1, 2])
    losses = []
    for _ in range(30):
        loss = F.cross_entropy(model(x), y)
        for p in model.parameters():
            p.grad = None
        loss.backward()
        for p in model.parameters():
            p.data -= 0.1 * p.grad
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0]


# --------------------------------------------------------------------------------------------
# Bad input: the message names the layer or op and the shapes


def test_wrong_number_of_channels_names_the_layer_and_shapes():
    conv = nn.Conv2d(3, 4, 3)
    with pytest.raises(ValueError, match=r"Conv2d\(3, 4.*\(N, 3, H, W\).*\(2, 1, 8, 8\)"):
        conv(ml.zeros(2, 1, 8, 8))
    with pytest.raises(ValueError, match=r"conv2d: input of shape \(2, 1, 8, 8\) has 1 channels"):
        F.conv2d(ml.zeros(2, 1, 8, 8), ml.zeros(4, 3, 3, 3))


def test_a_kernel_larger_than_the_padded_input_names_the_layer_and_shapes():
    conv = nn.Conv2d(1, 2, 5, padding=1)
    with pytest.raises(ValueError, match=r"Conv2d\(1, 2.*kernel \(5, 5\).*padded input \(4, 4\)"):
        conv(ml.zeros(1, 1, 2, 2))
    with pytest.raises(ValueError, match=r"max_pool2d: kernel \(3, 3\).*\(1, 1, 2, 2\)"):
        F.max_pool2d(ml.zeros(1, 1, 2, 2), 3)


def test_a_3d_input_to_conv2d_says_to_add_a_batch_dimension():
    conv = nn.Conv2d(1, 2, 3)
    with pytest.raises(ValueError, match=r"Conv2d\(1, 2.*\(1, 8, 8\); add a batch dimension"):
        conv(ml.zeros(1, 8, 8))
    with pytest.raises(ValueError, match=r"avg_pool2d: expected a 4-D input.*\(8, 8\)"):
        F.avg_pool2d(ml.zeros(8, 8), 2)


def test_bad_geometry_is_refused_plainly():
    x = ml.zeros(1, 2, 6, 6)
    with pytest.raises(ValueError, match="stride"):
        F.conv2d(x, ml.zeros(2, 2, 3, 3), stride=0)
    with pytest.raises(ValueError, match="bias of shape"):
        F.conv2d(x, ml.zeros(2, 2, 3, 3), ml.zeros(3))
    with pytest.raises(ValueError, match="groups"):
        F.conv2d(x, ml.zeros(3, 1, 3, 3), groups=2)
    with pytest.raises(ValueError, match="at most half"):
        F.max_pool2d(x, 2, padding=2)
    with pytest.raises(ValueError, match="divisible by groups"):
        nn.Conv2d(3, 4, 3, groups=2)


# --------------------------------------------------------------------------------------------
# The benchmark (`python -m benchmarks --only conv`) stops a fast but wrong engine


def test_the_conv_benchmark_checks_every_gradient_before_timing(monkeypatch):
    from benchmarks import conv as bench

    models = {n: m for n, m in bench.engines().items() if n != "torch"}
    bench.check_gradients(models)  # the real engine passes
    right = Im2Col.backward
    monkeypatch.setattr(Im2Col, "backward", staticmethod(lambda ctx, g: 0.5 * right(ctx, g)))
    with pytest.raises(AssertionError, match="minilucid's x's gradient differs"):
        bench.check_gradients(models)
    assert bench.buffer_bytes() == 32 * 9 * 28 * 28 * 4
    assert bench.buffer_bytes(ones_row=True) == 32 * 10 * 28 * 28 * 4


def test_im2col_with_a_ones_row_is_the_matrix_and_a_row_of_ones():
    x = np.arange(2 * 3 * 5 * 4, dtype=np.float64).reshape(2, 3, 5, 4)
    geometry = ((2, 1), (1, 0), (1, 1))
    windows = im2col_array(x, (3, 2), *geometry)
    matrix = im2col_array(x, (3, 2), *geometry, ones_row=True)
    assert matrix.shape == (2, 3 * 3 * 2 + 1, windows.shape[-2] * windows.shape[-1])
    np.testing.assert_array_equal(matrix[:, :-1], windows.reshape(2, 18, -1))
    assert (matrix[:, -1] == 1).all()
    options = dict(zip(("stride", "padding", "dilation"), geometry, strict=True))
    assert_grads_match(  # the ones are a constant: no gradient flows from them to x
        lambda t: Im2Col.apply(t, kernel=(3, 2), ones_row=True, **options), [x / 7], label="ones"
    )
