"""The classic autodiff traps, each a test: reuse, diamonds, depth, backward twice, aliasing,
dtypes, no_grad/detach, and memory (no cycles; the graph is released by backward)."""

from __future__ import annotations

import gc

import numpy as np
import pytest
from gradients import assert_grads_match

import minilucid as ml
import minilucid.nn.functional as F
from minilucid.autograd import FREED
from minilucid.function import Function


def leaf(values, dtype=ml.float64):
    return ml.tensor(np.array(values, dtype=dtype), requires_grad=True)


# --------------------------------------------------------------------------------------------
# Reuse and diamonds: gradients from every path add up


def test_reused_non_leaf_times_itself():
    x = leaf([1.0, -2.0, 0.5])
    h = x * 3.0 + 1.0
    (h * h).sum().backward()
    np.testing.assert_allclose(x.grad, 2 * h.data * 3.0)
    assert h.grad is None  # a non-leaf keeps no grad unless asked


def test_reused_non_leaf_plus_itself():
    x = leaf([1.0, -2.0, 0.5])
    h = x * 3.0
    (h + h).sum().backward()
    np.testing.assert_allclose(x.grad, [6.0, 6.0, 6.0])


def test_reused_leaf_in_one_op():
    x = leaf([1.0, -2.0, 0.5])
    (x * x).sum().backward()
    np.testing.assert_allclose(x.grad, 2 * x.data)
    x.grad = None
    (x @ x).backward()
    np.testing.assert_allclose(x.grad, 2 * x.data)
    x.grad = None
    ml.cat([x, x, x]).sum().backward()
    np.testing.assert_allclose(x.grad, [3.0, 3.0, 3.0])
    x.grad = None
    ml.where(ml.tensor([True, False, True]), x, x).sum().backward()
    np.testing.assert_allclose(x.grad, [1.0, 1.0, 1.0])


def test_diamond():
    """a feeds b and c, which meet again in d: d = (2a) * exp(a);  dd/da = 2 exp(a) (1 + a)."""
    a = leaf([0.3, -1.2])
    b = a * 2.0
    c = a.exp()
    (b * c).sum().backward()
    np.testing.assert_allclose(a.grad, 2 * np.exp(a.data) * (1 + a.data))


def test_reuse_at_different_depths():
    """x enters at the first op and again at the last: the sweep must wait for both."""

    def f(x, w):
        h = x
        for _ in range(5):
            h = (h * w).tanh() + x
        return h * x + x.sum()

    assert_grads_match(f, [np.array([0.2, -0.7, 1.1]), np.array([0.5])], label="depths")


def test_wide_fan_out():
    x = leaf([1.0, 2.0])
    total = x * 0.0
    for i in range(200):
        total = total + x * float(i)
    total.sum().backward()
    np.testing.assert_allclose(x.grad, [sum(range(200))] * 2)


# --------------------------------------------------------------------------------------------
# Depth: an iterative sort, never recursion


@pytest.fixture
def without_gc():
    """Python's cyclic collector would rescan the million live nodes again and again (more
    than half the time of the deep tests); the engine makes no cycles, so it is not needed."""
    gc.disable()
    yield
    gc.enable()


def test_a_million_deep_chain(without_gc):
    x = ml.tensor(1.5, requires_grad=True)
    y = x
    for _ in range(1_000_000):
        y = -y  # the cheapest op: this test is about depth, not arithmetic
    assert y.item() == 1.5
    y.backward()
    assert x.grad == 1.0


def test_dropping_a_deep_unused_graph_does_not_crash(without_gc):
    x = ml.tensor(1.0, requires_grad=True)
    y = x
    for _ in range(200_000):
        y = y * 1.0
    del y  # freeing a long chain of nodes must not overflow the C stack


# --------------------------------------------------------------------------------------------
# backward twice


def test_backward_twice_with_retain_graph_accumulates():
    x = leaf([1.0, 2.0, 3.0])
    h = x * x
    h.retain_grad()
    y = (h * 2.0).sum()
    y.backward(retain_graph=True)
    first, first_h = x.grad.copy(), h.grad.copy()
    y.backward()
    np.testing.assert_allclose(x.grad, 2 * first)
    np.testing.assert_allclose(h.grad, 2 * first_h)
    np.testing.assert_allclose(first, 4 * x.data)


def test_backward_twice_without_retain_graph_fails_clearly():
    x = leaf([1.0, 2.0, 3.0])
    y = (x * x).sum()
    y.backward()
    before = x.grad.copy()
    with pytest.raises(RuntimeError, match=r"^backward: .*freed.*retain_graph=True"):
        y.backward()
    np.testing.assert_array_equal(x.grad, before)  # the failed call changed nothing


