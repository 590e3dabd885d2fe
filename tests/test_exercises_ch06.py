"""Chapter 06 (Graph hygiene): every check accepts the solution and rejects wrong answers.

Also focused tests of the chapter's package code that the engine's trap tests do not cover:
grad-mode switches, retain_grad, hooks, comparisons, `minilucid.grad` and requires_grad_.
"""

from pathlib import Path

import numpy as np
import pytest
from forgery import forged_data_test
from nbharness import Wrong, mutation_tests, run_check, with_answer

import minilucid as ml
from minilucid.grad_mode import GRAD_MODE

NB = Path(__file__).resolve().parents[1] / "solutions" / "06_graph_hygiene.ipynb"

EXERCISES = {
    "sgd": ("ex06_1_sgd_step_answer", "ex06_1_sgd_step_check"),
    "stop": ("ex06_2_stop_gradient_answer", "ex06_2_stop_gradient_check"),
    "clip": ("ex06_3_clip_hook_answer", "ex06_3_clip_hook_check"),
    "hooks": ("ex06_4_hook_grads_answer", "ex06_4_hook_grads_check"),
}


def _sgd(body: str) -> str:
    return with_answer(NB, EXERCISES["sgd"][0], body)


def _hook(body: str) -> str:
    body = "\n".join("    " + line for line in body.strip("\n").splitlines())
    return with_answer(NB, EXERCISES["clip"][0], f"def hook(grad):\n{body}\n\nreturn hook")


def _stop(forward: str, backward: str) -> str:
    return (
        "class StopGradient(Function):\n"
        "    @staticmethod\n"
        f"    def forward(ctx, a):\n        {forward}\n\n"
        "    @staticmethod\n"
        f"    def backward(ctx, grad):\n        {backward}\n"
    )


def _hooks(body: str) -> str:
    return with_answer(NB, EXERCISES["hooks"][0], body)


MUTANTS = {
    "sgd": {
        "forgets to zero the gradients": Wrong(
            _sgd(
                """
with ml.no_grad():
    for p in params:
        if p.grad is not None:
            p.data -= lr * p.grad
"""
            ),
            "still holds its gradient",
            "next backward would add",
        ),
        "an update recorded in the graph": Wrong(
            _sgd(
                """
for i, p in enumerate(params):
    if p.grad is not None:
        params[i] = p - lr * ml.tensor(p.grad)
"""
            ),
            "replaced parameter 0",
            "made by Sub",
            "no longer a leaf",
        ),
        "new tensors made under no_grad": Wrong(
            _sgd(
                """
with ml.no_grad():
    for i, p in enumerate(params):
        if p.grad is not None:
            params[i] = p - lr * p.grad
"""
            ),
            "replaced parameter 0",
            "does not require grad",
        ),
        "wrong sign": Wrong(
            _sgd(
                """
with ml.no_grad():
    for p in params:
        if p.grad is not None:
            p.data += lr * p.grad
            p.grad = None
"""
            ),
            "uphill",
        ),
        "rebinds the loop variable": Wrong(
            _sgd(
                """
with ml.no_grad():
    for p in params:
        if p.grad is not None:
            p = p - lr * p.grad
            p.grad = None
"""
            ),
            "did not change",
            "a name bound to a new tensor",
        ),
        "an in-place update while recording": Wrong(
            _sgd(
                """
for p in params:
    if p.grad is not None:
        p -= lr * p.grad
        p.grad = None
"""
            ),
            "raised RuntimeError",
            "leaf tensor that requires grad",
            "no_grad",
        ),
        "an in-place method while recording": Wrong(
            _sgd(
                """
for p in params:
    if p.grad is not None:
        p.sub_(lr * p.grad)
        p.grad = None
"""
            ),
            "sub_: a leaf tensor that requires grad",
        ),
        "recording left off": Wrong(
            _sgd(
                """
ml.set_grad_enabled(False)
for p in params:
    if p.grad is not None:
        p.data -= lr * p.grad
        p.grad = None
"""
            ),
            "recording is still switched off",
        ),
        "updates parameters without a gradient": Wrong(
            _sgd(
                """
with ml.no_grad():
    for p in params:
        p.data -= lr * (p.grad if p.grad is not None else 1.0)
        p.grad = None
"""
            ),
            "has no gradient",
            "changed it from",
        ),
        "zeroes the gradient in place before the step": Wrong(
            _sgd(
                """
with ml.no_grad():
    for p in params:
        if p.grad is not None:
            p.grad[...] = 0
            p -= lr * p.grad
"""
            ),
            "did not change",
            "zeroed in place before the step used it",
        ),
        "forgets the learning rate": Wrong(
            _sgd(
                """
with ml.no_grad():
    for p in params:
        if p.grad is not None:
            p.data -= p.grad
            p.grad = None
"""
            ),
            "expected [ 0.9, -2.2, 0.2]",
        ),
    },
    "stop": {
        "forward returns the input's own array": Wrong(
            _stop("return a", "return np.zeros_like(grad)"), "input's own array"
        ),
        "backward passes the gradient through": Wrong(
            _stop("return a.copy()", "return grad"), "passes the gradient through"
        ),
        "backward sends the gradient back negated": Wrong(
            _stop("return a.copy()", "return -grad"), "should be x itself"
        ),
        "backward returns a number, not an array": Wrong(
            _stop("return a.copy()", "return 0.0"), "one array of the input's shape"
        ),
        "forward changes the numbers": Wrong(
            _stop("return np.zeros_like(a)", "return np.zeros_like(grad)"), "same numbers"
        ),
        "a function that detaches instead of an op": Wrong(
            "class StopGradient:\n    apply = staticmethod(lambda x: x.detach())\n",
            "input's own array",
        ),
    },
    "clip": {
        "a hook that returns None": Wrong(
            _hook(
                """
norm = np.sqrt((grad * grad).sum())
if norm > max_norm:
    grad = grad * (max_norm / norm)
"""
            ),
            "returned None",
        ),
        "clips in place": Wrong(
            _hook(
                """
norm = np.sqrt((grad * grad).sum())
if norm > max_norm:
    grad *= max_norm / norm
return grad
"""
            ),
            "in place",
            "Add sends the same array",
        ),
        "clips in place and returns None": Wrong(
            _hook(
                """
norm = np.sqrt((grad * grad).sum())
if norm > max_norm:
    grad *= max_norm / norm
"""
            ),
            "in place",
        ),
        "clips each entry": Wrong(
            _hook("return np.clip(grad, -max_norm, max_norm)"), "clips each entry"
        ),
        "scales every gradient": Wrong(
            _hook(
                """
norm = np.sqrt((grad * grad).sum())
return grad * (max_norm / norm)
"""
            ),
            "short gradient",
            "already short enough",
        ),
        "the wrong norm": Wrong(
            _hook(
                """
norm = np.abs(grad).sum()
if norm > max_norm:
    return grad * (max_norm / norm)
return grad
"""
            ),
            "norm 5",
            "expected [0.6, 0.8]",
        ),
        "loses the sign": Wrong(
            _hook(
                """
norm = np.sqrt((grad * grad).sum())
if norm > max_norm:
    return np.abs(grad) * (max_norm / norm)
return grad
"""
            ),
            "negative entry",
        ),
    },
    "hooks": {
        "a hook that sees the loop's last name": Wrong(
            _hooks(
                """
caught = {}
for name, t in tensors.items():
    t.register_hook(lambda grad: caught.__setitem__(name, np.array(grad)))
loss.backward()
return caught
"""
            ),
            "loop variable's last value",
        ),
        "hooks registered after the backward": Wrong(
            _hooks(
                """
caught = {}
loss.backward()
for name, t in tensors.items():
    t.register_hook(lambda grad, name=name: caught.__setitem__(name, grad))
return caught
"""
            ),
            "No hook caught a gradient",
        ),
        "reads .grad, which only leaves keep": Wrong(
            _hooks(
                """
loss.backward()
return {name: t.grad for name, t in tensors.items()}
"""
            ),
            "is None",
        ),
        "uses retain_grad": Wrong(
            _hooks(
                """
for t in tensors.values():
    t.retain_grad()
loss.backward()
return {name: t.grad for name, t in tensors.items()}
"""
            ),
            "retain_grad",
        ),
        "a hook that replaces the gradient": Wrong(
            _hooks(
                """
caught = {}
for name, t in tensors.items():
    def keep(grad, name=name):
        caught[name] = np.array(grad)
        return np.zeros_like(grad)
    t.register_hook(keep)
loss.backward()
return caught
"""
            ),
            "changed the gradients",
        ),
        "one backward per tensor": Wrong(
            _hooks(
                """
caught = {}
for name, t in tensors.items():
    t.register_hook(lambda grad, name=name: caught.__setitem__(name, np.array(grad)))
    loss.backward(retain_graph=True)
return caught
"""
            ),
            "backward ran more than once",
        ),
    },
}

