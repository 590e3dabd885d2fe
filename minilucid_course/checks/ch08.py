"""Checks for the exercises of chapter 08 (optimisers).

Each check drives the learner's optimiser with a fixed sequence of gradients, compares every step
with the equations, and, when a step differs, tries the usual mistakes one by one to say which one
it looks like. It raises AssertionError with a plain-words message, or prints one line.
"""

from __future__ import annotations

import math

import numpy as np

import minilucid as ml
from minilucid.optim import Optimizer
from minilucid.tensor import Tensor
from minilucid_course.checks.common import call, cases_of, frozen, not_the_package_inside

# two parameters that get gradients; a third, (1,), never does
SHAPES = frozen(__name__, "SHAPES", [(3,), (2, 2)])


def _show(x) -> str:
    text = np.array2string(np.asarray(x), precision=4, separator=", ", max_line_width=10**6)
    return " ".join(text.split())


def _gradients(steps: int, seed: int, small: bool = False) -> list:
    """Per step, one gradient per parameter: signs and sizes vary (tiny ones too if `small`)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(steps):
        grads = [rng.normal(size=s) for s in cases_of(__name__, "SHAPES")]
        if small:  # one entry of each around 1e-3: there eps matters
            grads = [
                g * np.where(np.arange(g.size).reshape(g.shape) == 0, 1e-3, 1.0) for g in grads
            ]
        out.append(grads)
    return out


def _start() -> list:
    return [
        np.linspace(-1.0, 1.0, int(np.prod(s))).reshape(s) for s in cases_of(__name__, "SHAPES")
    ] + [np.ones(1)]


def _drive(make, gradients, what: str, after_step) -> tuple:
    """Make the optimiser on fresh float64 leaves, feed it the gradients, call after_step(k, ps).

    Returns the optimiser and its parameters.
    """
    params = [ml.tensor(v.copy(), requires_grad=True) for v in _start()]
    arrays = [p.data for p in params]
    opt = call(f"creating {what}", make, params)
    for k, grads in enumerate(gradients, start=1):
        for p, g in zip(params, grads, strict=False):
            p.grad = g.copy()
        params[2].grad = None
        call(f"{what}.step() (step {k})", opt.step)
        for i, p in enumerate(params):
            if p.data is not arrays[i]:
                raise AssertionError(
                    f"after step {k}, parameter {i}'s .data is a new array. Write into the array "
                    "the tensor already has: p.data -= ... (a model holds on to that one)."
                )
        after_step(k, params)
    return opt, params


def _compare(k: int, params, expected, mistakes: dict, what: str) -> None:
    """Raise naming the first parameter that differs from `expected` after step k."""
    for i, (p, want) in enumerate(zip(params, expected, strict=True)):
        got = p.data
        if np.allclose(got, want, rtol=1e-9, atol=1e-12):
            continue
        if i == 2:
            raise AssertionError(
                f"parameter 2 has no gradient (its .grad is None), yet {what}.step() changed it "
                f"from {_show(_start()[2])} to {_show(got)}; skip parameters whose grad is None"
            )
        if not np.all(np.isfinite(got)):
            words = f"it holds {_show(got)}"
            if "t from 0" in mistakes:
                words += mistakes["t from 0"][1]
            raise AssertionError(f"after step {k}, parameter {i}: {words}")
        for _, (trajectory, explanation) in mistakes.items():
            if trajectory is not None and np.allclose(
                got, trajectory[k - 1][i], rtol=1e-9, atol=1e-12
            ):
                raise AssertionError(f"after step {k}, parameter {i}: {explanation}")
        raise AssertionError(
            f"after step {k}, parameter {i}: expected {_show(want)}, got {_show(got)}"
        )


# --------------------------------------------------------------------------------------------
# Exercise 1: SGD with momentum


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


def _sgd_run(make, lrs, mus, seed) -> None:
    gradients = _gradients(8, seed)
    expected = _sgd_reference(gradients, lrs, mus)
    mistakes = {
        "no momentum": (
            _sgd_reference(gradients, lrs, [0.0, 0.0]),
            "this is plain SGD: the momentum buffer is not used (or not kept from one step to "
            "the next in self.state[p])",
        ),
        "ema": (
            _sgd_reference(gradients, lrs, mus, ema=True),
            "the gradient is weighted by (1 - momentum); PyTorch's SGD adds it whole: "
            "v <- momentum * v + g",
        ),
        "swap": (
            _sgd_reference(gradients, lrs, mus, swap=True),
            "momentum multiplies the new gradient instead of the old buffer: v <- momentum * v + g",
        ),
        "uphill": (
            _sgd_reference(gradients, lrs, mus, sign=-1.0),
            "it moved uphill: subtract lr * v from p",
        ),
    }
    mistakes = {k: v for k, v in mistakes.items() if v[0] is not None}

    def after_step(k, params):
        if k == 1 and all(np.array_equal(p.data, s) for p, s in zip(params, _start(), strict=True)):
            raise AssertionError(
                "after step 1 no parameter changed. `p = p - ...` or `p -= ...` on a tensor "
                "only rebinds the name p; write into the array: p.data -= lr * v"
            )
        _compare(k, params, expected[k - 1], mistakes, "MySGD")

    opt, params = _drive(make, gradients, "MySGD", after_step)
    for i, p in enumerate(params[:2]):
        if mus[i] and "momentum_buffer" not in opt.state[p]:
            raise AssertionError(
                f"the trajectory is right, but self.state[p] of parameter {i} has no "
                "'momentum_buffer'; keep the buffer there (state_dict saves self.state)"
            )


def check_sgd(MySGD) -> None:
    """MySGD(params, lr, momentum) against SGD's equations, in one group and in two."""
    if isinstance(MySGD, type) and issubclass(MySGD, ml.optim.SGD):
        raise AssertionError("MySGD inherits from minilucid's SGD: write step() on Optimizer")
    _sgd_run(lambda ps: MySGD(ps, lr=0.1, momentum=0.9), [0.1, 0.1], [0.9, 0.9], seed=1)
    _sgd_run(lambda ps: MySGD(ps, lr=0.1), [0.1, 0.1], [0.0, 0.0], seed=2)
    # momentum 1 (no decay at all) is still momentum: nothing special happens at 1
    _sgd_run(lambda ps: MySGD(ps, lr=0.01, momentum=1.0), [0.01, 0.01], [1.0, 1.0], seed=4)

    def two_groups(ps):
        groups = [{"params": ps[:1], "lr": 0.05}, {"params": ps[1:], "momentum": 0.5}]
        return MySGD(groups, lr=0.2, momentum=0.9)

    try:
        _sgd_run(two_groups, [0.05, 0.2], [0.9, 0.5], seed=3)
    except AssertionError as error:
        raise AssertionError(
            f"with two parameter groups (lr 0.05 and 0.2, momentum 0.9 and 0.5): {error}. "
            "Read lr and momentum from each group: for group in self.param_groups: "
            "group['lr'], ..."
        ) from None
    print("✓ MySGD follows v <- momentum * v + g, p <- p - lr * v, in every parameter group")