def test_new_graph_on_top_of_a_freed_one_fails_clearly():
    x = leaf([1.0, 2.0])
    h = x * 3.0
    h.sum().backward()
    with pytest.raises(RuntimeError, match=r"freed"):
        (h * 2.0).sum().backward()


def test_separate_graphs_accumulate_into_the_leaf():
    x = leaf([1.0, 2.0])
    (x * 3.0).sum().backward()
    (x * x).sum().backward()
    np.testing.assert_allclose(x.grad, 3.0 + 2 * x.data)


# --------------------------------------------------------------------------------------------
# The seed: scalars, gradient=, shapes


def test_non_scalar_backward_needs_a_gradient():
    x = leaf([[1.0, 2.0], [3.0, 4.0]])
    y = x * x
    with pytest.raises(RuntimeError, match=r"^backward: .*shape \(2, 2\).*gradient="):
        y.backward()
    g = np.array([[1.0, 0.5], [-1.0, 2.0]])
    y.backward(gradient=g)
    np.testing.assert_allclose(x.grad, 2 * x.data * g)


def test_gradient_may_be_a_tensor():
    x = leaf([1.0, 2.0])
    (x * 3.0).backward(ml.tensor([1.0, -1.0]))
    np.testing.assert_allclose(x.grad, [3.0, -3.0])


