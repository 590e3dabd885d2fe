"""Stochastic gradient descent, with momentum, Nesterov momentum and weight decay."""

from __future__ import annotations

import numpy as np

from minilucid.optim.optimizer import Optimizer


class SGD(Optimizer):
    """p <- p - lr * v, where v is the gradient, or a running sum of gradients with momentum."""

    def __init__(
        self,
        params,
        lr: float = 1e-3,
        momentum: float = 0.0,
        dampening: float = 0.0,
        weight_decay: float = 0.0,
        nesterov: bool = False,
    ) -> None:
        self._check_range("SGD", "lr", lr)
        self._check_range("SGD", "momentum", momentum)
        self._check_range("SGD", "dampening", dampening)
        self._check_range("SGD", "weight_decay", weight_decay)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError(
                f"SGD: nesterov=True needs momentum > 0 and dampening = 0, got momentum="
                f"{momentum} and dampening={dampening}"
            )
        defaults = dict(
            lr=lr,
            momentum=momentum,
            dampening=dampening,
            weight_decay=weight_decay,
            nesterov=nesterov,
        )
        super().__init__(params, defaults)

    def step(self) -> None:
        for group in self.param_groups:
            lr, mu, tau = group["lr"], group["momentum"], group["dampening"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                g = p.grad
                if group["weight_decay"] != 0:
                    g = g + group["weight_decay"] * p.data  # gradient of (wd / 2) * ||p||^2
                if mu != 0:
                    state = self.state[p]
                    if "momentum_buffer" not in state:
                        buf = np.array(g)  # the first step: v = g
                    else:  # v <- mu * v + (1 - dampening) * g
                        buf = mu * state["momentum_buffer"] + (1 - tau) * g
                    state["momentum_buffer"] = buf
                    g = g + mu * buf if group["nesterov"] else buf
                p.data -= lr * g  # in place, through .data: not recorded, not version-counted
