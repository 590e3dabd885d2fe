"""Parameter: a tensor that a Module learns."""

from minilucid.tensor import Tensor


class Parameter(Tensor):
    """A leaf tensor that requires grad and that a Module registers when it is assigned to it.

    `Parameter(t)` shares `t`'s array: no copy is made.
    """

    __slots__ = ()

    def __init__(self, data, requires_grad: bool = True):
        super().__init__(data.data if isinstance(data, Tensor) else data, requires_grad)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()
