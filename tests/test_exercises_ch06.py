"""Chapter 06 (Graph hygiene): every check accepts the solution and rejects wrong answers.

Also focused tests of the chapter's package code that the engine's trap tests do not cover:
grad-mode switches, retain_grad, hooks, comparisons, `minilucid.grad` and requires_grad_.
"""

import functools
from pathlib import Path

import numpy as np
import pytest
from nbharness import rejected, run_check, unanswered, with_answer

import minilucid as ml
from minilucid.grad_mode import GRAD_MODE

NB = Path(__file__).resolve().parents[1] / "solutions" / "06_graph_hygiene.ipynb"

_rejected = functools.partial(rejected, NB)
_solved = functools.partial(with_answer, NB)
_unanswered = functools.partial(unanswered, NB)


@pytest.fixture(autouse=True)
def recording_stays_on():
    """A wrong answer may switch recording off; never let that leak into other tests."""
    yield
    GRAD_MODE.enabled = True


# --------------------------------------------------------------------------------------------
# Exercise 1: sgd_step

EX1 = ("ex06_1_sgd_step_check", "ex06_1_sgd_step_answer")


def test_ex1_solution_passes(capsys):
    run_check(NB, EX1[0])
    assert "✓ sgd_step" in capsys.readouterr().out


def test_ex1_unanswered_raises_not_implemented():
    _unanswered(*EX1)


def test_ex1_rejects_forgotten_zeroing():
    wrong = _solved(
        EX1[1],
        """
with ml.no_grad():
    for p in params:
        if p.grad is not None:
            p.data -= lr * p.grad
""",
    )
    _rejected(*EX1, wrong, "still holds its gradient", "next backward would add")


def test_ex1_rejects_an_update_recorded_in_the_graph():
    wrong = _solved(
        EX1[1],
        """
for i, p in enumerate(params):
    if p.grad is not None:
        params[i] = p - lr * ml.tensor(p.grad)
""",
    )
    _rejected(*EX1, wrong, "replaced parameter 0", "made by Sub", "no longer a leaf")


def test_ex1_rejects_new_tensors_made_under_no_grad():
    wrong = _solved(
        EX1[1],
        """
with ml.no_grad():
    for i, p in enumerate(params):
        if p.grad is not None:
            params[i] = p - lr * p.grad
""",
    )
    _rejected(*EX1, wrong, "replaced parameter 0", "does not require grad")


def test_ex1_rejects_wrong_sign():
    wrong = _solved(
        EX1[1],
        """
with ml.no_grad():
    for p in params:
        if p.grad is not None:
            p.data += lr * p.grad
            p.grad = None
""",
    )
    _rejected(*EX1, wrong, "uphill")


def test_ex1_rejects_rebinding_the_loop_variable():
    wrong = _solved(
        EX1[1],
        """
with ml.no_grad():
    for p in params:
        if p.grad is not None:
            p = p - lr * p.grad
            p.grad = None
""",
    )
    _rejected(*EX1, wrong, "did not change", "in-place operator")


def test_ex1_rejects_an_in_place_update_while_recording():
    wrong = _solved(
        EX1[1],
        """
for p in params:
    if p.grad is not None:
        p -= lr * p.grad
        p.grad = None
""",
    )
    _rejected(*EX1, wrong, "raised RuntimeError", "leaf tensor that requires grad", "no_grad")


def test_ex1_rejects_an_in_place_method_while_recording():
    wrong = _solved(
        EX1[1],
        """
for p in params:
    if p.grad is not None:
        p.sub_(lr * p.grad)
        p.grad = None
""",
    )
    _rejected(*EX1, wrong, "sub_: a leaf tensor that requires grad")


@pytest.mark.parametrize(
    "update",
    [
        "p.data -= lr * p.grad",  # through .data: fine between backward and the next forward
        "p.sub_(p.grad, alpha=lr)",
        "p.add_(-lr * p.grad)",
        "p.copy_(p - lr * p.grad)",
    ],
)
def test_ex1_accepts_other_in_place_spellings(update, capsys):
    body = f"""
with ml.no_grad():
    for p in params:
        if p.grad is not None:
            {update}
            p.grad = None
"""
    run_check(NB, EX1[0], replace={EX1[1]: _solved(EX1[1], body)})
    assert "✓ sgd_step" in capsys.readouterr().out


