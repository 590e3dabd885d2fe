"""Chapter 08 (Optimisers): every exercise check accepts the solution and rejects wrong answers.

Each wrong answer below is a mistake people make when they write these optimisers; the check must
reject it and, where it can tell, name it.
"""

import functools
from pathlib import Path

from nbharness import rejected, run_check, unanswered, with_answer

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


def test_ex1_unanswered_raises_not_implemented():
    _unanswered(*EX1)


def test_ex1_rejects_ignoring_momentum():
    _rejected(*EX1, _sgd(edit=("if mu != 0:", "if False:")), "plain SGD")


def test_ex1_rejects_a_buffer_not_kept_between_steps():
    wrong = _sgd(edit=('if "momentum_buffer" not in state:', "if True:"))
    _rejected(*EX1, wrong, "not kept from one step to the next")


def test_ex1_rejects_an_averaged_gradient():
    wrong = _sgd(
        update="mu * state['momentum_buffer'] + (1 - mu) * g",
        edit=("np.array(g)", "(1 - mu) * g"),
    )
    _rejected(*EX1, wrong, "(1 - momentum)")


def test_ex1_rejects_momentum_on_the_wrong_term():
    _rejected(*EX1, _sgd(update="mu * g + state['momentum_buffer']"), "multiplies the new gradient")


def test_ex1_rejects_going_uphill():
    _rejected(*EX1, _sgd(apply="p.data += lr * g"), "uphill")


def test_ex1_rejects_rebinding_the_parameter():
    _rejected(*EX1, _sgd(apply="p = p - lr * g"), "no parameter changed", "p.data -=")


def test_ex1_rejects_a_new_data_array():
    _rejected(*EX1, _sgd(apply="p.data = p.data - lr * g"), "new array")


def test_ex1_rejects_not_skipping_missing_gradients():
    wrong = _sgd(edit=("        if p.grad is None:\n            continue\n", ""))
    _rejected(*EX1, wrong, "raised TypeError", "NoneType")


def test_ex1_rejects_the_constructors_hyperparameters_for_every_group():
    wrong = _sgd(
        edit=(
            'lr, mu = group["lr"], group["momentum"]',
            'lr, mu = self.defaults["lr"], self.defaults["momentum"]',
        )
    )
    _rejected(*EX1, wrong, "two parameter groups", "Read lr and momentum from each group")


def test_ex1_rejects_a_buffer_kept_outside_state():
    body = """
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
    _rejected(*EX1, _solved(EX1[1], body), "has no 'momentum_buffer'")


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


def test_ex2_unanswered_raises_not_implemented():
    _unanswered(*EX2)


def test_ex2_rejects_no_bias_correction():
    wrong = _adam(("/ (1 - beta1**t)", ""), ("/ (1 - beta2**t)", ""))
    _rejected(*EX2, wrong, "without bias correction")


def test_ex2_rejects_bias_correction_of_m_only():
    _rejected(*EX2, _adam(("/ (1 - beta2**t)", "")), "v_hat is missing its bias correction")


def test_ex2_rejects_bias_correction_of_v_only():
    _rejected(*EX2, _adam(("/ (1 - beta1**t)", "")), "m_hat is missing its bias correction")


def test_ex2_rejects_eps_inside_the_square_root():
    wrong = _adam(("(np.sqrt(v_hat) + eps)", "np.sqrt(v_hat + eps)"))
    _rejected(*EX2, wrong, "eps is inside the square root")


def test_ex2_rejects_swapped_betas():
    wrong = _adam(("lr, (beta1, beta2), eps", "lr, (beta2, beta1), eps"))
    _rejected(*EX2, wrong, "betas are swapped")


def test_ex2_rejects_the_weights_the_wrong_way_round():
    wrong = _adam(
        (
            'beta1 * state["exp_avg"] + (1 - beta1) * g',
            'beta1 * g + (1 - beta1) * state["exp_avg"]',
        ),
        (
            'beta2 * state["exp_avg_sq"] + (1 - beta2) * g * g',
            'beta2 * g * g + (1 - beta2) * state["exp_avg_sq"]',
        ),
    )
    _rejected(*EX2, wrong, "the other way round")


def test_ex2_rejects_the_absolute_gradient_for_v():
    _rejected(*EX2, _adam(("(1 - beta2) * g * g", "(1 - beta2) * np.abs(g)")), "squared gradient")


def test_ex2_rejects_dividing_by_v_without_the_square_root():
    _rejected(*EX2, _adam(("np.sqrt(v_hat) + eps", "v_hat + eps")), "square root of v_hat")


def test_ex2_rejects_counting_from_zero():
    wrong = _adam(
        ('        state["step"] += 1\n', ""),
        ('t = state["step"]', 't = state["step"]\n        state["step"] += 1'),
    )
    _rejected(*EX2, wrong, "1 - beta**t is 0")


def test_ex2_rejects_one_counter_for_all_parameters():
    wrong = _adam(
        (
            'state["step"] += 1\n        t = state["step"]',
            'self.t = getattr(self, "t", 0) + 1\n        t = state["step"] = self.t',
        ),
    )
    _rejected(*EX2, wrong, "once per parameter")


def test_ex2_rejects_a_step_count_outside_state():
    # right for one run, but a loaded optimiser starts counting again from 0
    body = "self.t = getattr(self, 't', 0) + 1\n" + ADAM.replace(
        'state["step"] += 1\n        t = state["step"]', 't = state["step"] = self.t'
    )
    _rejected(*EX2, _solved(EX2[1], body), "saved with state_dict()", "ends elsewhere")


def test_ex2_rejects_state_under_other_names():
    wrong = _adam(('state["exp_avg_sq"]', 'state["v"]'))
    _rejected(*EX2, wrong, "lacks ['exp_avg_sq']")


def test_ex2_rejects_going_uphill():
    _rejected(*EX2, _adam(("p.data -= lr", "p.data += lr")), "uphill")


def test_ex2_rejects_a_new_data_array():
    _rejected(*EX2, _adam(("p.data -= lr * m_hat", "p.data = p.data - lr * m_hat")), "new array")


def test_ex2_rejects_the_hyperparameters_of_the_default():
    wrong = _adam(
        (
            'lr, (beta1, beta2), eps = group["lr"], group["betas"], group["eps"]',
            "lr, (beta1, beta2), eps = 1e-3, (0.9, 0.999), 1e-8",
        )
    )
    _rejected(*EX2, wrong, "after step 1, parameter 0")


def test_ex2_rejects_subclassing_the_package_adam():
    source = "from minilucid.optim import Adam\n\n\nclass MyAdam(Adam):\n    pass\n"
    _rejected(*EX2, source, "inherits from minilucid's Adam")


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


def test_ex3_unanswered_raises_not_implemented():
    _unanswered(*EX3)


def test_ex3_rejects_clipping_each_gradient_on_its_own():
    body = """
