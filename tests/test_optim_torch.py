"""PyTorch as the oracle of minilucid.optim: 50 steps in float64 agree to 1e-10.

Both engines start from the same parameters of a tiny two-layer model and compute their own
gradients on the same data, so every step of the comparison depends on every earlier step.
Skipped when torch is not installed.
"""

from __future__ import annotations

import numpy as np
import pytest

import minilucid as ml
from minilucid import optim

torch = pytest.importorskip("torch")

STEPS = 50
TOL = 1e-10

rng = np.random.default_rng(8)
X = rng.normal(size=(8, 3))
Y = rng.normal(size=(8, 2))
START = [rng.normal(size=(3, 4)), rng.normal(size=4) * 0.1, rng.normal(size=(4, 2))]


def _loss(W1, b1, W2, x, y):
    """Works unchanged on minilucid and on torch tensors."""
    h = (x @ W1 + b1).tanh()
    return (((h @ W2) - y) ** 2).mean()


def run(lib, make_optimizer, make_scheduler=None, steps=STEPS):
    """Train from START; return the parameters after each step and the lr after each step."""
    if lib == "ml":
        params = [ml.tensor(a.copy(), requires_grad=True) for a in START]
        x, y = ml.tensor(X), ml.tensor(Y)
        opt = make_optimizer(optim, params)
        sched = make_scheduler(optim.lr_scheduler, opt) if make_scheduler else None
    else:
        params = [torch.tensor(a.copy(), requires_grad=True) for a in START]
        x, y = torch.tensor(X), torch.tensor(Y)
        opt = make_optimizer(torch.optim, params)
        sched = make_scheduler(torch.optim.lr_scheduler, opt) if make_scheduler else None
    trajectory, lrs = [], []
    for _ in range(steps):
        opt.zero_grad()
        _loss(*params, x, y).backward()
        opt.step()
        if sched is not None:
            sched.step()
            lrs.append(sched.get_last_lr())
        trajectory.append(
            [np.array(p.detach().numpy() if lib == "torch" else p.data) for p in params]
        )
    return trajectory, lrs, opt


def max_diff(a, b) -> float:
    return max(
        float(np.abs(p - q).max())
        for ta, tb in zip(a, b, strict=True)
        for p, q in zip(ta, tb, strict=True)
    )


CONFIGS = {
    "SGD": lambda o, p: o.SGD(p, lr=0.1),
    "SGD weight decay": lambda o, p: o.SGD(p, lr=0.1, weight_decay=0.05),
    "SGD momentum": lambda o, p: o.SGD(p, lr=0.05, momentum=0.9),
    "SGD momentum dampening": lambda o, p: o.SGD(p, lr=0.05, momentum=0.8, dampening=0.3),
    "SGD nesterov": lambda o, p: o.SGD(p, lr=0.05, momentum=0.9, nesterov=True),
    "SGD nesterov weight decay": lambda o, p: o.SGD(
        p, lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01
    ),
    "SGD all": lambda o, p: o.SGD(p, lr=0.03, momentum=0.7, dampening=0.2, weight_decay=0.1),
    "Adam": lambda o, p: o.Adam(p, lr=0.01),
    "Adam betas eps": lambda o, p: o.Adam(p, lr=0.02, betas=(0.8, 0.95), eps=1e-6),
    "Adam weight decay": lambda o, p: o.Adam(p, lr=0.01, weight_decay=0.1),
    "Adam amsgrad": lambda o, p: o.Adam(p, lr=0.05, amsgrad=True),
    "Adam amsgrad weight decay": lambda o, p: o.Adam(p, lr=0.05, weight_decay=0.05, amsgrad=True),
    "AdamW": lambda o, p: o.AdamW(p, lr=0.01),
    "AdamW weight decay": lambda o, p: o.AdamW(p, lr=0.02, weight_decay=0.3, betas=(0.85, 0.99)),
    "AdamW amsgrad": lambda o, p: o.AdamW(p, lr=0.05, amsgrad=True),
    "two groups": lambda o, p: o.SGD(
        [{"params": p[:2]}, {"params": p[2:], "lr": 0.01, "momentum": 0.5}], lr=0.1, momentum=0.9
    ),
    "Adam two groups": lambda o, p: o.Adam(
        [{"params": p[:1], "betas": (0.5, 0.9)}, {"params": p[1:], "weight_decay": 0.1}], lr=0.03
    ),
}


