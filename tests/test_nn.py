"""minilucid.nn: modules, parameters, layers and losses (chapter 07).

Gradients of the composed layers are checked against central differences on whole float64
tensors; PyTorch, when installed, is a second oracle for names, order, reprs and values.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradients import central_differences, f64, weights_for

import minilucid as ml
from minilucid import nn


def mlp(dtype=None):
    return nn.Sequential(
        nn.Linear(4, 8, dtype=dtype), nn.Tanh(), nn.Linear(8, 8, dtype=dtype), nn.ReLU(),
        nn.Linear(8, 3, dtype=dtype),
    )  # fmt: skip


class Block(nn.Module):
    """A hand-written module with a submodule, a Parameter and a buffer."""

    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(np.ones(3, dtype=np.float32))
        self.inner = nn.Sequential(nn.Linear(3, 3), nn.Sigmoid())
        self.register_buffer("count", ml.zeros(1))
        self.head = nn.Linear(3, 2, bias=False)

    def forward(self, x):
        return self.head(self.inner(x) * self.scale)


# --- registration and walks -------------------------------------------------------------------


def test_attribute_assignment_registers_parameters_and_modules_in_order():
    block = Block()
    assert [n for n, _ in block.named_parameters()] == [
        "scale",
        "inner.0.weight",
        "inner.0.bias",
        "head.weight",
    ]
    assert [n for n, _ in block.named_children()] == ["inner", "head"]
    assert [n for n, _ in block.named_modules()] == ["", "inner", "inner.0", "inner.1", "head"]
    assert [n for n, _ in block.named_buffers()] == ["count"]
    assert list(block.children()) == [block.inner, block.head]
    assert list(block.modules())[0] is block
    assert [p.shape for p in block.parameters()] == [(3,), (3, 3), (3,), (2, 3)]
    assert [n for n, _ in block.named_parameters(recurse=False)] == ["scale"]


def test_reassigning_keeps_the_place_and_replacing_by_a_plain_value_unregisters():
    layer = nn.Linear(2, 3)
    layer.weight = nn.Parameter(np.zeros((3, 2), dtype=np.float32))
    assert [n for n, _ in layer.named_parameters()] == ["weight", "bias"]
    layer.bias = None
    assert [n for n, _ in layer.named_parameters()] == ["weight"]
    block = Block()
    del block.inner
    assert [n for n, _ in block.named_children()] == ["head"]


def test_a_tensor_assigned_over_a_parameter_is_refused_as_in_torch():
    layer = nn.Linear(2, 3)
    with pytest.raises(
        TypeError, match=r"Linear: cannot assign a Tensor to the parameter 'weight'"
    ):
        layer.weight = layer.weight * 2
    model = nn.Sequential(nn.Linear(2, 2))
    with pytest.raises(TypeError, match=r"Sequential: .* int to the submodule '0'"):
        setattr(model, "0", 5)
    assert [n for n, _ in layer.named_parameters()] == ["weight", "bias"]
    block = Block()
    block.count = ml.ones(1)  # a buffer takes a plain tensor
    assert block.state_dict()["count"].item() == 1.0
    with pytest.raises(TypeError, match="buffer 'count' must be a Tensor or None, not int"):
        block.count = 3


def test_a_shared_parameter_or_module_is_listed_once():
    shared = nn.Linear(3, 3)
    model = nn.Sequential(shared, nn.ReLU(), shared)
    assert [n for n, _ in model.named_parameters()] == ["0.weight", "0.bias"]
    assert [n for n, _ in model.named_modules()] == ["", "0", "1"]


def test_assigning_before_super_init_says_what_to_do():
    class Forgot(nn.Module):
        def __init__(self):
            self.layer = nn.Linear(2, 2)

    with pytest.raises(AttributeError, match=r"Forgot.*'layer'.*super\(\).__init__\(\)"):
        Forgot()


def test_forward_missing_and_call_goes_to_forward():
    with pytest.raises(NotImplementedError, match="Module has no forward"):
        nn.Module()(ml.ones(2))
    assert np.array_equal(nn.ReLU()(ml.tensor([-1.0, 2.0])).data, [0.0, 2.0])


def test_train_eval_reach_every_module_and_return_self():
    model = Block()
    assert model.eval() is model
    assert [m.training for m in model.modules()] == [False] * 5
    model.train()
    assert all(m.training for m in model.modules())


def test_zero_grad_sets_to_none_or_zeroes():
    model = mlp()
    model(ml.randn(5, 4)).sum().backward()
    assert all(p.grad is not None for p in model.parameters())
    model.zero_grad(set_to_none=False)
    assert all(np.array_equal(p.grad, np.zeros(p.shape)) for p in model.parameters())
    model.zero_grad()
    assert all(p.grad is None for p in model.parameters())


def test_apply_visits_children_first_then_self():
    model = Block()
    seen = []
    assert model.apply(lambda m: seen.append(type(m).__name__)) is model
    assert seen == ["Linear", "Sigmoid", "Sequential", "Linear", "Block"]


def test_parameter_is_a_leaf_sharing_its_data():
    t = ml.ones(2, 2)
    p = nn.Parameter(t)
    assert p.data is t.data and p.requires_grad and p.is_leaf
    assert repr(p).startswith("Parameter containing:\ntensor(")
    assert not nn.Parameter(t, requires_grad=False).requires_grad


def test_sequential_indexing_length_iteration_and_named_layers():
    model = mlp()
    assert len(model) == 5 and list(model) == list(model.children())
    assert model[-1] is model[4]
    assert [n for n, _ in model[1:3].named_children()] == ["1", "2"]
    named = nn.Sequential({"hidden": nn.Linear(2, 2), "act": nn.ReLU()})
    assert [n for n, _ in named.named_parameters()] == ["hidden.weight", "hidden.bias"]
    with pytest.raises(IndexError, match="index 7 is out of range for 5 layers"):
        model[7]
    with pytest.raises(TypeError, match="item 1 is a function, not a Module"):
        nn.Sequential(nn.Linear(2, 2), ml.relu)


def test_repr_nests_like_torch():
    assert repr(Block()) == (
        "Block(\n"
        "  (inner): Sequential(\n"
        "    (0): Linear(in_features=3, out_features=3, bias=True)\n"
        "    (1): Sigmoid()\n"
        "  )\n"
        "  (head): Linear(in_features=3, out_features=2, bias=False)\n"
        ")"
    )


# --- state_dict -------------------------------------------------------------------------------


def test_state_dict_has_parameters_and_buffers_sharing_the_arrays():
    block = Block()
    state = block.state_dict()
    assert list(state) == ["scale", "count", "inner.0.weight", "inner.0.bias", "head.weight"]
    assert state["scale"].data is block.scale.data
    assert not state["scale"].requires_grad


def test_load_state_dict_copies_in_place_and_gives_the_same_outputs():
    source, target = mlp(), mlp()
    params_before = list(target.parameters())
    result = target.load_state_dict(source.state_dict())
    assert result.missing_keys == [] and result.unexpected_keys == []
    assert list(target.parameters()) == params_before  # same objects: an optimiser keeps them
    x = ml.randn(6, 4)
    assert np.array_equal(source(x).data, target(x).data)


def test_load_state_dict_missing_key_names_it():
    model = mlp()
    state = model.state_dict()
    del state["2.bias"]
    with pytest.raises(RuntimeError, match=r"(?s)Sequential.*missing key '2.bias'"):
        model.load_state_dict(state)


def test_load_state_dict_extra_key_names_it():
    model = mlp()
    state = model.state_dict()
    state["5.weight"] = ml.zeros(3, 3)
    with pytest.raises(RuntimeError, match=r"(?s)Sequential.*unexpected key '5.weight'"):
        model.load_state_dict(state)


def test_load_state_dict_wrong_shape_names_key_and_both_shapes_and_loads_nothing():
    model = mlp()
    before = {k: v.data.copy() for k, v in model.state_dict().items()}
    state = mlp().state_dict()
    state["4.weight"] = ml.zeros(3, 5)
    with pytest.raises(RuntimeError, match=r"4.weight: the state_dict has shape \(3, 5\), "):
        model.load_state_dict(state)
    with pytest.raises(RuntimeError, match=r"the model \(3, 8\)"):
        model.load_state_dict(state, strict=False)  # a wrong shape is never loaded
    assert all(np.array_equal(before[k], v.data) for k, v in model.state_dict().items())


def test_load_state_dict_not_strict_reports_and_loads_the_rest():
    model, other = mlp(), mlp()
    state = other.state_dict()
    del state["0.bias"]
    state["extra"] = ml.zeros(1)
    missing, unexpected = model.load_state_dict(state, strict=False)
    assert (missing, unexpected) == (["0.bias"], ["extra"])
    assert np.array_equal(model[0].weight.data, other[0].weight.data)
    assert not np.array_equal(model[0].bias.data, other[0].bias.data)


# --- layers ---------------------------------------------------------------------------------


def test_linear_shapes_and_init_bounds():
    ml.manual_seed(0)
    layer = nn.Linear(50, 20)
    assert layer.weight.shape == (20, 50) and layer.bias.shape == (20,)
    assert layer.weight.dtype == ml.float32
    bound = 1 / np.sqrt(50)
    assert np.abs(layer.weight.data).max() <= bound and np.abs(layer.bias.data).max() <= bound
    assert abs(layer.weight.data.std() - bound / np.sqrt(3)) < 0.1 * bound / np.sqrt(3)
    assert nn.Linear(3, 2, bias=False).bias is None


def test_linear_forward_is_x_times_weight_transposed_plus_bias():
    layer = nn.Linear(4, 3, dtype=ml.float64)
    x = np.random.default_rng(9).standard_normal((2, 5, 4))
    expected = x @ layer.weight.data.T + layer.bias.data
    np.testing.assert_allclose(layer(ml.tensor(x)).data, expected, rtol=1e-14, atol=1e-14)
    no_bias = nn.Linear(4, 3, bias=False, dtype=ml.float64)
    np.testing.assert_allclose(no_bias(ml.tensor(x)).data, x @ no_bias.weight.data.T, rtol=1e-14)


def test_linear_with_wrong_number_of_features_names_layer_and_shapes():
    layer = nn.Linear(4, 8)
    with pytest.raises(ValueError, match=r"Linear\(in_features=4, out_features=8, bias=True\)"):
        layer(ml.randn(5, 3))
    with pytest.raises(ValueError, match=r"input of shape \(5, 3\).*in_features = 4"):
        layer(ml.randn(5, 3))


def test_linear_is_one_node_with_the_compositions_gradients():
    """F.linear records one Affine op; its gradients equal those of x @ w.T + b (whose three
    ops each have their own tests) for every input, and a bias-free call has two parents."""
    rng = np.random.default_rng(3)
    x, w, b = (
        ml.tensor(rng.standard_normal(s), requires_grad=True) for s in [(4, 3), (2, 3), (2,)]
    )
    fused = nn.functional.linear(x, w, b)
    assert type(fused.grad_fn).__name__ == "Affine" and len(fused.grad_fn.parents) == 3
    composed = x @ w.T + b
    np.testing.assert_array_equal(fused.data, composed.data)
    g = rng.standard_normal((4, 2))
    for a, c in zip(ml.grad(fused, (x, w, b), g), ml.grad(composed, (x, w, b), g), strict=True):
        np.testing.assert_allclose(a, c, rtol=1e-14)
    assert len(nn.functional.linear(x, w).grad_fn.parents) == 2


def test_linear_mixed_dtypes_promote_like_the_composition():
    x = ml.tensor(np.ones((2, 3), np.float32))
    w = ml.tensor(np.ones((4, 3), np.float32))
    b = ml.tensor(np.ones(4, np.float64))
    assert nn.functional.linear(x, w, b).dtype == (x @ w.T + b).dtype == np.float64


@pytest.mark.parametrize(
    ("x", "w", "b", "message"),
    [
        (
            (5, 3),
            (2, 4),
            (2,),
            r"affine: linear's input \(5, 3\) and weight \(2, 4\).*in_features = 4",
        ),
        ((5, 4), (4,), None, r"affine: linear's input \(5, 4\) and weight \(4,\)"),
        ((), (2, 4), None, r"affine: linear's input \(\) and weight \(2, 4\)"),
        ((5, 4), (2, 4), (1,), r"affine: linear's bias \(1,\) with weight \(2, 4\).*shape \(2,\)"),
        ((5, 4), (2, 4), (2, 1), r"affine: linear's bias \(2, 1\)"),
    ],
)
def test_functional_linear_refuses_shapes_that_do_not_fit(x, w, b, message):
    args = [ml.randn(*x), ml.randn(*w)] + ([] if b is None else [ml.randn(*b)])
    with pytest.raises(ValueError, match=message):
        nn.functional.linear(*args)


def test_flatten_and_losses():
    x = ml.randn(2, 3, 4)
    assert nn.Flatten()(x).shape == (2, 12) and nn.Flatten(0)(x).shape == (24,)
    assert repr(nn.Flatten()) == "Flatten(start_dim=1, end_dim=-1)"
    logits = ml.randn(4, 3)
    targets = np.array([0, 2, 1, 1])
    same = ml.nn.functional.cross_entropy(logits, targets).data
    assert np.array_equal(nn.CrossEntropyLoss()(logits, targets).data, same)
    assert np.isclose(nn.MSELoss()(x, ml.zeros(2, 3, 4)).item(), (x.data**2).mean())


# --- gradients: whole-tensor central differences -----------------------------------------------


def grads_agree(module, x_array, domain_note=""):
    """The module's gradients (input and every parameter) against central differences."""
    params = list(module.parameters())
    kept = [p.data for p in params]

    def fn(x, *values):
        for p, v in zip(params, values, strict=True):
            p.data = v.data
        return module(x)

    arrays = [x_array, *(p.data.copy() for p in params)]
    with ml.no_grad():
        out_shape = module(ml.tensor(x_array)).shape
    w = weights_for(out_shape)
    numeric = central_differences(fn, arrays, w)
    for p, k in zip(params, kept, strict=True):
        p.data = k
    x = ml.tensor(x_array, requires_grad=True)
    module.zero_grad()
    module(x).backward(w)
    analytic = [x.grad, *(p.grad for p in params)]
    names = ["input", *(k for k, _ in module.named_parameters())]
    for name, a, n in zip(names, analytic, numeric, strict=True):
        np.testing.assert_allclose(a, n, rtol=1e-6, atol=1e-8, err_msg=f"{name} {domain_note}")


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("shape", [(5, 4), (2, 3, 4), (4,)])
def test_linear_gradients(shape, bias):
    ml.manual_seed(1)
    grads_agree(nn.Linear(4, 3, bias=bias, dtype=ml.float64), f64(shape, np.random.default_rng(2)))


