"""Checks for the exercises of chapter 08 (optimisers), as probes and judges.

Each probe drives the learner's optimiser with seeded gradients and returns the parameters after
every step (and what it keeps in its state) as plain data; each judge rebuilds the gradients,
computes every step from the equations itself, and, when a step differs, tries the usual
mistakes one by one to say which one it looks like, in one line.
"""

from __future__ import annotations

import math
import types

import numpy as np

import minilucid as ml
from minilucid.optim import Optimizer
from minilucid_course.checks.common import attempt
from minilucid_course.checks.exercise import Exercise, Wrong, register
from minilucid_course.checks.outcomes import (
    array_of,
    called,
    kind,
    package_kinds,
    raised_first,
    record,
    value_of,
)

SHAPES = ((3,), (2, 2))  # two parameters that get gradients; a third, (1,), never does


def _show(x) -> str:
    text = np.array2string(np.asarray(x), precision=4, separator=", ", max_line_width=10**6)
    return " ".join(text.split())


def _gradients(steps: int, seed: int, run: int, small: bool = False) -> list:
    """Per step, one gradient per parameter: signs and sizes vary (tiny ones too if `small`)."""
    rng = np.random.default_rng([8, run, seed])
    out = []
    for _ in range(steps):
        grads = [rng.normal(size=s) for s in SHAPES]
        if small:  # one entry of each around 1e-3: there eps matters
            grads = [
                g * np.where(np.arange(g.size).reshape(g.shape) == 0, 1e-3, 1.0) for g in grads
            ]
        out.append(grads)
    return out


def _start() -> list:
    return [np.linspace(-1.0, 1.0, int(np.prod(s))).reshape(s) for s in SHAPES] + [np.ones(1)]


def _raised(outcome) -> dict:
    return {"raised": list(outcome[1:])}


def _drive(make, gradients) -> tuple:
    """In the probe: make the optimiser on fresh float64 leaves, feed it the gradients.

    Returns (plain data: every parameter after every step, whether its array stayed the same;
    the optimiser or None; the parameters)."""
    params = [ml.tensor(v.copy(), requires_grad=True) for v in _start()]
    arrays = [p.data for p in params]
    outcome = attempt(make, params)
    if outcome[0] == "raised":
        return {"made": _raised(outcome)}, None, params
    opt, steps = outcome[1], []
    for grads in gradients:
        for p, g in zip(params, grads, strict=False):
            p.grad = g.copy()
        params[2].grad = None
        done = attempt(opt.step)
        if done[0] == "raised":
            steps.append(_raised(done))
            break
        steps.append({
            "params": [np.array(p.data, dtype=np.float64) for p in params],
            "same": [p.data is a for p, a in zip(params, arrays, strict=True)],
        })  # fmt: skip
    return {"made": {"ok": True}, "steps": steps}, opt, params


def _state_keys(opt, params) -> dict:
    outcome = attempt(lambda: [sorted(str(k) for k in opt.state[p]) for p in params[:2]])
    return _raised(outcome) if outcome[0] == "raised" else {"keys": outcome[1]}


def _compare(what: str, run: dict, expected: list, mistakes: dict, start: list) -> None:
    """In the judge: raise Wrong naming the first step and parameter that differ."""
    raised_first(run["made"], f"creating {what}")
    steps = run["steps"]
    if len(steps) > len(expected):
        raise Wrong(f"{what}: more steps were recorded than taken")
    for k, (step, want_step) in enumerate(zip(steps, expected, strict=False), start=1):
        raised_first(step, f"{what}.step() (step {k})")
        got_all = [np.asarray(a, dtype=np.float64) for a in step["params"]]
        if len(got_all) != 3 or len(step["same"]) != 3:
            raise Wrong(f"{what}: after step {k}, the parameters could not be read")
        for i, same in enumerate(step["same"]):
            if same is not True:
                raise Wrong(
                    f"after step {k}, parameter {i}'s .data is a new array, where a model holds "
                    "on to the one the tensor had"
                )
        if k == 1 and all(
            g.shape == s.shape and np.array_equal(g, s) for g, s in zip(got_all, start, strict=True)
        ):
            raise Wrong(
                "after step 1 no parameter changed: `p = p - ...` or `p -= ...` on a tensor "
                "only rebinds the name p"
            )
        for i, (got, want) in enumerate(zip(got_all, want_step, strict=True)):
            if got.shape == want.shape and np.allclose(got, want, rtol=1e-9, atol=1e-12):
                continue
            if i == 2:
                raise Wrong(
                    f"parameter 2 has no gradient (its .grad is None), yet {what}.step() "
                    f"changed it from {_show(start[2])} to {_show(got)}"
                )
            if not np.all(np.isfinite(got)):
                words = f"it holds {_show(got)}"
                if "t from 0" in mistakes:
                    words += mistakes["t from 0"][1]
                raise Wrong(f"after step {k}, parameter {i}: {words}")
            for trajectory, explanation in mistakes.values():
                if trajectory is not None and np.allclose(
                    got, trajectory[k - 1][i], rtol=1e-9, atol=1e-12
                ):
                    raise Wrong(f"after step {k}, parameter {i}: {explanation}")
            raise Wrong(f"after step {k}, parameter {i}: expected {_show(want)}, got {_show(got)}")
    if len(steps) != len(expected):
        raise Wrong(f"{what}: fewer steps were recorded than taken")