def test_ex1_rejects_recording_left_off():
    wrong = _solved(
        EX1[1],
        """
ml.set_grad_enabled(False)
for p in params:
    if p.grad is not None:
        p.data -= lr * p.grad
        p.grad = None
""",
    )
    _rejected(*EX1, wrong, "recording is still switched off")
    assert ml.is_grad_enabled(), "the check must switch recording back on"


def test_ex1_rejects_updating_parameters_without_gradient():
    wrong = _solved(
        EX1[1],
        """
with ml.no_grad():
    for p in params:
        p.data -= lr * (p.grad if p.grad is not None else 1.0)
        p.grad = None
""",
    )
    _rejected(*EX1, wrong, "has no gradient", "skip such parameters")


def test_ex1_rejects_a_step_that_forgets_the_learning_rate():
    wrong = _solved(
        EX1[1],
        """
with ml.no_grad():
    for p in params:
        if p.grad is not None:
            p.data -= p.grad
            p.grad = None
""",
    )
    _rejected(*EX1, wrong, "expected [ 0.9, -2.2, 0.2]")


# --------------------------------------------------------------------------------------------
# Exercise 3: clip_hook

EX2 = ("ex06_3_clip_hook_check", "ex06_3_clip_hook_answer")
HOOK = """
def hook(grad):
{body}

return hook
"""


def _hook(body: str) -> str:
    body = "\n".join("    " + line for line in body.strip("\n").splitlines())
    return _solved(EX2[1], HOOK.format(body=body))


def test_ex2_solution_passes(capsys):
    run_check(NB, EX2[0])
    assert "✓ clip_hook" in capsys.readouterr().out


def test_ex2_unanswered_raises_not_implemented():
    _unanswered(*EX2)


def test_ex2_rejects_a_hook_that_returns_none():
    wrong = _hook(
        """
norm = np.sqrt((grad * grad).sum())
if norm > max_norm:
    grad = grad * (max_norm / norm)
"""
    )
    _rejected(*EX2, wrong, "returned None")


def test_ex2_rejects_clipping_in_place():
    wrong = _hook(
        """
norm = np.sqrt((grad * grad).sum())
if norm > max_norm:
    grad *= max_norm / norm
return grad
"""
    )
    _rejected(*EX2, wrong, "in place", "Add sends the same array")


def test_ex2_rejects_clipping_in_place_and_returning_none():
    wrong = _hook(
        """
norm = np.sqrt((grad * grad).sum())
if norm > max_norm:
    grad *= max_norm / norm
"""
    )
    _rejected(*EX2, wrong, "in place")


def test_ex2_rejects_clipping_each_entry():
    _rejected(*EX2, _hook("return np.clip(grad, -max_norm, max_norm)"), "clips each entry")


def test_ex2_rejects_scaling_every_gradient():
    wrong = _hook(
        """
norm = np.sqrt((grad * grad).sum())
return grad * (max_norm / norm)
"""
    )
    _rejected(*EX2, wrong, "short gradient", "already short enough")


def test_ex2_rejects_the_wrong_norm():
    wrong = _hook(
        """
norm = np.abs(grad).sum()
if norm > max_norm:
    return grad * (max_norm / norm)
return grad
"""
    )
    _rejected(*EX2, wrong, "norm 5", "expected [0.6, 0.8]")


def test_ex2_rejects_losing_the_sign():
    wrong = _hook(
        """
norm = np.sqrt((grad * grad).sum())
if norm > max_norm:
    return np.abs(grad) * (max_norm / norm)
return grad
"""
    )
    _rejected(*EX2, wrong, "negative entry")


# --------------------------------------------------------------------------------------------
# Exercise 2: stop_gradient

EX3 = ("ex06_2_stop_gradient_check", "ex06_2_stop_gradient_answer")


def test_ex3_solution_passes(capsys):
    run_check(NB, EX3[0])
    assert "✓ stop_gradient" in capsys.readouterr().out


def test_ex3_accepts_a_copy_that_does_not_require_grad():
    run_check(NB, EX3[0], replace={EX3[1]: _solved(EX3[1], "return Tensor(x.data.copy())")})


def test_ex3_unanswered_raises_not_implemented():
    _unanswered(*EX3)


