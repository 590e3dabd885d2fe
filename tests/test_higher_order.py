"""Gradients of gradients (create_graph=True) for every op of the table in test_ops.py.

For each case, the first gradient of sum(f(x) * w1) is computed with create_graph=True and
differentiated again along a fixed direction w2: that is a Hessian-vector product. It must equal
central differences of the (ordinary) first gradient, and, when PyTorch is installed, torch's
double backward. Float64 throughout.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
from gradients import central_differences, weights_for
from test_ops import CASES, Case, run

import minilucid as ml
from minilucid import nn
from minilucid.function import Function

HAS_TORCH = importlib.util.find_spec("torch") is not None

# Layers (chapters 07-11): conv and pooling go through Im2Col/Col2Im, an adjoint pair; linear is
# one op (Affine) whose backward is written with @, .T, reshape and sum; normalisation and the
# losses are compositions of the ops above (cross-entropy is one op, CrossEntropy).
IMAGE, KERNEL = (2, 2, 5, 5), (3, 2, 3, 3)
COMPOSED = [
    Case("conv2d", lambda m, F, x, w: F.conv2d(x, w), None, (IMAGE, KERNEL)),
    Case(
        "conv2d stride padding bias",
        lambda m, F, x, w, b: F.conv2d(x, w, b, stride=2, padding=1),
        None,
        (IMAGE, KERNEL, (3,)),
    ),
    Case("conv2d then tanh", lambda m, F, x, w: F.conv2d(x, w).tanh(), None, (IMAGE, KERNEL)),
    Case("max_pool2d", lambda m, F, x: F.max_pool2d(x, 2), None, (IMAGE,), "apart"),
    Case("avg_pool2d padding", lambda m, F, x: F.avg_pool2d(x, 3, 2, 1), None, (IMAGE,)),
    Case(
        "batch_norm training",
        lambda m, F, x, w, b: F.batch_norm(x, None, None, w, b, training=True),
        None,
        ((4, 3), (3,), (3,)),
    ),
    Case(
        "layer_norm",
        lambda m, F, x, w, b: F.layer_norm(x, (3,), w, b),
        None,
        ((4, 3), (3,), (3,)),
    ),
    Case("linear", lambda m, F, x, w, b: F.linear(x, w, b), None, ((4, 3), (2, 3), (2,))),
    Case("linear 3-d", lambda m, F, x, w, b: F.linear(x, w, b), None, ((2, 4, 3), (2, 3), (2,))),
    Case("linear no bias", lambda m, F, x, w: F.linear(x, w), None, ((4, 3), (2, 3))),
    Case("mse_loss of tanh", lambda m, F, a, b: F.mse_loss(a.tanh(), b), None, ((2, 3), (2, 3))),
]
CASES = CASES + COMPOSED
IDS = [c.name for c in CASES]


def first_grads(case, xs, w1, create_graph: bool):
    """d sum(f(xs) * w1) / d xs; None for an input that f does not use."""
    out = run(case, xs)
    return ml.grad((out * w1).sum(), xs, create_graph=create_graph, allow_unused=True)


def flat(grads, xs) -> np.ndarray:
    """The gradients of all inputs as one vector (zeros for None)."""
    return np.concatenate(
        [
            np.ravel(np.zeros(x.shape) if g is None else ml.tensor(g).data)
            for g, x in zip(grads, xs, strict=True)
        ]
    )


def hessian_vector_product(case, arrays, w1, w2) -> np.ndarray:
    """d/dx [ sum_i first_grad_i(x) * w2_i ], through create_graph (zeros where no graph)."""
    xs = [ml.tensor(a, requires_grad=True) for a in arrays]
    grads = first_grads(case, xs, w1, create_graph=True)
    pieces = np.split(w2, np.cumsum([x.data.size for x in xs])[:-1])
    s = None
    for g, x, w in zip(grads, xs, pieces, strict=True):
        if isinstance(g, ml.Tensor) and g.requires_grad:
            term = (g * w.reshape(x.shape)).sum()
            s = term if s is None else s + term
    if s is None:  # every first gradient is a constant: all second derivatives are 0
        return np.zeros(w2.size)
    return flat(ml.grad(s, xs, allow_unused=True), xs)


def out_weights(case, arrays):
    out = run(case, [ml.tensor(a) for a in arrays])
    return weights_for(out.shape)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_gradient_of_gradient_matches_central_differences(case):
    arrays = case.arrays()
    w1 = out_weights(case, arrays)
    size = sum(np.size(a) for a in arrays)
    w2 = weights_for((size,), seed=99)

    def first(*ts):  # the ordinary first gradient, as one vector (the oracle nudges its inputs)
        with ml.enable_grad():
            xs = [ml.tensor(t.data, requires_grad=True) for t in ts]
            return ml.tensor(flat(first_grads(case, xs, w1, create_graph=False), xs))

    numeric = np.concatenate([np.ravel(g) for g in central_differences(first, arrays, w2)])
    analytic = hessian_vector_product(case, arrays, w1, w2)
    np.testing.assert_allclose(analytic, numeric, rtol=1e-5, atol=1e-6, err_msg=case.name)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_create_graph_gives_the_same_first_gradient(case):
    arrays = case.arrays()
    w1 = out_weights(case, arrays)
    plain = first_grads(case, [ml.tensor(a, requires_grad=True) for a in arrays], w1, False)
    xs = [ml.tensor(a, requires_grad=True) for a in arrays]
    graph = first_grads(case, xs, w1, True)
    for g, h in zip(plain, graph, strict=True):
        assert isinstance(h, ml.Tensor), case.name
        np.testing.assert_array_equal(h.data, g, err_msg=case.name)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_double_backward_agrees_with_torch(case):
    torch = pytest.importorskip("torch")
    from test_torch_oracle import TF, torch_fn

    arrays = case.arrays()
    w1 = out_weights(case, arrays)
    size = sum(np.size(a) for a in arrays)
    w2 = weights_for((size,), seed=99)
    ours = hessian_vector_product(case, arrays, w1, w2)

    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    out = torch_fn(case)(torch, TF, *ts)
    grads = torch.autograd.grad(
        (out * torch.tensor(w1)).sum(), ts, create_graph=True, allow_unused=True
    )
    pieces = np.split(w2, np.cumsum([a.size for a in arrays])[:-1])
    terms = [
        (g * torch.tensor(w.reshape(t.shape))).sum()
        for g, t, w in zip(grads, ts, pieces, strict=True)
        if g is not None and g.requires_grad
    ]
    if terms:
        second = torch.autograd.grad(sum(terms), ts, allow_unused=True)
        theirs = np.concatenate(
            [
                np.zeros(t.numel()) if g is None else g.numpy(force=True).ravel()
                for g, t in zip(second, ts, strict=True)
            ]
        )
    else:
        theirs = np.zeros(size)
    np.testing.assert_allclose(ours, theirs, rtol=1e-8, atol=1e-9, err_msg=case.name)


# --------------------------------------------------------------------------------------------
# Nested: third derivatives, and a 0-d output saved by its op


def test_third_derivative_of_tanh():
    x0 = np.linspace(-2.0, 2.0, 9)
    x = ml.tensor(x0, requires_grad=True)
    (d1,) = ml.grad(x.tanh().sum(), x, create_graph=True)
    (d2,) = ml.grad(d1.sum(), x, create_graph=True)
    (d3,) = ml.grad(d2.sum(), x)
    t = np.tanh(x0)
    np.testing.assert_allclose(d1.data, 1 - t**2, rtol=1e-12)
    np.testing.assert_allclose(d2.data, -2 * t * (1 - t**2), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(d3, (1 - t**2) * (6 * t**2 - 2), rtol=1e-12, atol=1e-15)


def test_third_derivative_of_tanh_agrees_with_torch():
    torch = pytest.importorskip("torch")
    x0 = np.linspace(-2.0, 2.0, 9)
    x = ml.tensor(x0, requires_grad=True)
    d = x.tanh().sum()
    xt = torch.tensor(x0, requires_grad=True)
    dt = xt.tanh().sum()
    for _ in range(3):
        (g,) = ml.grad(d, x, create_graph=True)
        (gt,) = torch.autograd.grad(dt, xt, create_graph=True)
        np.testing.assert_allclose(g.data, gt.detach().numpy(), rtol=1e-12, atol=1e-15)
        d, dt = g.sum(), gt.sum()


def test_saved_0d_output_is_part_of_the_graph():
    # exp of a 0-d tensor: NumPy returns a scalar, which the op saved; d2/dx2 exp = exp
    x = ml.tensor(0.7, dtype=ml.float64, requires_grad=True)
    (g,) = ml.grad(x.exp(), x, create_graph=True)
    (h,) = ml.grad(g, x)
    assert float(h) == pytest.approx(np.exp(0.7), rel=1e-12)


# --------------------------------------------------------------------------------------------
# backward(create_graph=True), models composed of ops


def test_backward_with_create_graph_keeps_grad_an_array_and_the_graph():
    x = ml.tensor([0.5, -1.0, 2.0], dtype=ml.float64, requires_grad=True)
    y = (x**3).sum()
    y.backward(create_graph=True)
    assert type(x.grad) is np.ndarray
    np.testing.assert_allclose(x.grad, 3 * x.data**2)
    (g,) = ml.grad(y, x, create_graph=True)  # the graph is still there
    (h,) = ml.grad(g.sum(), x)
    np.testing.assert_allclose(h, 6 * x.data)


def test_create_graph_keeps_the_forward_graph_unless_told_otherwise():
    x = ml.tensor([1.0, 2.0], dtype=ml.float64, requires_grad=True)
    y = (x * x).sum()
    ml.grad(y, x, create_graph=True)
    ml.grad(y, x)  # retained by the first call; this one frees it
    with pytest.raises(RuntimeError, match="already freed"):
        ml.grad(y, x)


def mlp_penalty(m, F, x, w1, b1, w2, targets):
    """Cross-entropy plus the squared norm of its gradient with respect to the input."""
    h = (x @ w1 + b1).tanh()
    logits = h @ w2
    loss = F.cross_entropy(logits, targets)
    return loss, logits


def test_gradient_penalty_of_a_small_network_agrees_with_torch():
    torch = pytest.importorskip("torch")
    import torch.nn.functional as TF

    rng = np.random.default_rng(3)
    arrays = [rng.standard_normal(s) for s in [(5, 4), (4, 6), (6,), (6, 3)]]
    targets = np.array([0, 2, 1, 1, 0])

    def penalised(m, F, tensor, xs):
        x, w1, b1, w2 = xs
        loss, _ = mlp_penalty(m, F, x, w1, b1, w2, tensor(targets))
        (gx,) = (ml if m is ml else torch.autograd).grad(loss, [x], create_graph=True)
        total = loss + (gx * gx).sum() + F.softmax(gx, dim=1).max()
        return (ml if m is ml else torch.autograd).grad(total, list(xs)[1:])

    xs = [ml.tensor(a, requires_grad=True) for a in arrays]
    ours = penalised(ml, ml.nn.functional, ml.tensor, xs)
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    theirs = penalised(torch, TF, torch.tensor, ts)
    for g, t in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(g, t.numpy(), rtol=1e-10, atol=1e-12)


def test_nn_layers_support_create_graph():
    ml.manual_seed(0)
    model = ml.nn.Sequential(ml.nn.Linear(3, 4), ml.nn.Tanh(), ml.nn.Linear(4, 2))
    for p in model.parameters():
        p.data = p.data.astype(np.float64)
    x = ml.tensor(np.random.default_rng(1).standard_normal((5, 3)), requires_grad=True)
    loss = ml.nn.functional.mse_loss(model(x), ml.zeros(5, 2, dtype=ml.float64))
    (gx,) = ml.grad(loss, x, create_graph=True)
    penalty = (gx * gx).sum()
    grads = ml.grad(penalty, list(model.parameters()))
    assert all(g.shape == p.shape for g, p in zip(grads, model.parameters(), strict=True))
    assert all(np.abs(g).sum() > 0 for g in grads[:2])


# --------------------------------------------------------------------------------------------
# Bad input


class Sine(Function):
    """z = sin(a);  dz/da = cos(a), written on arrays only: it cannot be differentiated twice"""

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return np.sin(a)

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return grad * np.cos(a)  # under create_graph a is a tensor, and NumPy refuses it


class ArraySine(Sine):
    """The same, turning the tensors it gets back into arrays: it loses the graph quietly."""

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return np.cos(ml.tensor(a).data) * ml.tensor(grad).data


def test_an_op_without_tensor_backward_is_named():
    x = ml.tensor([0.1, 0.2], dtype=ml.float64, requires_grad=True)
    for op in (Sine, ArraySine):  # first order is fine
        (g,) = ml.grad(op.apply(x).sum(), x)
        np.testing.assert_allclose(g, np.cos(x.data))
    with pytest.raises(RuntimeError, match=r"create_graph: ArraySine\.backward returned a"):
        ml.grad(ArraySine.apply(x).sum(), x, create_graph=True)
    with pytest.raises(TypeError, match=r"create_graph: Sine\.backward failed on tensors"):
        ml.grad(Sine.apply(x).sum(), x, create_graph=True)


def test_grad_of_an_input_not_in_the_graph():
    x = ml.tensor([1.0, 2.0], dtype=ml.float64, requires_grad=True)
    z = ml.tensor([3.0], dtype=ml.float64, requires_grad=True)
    y = (x * x).sum()
    with pytest.raises(RuntimeError, match=r"input of shape \(1,\) is not part of the output"):
        ml.grad(y, [x, z], create_graph=True)
    gx, gz = ml.grad(y, [x, z], create_graph=True, allow_unused=True)
    assert gz is None and isinstance(gx, ml.Tensor)


def test_second_grad_of_a_linear_function_says_it_is_constant():
    x = ml.tensor([1.0, 2.0], dtype=ml.float64, requires_grad=True)
    (g,) = ml.grad((3 * x).sum(), x, create_graph=True)
    np.testing.assert_array_equal(g.data, [3.0, 3.0])
    with pytest.raises(RuntimeError, match="does not require grad"):
        ml.grad(g.sum(), x)


def test_a_hook_under_create_graph_keeps_the_graph_or_is_refused():
    """A hook that returns a tensor computed from the gradient stays in the graph (the second
    derivative sees it); one that returns a NumPy array would cut the graph, and is refused."""
    x = ml.tensor(1.5, dtype=ml.float64, requires_grad=True)
    y = x * x * x
    y.register_hook(lambda g: g * 2)
    (dx,) = ml.grad(y, x, create_graph=True)
    assert np.isclose(dx.item(), 2 * 3 * 1.5**2)
    (d2x,) = ml.grad(dx, x)
    assert np.isclose(d2x.item(), 2 * 6 * 1.5)

    z = ml.tensor(1.5, dtype=ml.float64, requires_grad=True)
    w = z * z * z

    def to_numpy(g):
        return np.asarray(g.data) * 2

    w.register_hook(to_numpy)
    with pytest.raises(TypeError, match=r"create_graph: the hook .*to_numpy returned a "):
        ml.grad(w, z, create_graph=True)
    (first,) = ml.grad(w, z)  # first order: any array will do
    assert np.isclose(first, 2 * 3 * 1.5**2)


# --------------------------------------------------------------------------------------------
# Tensors that share one array (x.detach(), Tensor(x.data), Parameter(x)) stay different tensors


def x123():
    return ml.tensor([1.0, 2.0, 3.0], dtype=ml.float64, requires_grad=True)


def test_a_detached_copy_in_the_same_op_is_a_constant_under_create_graph():
    x = x123()
    (g,) = ml.grad((x.detach() / x).sum(), x, create_graph=True)
    np.testing.assert_allclose(g.data, -1 / x.data)  # d(c / x)/dx = -c / x**2 with c = x
    (h,) = ml.grad(g.sum(), x)
    np.testing.assert_allclose(h, 2 / x.data**2)  # d(-c / x**2)/dx = 2 c / x**3

    (g,) = ml.grad((x.detach() * x).sum(), x, create_graph=True)
    np.testing.assert_allclose(g.data, x.data)
    assert not g.requires_grad, "d(c * x)/dx = c is a constant"


@pytest.mark.parametrize(
    "alias",
    [lambda x: x.detach(), lambda x: ml.Tensor(x.data), lambda x: nn.Parameter(x)],
    ids=["detach", "Tensor(x.data)", "Parameter(x)"],
)
def test_tensors_sharing_an_array_keep_their_own_second_derivatives(alias):
    x = x123()
    c = alias(x)
    y = (c * x * x).sum()  # c held apart: d2y/dx2 = 2c, d2y/dxdc = 2x
    (gx,) = ml.grad(y, x, create_graph=True)
    np.testing.assert_allclose(gx.data, 2 * x.data**2)
    second = ml.grad(gx.sum(), [x, c] if c.requires_grad else [x], allow_unused=True)
    np.testing.assert_allclose(second[0], 2 * x.data)
    if c.requires_grad:
        np.testing.assert_allclose(second[1], 2 * x.data)


def test_the_same_tensor_twice_is_still_one_tensor():
    x = x123()
    (g,) = ml.grad((x * x * x).sum(), x, create_graph=True)
    (h,) = ml.grad(g.sum(), x)
    np.testing.assert_allclose(h, 6 * x.data)


class SoftplusSavingSigmoid(Function):
    """z = log(1 + exp(a));  dz/da = sigmoid(a), saved in forward: an intermediate array."""

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(1 / (1 + np.exp(-a)))
        return np.log1p(np.exp(a))

    @staticmethod
    def backward(ctx, grad):
        (s,) = ctx.saved_tensors
        return grad * s


def test_a_saved_intermediate_array_is_refused_under_create_graph():
    x = x123()
    (g,) = ml.grad(SoftplusSavingSigmoid.apply(x).sum(), x)  # first order is right
    np.testing.assert_allclose(g, 1 / (1 + np.exp(-x.data)))
    with pytest.raises(RuntimeError, match=r"^create_graph: SoftplusSavingSigmoid saved an array"):
        ml.grad(SoftplusSavingSigmoid.apply(x).sum(), x, create_graph=True)


def test_create_graph_inside_no_grad_records_the_sums_of_the_gradient():
    x = x123()
    y = (x * x).sum()  # x used twice: its two gradients are summed
    with ml.no_grad():
        (g,) = ml.grad(y, x, create_graph=True)
    assert g.requires_grad
    (h,) = ml.grad(g.sum(), x)
    np.testing.assert_allclose(h, [2.0, 2.0, 2.0])

    b = ml.tensor([1.0], dtype=ml.float64, requires_grad=True)
    y = (x * b * b).sum()  # b broadcast: its gradient is summed back to shape (1,)
    with ml.no_grad():
        (gb,) = ml.grad(y, b, create_graph=True)
    (hb,) = ml.grad(gb.sum(), b)
    np.testing.assert_allclose(hb, [2 * x.data.sum()])


def test_a_float32_leaf_gets_a_float32_gradient_from_a_float64_constant():
    for create_graph in (False, True):
        x = ml.tensor([1.0, 2.0], requires_grad=True)
        y = (x * x * np.array([1.0, 3.0])).sum()  # float64 from the constant on
        assert y.dtype == np.float64
        (g,) = ml.grad(y, x, create_graph=create_graph, retain_graph=True)
        assert g.dtype == np.float32, f"create_graph={create_graph}"
        y.backward(create_graph=create_graph)
        assert x.grad.dtype == np.float32, f"create_graph={create_graph}"
        np.testing.assert_allclose(x.grad, [2.0, 12.0])
    (h,) = ml.grad(g.sum(), x)
    assert h.dtype == np.float32
    np.testing.assert_allclose(h, [2.0, 6.0])


def test_grad_of_several_outputs_is_the_sum_of_their_gradients():
    x = x123()
    shared = x * x
    y1, y2 = shared.sum(), (shared * x).sum()
    (g,) = ml.grad([y1, y2], x, retain_graph=True)
    np.testing.assert_allclose(g, 2 * x.data + 3 * x.data**2)
    (g,) = ml.grad([y1, y2], x, grad_outputs=[np.array(2.0), None], create_graph=True)
    np.testing.assert_allclose(g.data, 4 * x.data + 3 * x.data**2)
    (h,) = ml.grad(g.sum(), x)
    np.testing.assert_allclose(h, 4 + 6 * x.data)


@pytest.mark.skipif(not HAS_TORCH, reason="PyTorch is not installed")
def test_aliased_and_mixed_dtype_second_derivatives_agree_with_torch():
    import torch

    values = [1.0, 2.0, 3.0]
    x = x123()
    t = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    (g,) = ml.grad((x.detach() / x).sum(), x, create_graph=True)
    (gt,) = torch.autograd.grad((t.detach() / t).sum(), t, create_graph=True)
    np.testing.assert_allclose(ml.grad(g.sum(), x)[0], torch.autograd.grad(gt.sum(), t)[0])
    (g,) = ml.grad([(x * x).sum(), (x * x * x).sum()], x)
    (gt,) = torch.autograd.grad([(t * t).sum(), (t * t * t).sum()], t)
    np.testing.assert_allclose(g, gt.numpy())
    x32 = ml.tensor(values, requires_grad=True)
    t32 = torch.tensor(values, requires_grad=True)
    (g,) = ml.grad((x32 * x32 * np.array(2.0)).sum(), x32, create_graph=True)
    constant = torch.tensor(2.0, dtype=torch.float64)
    (gt,) = torch.autograd.grad((t32 * t32 * constant).sum(), t32, create_graph=True)
    assert str(g.dtype) == str(gt.dtype).removeprefix("torch.")
