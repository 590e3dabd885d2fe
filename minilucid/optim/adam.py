"""Adam and AdamW: steps scaled per entry by running averages of the gradient and its square."""

from __future__ import annotations

import math

import numpy as np

from minilucid.optim.optimizer import Optimizer


class Adam(Optimizer):
    """Adam (Kingma & Ba, 2015) with PyTorch's equations; weight decay is added to the gradient."""

    decoupled = False  # AdamW: weight decay shrinks p itself instead

    def __init__(
        self,
        params,
        lr: float = 1e-3,
        betas: tuple = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        amsgrad: bool = False,
    ) -> None:
        where = type(self).__name__
        self._check_range(where, "lr", lr)
        self._check_range(where, "eps", eps)
        self._check_range(where, "weight_decay", weight_decay)
        if not isinstance(betas, tuple | list) or len(betas) != 2:
            raise ValueError(f"{where}: betas must be a pair (beta1, beta2), got {betas!r}")
        self._check_range(where, "betas[0]", betas[0], high=1.0, high_open=True)
        self._check_range(where, "betas[1]", betas[1], high=1.0, high_open=True)
        defaults = dict(
            lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, amsgrad=amsgrad
        )
        super().__init__(params, defaults)

    def step(self) -> None:
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    self._update(p, group)

    def _update(self, p, group: dict) -> None:
        lr, (beta1, beta2), eps = group["lr"], group["betas"], group["eps"]
        g = p.grad
        if group["weight_decay"] != 0:
            if self.decoupled:
                p.data *= 1 - lr * group["weight_decay"]  # AdamW: shrink p itself
            else:
                g = g + group["weight_decay"] * p.data  # Adam: decay joins the gradient
        state = self.state[p]
        if not state:
            state["step"] = 0
            state["exp_avg"] = np.zeros_like(p.data)  # m, the first moment
            state["exp_avg_sq"] = np.zeros_like(p.data)  # v, the second moment
            if group["amsgrad"]:
                state["max_exp_avg_sq"] = np.zeros_like(p.data)
        state["step"] += 1
        t = state["step"]
        # m <- beta1 m + (1 - beta1) g  and  v <- beta2 v + (1 - beta2) g^2, in place: the
        # buffers are the optimiser's own (state_dict and load_state_dict copy them)
        m, v = state["exp_avg"], state["exp_avg_sq"]
        m *= beta1
        m += (1 - beta1) * g
        v *= beta2
        v += (1 - beta2) * g * g
        if group["amsgrad"]:  # never let the denominator shrink
            v = np.maximum(state["max_exp_avg_sq"], v, out=state["max_exp_avg_sq"])
        # p <- p - lr * m_hat / (sqrt(v_hat) + eps), with m_hat = m / (1 - beta1^t) and
        # v_hat = v / (1 - beta2^t); eps is added after the square root
        bias1, bias2 = 1 - beta1**t, 1 - beta2**t
        denom = np.sqrt(v)
        denom /= math.sqrt(bias2)
        denom += eps
        p.data -= (lr / bias1) * m / denom


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter, 2019): p shrinks by lr * wd."""

    decoupled = True

    def __init__(
        self,
        params,
        lr: float = 1e-3,
        betas: tuple = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 1e-2,
        amsgrad: bool = False,
    ) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad)
