"""Module: the base class of layers and models, PyTorch's `torch.nn.Module` in miniature.

A module keeps three ordered registries, filled by plain attribute assignment: its parameters
(tensors it learns), its buffers (state it keeps but does not learn) and its submodules. Every
walk over a model - parameters, names, train/eval, state_dict - reads those registries.
"""

from typing import NamedTuple

import numpy as np

from minilucid.nn.parameter import Parameter
from minilucid.tensor import Tensor


class _IncompatibleKeys(NamedTuple):
    missing_keys: list
    unexpected_keys: list


class Module:
    """Base class of every layer and model: subclass it, assign layers and Parameters to
    attributes in `__init__`, and write `forward`."""

    def __init__(self):
        # object.__setattr__: our own __setattr__ below needs these registries to exist
        object.__setattr__(self, "_parameters", {})
        object.__setattr__(self, "_buffers", {})
        object.__setattr__(self, "_modules", {})
        object.__setattr__(self, "training", True)

    def __setattr__(self, name: str, value) -> None:
        if "_parameters" not in self.__dict__:
            if isinstance(value, Parameter | Module):
                raise AttributeError(
                    f"{type(self).__name__}: cannot assign {name!r} before Module.__init__() "
                    "has run; call super().__init__() first in your __init__"
                )
        elif isinstance(value, Parameter):
            self._modules.pop(name, None)
            self._buffers.pop(name, None)
            self._parameters[name] = value
        elif isinstance(value, Module):
            self._parameters.pop(name, None)
            self._buffers.pop(name, None)
            self._modules[name] = value
        elif name in self._buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(
                    f"{type(self).__name__}: buffer {name!r} must be a Tensor or None, "
                    f"not {type(value).__name__}"
                )
            self._buffers[name] = value
        elif value is not None and name in self._parameters:
            raise TypeError(
                f"{type(self).__name__}: cannot assign a {type(value).__name__} to the "
                f"parameter {name!r}; assign an nn.Parameter (or None), or change its numbers "
                f"in place: self.{name}.data[...] = ..."
            )
        elif value is not None and name in self._modules:
            raise TypeError(
                f"{type(self).__name__}: cannot assign a {type(value).__name__} to the "
                f"submodule {name!r}; assign an nn.Module (or None)"
            )
        else:  # None removes a parameter or submodule; anything else is a plain attribute
            self._parameters.pop(name, None)
            self._modules.pop(name, None)
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        for registry in (self._parameters, self._buffers, self._modules):
            registry.pop(name, None)
        object.__delattr__(self, name)

    def register_buffer(self, name: str, tensor: Tensor | None) -> None:
        """Keep `tensor` as state that is saved in state_dict but not learned (no Parameter)."""
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(
                f"register_buffer: {type(self).__name__}.{name} must be a Tensor or None, "
                f"not {type(tensor).__name__}"
            )
        self._buffers[name] = tensor
        self.__setattr__(name, tensor)

    def forward(self, *inputs):
        raise NotImplementedError(
            f"{type(self).__name__} has no forward method: write `def forward(self, x): ...`"
        )

    def __call__(self, *inputs, **options):
        return self.forward(*inputs, **options)

    # --- walking the tree -----------------------------------------------------------------

    def named_children(self):
        """(name, module) for each direct submodule, in the order they were assigned."""
        seen = {}
        for name, module in self._modules.items():
            if module is not None and id(module) not in seen:
                seen[id(module)] = module
                yield name, module

    def children(self):
        for _, module in self.named_children():
            yield module

    def named_modules(self, memo: dict | None = None, prefix: str = ""):
        """(name, module) for this module and all inside it, depth first, each module once."""
        memo = {} if memo is None else memo
        if id(self) in memo:
            return
        memo[id(self)] = self
        yield prefix, self
        for name, module in self._modules.items():
            if module is not None:
                yield from module.named_modules(memo, f"{prefix}.{name}" if prefix else name)

    def modules(self):
        for _, module in self.named_modules():
            yield module

    def named_parameters(self, prefix: str = "", recurse: bool = True):
        """(dotted name, parameter) for every parameter, each once, e.g. ('0.weight', ...)."""
        modules = self.named_modules(prefix=prefix) if recurse else [(prefix, self)]
        seen = {}
        for module_prefix, module in modules:
            for name, param in module._parameters.items():
                if param is None or id(param) in seen:
                    continue
                seen[id(param)] = param
                yield (f"{module_prefix}.{name}" if module_prefix else name), param

    def parameters(self, recurse: bool = True):
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def named_buffers(self, prefix: str = "", recurse: bool = True):
        modules = self.named_modules(prefix=prefix) if recurse else [(prefix, self)]
        for module_prefix, module in modules:
            for name, buffer in module._buffers.items():
                if buffer is not None:
                    yield (f"{module_prefix}.{name}" if module_prefix else name), buffer

    def buffers(self, recurse: bool = True):
        for _, buffer in self.named_buffers(recurse=recurse):
            yield buffer

    def apply(self, fn):
        """Call fn(module) on every submodule and then on this one; returns self."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    # --- modes and gradients ----------------------------------------------------------------

    def train(self, mode: bool = True):
        """Training mode (or evaluation mode with mode=False) for this module and all inside."""
        for module in self.modules():
            object.__setattr__(module, "training", bool(mode))
        return self

    def eval(self):
        return self.train(False)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Forget every parameter's gradient before the next backward (which accumulates)."""
        for param in self.parameters():
            if set_to_none:
                param.grad = None
            elif param.grad is not None:
                param.grad = np.zeros_like(param.grad)

    # --- saving and loading -----------------------------------------------------------------

    def state_dict(self, prefix: str = "") -> dict:
        """Every parameter and buffer by dotted name; the tensors share the model's arrays."""
        out = {}
        for name, param in self._parameters.items():
            if param is not None:
                out[prefix + name] = param.detach()
        for name, buffer in self._buffers.items():
            if buffer is not None:
                out[prefix + name] = buffer.detach()
        for name, module in self._modules.items():
            if module is not None:
                out.update(module.state_dict(prefix=f"{prefix}{name}."))
        return out

    def load_state_dict(self, state_dict: dict, strict: bool = True):
        """Copy the values of `state_dict` into this model's parameters and buffers.

        Nothing is copied when a shape differs, or (strict=True) when a key is missing or extra.
        Returns (missing_keys, unexpected_keys).
        """
        own = self.state_dict()
        missing = [key for key in own if key not in state_dict]
        unexpected = [key for key in state_dict if key not in own]
        problems, values = [], {}
        for key, target in own.items():  # every entry is checked before anything is changed
            if key in state_dict:
                value, problem = _checked(key, state_dict[key], target)
                if problem:
                    problems.append(problem)
                values[key] = value
        if strict:
            problems += [
                f"missing key {key!r}: in the model, not in the state_dict" for key in missing
            ]
            problems += [
                f"unexpected key {key!r}: in the state_dict, not in the model" for key in unexpected
            ]
        if problems:
            raise RuntimeError(
                f"load_state_dict: {type(self).__name__}: nothing was loaded:\n  "
                + "\n  ".join(problems)
                + "\nWas it saved from a model built the same way? Compare the keys of "
                "model.state_dict() with it; strict=False skips missing and extra keys."
            )
        for key, value in values.items():
            own[key].data[...] = value  # in place: the model keeps its arrays
        return _IncompatibleKeys(missing, unexpected)

    # --- printing ---------------------------------------------------------------------------

    def extra_repr(self) -> str:
        """What a layer shows between its parentheses, e.g. 'in_features=2, out_features=3'."""
        return ""

    def __repr__(self) -> str:
        lines = []
        for name, module in self._modules.items():
            inner = repr(module).replace("\n", "\n  ")
            lines.append(f"  ({name}): {inner}")
        if not lines:
            return f"{type(self).__name__}({self.extra_repr()})"
        extra = self.extra_repr()
        head = f"{type(self).__name__}(" + (f"\n  {extra}" if extra else "")
        return head + "\n" + "\n".join(lines) + "\n)"


def _checked(key: str, value, target) -> tuple:
    """(the entry as an array, None) if it can replace `target`'s values, else (None, why not)."""
    try:
        array = value.data if isinstance(value, Tensor) else np.asarray(value)
    except ValueError as error:  # ragged lists, say
        return None, f"{key}: not an array of numbers ({error})"
    if array.dtype.kind not in "biuf":
        return None, f"{key}: the state_dict holds {array.dtype} values, not numbers"
    if array.shape != target.shape:
        return None, f"{key}: the state_dict has shape {array.shape}, the model {target.shape}"
    return array, None