def test_ex3_rejects_returning_x_itself():
    _rejected(*EX3, _solved(EX3[1], "return x"), "returned x itself")


def test_ex3_rejects_a_copy_that_still_requires_grad():
    wrong = _solved(EX3[1], "return ml.tensor(x.data.copy(), requires_grad=True)")
    _rejected(*EX3, wrong, "still requires grad", "is a leaf")


def test_ex3_rejects_an_op_that_keeps_the_graph():
    _rejected(*EX3, _solved(EX3[1], "return x * 1.0"), "still requires grad", "output of Mul")


def test_ex3_rejects_freezing_x_itself():
    wrong = _solved(EX3[1], "return x.requires_grad_(False)")
    _rejected(*EX3, wrong, "switched off x.requires_grad")


def test_ex3_rejects_freezing_a_copy_of_the_leaf_only():
    # works on a leaf, but a non-leaf cannot be switched off
    wrong = _solved(EX3[1], "return ml.tensor(x.data, requires_grad=True) if x.is_leaf else x")
    _rejected(*EX3, wrong, "still requires grad")


def test_ex3_rejects_returning_the_array():
    _rejected(*EX3, _solved(EX3[1], "return x.data"), "returned ndarray", "return a Tensor")


# --------------------------------------------------------------------------------------------
# Exercise 4: the training loop

EX4 = ("ex06_4_train_check", "ex06_4_train_answer")
LOOP = """
w = ml.tensor(0.0, requires_grad=True)
b = ml.tensor(0.0, requires_grad=True)
losses = []
{zero_before}
for _ in range(steps):
    loss = F.mse_loss(w * x_data + b, y_data)
    loss.backward()
{zero_between}
    with ml.no_grad():
        w.data -= lr * w.grad
        b.data -= lr * b.grad
{zero_after}
    losses.append(loss.item())
return w, b, losses
"""


def _loop(zero_before="", zero_between="", zero_after=""):
    return _solved(
        EX4[1],
        LOOP.format(zero_before=zero_before, zero_between=zero_between, zero_after=zero_after),
    )


def test_ex4_solution_passes(capsys):
    run_check(NB, EX4[0])
    assert "✓ train learns the line" in capsys.readouterr().out


def test_ex4_solution_with_sgd_step_passes(capsys):
    body = """
w = ml.tensor(0.0, requires_grad=True)
b = ml.tensor(0.0, requires_grad=True)
losses = []
for _ in range(steps):
    loss = F.mse_loss(w * x_data + b, y_data)
    loss.backward()
    sgd_step([w, b], lr)
    losses.append(loss.item())
return w, b, losses
"""
    run_check(NB, EX4[0], replace={EX4[1]: _solved(EX4[1], body)})
    assert "✓ train learns the line" in capsys.readouterr().out


def test_ex4_unanswered_raises_not_implemented():
    _unanswered(*EX4)


def test_ex4_rejects_the_original_bug():
    _rejected(*EX4, _loop(), "swings up and down", "old gradients")


def test_ex4_rejects_zeroing_before_the_update():
    between = "    w.grad = np.zeros_like(w.grad)\n    b.grad = np.zeros_like(b.grad)"
    _rejected(*EX4, _loop(zero_between=between), "still 0", "cleared before the update")


def test_ex4_rejects_zeroing_only_one_parameter():
    _rejected(*EX4, _loop(zero_after="    w.grad = None"), "the fit should be")


def test_ex4_rejects_zeroing_once_before_the_loop():
    _rejected(*EX4, _loop(zero_before="w.grad = None\nb.grad = None"), "swings up and down")


# --------------------------------------------------------------------------------------------
# The chapter's package code


def test_set_grad_enabled_acts_when_created_and_restores_in_a_block():
    x = ml.tensor([1.0], requires_grad=True)
    with ml.set_grad_enabled(False):
        assert not ml.is_grad_enabled()
        assert not (x * 2).requires_grad
    assert ml.is_grad_enabled()
    ml.set_grad_enabled(False)
    try:
        assert not ml.is_grad_enabled()
    finally:
        ml.set_grad_enabled(True)
    assert (x * 2).requires_grad