def test_gradient_shape_mismatch():
    x = leaf([1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match=r"^backward: gradient has shape \(2,\).*shape \(3,\)"):
        (x * 2.0).backward(np.ones(2))


def test_backward_from_a_scalar_leaf():
    x = ml.tensor(2.0, requires_grad=True)
    x.backward()
    assert x.grad == 1.0


# --------------------------------------------------------------------------------------------
# Aliasing: every .grad is its own array


def test_leaf_grads_are_not_aliased():
    a, b = leaf([1.0, 2.0]), leaf([3.0, 4.0])
    (a + b).sum().backward()  # Add sends the very same array to both inputs
    assert a.grad is not b.grad
    a.grad += 100.0
    np.testing.assert_allclose(b.grad, [1.0, 1.0])


def test_grads_are_not_aliased_with_the_seed_or_a_retained_grad():
    a, b = leaf([1.0, 2.0]), leaf([3.0, 4.0])
    h = a + b
    h.retain_grad()
    seed = np.array([1.0, -1.0])
    (h * 1.0).backward(seed)
    seed[0] = 50.0
    h.grad[1] = 70.0
    np.testing.assert_allclose(a.grad, [1.0, -1.0])
    np.testing.assert_allclose(b.grad, [1.0, -1.0])


def test_grad_of_a_broadcast_input_is_writable_and_owned():
    x = leaf([1.0, 2.0])
    x.sum().backward()  # Sum's backward broadcasts a view of one number
    x.grad[0] = 5.0
    np.testing.assert_allclose(x.grad, [5.0, 1.0])


# --------------------------------------------------------------------------------------------
# dtypes


def test_float32_stays_float32_through_a_training_step():
    ml.manual_seed(0)
    x = ml.randn(8, 4)
    w = ml.randn(4, 3, requires_grad=True)
    b = ml.zeros(3, requires_grad=True)
    logits = ((x @ w + b).tanh() * 2.0 - 1).relu() ** 2 / 3.0
    loss = F.cross_entropy(logits, [0, 1, 2, 0, 1, 2, 0, 1]) + F.mse_loss(
        logits.softmax(-1), 0.5 * logits
    )
    assert logits.dtype == ml.float32 and loss.dtype == ml.float32
    loss.backward()
    assert w.grad.dtype == ml.float32 and b.grad.dtype == ml.float32


def test_float64_stays_float64():
    x = ml.tensor(np.array([0.5, 1.5]), requires_grad=True)
    assert x.dtype == ml.float64
    y = (x * 2.0 + 1).exp().log().sqrt().softmax(-1).sum()
    assert y.dtype == ml.float64
    y.backward()
    assert x.grad.dtype == ml.float64


@pytest.mark.parametrize(
    "op",
    [
        lambda x: x + 1,
        lambda x: x * 2.5,
        lambda x: 2.5 - x,
        lambda x: 1.5 / x,
        lambda x: x**2,
        lambda x: x**0.5,
        lambda x: 2.0**x,
        lambda x: x.clamp(0.1, 0.9),
        lambda x: ml.where(x > 1, x, 0.0),
    ],
)
def test_python_scalars_do_not_promote(op):
    x = ml.tensor([0.5, 1.5], requires_grad=True)
    assert x.dtype == ml.float32
    y = op(x)
    assert y.dtype == ml.float32
    y.sum().backward()
    assert x.grad.dtype == ml.float32


def test_python_data_makes_float32_and_arrays_keep_their_dtype():
    assert ml.tensor([1.0, 2.0]).dtype == ml.float32
    assert ml.tensor(3.0).dtype == ml.float32
    assert ml.tensor([1, 2]).dtype == ml.int64
    assert ml.tensor(np.zeros(2)).dtype == ml.float64
    assert ml.tensor(np.zeros(2, dtype=np.float32)).dtype == ml.float32
    assert ml.arange(0, 1, 0.5).dtype == ml.float32
    assert ml.arange(3).dtype == ml.int64


def test_mixed_precision_promotes_the_result_but_each_grad_keeps_its_leaf_dtype():
    a = ml.tensor([1.0, 2.0], requires_grad=True)  # float32
    b = ml.tensor(np.array([3.0, 4.0]), requires_grad=True)  # float64
    y = a * b
    assert y.dtype == ml.float64
    y.sum().backward()
    assert a.grad.dtype == ml.float32 and b.grad.dtype == ml.float64
    a.grad = None
    (a * np.array([1.0, 2.0])).sum().backward()  # a float64 NumPy array
    assert a.grad.dtype == ml.float32


def test_an_integer_tensor_with_float32_follows_numpys_promotion_a_documented_difference():
    # PyTorch keeps float32 here; minilucid follows NumPy (README, "What differs from PyTorch").
    # The gradient still comes back in the float input's own dtype.
    x = ml.tensor([0.5, 1.5], requires_grad=True)
    y = x * ml.arange(2)
    assert y.dtype == ml.float64
    y.sum().backward()
    assert x.grad.dtype == ml.float32


@pytest.mark.parametrize(
    "make",
    [
        lambda: ml.tensor([1, 2], requires_grad=True),
        lambda: ml.arange(3, requires_grad=True),
        lambda: ml.tensor([1, 2]).requires_grad_(),
        lambda: ml.tensor([True, False], requires_grad=True),
        lambda: ml.zeros(2, dtype=ml.int64, requires_grad=True),
    ],
)
def test_integer_tensors_cannot_require_grad(make):
    with pytest.raises(TypeError, match=r"^requires_grad: only floating-point"):
        make()


# --------------------------------------------------------------------------------------------
# no_grad and detach


def test_no_grad_result_is_a_constant_later():
    x = leaf([1.0, 2.0])
    with ml.no_grad():
        c = x * 2.0
    assert c.grad_fn is None and not c.requires_grad
    (c * x).sum().backward()
    np.testing.assert_allclose(x.grad, c.data)


def test_no_grad_is_restored_after_an_error():
    with pytest.raises(ValueError), ml.no_grad():
        ml.tensor([1.0, 2.0]) + ml.tensor([1.0, 2.0, 3.0])
    assert ml.is_grad_enabled()


def test_detach_cuts_the_flow():
    x = leaf([1.0, 2.0])
    (x.detach() * x).sum().backward()
    np.testing.assert_allclose(x.grad, x.data)  # not 2x


def test_input_without_requires_grad_gets_no_grad():
    x, c = leaf([1.0, 2.0]), ml.tensor(np.array([3.0, 4.0]))
    (x * c).sum().backward()
    assert c.grad is None
    np.testing.assert_allclose(x.grad, c.data)


# --------------------------------------------------------------------------------------------
# Memory: reference counting frees the graph; backward releases the intermediates


def _count(cls) -> int:
    return sum(1 for o in gc.get_objects() if issubclass(type(o), cls))  # type(): no getattr


def _training_step(retain_graph=False):
    ml.manual_seed(1)
    x = ml.randn(6, 4)
    w1, w2 = ml.randn(4, 5, requires_grad=True), ml.randn(5, 3, requires_grad=True)
    b = ml.zeros(5, requires_grad=True)
    h = (x @ w1 + b).relu()
    loss = F.cross_entropy(h @ w2, [0, 1, 2, 0, 1, 2]) + (w1 * w1).sum() * 0.01
    loss.backward(retain_graph=retain_graph)
    return loss, (x, w1, w2, b)


def test_the_engine_makes_no_reference_cycles():
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)  # whatever the collector finds lands in gc.garbage
    try:
        for retain in (False, True):
            loss, leaves = _training_step(retain)
            del loss, leaves
        found = gc.collect()
        kinds = sorted({type(o).__name__ for o in gc.garbage})
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    assert found == 0, f"cyclic garbage left to the collector: {kinds}"


