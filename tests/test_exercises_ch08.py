"""Chapter 08 (Optimisers): every exercise check accepts the solution and rejects wrong answers.

Each wrong answer below is a mistake people make when they write these optimisers; the check must
reject it and, where it can tell, name it.
"""

import functools
from pathlib import Path

from forged_data import forged_data_test
from nbgrading import DELEGATING_ADAM  # the grading test's hand-in of the same mistake
from nbharness import Wrong, mutation_tests, rejected, run_check, unanswered, with_answer

NB = Path(__file__).resolve().parents[1] / "solutions" / "08_optimisers.ipynb"

_rejected = functools.partial(rejected, NB)
_solved = functools.partial(with_answer, NB)
_unanswered = functools.partial(unanswered, NB)


# --------------------------------------------------------------------------------------------
# Exercise 1: MySGD

EX1 = ("ex08_1_sgd_check", "ex08_1_sgd_answer")
SGD = """
for group in self.param_groups:
    lr, mu = group["lr"], group["momentum"]
    for p in group["params"]:
        if p.grad is None:
            continue
        g = p.grad
        if mu != 0:
            state = self.state[p]
            if "momentum_buffer" not in state:
                state["momentum_buffer"] = np.array(g)
            else:
                state["momentum_buffer"] = {update}
            g = state["momentum_buffer"]
        {apply}
"""


def _sgd(update="mu * state['momentum_buffer'] + g", apply="p.data -= lr * g", edit=None):
    body = SGD.format(update=update, apply=apply)
    if edit:
        assert edit[0] in body
        body = body.replace(*edit)
    return _solved(EX1[1], body)


def test_ex1_solution_passes(capsys):
    run_check(NB, EX1[0])
    assert "✓ MySGD" in capsys.readouterr().out


def test_ex1_the_template_of_the_mutants_passes(capsys):
    run_check(NB, EX1[0], replace={EX1[1]: _sgd()})
    assert "✓ MySGD" in capsys.readouterr().out


_EX1_REJECTS_A_BUFFER_KEPT_OUTSIDE_STATE = """
for group in self.param_groups:
    lr, mu = group["lr"], group["momentum"]
    for p in group["params"]:
        if p.grad is None:
            continue
        g = p.grad
        if mu != 0:
            if not hasattr(self, "buffers"):
                self.buffers = {}
            old = self.buffers.get(id(p))
            g = self.buffers[id(p)] = np.array(g) if old is None else mu * old + g
        p.data -= lr * g
"""


# --------------------------------------------------------------------------------------------
# Exercise 2: MyAdam from the paper

EX2 = ("ex08_2_adam_check", "ex08_2_adam_answer")
ADAM = """
for group in self.param_groups:
    lr, (beta1, beta2), eps = group["lr"], group["betas"], group["eps"]
    for p in group["params"]:
        if p.grad is None:
            continue
        g = p.grad
        state = self.state[p]
        if not state:
            state["step"] = 0
            state["exp_avg"] = np.zeros_like(p.data)
            state["exp_avg_sq"] = np.zeros_like(p.data)
        state["step"] += 1
        t = state["step"]
        state["exp_avg"] = beta1 * state["exp_avg"] + (1 - beta1) * g
        state["exp_avg_sq"] = beta2 * state["exp_avg_sq"] + (1 - beta2) * g * g
        m_hat = state["exp_avg"] / (1 - beta1**t)
        v_hat = state["exp_avg_sq"] / (1 - beta2**t)
        p.data -= lr * m_hat / (np.sqrt(v_hat) + eps)
"""


def _adam(*edits):
    body = ADAM
    for old, new in edits:
        assert old in body, old
        body = body.replace(old, new)
    return _solved(EX2[1], body)


def test_ex2_solution_passes(capsys):
    run_check(NB, EX2[0])
    assert "✓ MyAdam" in capsys.readouterr().out


def test_ex2_the_template_of_the_mutants_passes(capsys):
    run_check(NB, EX2[0], replace={EX2[1]: _adam()})
    assert "✓ MyAdam" in capsys.readouterr().out


_EX2_REJECTS_A_STEP_COUNT_OUTSIDE_STATE = "self.t = getattr(self, 't', 0) + 1\n" + ADAM.replace(
    'state["step"] += 1\n        t = state["step"]', 't = state["step"] = self.t'
)


