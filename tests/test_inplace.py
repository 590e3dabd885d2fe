"""In-place updates follow PyTorch's rules, and a value saved for backward cannot change unseen.

- `+= -= *= /=` and `add_ sub_ mul_ div_ zero_ fill_ copy_` change the tensor itself (the same
  object, the same array);
- on a leaf that requires grad they are allowed only under `no_grad`;
- on a tensor computed by an op (recording on) they are recorded: the tensor becomes the output
  of the in-place op, and gradients flow through it;
- backward refuses, naming the op, to use a value that was changed in place after an op saved
  it; writing through `.data` is not tracked (as in PyTorch).
"""

from __future__ import annotations

import importlib.util
import operator
import time

import numpy as np
import pytest
from gradients import assert_grads_match, weights_for

import minilucid as ml

HAS_TORCH = importlib.util.find_spec("torch") is not None


def leaf(values):
    """A float64 leaf that requires grad: a parameter."""
    return ml.tensor(np.asarray(values, dtype=np.float64), requires_grad=True)


# --------------------------------------------------------------------------------------------
# The update every training loop writes


def test_sgd_update_with_augmented_assignment_changes_the_parameter_itself():
    w = leaf([1.0, -2.0])
    before = w
    array = w.data
    (w * w).sum().backward()
    with ml.no_grad():
        w -= 0.1 * w.grad
    assert w is before and w.data is array and w.is_leaf and w.requires_grad
    np.testing.assert_allclose(w.data, [0.8, -1.6])


def test_update_over_a_list_of_parameters_reaches_the_list():
    params = [leaf([1.0]), leaf([[2.0, 3.0]])]
    loss = (params[0] * 2).sum() + (params[1] * params[1]).sum()
    loss.backward()
    with ml.no_grad():
        for p in params:
            p -= 0.5 * p.grad
    np.testing.assert_allclose(params[0].data, [0.0])
    np.testing.assert_allclose(params[1].data, [[0.0, 0.0]])


@pytest.mark.parametrize(
    "update, expected",
    [
        (lambda t: t.__iadd__(2.0), [3.0, 4.0]),
        (lambda t: t.__isub__(ml.tensor([1.0, 1.0])), [0.0, 1.0]),
        (lambda t: t.__imul__(np.array([2.0, 3.0])), [2.0, 6.0]),
        (lambda t: t.__itruediv__(2), [0.5, 1.0]),
        (lambda t: t.add_(ml.tensor([1.0, 2.0]), alpha=-2), [-1.0, -2.0]),
        (lambda t: t.sub_(1.0), [0.0, 1.0]),
        (lambda t: t.mul_(ml.tensor(3.0)), [3.0, 6.0]),
        (lambda t: t.div_(4.0), [0.25, 0.5]),
        (lambda t: t.zero_(), [0.0, 0.0]),
        (lambda t: t.fill_(7.0), [7.0, 7.0]),
        (lambda t: t.copy_(ml.tensor([5.0, 6.0])), [5.0, 6.0]),
        (lambda t: t.copy_(np.array(9.0)), [9.0, 9.0]),
    ],
)
def test_each_in_place_op_returns_the_same_tensor_with_new_values(update, expected):
    t = ml.tensor([1.0, 2.0])
    array = t.data
    with ml.no_grad():
        w = leaf([1.0, 2.0])
        assert update(w) is w and w.is_leaf and w.requires_grad
    assert update(t) is t and t.data is array
    np.testing.assert_allclose(t.data, expected)
    np.testing.assert_allclose(w.data, expected)
    assert t.dtype == np.float32 and w.dtype == np.float64


def test_in_place_keeps_the_dtype_and_refuses_what_it_cannot_hold():
    t = ml.tensor([1.0, 2.0])
    t += np.array([0.5, 0.5])  # float64 into float32: kept float32, as in torch
    assert t.dtype == np.float32
    counts = ml.tensor([1, 2])
    counts += 1
    np.testing.assert_array_equal(counts.data, [2, 3])
    with pytest.raises(TypeError, match=r"^add_: .*int64.*float"):
        counts += 0.5
    with pytest.raises(ValueError, match=r"^mul_: .*\(3,\).*\(2,\)"):
        t *= ml.tensor([1.0, 2.0, 3.0])  # the result would need a new shape