@pytest.mark.parametrize("name", list(CONFIGS))
def test_optimiser_matches_torch_over_50_steps(name):
    ours, _, _ = run("ml", CONFIGS[name])
    theirs, _, _ = run("torch", CONFIGS[name])
    assert max_diff(ours, theirs) < TOL
    moved = max(float(np.abs(p - q).max()) for p, q in zip(ours[-1], START, strict=True))
    assert moved > 0.01, "the parameters hardly moved: this comparison would prove nothing"


SCHEDULES = {
    "StepLR": (
        lambda o, p: o.SGD(p, lr=0.1, momentum=0.9),
        lambda s, opt: s.StepLR(opt, step_size=7, gamma=0.5),
    ),
    "CosineAnnealingLR two periods": (
        lambda o, p: o.SGD(p, lr=0.1, momentum=0.5),
        lambda s, opt: s.CosineAnnealingLR(opt, T_max=12, eta_min=0.005),
    ),
    "CosineAnnealingLR one period": (
        lambda o, p: o.Adam(p, lr=0.05),
        lambda s, opt: s.CosineAnnealingLR(opt, T_max=STEPS),
    ),
    "StepLR two groups": (
        lambda o, p: o.Adam([{"params": p[:2]}, {"params": p[2:], "lr": 0.01}], lr=0.03),
        lambda s, opt: s.StepLR(opt, step_size=10),
    ),
}


@pytest.mark.parametrize("name", list(SCHEDULES))
def test_scheduler_matches_torch_over_50_steps(name):
    ours, our_lrs, _ = run("ml", *SCHEDULES[name])
    theirs, their_lrs, _ = run("torch", *SCHEDULES[name])
    assert np.abs(np.array(our_lrs) - np.array(their_lrs)).max() < 1e-12
    assert max_diff(ours, theirs) < TOL
    assert len({round(lr[0], 12) for lr in our_lrs}) > 3, "the schedule never changed the lr"


@pytest.mark.parametrize("name", ["SGD momentum", "Adam amsgrad", "AdamW"])
def test_state_dict_holds_torchs_buffers(name):
    _, _, ours = run("ml", CONFIGS[name], steps=5)
    _, _, theirs = run("torch", CONFIGS[name], steps=5)
    a, b = ours.state_dict(), theirs.state_dict()
    assert [g["params"] for g in a["param_groups"]] == [g["params"] for g in b["param_groups"]]
    for g_ours, g_theirs in zip(a["param_groups"], b["param_groups"], strict=True):
        for key, value in g_ours.items():
            want = g_theirs[key]
            assert (list(value) if key == "betas" else value) == (
                list(want) if key == "betas" else want
            ), key
    assert sorted(a["state"]) == sorted(b["state"])
    for index, buffers in a["state"].items():
        assert set(buffers) == set(b["state"][index])
        for key, value in buffers.items():
            np.testing.assert_allclose(value, b["state"][index][key].numpy(), atol=TOL, rtol=0)


def test_clip_grad_norm_matches_torch():
    grads = [rng.normal(size=(3, 4)) * 5, rng.normal(size=4), rng.normal(size=(2, 2)) * 0.01]
    for max_norm, norm_type in [(1.0, 2.0), (100.0, 2.0), (0.5, 1.0), (0.3, float("inf"))]:
        ours = [ml.tensor(np.zeros_like(g), requires_grad=True) for g in grads]
        theirs = [torch.zeros(g.shape, dtype=torch.float64, requires_grad=True) for g in grads]
        for p, q, g in zip(ours, theirs, grads, strict=True):
            p.grad, q.grad = g.copy(), torch.tensor(g)
        n_ours = ml.nn.utils.clip_grad_norm_(ours, max_norm, norm_type)
        n_theirs = torch.nn.utils.clip_grad_norm_(theirs, max_norm, norm_type)
        assert abs(n_ours.item() - n_theirs.item()) < 1e-12
        for p, q in zip(ours, theirs, strict=True):
            np.testing.assert_allclose(p.grad, q.grad.numpy(), atol=1e-14, rtol=0)