# --------------------------------------------------------------------------------------------
# Exercise 3: clip_grad_norm

EX3 = ("ex08_3_clip_check", "ex08_3_clip_answer")


def test_ex3_solution_passes(capsys):
    run_check(NB, EX3[0])
    assert "✓ clip_grad_norm" in capsys.readouterr().out


def test_ex3_accepts_the_packages_version(capsys):
    body = "return float(ml.nn.utils.clip_grad_norm_(params, max_norm))"
    run_check(NB, EX3[0], replace={EX3[1]: _solved(EX3[1], body)})
    assert "✓ clip_grad_norm" in capsys.readouterr().out


_EX3_REJECTS_CLIPPING_EACH_GRADIENT_ON_ITS_OWN = """
total = 0.0
for p in params:
    if p.grad is not None:
        norm = math.sqrt(float((p.grad * p.grad).sum()))
        total = max(total, norm)
        if norm > max_norm:
            p.grad = p.grad * (max_norm / norm)
return total
"""


_EX3_REJECTS_CLIPPING_EACH_GRADIENT_BUT_RETURNING_THE_TOTAL = """
grads = [p.grad for p in params if p.grad is not None]
total = math.sqrt(sum(float((g * g).sum()) for g in grads))
for p in params:
    if p.grad is not None:
        norm = math.sqrt(float((p.grad * p.grad).sum()))
        if norm > max_norm:
            p.grad = p.grad * (max_norm / norm)
return total
"""


_EX3_REJECTS_SCALING_SHORT_GRADIENTS_UP = """
grads = [p.grad for p in params if p.grad is not None]
total = math.sqrt(sum(float((g * g).sum()) for g in grads))
for p in params:
    if p.grad is not None:
        p.grad = p.grad * (max_norm / total)
return total
"""


_EX3_REJECTS_THE_SUM_OF_ABSOLUTE_VALUES = """
grads = [p.grad for p in params if p.grad is not None]
total = sum(float(np.abs(g).sum()) for g in grads)
if total > max_norm:
    for p in params:
        if p.grad is not None:
            p.grad = p.grad * (max_norm / total)
return total
"""


_EX3_REJECTS_RETURNING_NOTHING = """
grads = [p.grad for p in params if p.grad is not None]
total = math.sqrt(sum(float((g * g).sum()) for g in grads))
if total > max_norm:
    for p in params:
        if p.grad is not None:
            p.grad = p.grad * (max_norm / total)
"""


_EX3_REJECTS_NOT_SKIPPING_MISSING_GRADIENTS = """
total = math.sqrt(sum(float((p.grad * p.grad).sum()) for p in params if p.grad is not None))
if total > max_norm:
    for p in params:
        p.grad = p.grad * (max_norm / total)
return total
"""


_EX3_REJECTS_RETURNING_THE_NORM_AFTER_CLIPPING = """
grads = [p.grad for p in params if p.grad is not None]
total = math.sqrt(sum(float((g * g).sum()) for g in grads))
if total > max_norm:
    for p in params:
        if p.grad is not None:
            p.grad = p.grad * (max_norm / total)
    total = max_norm
return total
"""


# --------------------------------------------------------------------------------------------
# Exercise 4: WarmupCosine

EX4 = ("ex08_4_warmup_check", "ex08_4_warmup_answer")
WARM = """
e = self.last_epoch
lrs = []
for base in {bases}:
    if e < self.warmup:
        lrs.append(base * ({first}) / self.warmup)
    elif {floor}:
        lrs.append(self.eta_min)
    else:
        done = {done}
        lrs.append(self.eta_min + (base - self.eta_min) * (1 + math.cos(math.pi * done)) / 2)
return lrs
"""


def _warm(**kw):
    parts = dict(
        bases="self.base_lrs",
        first="e + 1",
        floor="e >= self.total",
        done="(e - self.warmup) / (self.total - self.warmup)",
    )
    parts.update(kw)
    return _solved(EX4[1], WARM.format(**parts))


def test_ex4_solution_passes(capsys):
    run_check(NB, EX4[0])
    assert "✓ WarmupCosine" in capsys.readouterr().out


def test_ex4_the_template_of_the_mutants_passes(capsys):
    run_check(NB, EX4[0], replace={EX4[1]: _warm()})
    assert "✓ WarmupCosine" in capsys.readouterr().out