# --------------------------------------------------------------------------------------------
# Exercise 2: Adam from the paper's equations

ADAM = frozen(__name__, "ADAM", dict(lr=0.1, betas=(0.8, 0.9), eps=1e-3))


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
    a = cases_of(__name__, "ADAM")

    def ref(**kw):
        return _adam_reference(gradients, a["lr"], a["betas"], a["eps"], **kw)

    return {
        "no bias correction": (
            ref(bias=(False, False)),
            "these are Adam's steps without bias correction. m and v start at 0, so early on "
            "they are too small: divide by (1 - beta1**t) and (1 - beta2**t)",
        ),
        "m only": (ref(bias=(True, False)), "v_hat is missing its bias correction 1 - beta2**t"),
        "v only": (ref(bias=(False, True)), "m_hat is missing its bias correction 1 - beta1**t"),
        "eps inside": (
            ref(eps_inside=True),
            "eps is inside the square root: the paper divides by sqrt(v_hat) + eps",
        ),
        "swapped betas": (
            _adam_reference(gradients, a["lr"], a["betas"][::-1], a["eps"]),
            "the betas are swapped: beta1 averages the gradient (m), beta2 its square (v)",
        ),
        "swapped averages": (
            ref(swap=True),
            "the betas are swapped: beta1 averages the gradient (m), beta2 its square (v)",
        ),
        "flipped weights": (
            ref(flip=True),
            "the new gradient gets weight beta and the old average 1 - beta; it is the other "
            "way round: m <- beta1 * m + (1 - beta1) * g",
        ),
        "abs": (ref(abs_g=True), "v must average the squared gradient g * g, not |g|"),
        "no sqrt": (ref(no_sqrt=True), "divide by the square root of v_hat (plus eps)"),
        "t per param": (
            ref(t_per_param=True),
            "the step count t advanced once per parameter, not once per step; keep a count per "
            "parameter in self.state[p]['step']",
        ),
        "uphill": (ref(sign=-1.0), "it moved uphill: subtract the step from p"),
        "t from 0": (
            None,
            " - a division by zero? With t = 0, 1 - beta**t is 0: count the step first "
            "(t starts at 1 on the first step)",
        ),
    }