# --------------------------------------------------------------------------------------------
# Exercise 1: SGD with momentum

_SGD_RUNS = (  # (lr, momentum, the lrs and momenta per parameter, run, two groups)
    (0.1, 0.9, [0.1, 0.1], [0.9, 0.9], 1, False),
    (0.1, None, [0.1, 0.1], [0.0, 0.0], 2, False),
    (0.01, 1.0, [0.01, 0.01], [1.0, 1.0], 4, False),  # momentum 1 is still momentum
    (0.2, 0.9, [0.05, 0.2], [0.9, 0.5], 3, True),
)


def _sgd_cases(seed: int) -> dict:
    return {"seed": seed, "runs": [list(r) for r in _SGD_RUNS]}


def _sgd_reference(gradients, lrs, mus, ema=False, swap=False, sign=1.0):
    """Trajectory of SGD with momentum per parameter; the flags make the usual mistakes."""
    ps, bufs, out = _start(), [None, None, None], []
    for grads in gradients:
        for i, g in enumerate(grads):
            mu = mus[i]
            if mu:
                if bufs[i] is None:
                    bufs[i] = (1 - mu) * g if ema else g.copy()
                elif ema:
                    bufs[i] = mu * bufs[i] + (1 - mu) * g
                elif swap:
                    bufs[i] = mu * g + bufs[i]
                else:
                    bufs[i] = mu * bufs[i] + g
                g = bufs[i]
            ps[i] = ps[i] - sign * lrs[i] * g
        out.append([p.copy() for p in ps])
    return out


def _sgd_maker(MySGD, lr, momentum, two_groups):  # noqa: N803
    def make(ps):
        if two_groups:
            groups = [{"params": ps[:1], "lr": 0.05}, {"params": ps[1:], "momentum": 0.5}]
            return MySGD(groups, lr=lr, momentum=momentum)
        return MySGD(ps, lr=lr) if momentum is None else MySGD(ps, lr=lr, momentum=momentum)

    return make


def _probe_sgd(cases, MySGD):  # noqa: N803
    data = {"subclass": isinstance(MySGD, type) and issubclass(MySGD, ml.optim.SGD), "runs": []}
    if data["subclass"]:
        return data
    for lr, momentum, _, _, run, two in cases["runs"]:
        gradients = _gradients(8, cases["seed"], run)
        facts, opt, params = _drive(_sgd_maker(MySGD, lr, momentum, two), gradients)
        if opt is not None:
            facts["state"] = _state_keys(opt, params)
        data["runs"].append(facts)
    return data