# --- the one style: every wrong answer above, fed to its check ---------------------------

EXERCISES = {
    "sgd": ("ex08_1_sgd_answer", "ex08_1_sgd_check"),
    "adam": ("ex08_2_adam_answer", "ex08_2_adam_check"),
    "clip": ("ex08_3_clip_answer", "ex08_3_clip_check"),
    "warmup": ("ex08_4_warmup_answer", "ex08_4_warmup_check"),
}

MUTANTS = {
    "sgd": {
        "ignoring momentum": Wrong(
            _sgd(edit=("if mu != 0:", "if False:")),
            "plain SGD",
        ),
        "momentum only for 0 < momentum < 1": Wrong(
            _sgd(edit=("if mu != 0:", "if 0 < mu < 1:")),
            "plain SGD",
        ),
        "a buffer not kept between steps": Wrong(
            _sgd(edit=('if "momentum_buffer" not in state:', "if True:")),
            "not kept from one step to the next",
        ),
        "an averaged gradient": Wrong(
            _sgd(
                update="mu * state['momentum_buffer'] + (1 - mu) * g",
                edit=("np.array(g)", "(1 - mu) * g"),
            ),
            "(1 - momentum)",
        ),
        "momentum on the wrong term": Wrong(
            _sgd(update="mu * g + state['momentum_buffer']"),
            "multiplies the new gradient",
        ),
        "going uphill": Wrong(
            _sgd(apply="p.data += lr * g"),
            "uphill",
        ),
        "rebinding the parameter": Wrong(
            _sgd(apply="p = p - lr * g"),
            "no parameter changed",
            "rebinds",
        ),
        "a new data array": Wrong(
            _sgd(apply="p.data = p.data - lr * g"),
            "new array",
        ),
        "not skipping missing gradients": Wrong(
            _sgd(edit=("        if p.grad is None:\n            continue\n", "")),
            "raised TypeError",
            "NoneType",
        ),
        "the constructors hyperparameters for every group": Wrong(
            _sgd(
                edit=(
                    'lr, mu = group["lr"], group["momentum"]',
                    'lr, mu = self.defaults["lr"], self.defaults["momentum"]',
                )
            ),
            "two parameter groups",
            "its own lr and momentum",
        ),
        "a buffer kept outside state": Wrong(
            _solved(EX1[1], _EX1_REJECTS_A_BUFFER_KEPT_OUTSIDE_STATE),
            "has no 'momentum_buffer'",
        ),
    },
    "adam": {
        "hands each step to minilucid's own Adam": Wrong(
            DELEGATING_ADAM,
            "keeps minilucid's own Adam",
        ),
        "no bias correction": Wrong(
            _adam(("/ (1 - beta1**t)", ""), ("/ (1 - beta2**t)", "")),
            "without bias correction",
        ),
        "bias correction of m only": Wrong(
            _adam(("/ (1 - beta2**t)", "")),
            "v_hat is missing its bias correction",
        ),
        "bias correction of v only": Wrong(
            _adam(("/ (1 - beta1**t)", "")),
            "m_hat is missing its bias correction",
        ),
        "eps inside the square root": Wrong(
            _adam(("(np.sqrt(v_hat) + eps)", "np.sqrt(v_hat + eps)")),
            "eps is inside the square root",
        ),
        "swapped betas": Wrong(
            _adam(("lr, (beta1, beta2), eps", "lr, (beta2, beta1), eps")),
            "betas are swapped",
        ),
        "the weights the wrong way round": Wrong(
            _adam(
                (
                    'beta1 * state["exp_avg"] + (1 - beta1) * g',
                    'beta1 * g + (1 - beta1) * state["exp_avg"]',
                ),
                (
                    'beta2 * state["exp_avg_sq"] + (1 - beta2) * g * g',
                    'beta2 * g * g + (1 - beta2) * state["exp_avg_sq"]',
                ),
            ),
            "the other way round",
        ),
        "the absolute gradient for v": Wrong(
            _adam(("(1 - beta2) * g * g", "(1 - beta2) * np.abs(g)")),
            "squared gradient",
        ),
        "dividing by v without the square root": Wrong(
            _adam(("np.sqrt(v_hat) + eps", "v_hat + eps")),
            "not by its square root",
        ),
        "counting from zero": Wrong(
            _adam(
                ('        state["step"] += 1\n', ""),
                ('t = state["step"]', 't = state["step"]\n        state["step"] += 1'),
            ),
            "1 - beta**t is 0",
        ),
        "one counter for all parameters": Wrong(
            _adam(
                (
                    'state["step"] += 1\n        t = state["step"]',
                    'self.t = getattr(self, "t", 0) + 1\n        t = state["step"] = self.t',
                ),
            ),
            "once per parameter",
        ),
        "a step count outside state": Wrong(
            _solved(EX2[1], _EX2_REJECTS_A_STEP_COUNT_OUTSIDE_STATE),
            "saved with state_dict()",
            "ends elsewhere",
        ),
        "state under other names": Wrong(
            _adam(('state["exp_avg_sq"]', 'state["v"]')),
            "lacks ['exp_avg_sq']",
        ),
        "going uphill": Wrong(
            _adam(("p.data -= lr", "p.data += lr")),
            "uphill",
        ),
        "a new data array": Wrong(
            _adam(("p.data -= lr * m_hat", "p.data = p.data - lr * m_hat")),
            "new array",
        ),
        "the hyperparameters of the default": Wrong(
            _adam(
                (
                    'lr, (beta1, beta2), eps = group["lr"], group["betas"], group["eps"]',
                    "lr, (beta1, beta2), eps = 1e-3, (0.9, 0.999), 1e-8",
                )
            ),
            "after step 1, parameter 0",
        ),
        "subclassing the package adam": Wrong(
            "from minilucid.optim import Adam\n\n\nclass MyAdam(Adam):\n    pass\n",
            "inherits from minilucid's Adam",
        ),
    },
    "clip": {
        "clipping each gradient on its own": Wrong(
            _solved(EX3[1], _EX3_REJECTS_CLIPPING_EACH_GRADIENT_ON_ITS_OWN),
            "each gradient separately?",
        ),
        "clipping each gradient but returning the total": Wrong(
            _solved(EX3[1], _EX3_REJECTS_CLIPPING_EACH_GRADIENT_BUT_RETURNING_THE_TOTAL),
            "clipped to norm 1 on its own",
        ),
        "scaling short gradients up": Wrong(
            _solved(EX3[1], _EX3_REJECTS_SCALING_SHORT_GRADIENTS_UP),
            "already below max_norm",
        ),
        "the sum of absolute values": Wrong(
            _solved(EX3[1], _EX3_REJECTS_THE_SUM_OF_ABSOLUTE_VALUES),
            "total norm 5",
            "returned 7",
        ),
        "returning nothing": Wrong(
            _solved(EX3[1], _EX3_REJECTS_RETURNING_NOTHING),
            "returned None",
        ),
        "not skipping missing gradients": Wrong(
            _solved(EX3[1], _EX3_REJECTS_NOT_SKIPPING_MISSING_GRADIENTS),
            "raised TypeError",
        ),
        "returning the norm after clipping": Wrong(
            _solved(EX3[1], _EX3_REJECTS_RETURNING_THE_NORM_AFTER_CLIPPING),
            "returned 1",
            "measured before",
        ),
    },
    "warmup": {
        "a warm up from zero": Wrong(
            _warm(first="e"),
            "at epoch 0",
            "starts at lr 0",
        ),
        "a cosine that ignores the warm up": Wrong(
            _warm(done="e / self.total"),
            "counts from epoch 0",
        ),
        "one base for every group": Wrong(
            _warm(bases="[self.base_lrs[0]] * 2"),
            "second group",
        ),
        "climbing back up": Wrong(
            _warm(floor="False"),
            "at epoch 31",
            "stays at eta_min",
        ),
        "compounding the current lr": Wrong(
            _warm(bases='[g["lr"] for g in self.optimizer.param_groups]'),
            "at epoch 1",
            "self.base_lrs",
        ),
        "returning a number": Wrong(
            _solved(EX4[1], "return self.base_lrs[0]"),
            "raised TypeError",
            "one lr for each parameter group",
        ),
    },
}

test_the_solution_passes, test_a_wrong_answer_is_rejected, test_the_stub_raises = mutation_tests(
    NB, EXERCISES, MUTANTS
)


test_forged_data_is_wrong = forged_data_test(
    NB, EXERCISES, seeded=("sgd", "adam", "clip", "warmup")
)
