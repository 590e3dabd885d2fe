"""The public names of chapters 01-06 (DESIGN section 5) exist and behave like PyTorch's.

Expected values are written out by hand from what torch gives on the same small examples;
test_torch_oracle.py compares with torch itself when it is installed.
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import minilucid as ml
import minilucid.nn.functional as F

TOP_LEVEL = """Tensor tensor zeros ones zeros_like ones_like randn rand arange manual_seed
    float32 float64 int64 no_grad enable_grad set_grad_enabled is_grad_enabled grad gradcheck
    cat stack where exp log tanh sigmoid relu sqrt abs clamp""".split()
TENSOR_ATTRIBUTES = """data grad shape ndim dtype requires_grad is_leaf grad_fn name""".split()
TENSOR_METHODS = """backward detach item numpy retain_grad register_hook requires_grad_
    sum mean max min exp log tanh sigmoid relu sqrt abs clamp reshape view transpose permute
    flatten unsqueeze squeeze matmul softmax log_softmax
    __add__ __radd__ __sub__ __rsub__ __mul__ __rmul__ __truediv__ __rtruediv__ __pow__
    __rpow__ __matmul__ __rmatmul__ __neg__ __abs__ __getitem__ __len__ __repr__
    __eq__ __ne__ __lt__ __le__ __gt__ __ge__ __bool__ __float__""".split()
FUNCTIONAL = "relu sigmoid tanh softmax log_softmax cross_entropy mse_loss".split()


def test_the_names_exist():
    missing = [n for n in TOP_LEVEL if not hasattr(ml, n)]
    missing += [f"Tensor.{n}" for n in TENSOR_METHODS + ["T"] if not hasattr(ml.Tensor, n)]
    missing += [f"nn.functional.{n}" for n in FUNCTIONAL if not hasattr(F, n)]
    t = ml.tensor([1.0])
    missing += [f"tensor.{n}" for n in TENSOR_ATTRIBUTES if not hasattr(t, n)]
    assert not missing, f"missing public names: {missing}"
    assert set(ml.__all__) <= set(dir(ml))


def test_signatures_are_pytorchs():
    def params(fn):
        return list(inspect.signature(fn).parameters)

    assert params(ml.Tensor.__init__) == ["self", "data", "requires_grad", "dtype", "name"]
    assert params(ml.Tensor.backward) == [
        "self",
        "gradient",
        "retain_graph",
        "create_graph",
        "inputs",
    ]
    assert params(ml.Tensor.sum)[:3] == ["self", "dim", "keepdim"]
    assert params(ml.Tensor.clamp) == ["self", "min", "max"]
    assert params(ml.grad)[:5] == [
        "outputs",
        "inputs",
        "grad_outputs",
        "retain_graph",
        "create_graph",
    ]
    assert params(ml.where) == ["condition", "input", "other"]
    assert params(ml.cat) == ["tensors", "dim"] and params(ml.stack) == ["tensors", "dim"]


# --------------------------------------------------------------------------------------------
# Making tensors


def test_creation():
    assert ml.zeros(2, 3).shape == (2, 3) == ml.ones((2, 3)).shape
    assert ml.zeros(2, 3).dtype == ml.float32
    assert ml.ones(2, dtype=ml.float64).dtype == ml.float64
    z = ml.zeros_like(ml.tensor(np.ones((2, 2))))
    assert z.shape == (2, 2) and z.dtype == ml.float64 and not z.requires_grad
    np.testing.assert_array_equal(ml.ones_like(z).data, np.ones((2, 2)))
    np.testing.assert_array_equal(ml.arange(5).data, [0, 1, 2, 3, 4])
    np.testing.assert_array_equal(ml.arange(1, 7, 2).data, [1, 3, 5])
    t = ml.tensor([[1.0, 2.0]], requires_grad=True, name="w")
    assert t.requires_grad and t.is_leaf and t.name == "w" and t.grad is None
    assert ml.zeros(3, requires_grad=True).requires_grad


def test_manual_seed_repeats_randn_and_rand():
    ml.manual_seed(3)
    a, u = ml.randn(4, 5), ml.rand(100)
    ml.manual_seed(3)
    np.testing.assert_array_equal(a.data, ml.randn(4, 5).data)
    np.testing.assert_array_equal(u.data, ml.rand(100).data)
    assert a.dtype == ml.float32 and 0 <= u.data.min() and u.data.max() < 1


def test_item_numpy_len_float_bool_repr():
    t = ml.tensor([[1.0, 2.0, 3.0]])
    assert isinstance(t.numpy(), np.ndarray) and t.numpy() is t.data
    assert len(t) == 1 and t.ndim == 2
    s = ml.tensor(2.5)
    assert s.item() == 2.5 and isinstance(s.item(), float) and float(s) == 2.5
    assert bool(ml.tensor([1.0])) and not bool(ml.tensor(0.0))
    assert repr(ml.tensor([1.0, 2.0], requires_grad=True)) == "tensor([1., 2.], requires_grad=True)"
    assert repr(ml.tensor([1, 2])) == "tensor([1, 2], dtype=int64)"
    assert "grad_fn=<Mul>" in repr(ml.tensor([1.0], requires_grad=True) * 2)


def test_comparisons_give_bool_tensors_without_a_graph():
    x = ml.tensor([1.0, 2.0, 3.0], requires_grad=True)
    for result, expected in [
        (x > 2, [False, False, True]),
        (x >= 2, [False, True, True]),
        (x < 2, [True, False, False]),
        (x <= 2, [True, True, False]),
        (x == 2, [False, True, False]),
        (x != 2, [True, False, True]),
        (x == ml.tensor([1.0, 0.0, 3.0]), [True, False, True]),
    ]:
        assert result.dtype == bool and not result.requires_grad
        np.testing.assert_array_equal(result.data, expected)


# --------------------------------------------------------------------------------------------
# Shapes: dim/axis/keepdim, views, T


def test_reductions_dim_axis_keepdim():
    x = ml.tensor(np.arange(24.0).reshape(2, 3, 4))
    for name in ["sum", "mean", "max", "min"]:
        op = getattr(x, name)
        assert op().shape == ()
        assert op(1).shape == (2, 4) and op(dim=-1).shape == (2, 3)
        assert op(dim=1, keepdim=True).shape == (2, 1, 4)
        np.testing.assert_array_equal(op(axis=1).data, op(dim=1).data)
        assert op(axis=(0, 2), keepdim=True).shape == (1, 3, 1)
    np.testing.assert_array_equal(x.sum(dim=(0, 2)).data, [60, 92, 124])
    np.testing.assert_array_equal(x.max(dim=2).data, [[3, 7, 11], [15, 19, 23]])
    assert x.mean().item() == 11.5


def test_views_and_transposes():
    x = ml.tensor(np.arange(6.0).reshape(2, 3))
    assert x.T.shape == (3, 2) and x.T.data[2, 1] == 5.0
    assert x.view(-1).shape == (6,) and x.view(3, 2).shape == (3, 2)
    assert x.reshape((1, 6)).shape == (1, 6)
    assert x.transpose(0, 1).shape == (3, 2) and x.permute(1, 0).shape == (3, 2)
    assert x.unsqueeze(0).shape == (1, 2, 3) and x.unsqueeze(-1).shape == (2, 3, 1)
    assert x.unsqueeze(1).squeeze().shape == (2, 3) and x.unsqueeze(1).squeeze(1).shape == (2, 3)
    assert x.squeeze(0).shape == (2, 3)  # not of size 1: unchanged, as in torch
    assert ml.zeros(2, 3, 4).flatten().shape == (24,)
    assert ml.zeros(2, 3, 4).flatten(1).shape == (2, 12)
    assert ml.zeros(2, 3, 4, 5).flatten(1, 2).shape == (2, 12, 5)
    assert ml.tensor(1.0).flatten().shape == (1,)


def test_indexing_like_torch():
    x = ml.tensor(np.arange(12.0).reshape(3, 4), requires_grad=True)
    assert x[1].shape == (4,) and x[:, 1:3].shape == (3, 2) and x[-1, -1].item() == 11.0
    assert x[None].shape == (1, 3, 4) and x[..., 0].shape == (3,)
    np.testing.assert_array_equal(x[x > 9].data, [10.0, 11.0])
    x[[0, 0, 2], 1].sum().backward()  # repeated indices accumulate
    np.testing.assert_array_equal(x.grad[:, 1], [2.0, 0.0, 1.0])


def test_cat_stack_where():
    a, b = ml.ones(2, 3), ml.zeros(2, 3)
    assert ml.cat([a, b]).shape == (4, 3) and ml.cat([a, b], dim=1).shape == (2, 6)
    assert ml.stack([a, b]).shape == (2, 2, 3) and ml.stack([a, b], dim=2).shape == (2, 3, 2)
    w = ml.where(ml.tensor([True, False, True]), a, b)
    np.testing.assert_array_equal(w.data, [[1, 0, 1], [1, 0, 1]])


def test_max_of_ties_shares_the_gradient_like_torch():
    x = ml.tensor([1.0, 3.0, 3.0], requires_grad=True)
    x.max().backward()
    np.testing.assert_allclose(x.grad, [0.0, 0.5, 0.5])  # torch: the same for max()


def test_kinks_get_torchs_subgradients():
    x = ml.tensor([0.0, 1.0, -1.0], requires_grad=True)
    (x.relu() + x.abs() + x.clamp(0.0, 1.0)).sum().backward()
    np.testing.assert_allclose(x.grad, [0.0 + 0.0 + 1.0, 1.0 + 1.0 + 1.0, 0.0 - 1.0 + 0.0])


def test_numpy_array_on_the_left_gives_a_tensor():
    x = ml.tensor([1.0, 2.0], requires_grad=True)
    for y in [np.ones(2) + x, np.ones(2) - x, np.ones(2) * x, np.ones(2) / x, np.ones((3, 2)) @ x]:
        assert isinstance(y, ml.Tensor) and y.requires_grad


# --------------------------------------------------------------------------------------------
# The graph: is_leaf, grad_fn, retain_grad, hooks, detach, grad modes, grad()


def test_is_leaf_and_grad_fn():
    x = ml.tensor([1.0, 2.0], requires_grad=True)
    c = ml.tensor([3.0, 4.0])
    y = x * c
    assert x.is_leaf and x.grad_fn is None
    assert c.is_leaf and not c.requires_grad
    assert not y.is_leaf and type(y.grad_fn).__name__ == "Mul"
    assert (c * 2).is_leaf  # no input requires grad: no node, as in torch
    assert y.grad_fn.parents[0] is x and y.grad_fn.parents[1] is c


def test_retain_grad():
    x = ml.tensor([1.0, 2.0], requires_grad=True)
    h, k = x * 2, x * 3
    h.retain_grad()
    (h * k).sum().backward()
    np.testing.assert_allclose(h.grad, k.data)
    assert k.grad is None
    x.retain_grad()  # a no-op on a leaf
    np.testing.assert_allclose(x.grad, 12 * x.data)


def test_register_hook_can_change_the_gradient():
    x = ml.tensor([1.0, 2.0], requires_grad=True)
    h = x * 3
    seen = []
    h.register_hook(lambda g: seen.append(g.copy()))  # returns None: only looks
    h.register_hook(lambda g: g * 10)  # returns a new gradient: replaces it
    h.sum().backward()
    np.testing.assert_allclose(seen[0], [1.0, 1.0])
    np.testing.assert_allclose(x.grad, [30.0, 30.0])
    w = ml.tensor([1.0], requires_grad=True)
    w.register_hook(lambda g: g * 0)  # on a leaf: changes what lands in .grad
    (w * 5).sum().backward()
    np.testing.assert_allclose(w.grad, [0.0])


def test_detach():
    x = ml.tensor([1.0, 2.0], requires_grad=True)
    d = (x * 2).detach()
    assert not d.requires_grad and d.is_leaf and d.grad_fn is None
    assert np.shares_memory(x.data, x.detach().data)  # same numbers, as in torch
    (d * x).sum().backward()
    np.testing.assert_allclose(x.grad, d.data)


def test_grad_modes_nest():
    x = ml.tensor([1.0], requires_grad=True)
    assert ml.is_grad_enabled()
    with ml.no_grad():
        assert not ml.is_grad_enabled() and not (x * 2).requires_grad
        with ml.enable_grad():
            assert ml.is_grad_enabled() and (x * 2).requires_grad
            with ml.no_grad():
                assert not (x * 2).requires_grad
            assert (x * 2).requires_grad
        assert not (x * 2).requires_grad
    assert (x * 2).requires_grad
    with ml.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    assert ml.is_grad_enabled()
    ml.set_grad_enabled(False)  # also works as a plain call, as in torch
    try:
        assert not ml.is_grad_enabled()
    finally:
        ml.set_grad_enabled(True)
    assert ml.is_grad_enabled()


def test_grad_returns_gradients_and_leaves_dot_grad_untouched():
    x = ml.tensor([1.0, 2.0], requires_grad=True)
    w = ml.tensor([3.0, -1.0], requires_grad=True)
    y = (x * x * w).sum()
    gx, gw = ml.grad(y, [x, w], retain_graph=True)
    assert x.grad is None and w.grad is None
    np.testing.assert_allclose(gx, 2 * x.data * w.data)
    np.testing.assert_allclose(gw, x.data**2)
    (only,) = ml.grad(y, x)  # a single input still gives a tuple, as in torch
    np.testing.assert_allclose(only, gx)
    h = x * 2  # a non-leaf input
    (gh,) = ml.grad((h * h).sum(), [h])
    np.testing.assert_allclose(gh, 2 * h.data)
    (go,) = ml.grad(x * 3, [x], grad_outputs=np.array([1.0, -1.0]))
    np.testing.assert_allclose(go, [3.0, -3.0])
    assert x.grad is None


def test_gradcheck_is_public_and_returns_true():
    x = ml.tensor(np.array([0.5, -1.0]), requires_grad=True)
    assert ml.gradcheck(lambda t: (t.tanh() * t).sum(), [x]) is True
    assert ml.gradcheck(lambda t: t.exp(), x) is True  # a single tensor is fine too


def test_functional():
    logits = ml.tensor([[2.0, 1.0, 0.1], [0.5, 2.5, 0.3]], requires_grad=True)
    probs = F.softmax(logits, dim=1)
    np.testing.assert_allclose(probs.data.sum(axis=1), [1.0, 1.0], rtol=1e-6)
    np.testing.assert_allclose(F.log_softmax(logits, dim=1).data, np.log(probs.data), rtol=1e-5)
    loss = F.cross_entropy(logits, ml.tensor([0, 1]))
    expected = -(np.log(probs.data[0, 0]) + np.log(probs.data[1, 1])) / 2
    assert loss.shape == () and loss.item() == pytest.approx(expected, rel=1e-5)
    loss.backward()
    onehot = np.array([[1, 0, 0], [0, 1, 0]])
    np.testing.assert_allclose(logits.grad, (probs.data - onehot) / 2, rtol=1e-5, atol=1e-7)
    mse = F.mse_loss(ml.tensor([1.0, 2.0]), ml.tensor([0.0, 4.0]))
    assert mse.item() == pytest.approx(2.5)
    np.testing.assert_allclose(F.relu(ml.tensor([-1.0, 2.0])).data, [0.0, 2.0])


# --------------------------------------------------------------------------------------------
# The names the capstone of chapter 12 needs to run unchanged under PyTorch


def test_long_is_int64_and_labels_made_with_it_are_int64():
    assert ml.long is ml.int64
    labels = ml.tensor(np.array([3, 1, 4], dtype=np.uint8), dtype=ml.long)
    assert labels.dtype == np.int64
    np.testing.assert_array_equal(labels.data, [3, 1, 4])


def test_utils_data_is_minilucid_data_under_pytorchs_path():
    assert ml.utils.data is ml.data
    assert ml.utils.data.DataLoader is ml.data.DataLoader
    x, y = ml.arange(10.0).reshape(5, 2), ml.arange(5)
    loader = ml.utils.data.DataLoader(ml.utils.data.TensorDataset(x, y), batch_size=2)
    assert [len(yb) for _, yb in loader] == [2, 2, 1]


def test_argmax_like_torch():
    x = ml.tensor([[1.0, 3.0, 3.0], [7.0, 0.0, 2.0]])
    assert x.argmax().dtype == np.int64 and x.argmax().shape == ()
    assert x.argmax().item() == 3  # into the flattened tensor
    np.testing.assert_array_equal(x.argmax(dim=1).data, [1, 0])  # a tie: the first one
    np.testing.assert_array_equal(x.argmax(dim=0).data, [1, 0, 0])
    np.testing.assert_array_equal(x.argmax(dim=-1, keepdim=True).data, [[1], [0]])
    np.testing.assert_array_equal(x.argmax(axis=1).data, x.argmax(dim=1).data)
    assert x.argmax(keepdim=True).shape == (1, 1)
    assert ml.tensor(5.0).argmax(dim=0).item() == 0
    nan = ml.tensor([1.0, float("nan"), 9.0])
    assert nan.argmax().item() == 1  # as in torch, nan is the largest
    assert ml.zeros(0, 3).argmax(dim=1).shape == (0,)


def test_argmax_needs_no_gradient_and_records_no_graph():
    x = ml.tensor([[0.2, 0.9], [0.8, 0.1]], requires_grad=True)
    index = x.argmax(dim=1)
    assert not index.requires_grad and index.grad_fn is None


def test_counting_correct_predictions_as_in_pytorch():
    logits = ml.tensor([[0.1, 2.0, 0.3], [1.5, 0.2, 0.1], [0.0, 0.1, 0.9], [2.0, 0.0, 3.0]])
    y = ml.tensor([1, 0, 1, 2])
    hits = logits.argmax(dim=1) == y
    assert hits.dtype == bool
    correct = hits.sum()
    assert correct.dtype == np.int64 and correct.shape == ()
    assert correct.item() == 3 and isinstance(correct.item(), int)


def test_helpers_that_need_no_tensor_import_nothing_of_the_package():
    """minilucid/_arrays.py (Python data to arrays, dims, shapes) sits outside the import
    circle of tensor, function, autograd and the ops; the ops modules share alike's plain()."""
    import ast
    from pathlib import Path

    import minilucid._arrays as helpers
    import minilucid.ops.alike as alike
    import minilucid.ops.unary as unary

    tree = ast.parse(Path(helpers.__file__).read_text())
    imported = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    imported += [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    assert imported == ["numpy"], imported
    assert unary.plain is alike.plain  # an ops module imports alike without an import circle
    assert helpers.checked_axis(-1, 3, "sum") == 2


def test_a_detached_tensor_pickles_and_copies_without_its_note_of_the_cut():
    """detach() notes the tensor it cut (for pictures) by a weak reference; a state dict of
    detached tensors still pickles, and the copy carries no note."""
    import copy
    import pickle

    x = ml.tensor([1.0, 2.0], requires_grad=True)
    detached = x.detach()
    assert detached._cut() is x
    for back in (pickle.loads(pickle.dumps(detached)), copy.deepcopy(detached)):
        assert back._cut is None and np.array_equal(back.data, x.data)
    state = ml.nn.Linear(2, 3).state_dict()
    assert list(pickle.loads(pickle.dumps(state))) == ["weight", "bias"]


# --------------------------------------------------------------------------------------------
# Corners, each as PyTorch 2.13 has it (the expected values are torch's)


def test_topk_counts_nan_as_the_largest():
    x = ml.tensor([1.0, float("nan"), 3.0])
    values, indices = x.topk(2)
    assert np.isnan(values.data[0]) and values.data[1] == 3.0 and indices.data.tolist() == [1, 2]
    values, indices = x.topk(2, largest=False)
    assert values.data.tolist() == [1.0, 3.0] and indices.data.tolist() == [0, 2]


def test_softmax_log_softmax_and_topk_of_a_0d_tensor():
    x = ml.tensor(2.0, requires_grad=True)
    assert x.softmax(-1).item() == 1.0 and x.log_softmax(0).item() == 0.0
    values, indices = x.topk(1)
    assert values.shape == () and values.item() == 2.0 and indices.item() == 0
    x.log_softmax(0).backward()
    assert x.grad.shape == () and x.grad == 0.0


def test_mean_and_max_of_an_empty_tensor_over_dimensions_that_have_entries():
    empty = ml.zeros(0, 3)
    assert empty.mean(1).shape == (0,) and empty.max(1).shape == (0,)
    assert np.isnan(empty.mean(0).data).all() and empty.mean(0).shape == (3,)
    with pytest.raises(ValueError, match=r"^max: .*no entries along"):
        empty.max(0)
    layer = ml.nn.LayerNorm(3)
    x = ml.zeros(0, 3, requires_grad=True)
    layer(x).sum().backward()  # an empty batch goes through, as in PyTorch
    assert x.grad.shape == (0, 3)


def test_indexing_a_0d_tensor_is_an_index_error():
    with pytest.raises(IndexError, match=r"0-d tensor"):
        ml.tensor(1.0)[0]


def test_a_0d_tensor_used_twice_gets_a_0d_array_as_grad():
    x = ml.tensor(2.0, requires_grad=True)
    (x * x).backward()
    assert type(x.grad) is np.ndarray and x.grad.shape == () and x.grad == 4.0


def test_numel_split_and_no_grad_as_a_decorator():
    x = ml.arange(5.0)
    assert x.numel() == 5 and ml.zeros(2, 3).numel() == 6
    assert [p.data.tolist() for p in x.split(2)] == [[0, 1], [2, 3], [4]]
    assert [p.data.tolist() for p in x.split([1, 4])] == [[0], [1, 2, 3, 4]]
    y = ml.zeros(2, 4)
    y.split(2, dim=1)[1].fill_(1.0)  # the pieces are views
    assert y.data.tolist() == [[0, 0, 1, 1], [0, 0, 1, 1]]

    @ml.no_grad()
    def double(t):
        return t * 2

    assert not double(ml.tensor([1.0], requires_grad=True)).requires_grad
    assert ml.is_grad_enabled()


def test_module_dict_and_embedding_dtype():
    d = ml.nn.ModuleDict({"a": ml.nn.Linear(2, 3)})
    d["b"] = ml.nn.Linear(3, 1)
    assert list(d.keys()) == ["a", "b"] and "a" in d and len(d) == 2
    assert [n for n, _ in d.named_parameters()] == ["a.weight", "a.bias", "b.weight", "b.bias"]
    assert ml.nn.Embedding(3, 2, dtype=ml.float64).weight.dtype == np.float64


def test_register_hook_returns_a_handle_that_removes_it():
    x = ml.tensor([1.0, 2.0], requires_grad=True)
    handle = x.register_hook(lambda g: g * 2)
    handle.remove()
    (x * 1).sum().backward()
    assert x.grad.tolist() == [1.0, 1.0]


def test_backward_inputs_accumulates_into_those_tensors_only():
    a = ml.tensor([1.0, 2.0], requires_grad=True)
    b = ml.tensor([3.0, 4.0], requires_grad=True)
    (a * b).sum().backward(inputs=[a])
    assert a.grad.tolist() == [3.0, 4.0] and b.grad is None


def test_cross_entropy_of_one_sample():
    loss = F.cross_entropy(ml.tensor([1.0, 2.0, 3.0]), ml.tensor(1))
    np.testing.assert_allclose(loss.item(), 1.4076059, rtol=1e-6)


def test_sum_over_no_dims_reduces_everything_as_torch_2_13():
    x = ml.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert x.sum(dim=()).item() == 10.0 and x.mean(dim=()).item() == 2.5


def test_float32_times_a_numpy_float64_stays_float32():
    x = ml.tensor([1.0, 2.0])
    assert (x * np.float64(2.0)).dtype == np.float32
    assert (np.float64(2.0) * x).dtype == np.float32


def test_needs_input_grad_is_there_in_forward():
    from minilucid.function import Function

    seen = []

    class Probe(Function):
        @staticmethod
        def forward(ctx, a, b):
            seen.append(ctx.needs_input_grad)
            return a + b

        @staticmethod
        def backward(ctx, grad):
            return grad, grad

    Probe.apply(ml.tensor([1.0], requires_grad=True), ml.tensor([2.0]))
    assert seen == [(True, False)]


def test_a_tensor_with_views_copies_and_pickles():
    import copy
    import pickle

    x = ml.zeros(3)
    v = x[1:]
    for twin in (copy.deepcopy(x), pickle.loads(pickle.dumps(x))):
        twin += 1  # its own memory: neither x nor x's view changes
        assert twin.data.tolist() == [1.0, 1.0, 1.0] and v.data.tolist() == [0.0, 0.0]
    layer = ml.nn.Linear(2, 3)
    row = layer.weight[0]  # a view of a parameter
    assert copy.deepcopy(layer).weight.shape == (3, 2) and row.shape == (2,)
