"""The base class of every optimiser: parameter groups, per-parameter state, saving and loading."""

from __future__ import annotations

import math
import numbers
from collections import defaultdict

import numpy as np

from minilucid.tensor import Tensor


class Optimizer:
    """Holds the parameters to update, in groups that each carry their own hyperparameters."""

    def __init__(self, params, defaults: dict) -> None:
        self.defaults = dict(defaults)
        self.state = defaultdict(dict)  # parameter -> its buffers (momentum, averages, step)
        self.param_groups = []
        if isinstance(params, Tensor):
            raise TypeError(
                f"{type(self).__name__}: params must be an iterable of tensors or of dicts, "
                f"got one tensor of shape {params.shape}. Pass a list: [{_name(params)}], or "
                "model.parameters()."
            )
        _refuse_set(params, type(self).__name__)
        groups = list(params)
        if not groups:
            raise ValueError(
                f"{type(self).__name__} got an empty parameter list: there is nothing to "
                "optimise. (An exhausted generator, such as model.parameters() used twice, "
                "is empty too.)"
            )
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)

    def add_param_group(self, param_group: dict) -> None:
        """Check one group's parameters, fill in the default hyperparameters, and add it."""
        where = type(self).__name__
        if not isinstance(param_group, dict):
            raise TypeError(f"{where}: a parameter group must be a dict, got {param_group!r}")
        if "params" not in param_group:
            raise KeyError(f"{where}: a parameter group needs a 'params' entry, got {param_group}")
        params = param_group["params"]
        _refuse_set(params, where)
        params = [params] if isinstance(params, Tensor) else list(params)
        if not params:
            raise ValueError(f"{where}: a parameter group has an empty parameter list")
        for i, p in enumerate(params):
            _check_parameter(p, i, where)
        group = {**self.defaults, **param_group, "params": params}
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        if len({id(p) for p in params}) != len(params) or seen & {id(p) for p in params}:
            raise ValueError(
                f"{where}: a parameter appears twice (within a group or in two groups); it "
                "would be updated twice per step. List each parameter once."
            )
        self.param_groups.append(group)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Forget every parameter's gradient before the next backward adds into it."""
        for group in self.param_groups:
            for p in group["params"]:
                if set_to_none:
                    p.grad = None
                elif p.grad is not None:
                    p.grad = np.zeros_like(p.grad)

    def step(self) -> None:
        """Update every parameter that has a gradient; each optimiser says how."""
        raise NotImplementedError(f"{type(self).__name__} does not define step()")

    @staticmethod
    def _check_range(
        where: str, name: str, value, high: float = math.inf, high_open: bool = False
    ) -> None:
        """Refuse a hyperparameter outside [0, high] (or [0, high)), naming it and its value."""
        ok = isinstance(value, numbers.Real) and not isinstance(value, bool)
        ok = ok and 0 <= value and (value < high if high_open else value <= high)
        if not ok:
            wanted = ">= 0" if high == math.inf else f"in [0, {high}{')' if high_open else ']'}"
            raise ValueError(f"{where}: {name} must be a number {wanted}, got {value!r}")

    def state_dict(self) -> dict:
        """Hyperparameters and buffers, with parameters named by their position (0, 1, ...)."""
        index = {}
        groups = []
        for group in self.param_groups:
            ids = []
            for p in group["params"]:
                index.setdefault(id(p), len(index))
                ids.append(index[id(p)])
            groups.append({**{k: v for k, v in group.items() if k != "params"}, "params": ids})
        state = {
            index[id(p)]: {k: _copy(v) for k, v in buffers.items()}
            for p, buffers in self.state.items()
            if id(p) in index
        }
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict) -> None:
        """Take the hyperparameters and buffers of a saved optimiser over the same parameters."""
        where = f"{type(self).__name__}.load_state_dict"
        saved = state_dict["param_groups"]
        if len(saved) != len(self.param_groups):
            raise ValueError(
                f"{where}: the saved optimiser has {len(saved)} parameter group(s), this one "
                f"has {len(self.param_groups)}"
            )
        params = {}
        for g, (old, new) in enumerate(zip(saved, self.param_groups, strict=True)):
            if len(old["params"]) != len(new["params"]):
                raise ValueError(
                    f"{where}: parameter group {g} holds {len(old['params'])} parameters in the "
                    f"saved state, but {len(new['params'])} here"
                )
            params.update(zip(old["params"], new["params"], strict=True))
        state = defaultdict(dict)
        for key, buffers in state_dict["state"].items():
            if key not in params:
                raise KeyError(
                    f"{where}: the saved state names parameter {key}, which no group has"
                )
            p = params[key]
            state[p] = {
                name: _copy(v, like=p, name=f"{name} of parameter {key}", where=where)
                for name, v in buffers.items()
            }
        for old, new in zip(saved, self.param_groups, strict=True):
            new.update({k: v for k, v in old.items() if k != "params"})
        self.state = state


def _name(p: Tensor) -> str:
    return p.name or "p"


def _refuse_set(params, where: str) -> None:
    if isinstance(params, set | frozenset):
        raise TypeError(
            f"{where}: parameters must come in an ordered collection (a list), not a set: a "
            "set's order changes between runs, and with it the state_dict's numbering"
        )


def _check_parameter(p, i: int, where: str) -> None:
    if not isinstance(p, Tensor):
        raise TypeError(f"{where}: parameter {i} is a {type(p).__name__}, not a Tensor")
    if not p.requires_grad:
        raise ValueError(
            f"{where}: parameter {i} (shape {p.shape}) does not require grad, so no gradient "
            "will ever reach it. Create it with requires_grad=True, or leave it out: "
            "[p for p in params if p.requires_grad]"
        )
    if not p.is_leaf:
        raise ValueError(
            f"{where}: parameter {i} (shape {p.shape}) is not a leaf: it was computed by "
            f"{type(p.grad_fn).__name__}, so backward does not store its .grad. Optimise the "
            "leaf tensors it was computed from."
        )
    if p.data.dtype.kind != "f":
        raise TypeError(f"{where}: parameter {i} has dtype {p.data.dtype}, not a float dtype")


def _copy(value, like: Tensor | None = None, name: str = "", where: str = ""):
    """A private copy of a buffer (an array; numbers are immutable), checked against `like`."""
    if not isinstance(value, np.ndarray):
        return value
    if like is not None:
        if value.shape != like.shape:
            raise ValueError(
                f"{where}: the saved {name} has shape {value.shape}, but the parameter has "
                f"shape {like.shape}"
            )
        return value.astype(like.data.dtype, copy=True)
    return value.copy()