def test_mlp_gradients_through_tanh_relu_sigmoid_flatten():
    ml.manual_seed(3)
    model = nn.Sequential(
        nn.Flatten(), nn.Linear(6, 5, dtype=ml.float64), nn.Tanh(),
        nn.Linear(5, 5, dtype=ml.float64), nn.ReLU(), nn.Linear(5, 2, dtype=ml.float64),
        nn.Sigmoid(),
    )  # fmt: skip
    grads_agree(model, f64((4, 2, 3), np.random.default_rng(4)))


def test_loss_module_gradients():
    rng = np.random.default_rng(5)
    targets = np.array([2, 0, 1])

    class WithLoss(nn.Module):
        def __init__(self, loss, target):
            super().__init__()
            self.layer = nn.Linear(4, 3, dtype=ml.float64)
            self.loss, self.target = loss, target

        def forward(self, x):
            return self.loss(self.layer(x), self.target)

    grads_agree(WithLoss(nn.CrossEntropyLoss(), targets), f64((3, 4), rng))
    grads_agree(WithLoss(nn.MSELoss(), ml.tensor(f64((3, 3), rng))), f64((3, 4), rng))


# --- PyTorch as a second oracle ---------------------------------------------------------------


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


def torch_mlp(torch):
    tnn = torch.nn
    return tnn.Sequential(
        tnn.Linear(4, 8), tnn.Tanh(), tnn.Linear(8, 8), tnn.ReLU(), tnn.Linear(8, 3)
    )