def _judge_sgd(cases, data) -> str:
    if data["subclass"] is not False:
        raise Wrong("MySGD inherits from minilucid's SGD: its step is the package's, not yours")
    for (_, _, lrs, mus, run, two), facts in zip(cases["runs"], data["runs"], strict=True):
        gradients = _gradients(8, cases["seed"], run)
        mistakes = {
            "no momentum": (
                _sgd_reference(gradients, lrs, [0.0, 0.0]),
                "this is plain SGD: the momentum buffer is not used (or not kept from one step "
                "to the next)",
            ),
            "ema": (
                _sgd_reference(gradients, lrs, mus, ema=True),
                "the gradient is weighted by (1 - momentum), where PyTorch's SGD adds it whole",
            ),
            "swap": (
                _sgd_reference(gradients, lrs, mus, swap=True),
                "momentum multiplies the new gradient instead of the old buffer",
            ),
            "uphill": (_sgd_reference(gradients, lrs, mus, sign=-1.0), "it moved uphill"),
        }
        try:
            _compare("MySGD", facts, _sgd_reference(gradients, lrs, mus), mistakes, _start())
        except Wrong as wrong:
            if not two:
                raise
            raise Wrong(
                f"with two parameter groups (lr 0.05 and 0.2, momentum 0.9 and 0.5): {wrong}. "
                "Where does each group keep its own lr and momentum?"
            ) from None
        raised_first(facts["state"], "reading MySGD's self.state")
        for i, keys in enumerate(facts["state"]["keys"]):
            if mus[i] and "momentum_buffer" not in keys:
                raise Wrong(
                    f"the trajectory is right, but self.state[p] of parameter {i} has no "
                    "'momentum_buffer' (state_dict saves self.state)"
                )
    return "✓ MySGD follows v <- momentum * v + g, p <- p - lr * v, in every parameter group"


EXERCISE_SGD = register(
    Exercise(
        check="check_sgd",
        chapter="08",
        title="SGD with momentum",
        probe=_probe_sgd,
        judge=_judge_sgd,
        cases=_sgd_cases,
        forbidden=("SGD", "sgd"),
    )
)
check_sgd = EXERCISE_SGD.lab_check


# --------------------------------------------------------------------------------------------
# Exercise 2: Adam from the paper's equations

ADAM = types.MappingProxyType({"lr": 0.1, "betas": (0.8, 0.9), "eps": 1e-3})
_PACKAGE_OPTIMISERS = ("Adam", "AdamW", "SGD", "RMSprop", "Adagrad")


def _adam_cases(seed: int) -> dict:
    return {"seed": seed}


def _adam_reference(
    gradients,
    lr,
    betas,
    eps,
    *,
    bias=(True, True),
    eps_inside=False,
    swap=False,
    flip=False,
    abs_g=False,
    no_sqrt=False,
    t_per_param=False,
    sign=1.0,
):
    b1, b2 = betas
    ps, out = _start(), []
    m = [np.zeros_like(p) for p in ps]
    v = [np.zeros_like(p) for p in ps]
    counter = 0
    for k, grads in enumerate(gradients, start=1):
        for i, g in enumerate(grads):
            counter += 1
            t = counter if t_per_param else k
            s = np.abs(g) if abs_g else g * g
            if swap:
                m[i], v[i] = b2 * m[i] + (1 - b2) * g, b1 * v[i] + (1 - b1) * s
            elif flip:
                m[i], v[i] = b1 * g + (1 - b1) * m[i], b2 * s + (1 - b2) * v[i]
            else:
                m[i], v[i] = b1 * m[i] + (1 - b1) * g, b2 * v[i] + (1 - b2) * s
            m_hat = m[i] / (1 - b1**t) if bias[0] else m[i]
            v_hat = v[i] / (1 - b2**t) if bias[1] else v[i]
            if no_sqrt:
                denom = v_hat + eps
            else:
                denom = np.sqrt(v_hat + eps) if eps_inside else np.sqrt(v_hat) + eps
            ps[i] = ps[i] - sign * lr * m_hat / denom
        out.append([p.copy() for p in ps])
    return out


def _adam_mistakes(gradients) -> dict:
    def ref(**kw):
        return _adam_reference(gradients, ADAM["lr"], ADAM["betas"], ADAM["eps"], **kw)

    swapped = "the betas are swapped: beta1 averages the gradient (m), beta2 its square (v)"
    return {
        "no bias correction": (
            ref(bias=(False, False)),
            "these are Adam's steps without bias correction (m and v start at 0, so early on "
            "they are too small)",
        ),
        "m only": (ref(bias=(True, False)), "v_hat is missing its bias correction 1 - beta2**t"),
        "v only": (ref(bias=(False, True)), "m_hat is missing its bias correction 1 - beta1**t"),
        "eps inside": (
            ref(eps_inside=True),
            "eps is inside the square root, where the paper adds it to sqrt(v_hat)",
        ),
        "swapped betas": (
            _adam_reference(gradients, ADAM["lr"], ADAM["betas"][::-1], ADAM["eps"]),
            swapped,
        ),
        "swapped averages": (ref(swap=True), swapped),
        "flipped weights": (
            ref(flip=True),
            "the new gradient gets weight beta and the old average 1 - beta: the other way "
            "round from the paper",
        ),
        "abs": (ref(abs_g=True), "v averages |g|, where the paper averages the squared gradient"),
        "no sqrt": (ref(no_sqrt=True), "it divides by v_hat (plus eps), not by its square root"),
        "t per param": (
            ref(t_per_param=True),
            "the step count t advanced once per parameter, not once per step",
        ),
        "uphill": (ref(sign=-1.0), "it moved uphill"),
        "t from 0": (None, " - a division by zero? With t = 0, 1 - beta**t is 0"),
    }


