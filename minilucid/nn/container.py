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