test_the_solution_passes, test_a_wrong_answer_is_rejected, test_the_stub_raises = mutation_tests(
    NB, EXERCISES, MUTANTS
)

# every check of the chapter is a probe and a judge (minilucid_course.checks.exercise)
test_forged_data_is_wrong = forged_data_test(NB, EXERCISES)


@pytest.fixture(autouse=True)
def recording_stays_on():
    """A wrong answer may switch recording off; never let that leak into other tests."""
    yield
    GRAD_MODE.enabled = True


def test_recording_is_back_on_after_a_check_that_found_it_off():
    with pytest.raises(AssertionError):
        run_check(
            NB,
            EXERCISES["sgd"][1],
            replace={EXERCISES["sgd"][0]: MUTANTS["sgd"]["recording left off"].edits},
        )
    assert ml.is_grad_enabled(), "the check must switch recording back on"


@pytest.mark.parametrize(
    "update",
    [
        "p.data -= lr * p.grad",  # through .data: fine between backward and the next forward
        "p.sub_(p.grad, alpha=lr)",
        "p.add_(-lr * p.grad)",
        "p.copy_(p - lr * p.grad)",
    ],
)
def test_sgd_step_accepts_other_in_place_spellings(update, capsys):
    body = f"""
with ml.no_grad():
    for p in params:
        if p.grad is not None:
            {update}
            p.grad = None
"""
    run_check(NB, EXERCISES["sgd"][1], replace={EXERCISES["sgd"][0]: _sgd(body)})
    assert "✓ sgd_step" in capsys.readouterr().out


@pytest.mark.parametrize("zero", ["p.grad[...] = 0", "p.grad.fill(0)", "p.grad *= 0"])
def test_sgd_step_accepts_gradients_zeroed_in_place(zero, capsys):
    # the training loop's parameters are 0-d: their .grad must stay an array to be zeroed in place
    body = f"""
with ml.no_grad():
    for p in params:
        if p.grad is not None:
            p -= lr * p.grad
            {zero}
"""
    run_check(NB, EXERCISES["sgd"][1], replace={EXERCISES["sgd"][0]: _sgd(body)})
    assert "✓ sgd_step" in capsys.readouterr().out


@pytest.mark.parametrize("backward", ["return None", "return grad * 0"])
def test_stop_gradient_accepts_none_or_zeros(backward, capsys):
    answer = _stop("return np.array(a, copy=True)", backward)
    run_check(NB, EXERCISES["stop"][1], replace={EXERCISES["stop"][0]: answer})
    assert "✓ StopGradient" in capsys.readouterr().out


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