def _probe_adam(cases, MyAdam):  # noqa: N803
    is_class = isinstance(MyAdam, type)
    data = {
        "optimizer": is_class and issubclass(MyAdam, Optimizer),
        "adam": is_class and issubclass(MyAdam, ml.optim.Adam),
    }
    if not data["optimizer"] or data["adam"]:
        return data
    gradients = _gradients(12, cases["seed"], 4, small=True)
    facts, opt, params = _drive(lambda ps: MyAdam(ps, **ADAM), gradients)
    data["run"] = facts
    if opt is None:
        return data
    data["inside"] = package_kinds(opt, _PACKAGE_OPTIMISERS, ml.optim)
    data["state"] = _state_keys(opt, params)
    # saved after 5 steps and resumed in a new optimiser
    _, opt5, first = _drive(lambda ps: MyAdam(ps, **ADAM), gradients[:5])
    if opt5 is None:
        data["resumed"] = {"made": {"raised": ["Error", "could not be made again"]}}
        return data
    saved = attempt(opt5.state_dict)
    if saved[0] == "raised":
        data["resumed"] = {"made": _raised(saved)}
        return data
    params = [ml.tensor(np.array(p.data), requires_grad=True) for p in first]
    made = attempt(lambda: MyAdam(params, **ADAM))
    if made[0] == "raised":
        data["resumed"] = {"made": _raised(made)}
        return data
    loaded = attempt(made[1].load_state_dict, saved[1])
    if loaded[0] == "raised":
        data["resumed"] = {"made": _raised(loaded)}
        return data
    for grads in gradients[5:]:
        for p, g in zip(params, grads, strict=False):
            p.grad = g.copy()
        step = attempt(made[1].step)
        if step[0] == "raised":
            data["resumed"] = {"made": _raised(step)}
            return data
    data["resumed"] = {"made": {"ok": True}, "params": [np.array(p.data) for p in params]}
    return data


def _judge_adam(cases, data) -> str:
    if data["optimizer"] is not True:
        raise Wrong("MyAdam is not a class derived from Optimizer")
    if data["adam"] is not False:
        raise Wrong("MyAdam inherits from minilucid's Adam: its step is the package's")
    gradients = _gradients(12, cases["seed"], 4, small=True)
    expected = _adam_reference(gradients, **ADAM)
    _compare("MyAdam", data["run"], expected, _adam_mistakes(gradients), _start())
    inside = data["inside"]
    if not isinstance(inside, list) or inside:
        raise Wrong(
            f"MyAdam keeps minilucid's own {inside[0] if inside else 'optimiser'} and lets it do "
            "the work: the exercise is the update, not a call to the package"
        )
    raised_first(data["state"], "reading MyAdam's self.state")
    for i, keys in enumerate(data["state"]["keys"]):
        missing = sorted({"step", "exp_avg", "exp_avg_sq"} - set(keys))
        if missing:
            raise Wrong(
                f"the steps are right, but self.state[p] of parameter {i} lacks {missing}, "
                "PyTorch's names for t, m and v"
            )
    resumed = data["resumed"]
    raised_first(resumed["made"], "saving MyAdam after 5 steps and resuming in a new one")
    for i, (got, want) in enumerate(zip(resumed["params"], expected[-1], strict=True)):
        got = np.asarray(got, dtype=np.float64)
        if got.shape != want.shape or not np.allclose(got, want, rtol=1e-9, atol=1e-12):
            raise Wrong(
                f"saved with state_dict() after 5 steps and loaded into a new MyAdam, parameter "
                f"{i} ends elsewhere than in one run of 12 steps: something that changes from "
                "step to step is not in what state_dict saves"
            )
    return "✓ MyAdam takes Adam's steps, bias correction and all, and resumes from a state_dict"


