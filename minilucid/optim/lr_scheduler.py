"""Learning-rate schedules: each step() sets every parameter group's lr for the next epoch."""

from __future__ import annotations

import math

from minilucid.optim.optimizer import Optimizer


class LRScheduler:
    """Base class: remembers each group's starting lr and counts epochs in `last_epoch`."""

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(
                f"{type(self).__name__}: {type(optimizer).__name__} is not an Optimizer"
            )
        self.optimizer = optimizer
        for i, group in enumerate(optimizer.param_groups):
            if last_epoch == -1:
                group.setdefault("initial_lr", group["lr"])
            elif "initial_lr" not in group:
                raise KeyError(
                    f"{type(self).__name__}: resuming at last_epoch={last_epoch} needs "
                    f"'initial_lr' in parameter group {i}; load the optimiser's state_dict first"
                )
        self.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        self._step_count = 0
        self.step()  # epoch 0: sets the starting lr

    def get_lr(self) -> list:
        """The lr of each group for epoch `last_epoch`; each schedule says how."""
        raise NotImplementedError(f"{type(self).__name__} does not define get_lr()")

    def step(self) -> None:
        """Move on one epoch and write the new lr into every parameter group."""
        self._step_count += 1
        self.last_epoch += 1
        for group, lr in zip(self.optimizer.param_groups, self.get_lr(), strict=True):
            group["lr"] = lr
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def get_last_lr(self) -> list:
        """The lr of each group as the last step() set it."""
        return list(self._last_lr)

    def state_dict(self) -> dict:
        """Everything but the optimiser (which saves itself)."""
        return {
            k: (list(v) if isinstance(v, list) else v)
            for k, v in self.__dict__.items()
            if k != "optimizer"
        }

    def load_state_dict(self, state_dict: dict) -> None:
        """Continue the schedule from a saved state."""
        self.__dict__.update(
            {k: (list(v) if isinstance(v, list) else v) for k, v in state_dict.items()}
        )


class StepLR(LRScheduler):
    """Multiply the lr by gamma every step_size epochs: base_lr * gamma ** (epoch // step_size)."""

    def __init__(
        self, optimizer: Optimizer, step_size: int, gamma: float = 0.1, last_epoch: int = -1
    ) -> None:
        if not isinstance(step_size, int) or step_size < 1:
            raise ValueError(f"StepLR: step_size must be a whole number >= 1, got {step_size!r}")
        self.step_size = step_size
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        # each step looks only at the current lr, so other changes to it are kept (chainable)
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return [group["lr"] for group in self.optimizer.param_groups]
        return [group["lr"] * self.gamma for group in self.optimizer.param_groups]


class CosineAnnealingLR(LRScheduler):
    """lr = eta_min + (base_lr - eta_min) * (1 + cos(pi * epoch / T_max)) / 2, period 2 * T_max."""

    def __init__(
        self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0, last_epoch: int = -1
    ) -> None:
        if not isinstance(T_max, int) or T_max < 1:
            raise ValueError(f"CosineAnnealingLR: T_max must be a whole number >= 1, got {T_max!r}")
        self.T_max = T_max
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        e, T, low = self.last_epoch, self.T_max, self.eta_min
        groups = self.optimizer.param_groups
        if e == 0:
            return [group["lr"] for group in groups]
        if self._step_count == 1:  # resumed at last_epoch > 0: the closed form
            return [low + (b - low) * (1 + math.cos(math.pi * e / T)) / 2 for b in self.base_lrs]
        if (e - 1 - T) % (2 * T) == 0:  # just past the bottom: the ratio below would be 0 / 0
            step_up = (1 - math.cos(math.pi / T)) / 2
            return [
                g["lr"] + (b - low) * step_up for g, b in zip(groups, self.base_lrs, strict=True)
            ]
        # the ratio of this epoch's cosine factor to the last one's, applied to the current lr
        ratio = (1 + math.cos(math.pi * e / T)) / (1 + math.cos(math.pi * (e - 1) / T))
        return [low + ratio * (group["lr"] - low) for group in groups]