def test_leaf_that_requires_grad_is_refused_outside_no_grad():
    w = leaf([1.0, 2.0])
    for update in (
        lambda: w.__iadd__(1.0),
        lambda: w.__isub__(1.0),
        lambda: w.__imul__(2.0),
        lambda: w.__itruediv__(2.0),
        lambda: w.add_(1.0),
        lambda: w.zero_(),
        lambda: w.fill_(0.0),
        lambda: w.copy_(ml.tensor([3.0, 4.0])),
    ):
        with pytest.raises(RuntimeError, match=r"leaf tensor that requires grad.*no_grad"):
            update()
    np.testing.assert_allclose(w.data, [1.0, 2.0])  # nothing was changed
    assert w.is_leaf


def test_error_names_the_op_and_the_way_out():
    w = leaf([1.0, 2.0])
    with pytest.raises(RuntimeError) as info:
        w -= 1.0
    message = str(info.value)
    assert message.startswith("sub_: ") and "with ml.no_grad():" in message


# --------------------------------------------------------------------------------------------
# Recorded in a graph


def test_in_place_on_a_non_leaf_is_recorded_and_differentiated():
    x = leaf([1.0, 2.0, 3.0])
    h = x * 2
    h += 1
    assert not h.is_leaf and type(h.grad_fn).__name__ == "Add"
    h *= x  # h = (2x + 1) * x
    (h.sum()).backward()
    np.testing.assert_allclose(x.grad, 4 * x.data + 1)


def test_in_place_with_a_tensor_that_requires_grad_makes_a_constant_part_of_the_graph():
    w = leaf([0.5, -1.0])
    total = ml.zeros(2, dtype=ml.float64)
    total += w * 3
    total.sum().backward()
    np.testing.assert_allclose(w.grad, [3.0, 3.0])
    assert not total.is_leaf


def test_zero_fill_copy_on_a_non_leaf_cut_the_gradient_to_the_old_value():
    x = leaf([1.0, 2.0])
    src = leaf([3.0, 4.0])
    h = x * 1.0
    h.copy_(src)
    (h * ml.tensor([1.0, 10.0], dtype=ml.float64)).sum().backward()
    np.testing.assert_allclose(src.grad, [1.0, 10.0])
    np.testing.assert_allclose(x.grad, [0.0, 0.0])


def test_in_place_on_a_view_changes_its_base_and_the_base_s_graph():
    x = leaf([[1.0, 2.0], [3.0, 4.0]])
    h = x * 1.0
    v = h.reshape(4)  # a view of h: its change is recorded on h, as in PyTorch
    v *= 3
    np.testing.assert_allclose(h.data, [[3.0, 6.0], [9.0, 12.0]])
    (h * h).sum().backward()  # h = 3x: d/dx sum(9 x^2) = 18 x
    np.testing.assert_allclose(x.grad, 18 * x.data)


def test_in_place_on_an_untracked_view_of_an_input_is_refused_while_recording():
    from minilucid.ops.shape import Reshape

    x = leaf([[1.0, 2.0], [3.0, 4.0]])
    h = x * 1.0
    v = Reshape.apply(h, shape=(4,))  # the op alone, not the method: shares h's array unnoted
    with pytest.raises(RuntimeError, match=r"^add_: .*Reshape.*shares"):
        v += 1
    np.testing.assert_allclose(h.data, [[1.0, 2.0], [3.0, 4.0]])


# --------------------------------------------------------------------------------------------
# The version counter: a value saved for backward that changed is an error naming the op


def test_changing_a_saved_input_in_place_is_caught_by_backward():
    w = leaf([1.0, 2.0])
    x = leaf([3.0, 4.0])
    y = (w * x).sum()  # Mul saves w and x
    with ml.no_grad():
        w += 10  # e.g. an optimiser step before backward
    with pytest.raises(RuntimeError, match=r"Mul.*changed in place.*add_"):
        y.backward()


def test_changing_a_saved_output_in_place_is_caught():
    x = leaf([0.0, 1.0])
    y = x.exp()  # Exp saves its output
    y.mul_(2)
    with pytest.raises(RuntimeError, match=r"Exp.*changed in place.*mul_"):
        y.sum().backward()


def test_changing_a_value_that_no_op_saved_is_fine():
    x = leaf([1.0, 2.0])
    h = x + 1  # Add saves nothing
    k = h.sum()
    with ml.no_grad():
        x.mul_(5)
    k.backward()
    np.testing.assert_allclose(x.grad, [1.0, 1.0])


def test_changes_before_the_forward_pass_are_fine():
    w = leaf([1.0, 2.0])
    with ml.no_grad():
        w -= 0.5
    y = (w * w).sum()
    y.backward()
    np.testing.assert_allclose(w.grad, 2 * w.data)


def test_a_change_through_a_shared_array_is_caught():
    w = leaf([1.0, 2.0])
    y = (w * w).sum()
    d = w.detach()  # shares w's array, as in PyTorch
    d.add_(1)
    with pytest.raises(RuntimeError, match=r"Mul.*changed in place"):
        y.backward()