def _rosenbrock(MyAdam, steps: int = 500) -> None:  # noqa: N803
    """Lab only: the learner's Adam on Rosenbrock's valley, printed, never graded."""
    xy = ml.tensor(np.array([-1.5, 2.0]), requires_grad=True)
    opt = MyAdam([xy], lr=0.05)
    losses = []
    for _ in range(steps):
        x, y = xy[0], xy[1]
        loss = (1 - x) ** 2 + 100 * (y - x * x) ** 2
        xy.grad = None
        loss.backward()
        opt.step()
        losses.append(loss.item())
    print(
        f"  on Rosenbrock's valley your Adam takes the loss from {losses[0]:.2f} to "
        f"{losses[-1]:.2e} in {len(losses)} steps"
    )


EXERCISE_ADAM = register(
    Exercise(
        check="check_adam",
        chapter="08",
        title="Adam from the paper's equations",
        probe=_probe_adam,
        judge=_judge_adam,
        cases=_adam_cases,
        forbidden=_PACKAGE_OPTIMISERS + ("optim",),
        after=_rosenbrock,
    )
)
check_adam = EXERCISE_ADAM.lab_check


# --------------------------------------------------------------------------------------------
# Exercise 3: clipping the total gradient norm


def _clip_cases(seed: int) -> dict:
    rng = np.random.default_rng([8, 5, seed])
    shapes = [[int(n) for n in rng.integers(1, 4, rng.integers(1, 3))] for _ in range(3)]
    grads = [rng.standard_normal(s).tolist() for s in shapes]
    total = math.sqrt(sum(float(np.sum(np.square(g))) for g in grads))
    return {"drawn": grads, "drawn_max": round(total * float(rng.uniform(0.2, 0.8)), 6)}


_FIXED = (np.array([3.0, 0.0]), np.array([[0.0], [4.0]]), np.array([0.0]))  # joint norm 5
_SHORT = (np.array([0.3, -0.4]), np.array([[0.0], [0.0]]), np.array([0.0]))  # norm 0.5
for _array in (*_FIXED, *_SHORT):
    _array.setflags(write=False)


def _clip_case(clip, grads, max_norm) -> dict:
    params = [ml.tensor(np.zeros(np.shape(g)), requires_grad=True) for g in grads]
    for p, g in zip(params, grads, strict=True):
        p.grad = None if g is None else np.array(g, dtype=float)
    norm = called(clip, params, max_norm)
    return {"norm": norm, "grads": [record(p.grad) for p in params]}


def _probe_clip(cases, clip_grad_norm):
    return {
        "fixed": _clip_case(clip_grad_norm, _FIXED, 1.0),
        "short": _clip_case(clip_grad_norm, _SHORT, 1.0),
        "none": _clip_case(clip_grad_norm, [np.array([6.0, 8.0]), None], 5.0),
        "drawn": _clip_case(clip_grad_norm, [np.array(g) for g in cases["drawn"]],
                            cases["drawn_max"]),
    }  # fmt: skip


def _grads(facts, what: str) -> list:
    out = []
    for rec in facts["grads"]:
        if rec == {"type": "None"}:
            out.append(None)
            continue
        array = array_of(rec, what)
        if array is None:
            raise Wrong(f"{what}: a gradient became a {kind(rec)}")
        out.append(array)
    return out


def _norm(facts, what: str) -> float:
    rec = facts["norm"]
    raised_first(rec, what)
    value = value_of(rec, what)
    if value is None:
        array = array_of(rec, what)
        if array is None or array.size != 1:
            raise Wrong(
                f"clip_grad_norm returned {kind(rec)}, where the contract asks for the total norm "
                "before clipping (a number)"
            )
        value = float(array.reshape(()))
    return float(value)


def _same(got, want) -> bool:
    return got is not None and got.shape == want.shape and np.allclose(got, want, 1e-5, 1e-9)