def test_backward_releases_the_intermediate_tensors():
    gc.collect()
    tensors, functions = _count(ml.Tensor), _count(Function)
    loss, leaves = _training_step()
    # alive: the four leaves and the loss, whose op remains (with its inputs released)
    assert _count(ml.Tensor) - tensors == 5
    assert _count(Function) - functions == 1
    assert loss.grad_fn.parents is FREED and loss.grad_fn.saved_tensors is None
    del loss
    assert _count(ml.Tensor) - tensors == 4
    assert _count(Function) - functions == 0
    del leaves
    assert _count(ml.Tensor) == tensors


def test_retain_graph_keeps_the_intermediates_until_the_output_goes():
    gc.collect()
    tensors, functions = _count(ml.Tensor), _count(Function)
    loss, leaves = _training_step(retain_graph=True)
    assert _count(ml.Tensor) - tensors > 5
    assert _count(Function) - functions > 1
    del loss
    assert _count(ml.Tensor) - tensors == 4
    assert _count(Function) - functions == 0


def test_no_grad_keeps_no_graph():
    gc.collect()
    functions = _count(Function)
    x = ml.randn(3, 3, requires_grad=True)
    with ml.no_grad():
        y = ((x @ x).relu() + 1).sum()
    assert _count(Function) == functions
    assert y.grad_fn is None


# --------------------------------------------------------------------------------------------
# Under create_graph a forward value kept anywhere but the saved tensors is refused, naming the
# op: as a constant it would make the second derivative silently wrong


class _KeepsOnCtx(Function):
    """z = a**3 with 3a**2 kept as a ctx attribute: right once, wrong twice."""

    @staticmethod
    def forward(ctx, a):
        ctx.slope = 3 * a * a
        return a * a * a

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.slope


class _ReadsTheArray(Function):
    """z = a**3 whose backward reads the saved input's array with .numpy() or plain()."""

    read = staticmethod(lambda t: t.numpy())

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return a * a * a

    @classmethod
    def backward(cls, ctx, grad):
        (a,) = ctx.saved_tensors
        a = cls.read(a) if isinstance(a, ml.Tensor) else a
        return grad * (3 * a * a)


class _ReadsWithPlain(_ReadsTheArray):
    read = staticmethod(lambda t: __import__("minilucid.ops.alike").ops.alike.plain(t))


@pytest.mark.parametrize(
    ("op", "pattern"),
    [
        (_KeepsOnCtx, r"^create_graph: _KeepsOnCtx keeps an array of floats .* as ctx\.slope"),
        (_ReadsTheArray, r"^create_graph: _ReadsTheArray\.backward read the array .* numpy\(\)"),
        (_ReadsWithPlain, r"^create_graph: _ReadsWithPlain\.backward read the array .* plain\(\)"),
    ],
)
def test_a_forward_value_outside_the_saved_tensors_is_refused_under_create_graph(op, pattern):
    x = leaf([1.0, 2.0])
    (g,) = ml.grad(op.apply(x).sum(), x)  # once: right, 3 x**2
    np.testing.assert_allclose(g, [3.0, 12.0])
    with pytest.raises(RuntimeError, match=pattern):
        ml.grad(op.apply(x).sum(), x, create_graph=True)


def test_cross_entropy_differentiates_twice_from_its_saved_logits():
    logits = leaf([[0.5, -1.0, 2.0], [1.5, 0.2, -0.3]])
    targets = ml.tensor([2, 0])
    v = np.array([[1.0, -2.0, 0.5], [0.3, 0.7, -1.1]])
    (g,) = ml.grad(F.cross_entropy(logits, targets), logits, create_graph=True)
    (hv,) = ml.grad((g * v).sum(), logits)

    def slope(a):  # the gradient of the loss at a, by central differences in float64
        eps, out = 1e-6, np.zeros_like(a)
        for i in np.ndindex(a.shape):
            up, down = a.copy(), a.copy()
            up[i] += eps
            down[i] -= eps
            f = [F.cross_entropy(ml.tensor(z), targets).item() for z in (up, down)]
            out[i] = (f[0] - f[1]) / (2 * eps)
        return out

    eps = 1e-4  # the Hessian-vector product, by central differences of the gradient
    expected = (slope(logits.data + eps * v) - slope(logits.data - eps * v)) / (2 * eps)
    np.testing.assert_allclose(hv, expected, rtol=1e-4, atol=1e-6)