def test_using_an_old_reference_after_a_recorded_change_is_refused():
    x = leaf([1.0, 2.0])
    h = x * 3
    s = h.sum()  # used h before the change
    h.add_(1)
    with pytest.raises(RuntimeError, match=r"Sum.*changed in place"):
        (s + h.sum()).backward()


def test_writing_through_data_is_not_tracked():
    w = leaf([1.0, 2.0])
    y = (w * w).sum()
    w.data += 10  # bypasses the counter, like PyTorch's .data
    y.backward()
    np.testing.assert_allclose(w.grad, 2 * w.data)  # the new values, silently


@pytest.mark.skipif(not HAS_TORCH, reason="PyTorch is not installed")
def test_in_place_rules_agree_with_torch():
    import torch

    def program(lib, make):
        x = make([1.0, 2.0, 3.0])
        h = x * 2
        h += 1
        h *= x
        h -= x / 2
        h.div_(lib.tensor([2.0, 4.0, 8.0], dtype=h.dtype))
        h.sum().backward()
        return h.detach().numpy(), x.grad

    ours = program(ml, lambda v: leaf(v))
    theirs = program(torch, lambda v: torch.tensor(v, dtype=torch.float64, requires_grad=True))
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(a, np.asarray(b), rtol=1e-12)
    w = torch.tensor([1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        w += 1  # torch refuses the same thing


# --------------------------------------------------------------------------------------------
# An in-place op whose other operand is the tensor itself (or shares its memory): the operand is
# the old value, so both terms reach the gradient (h += h doubles h: gradient 2 per use of h)

SELF_ALIASED = {
    "h += h": lambda h: operator.iadd(h, h),
    "h -= h": lambda h: operator.isub(h, h),
    "h *= h": lambda h: operator.imul(h, h),
    "h /= h": lambda h: operator.itruediv(h, h),
    "h.copy_(h)": lambda h: h.copy_(h),
    "h.add_(h, alpha=2)": lambda h: h.add_(h, alpha=2),
    "h.sub_(h, alpha=0.5)": lambda h: h.sub_(h, alpha=0.5),
    "h.mul_(h) twice": lambda h: h.mul_(h).mul_(h),
}


def self_aliased_program(change):
    def program(x):
        h = x * 2 + 1
        change(h)
        return h * x

    return program


@pytest.mark.parametrize("change", SELF_ALIASED.values(), ids=SELF_ALIASED)
def test_in_place_op_with_itself_as_operand_matches_central_differences(change):
    assert_grads_match(self_aliased_program(change), [[0.5, -1.5, 2.0]], label="self-aliased")


def test_a_constant_that_became_a_node_then_changed_by_itself():
    def program(x):
        c = ml.zeros(3, dtype=ml.float64)
        c += x
        c += c
        return c

    grads = assert_grads_match(program, [[1.0, 2.0, 3.0]], label="c += x; c += c")
    np.testing.assert_allclose(grads[0], weights_for((3,)) * 2)


def test_a_detached_copy_of_itself_is_the_old_value_as_a_constant():
    """h *= h.detach(): the detached operand is a constant (PyTorch refuses this one at
    backward, as the detached tensor shares h's version counter; minilucid copies it first)."""
    x = leaf([1.0, 2.0, 3.0])
    h = x * 2
    h *= h.detach()
    h.sum().backward()
    np.testing.assert_allclose(h.data, 4 * x.data**2)
    np.testing.assert_allclose(x.grad, 2 * (2 * x.data))  # d(2x * c)/dx with c = 2x held fixed


def test_a_view_on_the_same_numbers_stands_for_the_old_value_as_in_pytorch():
    x = leaf([1.0, 2.0, 3.0])
    h = x * 2
    h += h.reshape(3)  # every number read before it is written: h doubles
    h.sum().backward()
    np.testing.assert_allclose(h.data, 4 * x.data)
    np.testing.assert_allclose(x.grad, [4.0, 4.0, 4.0])


def test_an_operand_on_part_of_the_numbers_written_is_refused():
    x = leaf([1.0, 2.0, 3.0])
    h = x * 2
    with pytest.raises(RuntimeError, match=r"^add_: the other operand shares part of its memory"):
        h[1:].add_(h[:2])
    h.sum().backward()  # the refused change left h as it was
    np.testing.assert_allclose(x.grad, [2.0, 2.0, 2.0])


# PyTorch refuses these at backward (mul and div save the operand the change overwrote);
# minilucid's operand is a copy of the old value, and its gradient is checked above.
TORCH_REFUSES = {"h *= h", "h /= h", "h.mul_(h) twice"}


@pytest.mark.skipif(not HAS_TORCH, reason="PyTorch is not installed")
@pytest.mark.parametrize("name", SELF_ALIASED)
def test_in_place_op_with_itself_as_operand_agrees_with_torch(name):
    import torch

    values = [0.5, -1.5, 2.0]
    x = leaf(values)
    self_aliased_program(SELF_ALIASED[name])(x).sum().backward()
    t = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    y = self_aliased_program(SELF_ALIASED[name])(t).sum()
    if name in TORCH_REFUSES:
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.backward()
        return
    y.backward()
    np.testing.assert_allclose(x.grad, t.grad.numpy(), rtol=1e-12)


# --------------------------------------------------------------------------------------------
# The version table forgets dead arrays in amortised constant time


def test_in_place_op_costs_the_same_with_many_stamped_arrays_alive():
    def cost(alive: int) -> float:
        kept = [ml.zeros(2) for _ in range(alive)]
        for t in kept:
            t -= 0.1  # each is stamped in the version table, and stays alive
        p = ml.zeros(3)
        best = float("inf")
        for _ in range(5):
            start = time.perf_counter()
            for _ in range(200):
                p -= 0.1
            best = min(best, time.perf_counter() - start)
        del kept
        return best

    few, many = cost(200), cost(8000)
    # a sweep of the whole table on every change made this about 80 times slower
    assert many < 10 * few, f"{many / few:.0f} times slower with 8000 stamped arrays alive"


# --------------------------------------------------------------------------------------------
# Views and their base share one graph, as in PyTorch (the values are PyTorch 2.13's)


def test_a_view_of_a_constant_joins_the_graph_when_changed_with_a_gradient():
    x = leaf([1.0, 2.0])
    buf = ml.zeros(3)
    buf[1:].add_(x)  # a preallocated buffer filled slice by slice
    ((buf * buf).sum() + x.sum()).backward()
    np.testing.assert_allclose(buf.data, [0.0, 1.0, 2.0])
    np.testing.assert_allclose(x.grad, [3.0, 5.0])


def test_a_view_taken_before_its_base_joins_the_graph_follows_it():
    x = leaf([1.0, 2.0, 3.0])
    c = ml.zeros(3)
    v = c[1:]
    c += x
    assert v.requires_grad
    ((v * v).sum() + x.sum()).backward()
    np.testing.assert_allclose(x.grad, [1.0, 5.0, 7.0])


def test_a_view_of_a_view_changed_in_place_reaches_the_root_base():
    x = leaf([1.0, 2.0])
    buf = ml.zeros(2, 3)
    row = buf[1]
    row[1:].mul_(0).add_(x * 3)
    buf.sum().backward()
    np.testing.assert_allclose(buf.data, [[0, 0, 0], [0, 3, 6]])
    np.testing.assert_allclose(x.grad, [3.0, 3.0])


def test_an_element_read_with_integer_indices_is_a_view():
    x = ml.tensor([[1.0, 2.0], [3.0, 4.0]])
    e = x[0, 1]
    e += 10
    np.testing.assert_allclose(x.data, [[1.0, 12.0], [3.0, 4.0]])
    x *= 2
    assert e.item() == 24.0 and e.shape == ()


def test_contiguous_copies_a_non_contiguous_tensor():
    x = ml.ones(2, 3)
    c = x.transpose(0, 1).contiguous()
    c += 10
    np.testing.assert_allclose(x.data, np.ones((2, 3)))
    y = ml.ones(2, 3)
    assert y.contiguous() is y  # already contiguous: the tensor itself, as in PyTorch


def test_view_refuses_a_layout_it_would_have_to_copy():
    x = ml.randn(2, 3)
    with pytest.raises(RuntimeError, match=r"^view: .*\(3, 2\).*reshape"):
        x.transpose(0, 1).view(6)
    assert x.transpose(0, 1).reshape(6).shape == (6,)


def test_a_view_made_under_no_grad_changed_with_grad_on_is_refused():
    x = leaf([1.0, 2.0, 3.0])
    with ml.no_grad():
        v = x[1:]
    with pytest.raises(RuntimeError, match=r"^add_: a view was created in no_grad mode"):
        v.add_(1.0)
    buf = ml.zeros(3)
    with ml.no_grad():
        w = buf[1:]
    with pytest.raises(RuntimeError, match=r"no_grad mode"):
        w.add_(leaf([1.0, 2.0]))
    w.add_(1.0)  # nothing requires grad: allowed, as in PyTorch
    np.testing.assert_allclose(buf.data, [0.0, 1.0, 1.0])


def test_a_no_grad_view_whose_base_then_changes_with_grad_is_refused_at_backward():
    buf = ml.zeros(3)
    with ml.no_grad():
        v = buf[1:]
    x = leaf([1.0, 2.0, 3.0])
    buf.add_(x)
    with pytest.raises(RuntimeError, match=r"view was created in no_grad mode"):
        (v * v).sum().backward()


def test_a_view_of_a_leaf_that_requires_grad_cannot_change_in_place():
    x = leaf([1.0, 2.0, 3.0])
    with pytest.raises(RuntimeError, match=r"^mul_: this tensor is a view of a leaf"):
        x[1:].mul_(2)


def test_setitem_writes_in_place_and_the_gradient_reaches_the_value():
    x = ml.tensor([[1.0, 2.0], [3.0, 4.0]])
    before = x.data
    w = leaf([5.0, 6.0])
    x[0] = w
    assert x.data is before and x.grad_fn is not None
    (x * x).sum().backward()
    np.testing.assert_allclose(w.grad, [10.0, 12.0])
    m = ml.tensor([1.0, -2.0, 3.0])
    m[m < 0] = 0.0  # a mask, no gradient anywhere: plain NumPy assignment
    np.testing.assert_allclose(m.data, [1.0, 0.0, 3.0])
    h = leaf([1.0, 2.0, 3.0]) * 1
    s = leaf(4.0)
    h[ml.tensor([0, 2])] = s  # an index tensor: one value broadcast to two places
    h.sum().backward()
    np.testing.assert_allclose(s.grad, 2.0)


def test_setitem_is_seen_by_the_version_check():
    x = leaf([1.0, 2.0])
    h = x.exp()  # Exp saves its output
    with ml.no_grad():
        h[0] = 5.0
    with pytest.raises(RuntimeError, match=r"Exp.*changed in place by setitem"):
        h.sum().backward()


# --------------------------------------------------------------------------------------------
# Indices kept on ctx are version-checked, as PyTorch checks them


def test_indices_changed_in_place_after_use_are_refused_at_backward():
    import minilucid.nn.functional as F

    emb = ml.nn.Embedding(3, 2)
    idx = ml.tensor([0, 1])
    out = emb(idx)
    idx += 1
    with pytest.raises(RuntimeError, match=r"Embedding kept .*ctx\.indices.*changed in place"):
        out.sum().backward()
    x = leaf([1.0, 2.0, 3.0])
    idx = ml.tensor([0, 1])
    out = x[idx]
    idx += 1
    with pytest.raises(RuntimeError, match=r"GetItem kept .*changed in place by add_"):
        out.sum().backward()
    logits = ml.randn(2, 3, requires_grad=True)
    targets = ml.tensor([0, 1])
    loss = F.cross_entropy(logits, targets)
    targets += 1
    with pytest.raises(RuntimeError, match=r"CrossEntropy kept .*ctx\.targets"):
        loss.backward()


# --------------------------------------------------------------------------------------------
# masked_fill with a value that requires grad


def test_masked_fill_sends_a_gradient_to_a_tensor_value():
    x = leaf([1.0, 2.0, 3.0])
    v = ml.tensor(0.5, requires_grad=True)
    mask = ml.tensor([True, False, True])
    y = x.masked_fill(mask, v)
    assert y.dtype == x.dtype
    (y * ml.tensor([1.0, 10.0, 100.0])).sum().backward()
    np.testing.assert_allclose(v.grad, 101.0)
    np.testing.assert_allclose(x.grad, [0.0, 10.0, 0.0])
    v64 = ml.tensor(0.5, requires_grad=True, dtype=ml.float64)  # another dtype: y keeps x's
    y = x.masked_fill(mask, v64)
    assert y.dtype == x.dtype
    y.sum().backward()
    assert v64.grad.dtype == np.float64 and v64.grad == 2.0


def test_a_0d_gradient_accumulated_twice_stays_an_array_that_zeroes_in_place():
    # two 0-d arrays add up to a NumPy scalar; .grad must stay an ndarray (issue: a valid
    # in-place zeroing `w.grad[...] = 0` or `w.grad.fill(0)` failed on the second backward)
    w = ml.tensor(1.5, requires_grad=True)
    (w * 3.0).backward()
    (w * w).backward()
    assert type(w.grad) is np.ndarray and w.grad.shape == () and w.grad.dtype == w.dtype
    assert w.grad == 3.0 + 3.0
    w.grad[...] = 0
    assert w.grad == 0.0
    w.grad.fill(2.0)
    (w * 1.0).backward()
    assert type(w.grad) is np.ndarray and w.grad == 3.0