def _judge_clip(cases, data) -> str:
    total = _norm(data["fixed"], "clip_grad_norm(params, 1.0)")
    if not math.isclose(total, 5.0, rel_tol=1e-6):
        words = ""
        if total in (3.0, 4.0):
            words = "- the norm of each gradient separately?"
        elif math.isclose(total, 1.0, rel_tol=1e-4):
            words = "- the norm after clipping? The contract returns the one measured before"
        raise Wrong(
            f"gradients [3, 0], [[0], [4]], [0] have total norm 5 (sqrt(9 + 16)); "
            f"clip_grad_norm returned {total:g} {words}".strip()
        )
    got = _grads(data["fixed"], "clip_grad_norm(params, 1.0)")
    want = [g * 0.2 for g in _FIXED]
    if not all(_same(a, b) for a, b in zip(got, want, strict=True)):
        if _same(got[0], np.array([1.0, 0.0])) and _same(got[1], np.array([[0.0], [1.0]])):
            words = (
                "each gradient was clipped to norm 1 on its own, so their directions relative "
                "to each other changed"
            )
        else:
            words = f"expected {[_show(w) for w in want]}, got {[_show(g) for g in got]}"
        raise Wrong(f"with max_norm 1.0 and total norm 5: {words}")
    _norm(data["short"], "clip_grad_norm on a short gradient")
    got = _grads(data["short"], "clip_grad_norm on a short gradient")
    if not _same(got[0], _SHORT[0]):
        raise Wrong(
            "a total norm of 0.5 is already below max_norm 1.0, yet [0.3, -0.4] became "
            f"{_show(got[0])}"
        )
    _norm(data["none"], "clip_grad_norm with a grad of None")
    got = _grads(data["none"], "clip_grad_norm with a grad of None")
    if len(got) != 2 or got[1] is not None or not _same(got[0], np.array([3.0, 4.0])):
        raise Wrong(
            "a parameter whose .grad is None is skipped (and left None) in the contract; with "
            f"it, [6, 8] clipped to norm 5 should be [3, 4], got {_show(got[0])}"
        )
    drawn = [np.array(g) for g in cases["drawn"]]
    total = math.sqrt(sum(float(np.sum(g * g)) for g in drawn))
    what = (
        f"clip_grad_norm on three gradients of total norm {total:.4g}, max_norm "
        f"{cases['drawn_max']}"
    )
    got_total = _norm(data["drawn"], what)
    got = _grads(data["drawn"], what)
    factor = cases["drawn_max"] / total
    if not math.isclose(got_total, total, rel_tol=1e-6) or not all(
        _same(a, b * factor) for a, b in zip(got, drawn, strict=True)
    ):
        raise Wrong(f"{what}: the norm or the clipped gradients are wrong")
    return "✓ clip_grad_norm scales all gradients by one factor, only when their total is too long"


EXERCISE_CLIP = register(
    Exercise(
        check="check_clip_grad_norm",
        chapter="08",
        title="Clipping the total gradient norm",
        probe=_probe_clip,
        judge=_judge_clip,
        cases=_clip_cases,
        forbidden=("clip_grad_norm_", "clip_grad_norm"),
    )
)
check_clip_grad_norm = EXERCISE_CLIP.lab_check


# --------------------------------------------------------------------------------------------
# Exercise 4: warm-up, then cosine

EPOCHS = 40


def _warmup_cases(seed: int) -> dict:
    if seed == 0:
        return {"warmup": 5, "total": 30, "eta_min": 0.001, "bases": [0.1, 0.01]}
    rng = np.random.default_rng([8, 6, seed])
    return {
        "warmup": int(rng.integers(3, 8)),
        "total": int(rng.integers(22, 36)),
        "eta_min": float(rng.choice([0.001, 0.0005, 0.002])),
        "bases": [
            round(float(rng.uniform(0.05, 0.2)), 4),
            round(float(rng.uniform(0.005, 0.03)), 5),
        ],
    }


def _warmup_reference(
    cases, start_at_zero=False, ignore_warmup=False, one_base=False, no_floor=False,
    compound=False,
) -> list:  # fmt: skip
    """lr of each group after epochs 0..EPOCHS; the flags make the usual mistakes."""
    warmup, total, low, bases = cases["warmup"], cases["total"], cases["eta_min"], cases["bases"]
    current = list(bases)
    out = []
    for e in range(EPOCHS + 1):
        row = []
        for g, base in enumerate(bases):
            base = bases[0] if one_base else current[g] if compound else base
            if e < warmup:
                lr = base * (e if start_at_zero else e + 1) / warmup
            elif e >= total and not no_floor:
                lr = low
            else:
                done = e / total if ignore_warmup else (e - warmup) / (total - warmup)
                lr = low + (base - low) * (1 + math.cos(math.pi * done)) / 2
            row.append(lr)
        current = row
        out.append(row)
    return out