def _adam_steps(MyAdam, gradients, params_from=None, opt_state=None):
    """Run MyAdam(**ADAM) over the gradients, optionally from saved parameters and state."""
    params = [ml.tensor(v.copy(), requires_grad=True) for v in (params_from or _start())]
    opt = call("creating MyAdam", lambda: MyAdam(params, **cases_of(__name__, "ADAM")))
    if opt_state is not None:
        call("load_state_dict", opt.load_state_dict, opt_state)
    for grads in gradients:
        for p, g in zip(params, grads, strict=False):
            p.grad = g.copy()
        call("MyAdam.step()", opt.step)
    return params, opt


def check_adam(MyAdam) -> None:
    """MyAdam against Algorithm 1 of Kingma & Ba (2015), step by step, then saved and resumed."""
    if not (isinstance(MyAdam, type) and issubclass(MyAdam, Optimizer)):
        raise AssertionError("MyAdam must be a class derived from Optimizer")
    if issubclass(MyAdam, ml.optim.Adam):
        raise AssertionError("MyAdam inherits from minilucid's Adam: derive it from Optimizer")
    gradients = _gradients(12, seed=4, small=True)
    expected = _adam_reference(gradients, **cases_of(__name__, "ADAM"))
    mistakes = _adam_mistakes(gradients)
    opt, params = _drive(
        lambda ps: MyAdam(ps, **cases_of(__name__, "ADAM")),
        gradients,
        "MyAdam",
        lambda k, params: _compare(k, params, expected[k - 1], mistakes, "MyAdam"),
    )
    not_the_package_inside("MyAdam", opt, (ml.optim.Adam, ml.optim.SGD), "Adam's step")
    for i, p in enumerate(params[:2]):
        missing = {"step", "exp_avg", "exp_avg_sq"} - set(opt.state[p])
        if missing:
            raise AssertionError(
                f"the steps are right, but self.state[p] of parameter {i} lacks "
                f"{sorted(missing)}; keep t, m and v there under PyTorch's names"
            )
    # saved after 5 steps and resumed in a new optimiser: the same as 12 steps straight
    first, opt = _adam_steps(MyAdam, gradients[:5])
    saved = opt.state_dict()
    resumed, _ = _adam_steps(MyAdam, gradients[5:], [p.data for p in first], saved)
    for i, (p, want) in enumerate(zip(resumed, expected[-1], strict=True)):
        if not np.allclose(p.data, want, rtol=1e-9, atol=1e-12):
            raise AssertionError(
                f"saved with state_dict() after 5 steps and loaded into a new MyAdam, parameter "
                f"{i} ends elsewhere than in one run of 12 steps. Keep everything that changes "
                "from step to step (t, m, v) in self.state[p], which state_dict saves."
            )
    losses = _rosenbrock(MyAdam)
    print(
        f"✓ MyAdam takes Adam's steps, bias correction and all, and resumes from a state_dict; "
        f"on Rosenbrock's valley it takes the loss from {losses[0]:.2f} to {losses[-1]:.2e} in "
        f"{len(losses)} steps"
    )