def test_enable_grad_inside_no_grad_and_nesting_restores():
    x = ml.tensor([1.0], requires_grad=True)
    with ml.no_grad():
        with ml.enable_grad():
            assert (x * 2).requires_grad
            with ml.no_grad():
                assert not (x * 2).requires_grad
            assert ml.is_grad_enabled()
        assert not ml.is_grad_enabled()
    assert ml.is_grad_enabled()


def test_requires_grad_switches_leaves_and_refuses_non_leaves():
    w = ml.tensor([1.0, 2.0])
    assert w.requires_grad_() is w and w.requires_grad
    w.requires_grad_(False)
    assert not w.requires_grad
    with pytest.raises(RuntimeError, match="use .detach()"):
        (ml.tensor([1.0], requires_grad=True) * 2).requires_grad_(False)


def test_detach_shares_the_array_and_keeps_the_name():
    h = ml.tensor([1.0, 2.0], requires_grad=True) * 3
    h.name = "h"
    d = h.detach()
    assert d.data is h.data and d.is_leaf and not d.requires_grad and d.name == "h"


def test_retain_grad_on_non_leaf_leaf_and_constant():
    x = ml.tensor([1.0, -2.0], requires_grad=True)
    x.retain_grad()  # nothing to do on a leaf
    h = x * x
    h.retain_grad()
    k = h * 3
    (k * k).sum().backward()
    np.testing.assert_allclose(h.grad, 18 * h.data)
    assert k.grad is None
    with pytest.raises(RuntimeError, match="does not require grad"):
        ml.tensor([1.0]).retain_grad()


def test_hooks_see_the_full_gradient_and_may_replace_it():
    x = ml.tensor([1.0, 2.0], requires_grad=True)
    seen = []
    h = x * 1.0
    h.register_hook(lambda g: seen.append(g.copy()))
    h.register_hook(lambda g: g * 10)
    (h + h).sum().backward()  # two children: the hook sees their sum once
    assert len(seen) == 1
    np.testing.assert_allclose(seen[0], [2.0, 2.0])
    np.testing.assert_allclose(x.grad, [20.0, 20.0])

    leaf = ml.tensor([3.0, -4.0], requires_grad=True)
    leaf.register_hook(lambda g: np.clip(g, -1, 1))
    (leaf * 5).sum().backward()
    np.testing.assert_allclose(leaf.grad, [1.0, 1.0])
    with pytest.raises(RuntimeError, match="does not require grad"):
        ml.tensor([1.0]).register_hook(print)


def test_comparisons_are_constants_and_truth_needs_one_entry():
    x = ml.tensor([-1.0, 0.0, 2.0], requires_grad=True)
    for mask in (x > 0, x >= 0, x < 0, x <= 0, x == 0, x != 0):
        assert mask.dtype == np.bool_ and not mask.requires_grad and mask.is_leaf
    np.testing.assert_array_equal((x > ml.tensor([0.0, 0.0, 3.0])).data, [False, False, False])
    assert {x: 1}[x] == 1
    with pytest.raises(RuntimeError, match="ambiguous"):
        bool(x > 0)
    loss = (x * x).sum()
    assert bool(loss > 4) and float(loss) == 5.0


def test_grad_returns_arrays_and_leaves_dot_grad_alone():
    x = ml.tensor([1.0, 2.0], requires_grad=True)
    w = ml.tensor([3.0, 4.0], requires_grad=True)
    y = (x * w).sum()
    gx, gw = ml.grad(y, [x, w], retain_graph=True)
    np.testing.assert_allclose(gx, w.data)
    np.testing.assert_allclose(gw, x.data)
    assert x.grad is None and w.grad is None
    (gx_single,) = ml.grad(y, x)
    np.testing.assert_allclose(gx_single, w.data)
    with pytest.raises(RuntimeError, match="not part of the output's graph"):
        ml.grad((x * 2).sum(), [x, ml.tensor([0.0], requires_grad=True)])
    with pytest.raises(RuntimeError, match="every input must require grad"):
        ml.grad((x * 2).sum(), [ml.tensor([0.0])])


def test_vector_jacobian_product():
    x = ml.tensor(np.array([1.0, 2.0, 0.5]), requires_grad=True)
    y = x.softmax()
    z = y.data
    v = np.array([1.0, 0.0, -1.0])
    y.backward(gradient=v)
    np.testing.assert_allclose(x.grad, v @ (np.diag(z) - np.outer(z, z)))