def _warmup_mistakes(cases) -> dict:
    return {
        "from zero": (
            _warmup_reference(cases, start_at_zero=True),
            "the warm-up starts at lr 0, so the first epoch learns nothing",
        ),
        "cosine from 0": (
            _warmup_reference(cases, ignore_warmup=True),
            "the cosine counts from epoch 0, not from the end of the warm-up",
        ),
        "one base": (
            _warmup_reference(cases, one_base=True),
            "the second group follows the first group's starting lr, not its own in self.base_lrs",
        ),
        "no floor": (
            _warmup_reference(cases, no_floor=True),
            "after `total` epochs the cosine climbs back up, where the rule stays at eta_min",
        ),
        "compound": (
            _warmup_reference(cases, compound=True),
            "the formula is applied to the current lr, so each epoch compounds the last one's "
            "change, where the rule starts from the rates in self.base_lrs",
        ),
    }


def _probe_warmup(cases, WarmupCosine):  # noqa: N803
    params = [ml.tensor([1.0], requires_grad=True), ml.tensor([2.0], requires_grad=True)]
    groups = [{"params": params[:1]}, {"params": params[1:], "lr": cases["bases"][1]}]
    opt = ml.optim.SGD(groups, lr=cases["bases"][0])
    made = attempt(WarmupCosine, opt, warmup=cases["warmup"], total=cases["total"],
                   eta_min=cases["eta_min"])  # fmt: skip
    if made[0] == "raised":
        return {"made": _raised(made)}
    sched, rows = made[1], [called(made[1].get_last_lr)]
    for _ in range(EPOCHS):
        opt.step()
        stepped = attempt(sched.step)
        if stepped[0] == "raised":
            rows.append(_raised(stepped))
            break
        rows.append(called(sched.get_last_lr))
    return {"made": {"ok": True}, "rows": rows}


def _judge_warmup(cases, data) -> str:
    hint = "get_lr must return a list: one lr for each parameter group"
    setting = (
        f"warmup {cases['warmup']}, total {cases['total']}, eta_min {cases['eta_min']}, "
        f"starting lrs {cases['bases'][0]} and {cases['bases'][1]}"
    )
    raised_first(data["made"], f"WarmupCosine(opt, {setting})", hint)
    expected = _warmup_reference(cases)
    mistakes = _warmup_mistakes(cases)
    if len(data["rows"]) != len(expected):
        last = data["rows"][-1] if data["rows"] else {}
        raised_first(last, "scheduler.step()", hint)
        raise Wrong("WarmupCosine: the lrs of some epochs are missing")
    for e, (rec, want) in enumerate(zip(data["rows"], expected, strict=True)):
        raised_first(rec, "get_last_lr()", hint)
        if rec.get("sequence") != "list":
            raise Wrong(f"get_last_lr() returned {kind(rec)}; it should return a list")
        row = [value_of(item, "get_last_lr()") for item in rec["items"]]
        if len(row) != 2 or any(type(v) not in (int, float) for v in row):
            raise Wrong(f"at epoch {e}, {len(row)} lrs for 2 parameter groups")
        if np.allclose(row, want, rtol=1e-9, atol=1e-12):
            continue
        for trajectory, explanation in mistakes.values():
            if np.allclose(row, trajectory[e], rtol=1e-9, atol=1e-12):
                raise Wrong(f"at epoch {e}: {explanation}")
        raise Wrong(f"at epoch {e} ({setting}): expected {_show(want)}, got {_show(row)}")
    return "✓ WarmupCosine warms up linearly, then follows the cosine down to eta_min, per group"


EXERCISE_WARMUP = register(
    Exercise(
        check="check_warmup_cosine",
        chapter="08",
        title="Warm-up, then cosine",
        probe=_probe_warmup,
        judge=_judge_warmup,
        cases=_warmup_cases,
        forbidden=("CosineAnnealingLR", "LinearLR", "SequentialLR", "LambdaLR"),
    )
)
check_warmup_cosine = EXERCISE_WARMUP.lab_check