def _rosenbrock(MyAdam, steps: int = 500) -> list:
    xy = ml.tensor(np.array([-1.5, 2.0]), requires_grad=True)
    opt = MyAdam([xy], lr=0.05)
    losses = []
    for _ in range(steps):
        x, y = xy[0], xy[1]
        loss = (1 - x) ** 2 + 100 * (y - x * x) ** 2
        xy.grad = None
        loss.backward()
        call("MyAdam.step() on Rosenbrock", opt.step)
        losses.append(loss.item())
    return losses


# --------------------------------------------------------------------------------------------
# Exercise 3: clipping the total gradient norm


def _clip_case(clip, grads, max_norm, what):
    params = [ml.tensor(np.zeros(np.shape(g)), requires_grad=True) for g in grads]
    for p, g in zip(params, grads, strict=True):
        p.grad = None if g is None else np.array(g, dtype=float)
    norm = call(what, clip, params, max_norm)
    return params, norm


def check_clip_grad_norm(clip_grad_norm) -> None:
    """One norm over every gradient; scale all of them together, only when it is too long."""
    grads = [np.array([3.0, 0.0]), np.array([[0.0], [4.0]]), np.array([0.0])]  # joint norm 5
    params, norm = _clip_case(clip_grad_norm, grads, 1.0, "clip_grad_norm(params, 1.0)")
    if not isinstance(norm, int | float | np.floating | np.ndarray | Tensor):
        raise AssertionError(
            f"clip_grad_norm returned {type(norm).__name__}; return the total norm before "
            "clipping (a number)"
        )
    total = float(norm.item() if isinstance(norm, Tensor | np.ndarray) else norm)
    if not math.isclose(total, 5.0, rel_tol=1e-6):
        words = ""
        if total in (3.0, 4.0):
            words = "- the norm of each gradient separately?"
        elif math.isclose(total, 1.0, rel_tol=1e-4):
            words = "- the norm after clipping? Return the one measured before"
        raise AssertionError(
            f"gradients [3, 0], [[0], [4]], [0] have total norm 5 (sqrt(9 + 16)); "
            f"clip_grad_norm returned {total:g} {words}".strip()
        )
    got = [p.grad for p in params]
    want = [g * 0.2 for g in grads]
    if not all(np.allclose(a, b, rtol=1e-5, atol=1e-9) for a, b in zip(got, want, strict=True)):
        if np.allclose(got[0], [1.0, 0.0]) and np.allclose(got[1], [[0.0], [1.0]]):
            words = (
                "each gradient was clipped to norm 1 on its own; clip them together, by one "
                "factor max_norm / total_norm, so that their directions relative to each other "
                "stay"
            )
        else:
            words = f"expected {[_show(w) for w in want]}, got {[_show(g) for g in got]}"
        raise AssertionError(f"with max_norm 1.0 and total norm 5: {words}")
    short = [np.array([0.3, -0.4]), np.array([[0.0], [0.0]]), np.array([0.0])]  # norm 0.5
    params, _ = _clip_case(clip_grad_norm, short, 1.0, "clip_grad_norm on a short gradient")
    if not np.allclose(params[0].grad, short[0], rtol=1e-5):
        raise AssertionError(
            f"a total norm of 0.5 is already below max_norm 1.0, so the gradients must stay as "
            f"they are; [0.3, -0.4] became {_show(params[0].grad)}"
        )
    params, norm = _clip_case(
        clip_grad_norm, [np.array([6.0, 8.0]), None], 5.0, "clip_grad_norm with a grad of None"
    )
    if params[1].grad is not None or not np.allclose(params[0].grad, [3.0, 4.0], rtol=1e-5):
        raise AssertionError(
            "a parameter whose .grad is None must be skipped (and left None); with it, [6, 8] "
            f"clipped to norm 5 should be [3, 4], got {_show(params[0].grad)}"
        )
    print("✓ clip_grad_norm scales all gradients by one factor, only when their total is too long")


