"""Sequential: modules called one after the other."""

from minilucid.nn.module import Module


class Sequential(Module):
    """Sequential(a, b, c)(x) is c(b(a(x))); the layers are named '0', '1', '2'.

    Sequential(OrderedDict(...)) or Sequential({'name': layer, ...}) names them yourself.
    """

    def __init__(self, *modules):
        super().__init__()
        if len(modules) == 1 and isinstance(modules[0], dict):
            named = list(modules[0].items())
        else:
            named = [(str(i), m) for i, m in enumerate(modules)]
        for name, module in named:
            if not isinstance(module, Module):
                raise TypeError(
                    f"Sequential: item {name} is a {type(module).__name__}, not a Module; "
                    "pass layers such as nn.Linear(2, 3) or nn.ReLU()"
                )
            setattr(self, name, module)

    def forward(self, x):
        for module in self._modules.values():
            x = module(x)
        return x

    def __getitem__(self, index):
        if isinstance(index, slice):
            return Sequential(dict(list(self._modules.items())[index]))
        modules = list(self._modules.values())
        try:
            return modules[index]
        except IndexError:
            raise IndexError(
                f"Sequential: index {index} is out of range for {len(modules)} layers"
            ) from None

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())


class ModuleDict(Module):
    """Modules by name, each registered (its parameters are the model's), in insertion order.
    Like ModuleList it has no forward: the model decides how to call them."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __setitem__(self, name: str, module: Module) -> None:
        if not isinstance(module, Module):
            raise TypeError(f"ModuleDict: {name!r} is a {type(module).__name__}, not a Module")
        setattr(self, name, module)

    def __getitem__(self, name: str) -> Module:
        try:
            return self._modules[name]
        except KeyError:
            raise KeyError(
                f"ModuleDict: no module named {name!r}; it has {list(self._modules)}"
            ) from None

    def __delitem__(self, name: str) -> None:
        del self._modules[name]

    def update(self, modules) -> None:
        for name, module in dict(modules).items():
            self[name] = module

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def __contains__(self, name) -> bool:
        return name in self._modules

    def keys(self):
        return self._modules.keys()

    def values(self):
        return self._modules.values()

    def items(self):
        return self._modules.items()
