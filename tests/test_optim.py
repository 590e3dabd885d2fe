"""minilucid.optim without PyTorch: updates against the equations, worked by hand on scalars.

Each reference below follows its optimiser's equations line by line in plain Python floats, on
f(p) = a * p**2 / 2 + c * p for a few scalar parameters (gradient a * p + c), so it shares no code
with the package. A few first steps are also written out as numbers.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import minilucid as ml
from minilucid import optim
from minilucid.nn.utils import clip_grad_norm_

A = [1.0, 3.0, 0.2]  # curvature of each parameter's quadratic
C = [0.5, -1.0, 2.0]
P0 = [1.0, -2.0, 0.5]
STEPS = 20


def grad_of(p: float, i: int) -> float:
    return A[i] * p + C[i]


def run_package(make, steps=STEPS, scheduler=None):
    params = [ml.tensor(np.array(v), requires_grad=True) for v in P0]
    opt = make(params)
    sched = scheduler(opt) if scheduler else None
    history = []
    for _ in range(steps):
        opt.zero_grad()
        loss = sum(a * p * p / 2 + c * p for a, c, p in zip(A, C, params, strict=True))
        loss.backward()
        opt.step()
        if sched:
            sched.step()
        history.append([p.item() for p in params])
    return history, opt, params


def sgd_by_hand(lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False):
    history, ps, bufs = [], list(P0), [None] * 3
    for _ in range(STEPS):
        for i, p in enumerate(ps):
            g = grad_of(p, i) + weight_decay * p
            if momentum:
                bufs[i] = g if bufs[i] is None else momentum * bufs[i] + (1 - dampening) * g
                g = g + momentum * bufs[i] if nesterov else bufs[i]
            ps[i] = p - lr * g
        history.append(list(ps))
    return history


def adam_by_hand(
    lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, decoupled=False, amsgrad=False
):
    b1, b2 = betas
    history, ps = [], list(P0)
    m, v, vmax = [0.0] * 3, [0.0] * 3, [0.0] * 3
    for t in range(1, STEPS + 1):
        for i, p in enumerate(ps):
            g = grad_of(p, i)
            if decoupled:
                p = p * (1 - lr * weight_decay)
            else:
                g = g + weight_decay * p
            m[i] = b1 * m[i] + (1 - b1) * g
            v[i] = b2 * v[i] + (1 - b2) * g * g
            vmax[i] = max(vmax[i], v[i])
            m_hat = m[i] / (1 - b1**t)
            v_hat = (vmax[i] if amsgrad else v[i]) / (1 - b2**t)
            ps[i] = p - lr * m_hat / (math.sqrt(v_hat) + eps)
        history.append(list(ps))
    return history


SGD_CASES = [
    dict(lr=0.1),
    dict(lr=0.1, weight_decay=0.2),
    dict(lr=0.05, momentum=0.9),
    dict(lr=0.05, momentum=0.8, dampening=0.5),
    dict(lr=0.05, momentum=0.9, nesterov=True),
    dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.1),
]
ADAM_CASES = [
    dict(lr=0.1),
    dict(lr=0.1, betas=(0.5, 0.9), eps=1e-3),
    dict(lr=0.1, weight_decay=0.3),
    dict(lr=0.1, amsgrad=True),
]


@pytest.mark.parametrize("kw", SGD_CASES, ids=str)
def test_sgd_follows_its_equations(kw):
    ours, _, _ = run_package(lambda p: optim.SGD(p, **kw))
    np.testing.assert_allclose(ours, sgd_by_hand(**kw), rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("kw", ADAM_CASES, ids=str)
def test_adam_follows_its_equations(kw):
    ours, _, _ = run_package(lambda p: optim.Adam(p, **kw))
    np.testing.assert_allclose(ours, adam_by_hand(**kw), rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize(
    "kw", [dict(lr=0.1), dict(lr=0.1, weight_decay=0.5, amsgrad=True)], ids=str
)
def test_adamw_follows_its_equations(kw):
    ours, _, _ = run_package(lambda p: optim.AdamW(p, **kw))
    expected = adam_by_hand(decoupled=True, **{"weight_decay": 0.01, **kw})
    np.testing.assert_allclose(ours, expected, rtol=1e-12, atol=1e-13)


def test_first_steps_written_out():
    # SGD with momentum 0.9 on p = 1 (a = 1, c = 0.5): g = 1.5, v = 1.5, p = 1 - 0.1 * 1.5;
    # then g = 1.35, v = 0.9 * 1.5 + 1.35 = 2.7, p = 0.85 - 0.27
    history, _, _ = run_package(lambda p: optim.SGD(p, lr=0.1, momentum=0.9), steps=2)
    assert history[0][0] == pytest.approx(0.85, abs=1e-15)
    assert history[1][0] == pytest.approx(0.58, abs=1e-15)
    # Adam's first step is lr * sign(g), whatever the size of g (bias correction at work)
    history, _, _ = run_package(lambda p: optim.Adam(p, lr=0.01), steps=1)
    assert history[0] == pytest.approx([1.0 - 0.01, -2.0 + 0.01, 0.5 - 0.01], abs=1e-8)
    # AdamW also shrinks p by lr * weight_decay * p before that step
    history, _, _ = run_package(lambda p: optim.AdamW(p, lr=0.01, weight_decay=0.5), steps=1)
    assert history[0][0] == pytest.approx(1.0 * (1 - 0.005) - 0.01, abs=1e-8)


def test_updates_keep_the_same_leaf_tensor_and_its_dtype():
    w = ml.tensor([1.0, 2.0], requires_grad=True)  # float32
    array = w.data
    opt = optim.Adam([w], lr=0.1)
    (w * w).sum().backward()
    opt.step()
    assert w.data is array and w.dtype == np.float32 and w.is_leaf and w.requires_grad
    assert opt.state[w]["exp_avg"].dtype == np.float32


def test_parameters_without_gradient_are_left_alone():
    used, unused = ml.tensor([1.0], requires_grad=True), ml.tensor([5.0], requires_grad=True)
    for opt in (
        optim.SGD([used, unused], lr=0.1, momentum=0.9, weight_decay=0.1),
        optim.AdamW([used, unused]),
    ):
        (used * 2).sum().backward()
        opt.step()
        opt.zero_grad()
        assert unused.item() == 5.0 and unused not in opt.state


def test_zero_grad_to_none_or_to_zeros():
    w = ml.tensor([1.0, 2.0], requires_grad=True)
    opt = optim.SGD([w], lr=0.1)
    (w * 3).sum().backward()
    opt.zero_grad(set_to_none=False)
    np.testing.assert_array_equal(w.grad, [0.0, 0.0])
    opt.zero_grad()
    assert w.grad is None


def test_param_groups_take_defaults_and_their_own_values():
    a, b = ml.tensor([1.0], requires_grad=True), ml.tensor([1.0], requires_grad=True)
    opt = optim.SGD([{"params": [a]}, {"params": b, "lr": 0.5}], lr=0.1, momentum=0.9)
    assert [g["lr"] for g in opt.param_groups] == [0.1, 0.5]
    assert all(g["momentum"] == 0.9 for g in opt.param_groups)
    assert opt.param_groups[1]["params"] == [b] or opt.param_groups[1]["params"][0] is b
    opt.add_param_group({"params": [ml.tensor([0.0], requires_grad=True)], "momentum": 0.0})
    assert len(opt.param_groups) == 3 and opt.param_groups[2]["lr"] == 0.1


def test_works_with_nn_parameters_too():
    Parameter = getattr(ml.nn, "Parameter", None)
    if Parameter is None:
        pytest.skip("minilucid.nn.Parameter is not there yet")
    w = Parameter(ml.tensor([1.0, -1.0]))
    opt = optim.SGD([w], lr=0.5)
    (w * w).sum().backward()
    opt.step()
    np.testing.assert_allclose(w.data, [0.0, 0.0])


# --------------------------------------------------------------------------------------------
# Saving and resuming


@pytest.mark.parametrize(
    "make",
    [
        lambda p: optim.SGD(p, lr=0.05, momentum=0.9, nesterov=True),
        lambda p: optim.Adam(p, lr=0.1, amsgrad=True),
        lambda p: optim.AdamW(p, lr=0.1, weight_decay=0.1),
    ],
    ids=["SGD", "Adam", "AdamW"],
)
def test_state_dict_round_trip_resumes_identically(make):
    def sched(opt):
        return optim.lr_scheduler.CosineAnnealingLR(opt, T_max=7)

    straight, _, _ = run_package(make, steps=STEPS, scheduler=sched)

    first, opt, params = run_package(make, steps=8, scheduler=None)
    # the same first 8 steps, with a schedule this time, then save both
    params = [ml.tensor(np.array(v), requires_grad=True) for v in P0]
    opt = make(params)
    s = sched(opt)
    for _ in range(8):
        opt.zero_grad()
        sum(a * p * p / 2 + c * p for a, c, p in zip(A, C, params, strict=True)).backward()
        opt.step()
        s.step()
    saved_opt, saved_sched = opt.state_dict(), s.state_dict()
    saved_params = [p.data.copy() for p in params]
    for _ in range(3):  # training on must not change what was saved
        opt.zero_grad()
        sum(a * p * p / 2 + c * p for a, c, p in zip(A, C, params, strict=True)).backward()
        opt.step()

    fresh = [ml.tensor(v.copy(), requires_grad=True) for v in saved_params]
    opt2 = make(fresh)
    s2 = sched(opt2)
    opt2.load_state_dict(saved_opt)
    s2.load_state_dict(saved_sched)
    resumed = []
    for _ in range(STEPS - 8):
        opt2.zero_grad()
        sum(a * p * p / 2 + c * p for a, c, p in zip(A, C, fresh, strict=True)).backward()
        opt2.step()
        s2.step()
        resumed.append([p.item() for p in fresh])
    assert resumed == straight[8:]


def test_load_state_dict_refuses_what_does_not_fit():
    a, b = ml.tensor([1.0, 2.0], requires_grad=True), ml.tensor([3.0], requires_grad=True)
    opt = optim.Adam([a, b])
    (a.sum() + b.sum()).backward()
    opt.step()
    saved = opt.state_dict()
    with pytest.raises(ValueError, match="group 0 holds 2 parameters in the saved state, but 1"):
        optim.Adam([a]).load_state_dict(saved)
    with pytest.raises(ValueError, match=r"1 parameter group\(s\), this one has 2"):
        optim.Adam([{"params": [a]}, {"params": [b]}]).load_state_dict(saved)
    swapped = optim.Adam([b, a])
    with pytest.raises(ValueError, match=r"exp_avg of parameter 0 has shape \(2,\).*shape \(1,\)"):
        swapped.load_state_dict(saved)


# --------------------------------------------------------------------------------------------
# Bad input


def test_refuses_a_tensor_that_does_not_require_grad():
    with pytest.raises(ValueError, match=r"parameter 1 \(shape \(2,\)\) does not require grad"):
        optim.SGD([ml.tensor([1.0], requires_grad=True), ml.tensor([1.0, 2.0])], lr=0.1)


def test_refuses_a_non_leaf():
    w = ml.tensor([1.0], requires_grad=True)
    with pytest.raises(ValueError, match="not a leaf: it was computed by Mul"):
        optim.Adam([w * 2])


def test_refuses_an_empty_parameter_list():
    with pytest.raises(ValueError, match="empty parameter list"):
        optim.SGD([], lr=0.1)
    with pytest.raises(ValueError, match="empty parameter list"):
        optim.Adam(iter([]))


def test_refuses_a_single_tensor_and_duplicates():
    w = ml.tensor([1.0], requires_grad=True)
    with pytest.raises(TypeError, match=r"iterable of tensors .* Pass a list"):
        optim.SGD(w, lr=0.1)
    with pytest.raises(ValueError, match="appears twice"):
        optim.SGD([w, w], lr=0.1)
    with pytest.raises(ValueError, match="appears twice"):
        optim.SGD([{"params": [w]}, {"params": [w]}], lr=0.1)
    with pytest.raises(TypeError, match="ordered collection"):
        optim.SGD([{"params": {w}}], lr=0.1)
    with pytest.raises(TypeError, match="ordered collection"):
        optim.Adam({w})
    with pytest.raises(KeyError, match="needs a 'params' entry"):
        optim.SGD([{"lr": 0.1}], lr=0.1)
    with pytest.raises(TypeError, match="parameter 0 is a ndarray, not a Tensor"):
        optim.SGD([np.zeros(3)], lr=0.1)


@pytest.mark.parametrize(
    "make, words",
    [
        (lambda p: optim.SGD(p, lr=-0.1), "SGD: lr must be a number >= 0, got -0.1"),
        (lambda p: optim.SGD(p, lr="0.1"), "lr must be a number"),
        (lambda p: optim.SGD(p, lr=0.1, momentum=-1), "momentum must be"),
        (lambda p: optim.SGD(p, lr=0.1, nesterov=True), "nesterov=True needs momentum > 0"),
        (
            lambda p: optim.SGD(p, lr=0.1, momentum=0.9, dampening=0.1, nesterov=True),
            "dampening = 0",
        ),
        (lambda p: optim.Adam(p, lr=float("nan")), "lr must be"),
        (lambda p: optim.Adam(p, betas=(1.0, 0.999)), r"betas\[0\] must be a number in \[0, 1.0\)"),
        (lambda p: optim.Adam(p, betas=(0.9, -0.1)), r"betas\[1\] must be"),
        (lambda p: optim.AdamW(p, betas=0.9), "betas must be a pair"),
        (lambda p: optim.Adam(p, eps=-1e-8), "eps must be"),
        (lambda p: optim.AdamW(p, weight_decay=-0.01), "AdamW: weight_decay must be"),
    ],
)
def test_refuses_bad_hyperparameters(make, words):
    with pytest.raises(ValueError, match=words):
        make([ml.tensor([1.0], requires_grad=True)])


# --------------------------------------------------------------------------------------------
# Schedules and clipping


def _lrs(make_sched, steps=30, lr=0.2):
    opt = optim.SGD([ml.tensor([1.0], requires_grad=True)], lr=lr)
    sched = make_sched(opt)
    first = sched.get_last_lr()
    out = []
    for _ in range(steps):
        opt.step()
        sched.step()
        out.append(sched.get_last_lr()[0])
        assert opt.param_groups[0]["lr"] == out[-1]
    return first, out


def test_step_lr_is_base_times_gamma_to_the_epochs_over_step_size():
    first, lrs = _lrs(lambda o: optim.lr_scheduler.StepLR(o, step_size=4, gamma=0.5))
    assert first == [0.2]
    expected = [0.2 * 0.5 ** (e // 4) for e in range(1, 31)]
    np.testing.assert_allclose(lrs, expected, rtol=1e-14)


def test_cosine_follows_the_closed_form_and_comes_back_up():
    T, low = 10, 0.01
    first, lrs = _lrs(lambda o: optim.lr_scheduler.CosineAnnealingLR(o, T_max=T, eta_min=low))
    assert first == [0.2]
    expected = [low + (0.2 - low) * (1 + math.cos(math.pi * e / T)) / 2 for e in range(1, 31)]
    np.testing.assert_allclose(lrs, expected, rtol=1e-12, atol=1e-15)
    assert lrs[T - 1] == pytest.approx(low) and lrs[2 * T - 1] == pytest.approx(0.2)


def test_schedules_refuse_bad_arguments():
    opt = optim.SGD([ml.tensor([1.0], requires_grad=True)], lr=0.1)
    with pytest.raises(ValueError, match="step_size must be a whole number >= 1, got 0"):
        optim.lr_scheduler.StepLR(opt, step_size=0)
    with pytest.raises(ValueError, match="T_max must be"):
        optim.lr_scheduler.CosineAnnealingLR(opt, T_max=0)
    with pytest.raises(TypeError, match="list is not an Optimizer"):
        optim.lr_scheduler.StepLR([], step_size=1)
    with pytest.raises(KeyError, match="initial_lr"):
        optim.lr_scheduler.StepLR(optim.SGD(opt.param_groups[0]["params"]), 3, last_epoch=5)


def test_clip_grad_norm_scales_all_gradients_together():
    a, b = ml.tensor([0.0, 0.0], requires_grad=True), ml.tensor([0.0], requires_grad=True)
    a.grad, b.grad = np.array([3.0, 0.0]), np.array([4.0])  # joint norm 5
    shared = a.grad
    total = clip_grad_norm_([a, b], max_norm=1.0)
    assert total.item() == pytest.approx(5.0)
    np.testing.assert_allclose(np.concatenate([a.grad, b.grad]), [0.6, 0.0, 0.8], rtol=1e-5)
    np.testing.assert_array_equal(shared, [3.0, 0.0])  # a new array; the old one is untouched
    total = clip_grad_norm_(a, max_norm=10.0)  # short enough: (almost exactly) unchanged
    np.testing.assert_allclose(a.grad, [0.6, 0.0], rtol=1e-6)
    assert clip_grad_norm_([ml.tensor([1.0], requires_grad=True)], 1.0).item() == 0.0
    b.grad = np.array([np.inf])
    with pytest.raises(RuntimeError, match="total norm of the gradients is inf"):
        clip_grad_norm_([a, b], 1.0, error_if_nonfinite=True)


def test_state_dicts_survive_save_and_load(tmp_path):
    def train(xy, opt, sched, steps):
        for _ in range(steps):
            opt.zero_grad()
            ((xy * xy * ml.tensor([1.0, 10.0])).sum() + xy[0] * 3).backward()
            opt.step()
            sched.step()

    def fresh(values):
        xy = ml.tensor(np.array(values), requires_grad=True)
        opt = optim.AdamW([xy], lr=0.1, amsgrad=True)
        return xy, opt, optim.lr_scheduler.StepLR(opt, step_size=3, gamma=0.5)

    xy, opt, sched = fresh([1.0, -1.0])
    train(xy, opt, sched, 10)
    straight = xy.data.copy()
    xy, opt, sched = fresh([1.0, -1.0])
    train(xy, opt, sched, 4)
    path = tmp_path / "checkpoint.npz"
    ml.save({"xy": xy, "opt": opt.state_dict(), "sched": sched.state_dict()}, path)
    saved = ml.load(path)
    xy, opt, sched = fresh(saved["xy"].data)
    opt.load_state_dict(saved["opt"])
    sched.load_state_dict(saved["sched"])
    train(xy, opt, sched, 6)
    np.testing.assert_array_equal(xy.data, straight)