# --------------------------------------------------------------------------------------------
# Exercise 4: warm-up, then cosine

WARMUP = frozen(__name__, "WARMUP", dict(warmup=5, total=30, eta_min=0.001))
BASES = frozen(__name__, "BASES", (0.1, 0.01))
EPOCHS = 40


def _warmup_reference(
    start_at_zero=False, ignore_warmup=False, one_base=False, no_floor=False, compound=False
) -> list:
    """lr of each group after epochs 0..EPOCHS; the flags make the usual mistakes."""
    warmup, total, low = (
        cases_of(__name__, "WARMUP")["warmup"],
        cases_of(__name__, "WARMUP")["total"],
        cases_of(__name__, "WARMUP")["eta_min"],
    )
    current = list(cases_of(__name__, "BASES"))
    out = []
    for e in range(EPOCHS + 1):
        row = []
        for g, base in enumerate(cases_of(__name__, "BASES")):
            base = cases_of(__name__, "BASES")[0] if one_base else current[g] if compound else base
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


def _warmup_mistakes() -> dict:
    return {
        "from zero": (
            _warmup_reference(start_at_zero=True),
            "the warm-up starts at lr 0, so the first epoch learns nothing; epoch e of the "
            "warm-up has base_lr * (e + 1) / warmup",
        ),
        "cosine from 0": (
            _warmup_reference(ignore_warmup=True),
            "the cosine counts from epoch 0; it should start when the warm-up ends, and run over "
            "the remaining total - warmup epochs",
        ),
        "one base": (
            _warmup_reference(one_base=True),
            "the second group follows the first group's starting lr; use each group's own "
            "entry of self.base_lrs",
        ),
        "no floor": (
            _warmup_reference(no_floor=True),
            "after `total` epochs the cosine climbs back up; stay at eta_min from then on",
        ),
        "compound": (
            _warmup_reference(compound=True),
            "the formula is applied to the current lr, so each epoch compounds the last one's "
            "change; compute it from the starting rates in self.base_lrs",
        ),
    }


def check_warmup_cosine(WarmupCosine) -> None:
    """WarmupCosine's lr, epoch by epoch, in two parameter groups, against the formula."""
    params = [ml.tensor([1.0], requires_grad=True), ml.tensor([2.0], requires_grad=True)]
    groups = [{"params": params[:1]}, {"params": params[1:], "lr": cases_of(__name__, "BASES")[1]}]
    opt = ml.optim.SGD(groups, lr=cases_of(__name__, "BASES")[0])
    hint = "get_lr must return a list: one lr for each parameter group"
    sched = call(
        "WarmupCosine(opt, warmup=5, total=30, eta_min=0.001)",
        WarmupCosine,
        opt,
        hint=hint,
        **cases_of(__name__, "WARMUP"),
    )
    got = [call("get_last_lr()", sched.get_last_lr, returns=list)]
    for _ in range(EPOCHS):
        opt.step()
        call("scheduler.step()", sched.step, hint=hint)
        got.append(call("get_last_lr()", sched.get_last_lr, returns=list))
    expected = _warmup_reference()
    mistakes = _warmup_mistakes()
    for e, (row, want) in enumerate(zip(got, expected, strict=True)):
        if len(row) != 2:
            raise AssertionError(f"at epoch {e}, {len(row)} lrs for 2 parameter groups")
        if np.allclose(row, want, rtol=1e-9, atol=1e-12):
            continue
        for trajectory, explanation in mistakes.values():
            if np.allclose(row, trajectory[e], rtol=1e-9, atol=1e-12):
                raise AssertionError(f"at epoch {e}: {explanation}")
        raise AssertionError(
            f"at epoch {e} (warmup 5, total 30, eta_min 0.001, starting lrs 0.1 and 0.01): "
            f"expected {_show(want)}, got {_show(row)}"
        )
    print("✓ WarmupCosine warms up linearly, then follows the cosine down to eta_min, per group")