total = 0.0
for p in params:
    if p.grad is not None:
        norm = math.sqrt(float((p.grad * p.grad).sum()))
        total = max(total, norm)
        if norm > max_norm:
            p.grad = p.grad * (max_norm / norm)
return total
"""
    _rejected(*EX3, _solved(EX3[1], body), "each gradient separately?")


def test_ex3_rejects_clipping_each_gradient_but_returning_the_total():
    body = """
grads = [p.grad for p in params if p.grad is not None]
total = math.sqrt(sum(float((g * g).sum()) for g in grads))
for p in params:
    if p.grad is not None:
        norm = math.sqrt(float((p.grad * p.grad).sum()))
        if norm > max_norm:
            p.grad = p.grad * (max_norm / norm)
return total
"""
    _rejected(*EX3, _solved(EX3[1], body), "clipped to norm 1 on its own")


def test_ex3_rejects_scaling_short_gradients_up():
    body = """
grads = [p.grad for p in params if p.grad is not None]
total = math.sqrt(sum(float((g * g).sum()) for g in grads))
for p in params:
    if p.grad is not None:
        p.grad = p.grad * (max_norm / total)
return total
"""
    _rejected(*EX3, _solved(EX3[1], body), "already below max_norm")


def test_ex3_rejects_the_sum_of_absolute_values():
    body = """
grads = [p.grad for p in params if p.grad is not None]
total = sum(float(np.abs(g).sum()) for g in grads)
if total > max_norm:
    for p in params:
        if p.grad is not None:
            p.grad = p.grad * (max_norm / total)
return total
"""
    _rejected(*EX3, _solved(EX3[1], body), "total norm 5", "returned 7")


def test_ex3_rejects_returning_nothing():
    body = """
grads = [p.grad for p in params if p.grad is not None]
total = math.sqrt(sum(float((g * g).sum()) for g in grads))
if total > max_norm:
    for p in params:
        if p.grad is not None:
            p.grad = p.grad * (max_norm / total)
"""
    _rejected(*EX3, _solved(EX3[1], body), "returned NoneType")


def test_ex3_rejects_not_skipping_missing_gradients():
    body = """
total = math.sqrt(sum(float((p.grad * p.grad).sum()) for p in params if p.grad is not None))
if total > max_norm:
    for p in params:
        p.grad = p.grad * (max_norm / total)
return total
"""
    _rejected(*EX3, _solved(EX3[1], body), "raised TypeError")


def test_ex3_rejects_returning_the_norm_after_clipping():
    body = """
grads = [p.grad for p in params if p.grad is not None]
total = math.sqrt(sum(float((g * g).sum()) for g in grads))
if total > max_norm:
    for p in params:
        if p.grad is not None:
            p.grad = p.grad * (max_norm / total)
    total = max_norm
return total
"""
    _rejected(*EX3, _solved(EX3[1], body), "returned 1", "measured before")


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


def test_ex4_unanswered_raises_not_implemented():
    _unanswered(*EX4)


def test_ex4_rejects_a_warm_up_from_zero():
    _rejected(*EX4, _warm(first="e"), "at epoch 0", "starts at lr 0")


def test_ex4_rejects_a_cosine_that_ignores_the_warm_up():
    _rejected(*EX4, _warm(done="e / self.total"), "counts from epoch 0")


def test_ex4_rejects_one_base_for_every_group():
    _rejected(*EX4, _warm(bases="[self.base_lrs[0]] * 2"), "second group")


def test_ex4_rejects_climbing_back_up():
    _rejected(*EX4, _warm(floor="False"), "at epoch 31", "stay at eta_min")


def test_ex4_rejects_compounding_the_current_lr():
    wrong = _warm(bases='[g["lr"] for g in self.optimizer.param_groups]')
    _rejected(*EX4, wrong, "at epoch 1", "self.base_lrs")


def test_ex4_rejects_returning_a_number():
    wrong = _solved(EX4[1], "return self.base_lrs[0]")
    _rejected(*EX4, wrong, "raised TypeError", "one lr for each parameter group")