def test_names_order_counts_and_repr_equal_torchs(torch):
    ours, theirs = mlp(), torch_mlp(torch)
    assert [(n, tuple(p.shape)) for n, p in ours.named_parameters()] == [
        (n, tuple(p.shape)) for n, p in theirs.named_parameters()
    ]
    assert sum(p.data.size for p in ours.parameters()) == sum(
        p.numel() for p in theirs.parameters()
    )
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in theirs.named_modules()]
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert repr(ours) == repr(theirs)
    for layer in ["Flatten()", "Sigmoid()", "CrossEntropyLoss()", "MSELoss()"]:
        assert repr(eval("nn." + layer)) == repr(eval("torch.nn." + layer))


def test_a_custom_module_with_a_buffer_names_like_torch(torch):
    class TorchBlock(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = torch.nn.Parameter(torch.ones(3))
            self.inner = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.Sigmoid())
            self.register_buffer("count", torch.zeros(1))
            self.head = torch.nn.Linear(3, 2, bias=False)

    ours, theirs = Block(), TorchBlock()
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    assert repr(ours).replace("Block", "") == repr(theirs).replace("TorchBlock", "")


def test_linear_forward_and_backward_equal_torchs(torch):
    theirs = torch.nn.Linear(4, 3).double()
    ours = nn.Linear(4, 3, dtype=ml.float64)
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    x = np.random.default_rng(6).standard_normal((5, 4))
    w = weights_for((5, 3))
    xo, xt = ml.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out_o, out_t = ours(xo), theirs(xt)
    np.testing.assert_allclose(out_o.data, out_t.detach().numpy(), rtol=1e-12, atol=1e-12)
    out_o.backward(w)
    out_t.backward(torch.tensor(w))
    np.testing.assert_allclose(xo.grad, xt.grad.numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(ours.weight.grad, theirs.weight.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(ours.bias.grad, theirs.bias.grad.numpy(), rtol=1e-12)


def test_linear_default_init_statistics_match_torchs(torch):
    torch.manual_seed(0)
    ml.manual_seed(0)
    theirs = torch.nn.Linear(400, 300).weight.detach().numpy()
    ours = nn.Linear(400, 300).weight.data
    assert abs(np.abs(ours).max() - np.abs(theirs).max()) < 1e-4  # the same bound 1/sqrt(400)
    assert abs(ours.std() - theirs.std()) < 0.01 * theirs.std()
    assert abs(ours.mean()) < 1e-3 and abs(theirs.mean()) < 1e-3


def test_deepcopy_gives_an_independent_model_and_snapshot():
    import copy

    model = mlp()
    twin = copy.deepcopy(model)
    snapshot = copy.deepcopy(model.state_dict())
    assert [n for n, _ in twin.named_parameters()] == [n for n, _ in model.named_parameters()]
    assert all(isinstance(p, nn.Parameter) for p in twin.parameters())
    twin[0].weight.data += 1
    model[0].bias.data += 1
    assert not np.array_equal(twin[0].weight.data, model[0].weight.data)
    assert not np.array_equal(snapshot["0.bias"].data, model[0].bias.data)
    model.load_state_dict(snapshot)
    assert np.array_equal(snapshot["0.bias"].data, model[0].bias.data)
