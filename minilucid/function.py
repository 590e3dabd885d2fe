"""The op abstraction: a Function turns arrays into an array and knows its local derivative.

`Function.apply` is where a forward computation becomes a node of the graph: it unwraps the
input tensors, runs `forward` on their arrays, and - when gradients are wanted - remembers the
inputs as the parents of the new tensor.
"""

import numpy as np

from minilucid._arrays import as_array, type_name
from minilucid.grad_mode import GRAD_MODE, VERSIONS
from minilucid.tensor import Tensor, _NoGradCut

ndarray = np.ndarray


class Function:
    """Base class of every op: static `forward(ctx, *arrays)` and `backward(ctx, grad)`.

    An instance is the op's context (`ctx`): the node of the graph that links an output tensor
    to its `parents` and holds what `forward` saved for `backward`.
    """

    __slots__ = ("parents", "saved_tensors", "options", "version", "arrays")

    # An op may keep, as `cache` (a slot of its own), what forward computed that a first-order
    # backward would compute again (softmax weights, normalised rows); backward uses it on arrays
    # only. Under create_graph it is hidden, and backward recomputes the value from the saved
    # tensors, with a graph (autograd.py). Ops without one read None here.
    cache = None

    def __repr__(self) -> str:
        return f"<{type(self).__name__}>"

    @staticmethod
    def forward(ctx, *arrays, **options):
        raise NotImplementedError(f"{type(ctx).__name__}.forward is not written yet")

    @staticmethod
    def backward(ctx, grad):
        raise NotImplementedError(f"{type(ctx).__name__}.backward is not written yet")

    def save_for_backward(self, *arrays) -> None:
        self.saved_tensors = arrays

    @property
    def needs_input_grad(self) -> tuple:
        return tuple(isinstance(p, Tensor) and p._requires_grad for p in self.parents)

    @classmethod
    def apply(cls, *inputs, **options) -> Tensor:
        ctx = cls()
        arrays = []
        requires_grad = converted = False
        for x in inputs:
            if isinstance(x, Tensor):
                arrays.append(x.data)
                if x._requires_grad:
                    requires_grad = True
            elif type(x) is list:  # Python data follows Tensor's rule: floats become float32
                arrays.append(as_array(x, None, cls.__name__.lower()))
                converted = True
            elif isinstance(x, np.generic):  # a NumPy number counts as a Python one (PyTorch's
                arrays.append(x.item())  # rule: float32 * np.float64(2) stays float32)
            elif isinstance(x, PLAIN):
                arrays.append(x)
            else:  # another library's tensor, say: NumPy would mangle it, so say what it is
                raise _foreign(cls, x)
        # Two inputs holding one array (x and x.detach()) get an array object each, so that
        # create_graph can tell which input a saved array belongs to.
        n = len(arrays)
        if (
            requires_grad
            and (n > 2 or n == 2 and arrays[0] is arrays[1])
            and _shared(inputs, arrays)
        ):
            converted = True
        ctx.parents = inputs  # ctx.needs_input_grad works in forward too
        try:
            # Nearly every call has one or two arrays and no options, so those calls are written
            # out: f(*args, **kwargs) costs Python about 0.15 us more than f(a, b).
            if options:
                data = cls.forward(ctx, *arrays, **options)
            elif n == 1:
                data = cls.forward(ctx, arrays[0])
            elif n == 2:
                data = cls.forward(ctx, arrays[0], arrays[1])
            else:
                data = cls.forward(ctx, *arrays)
        except ValueError as error:
            raise _explain(cls, arrays, error) from None
        if type(data) is not ndarray:  # NumPy turns 0-d results into scalars
            data = _zero_d(ctx, data)
        out = Tensor.__new__(Tensor)
        out.data = data
        out.grad = None
        out.name = None
        out._hooks = None
        out._retains_grad = False
        out._cut = None
        if requires_grad and GRAD_MODE.enabled:
            ctx.version = VERSIONS.clock  # backward checks that nothing saved changed since
            if converted:  # the arrays forward saw are not all the inputs' own
                ctx.arrays = arrays
            if options:  # keyword options (dim=, shape=, ...) stay readable, e.g. for pictures
                ctx.options = options
            out._ctx = ctx
            out._requires_grad = True
        else:  # a constant: off the path that records the graph
            out._ctx = None
            out._requires_grad = False
            _mark_cut(out, inputs, requires_grad)
        return out


def _mark_cut(out: Tensor, inputs, requires_grad: bool) -> None:
    """For pictures only: where the graph was cut above a constant result. h.detach().max()
    still knows where detach() cut it; under no_grad, an input that requires grad is the cut."""
    for x in inputs:
        if isinstance(x, Tensor) and x._cut is not None:
            out._cut = x._cut
    if requires_grad and out._cut is None:
        for x in inputs:
            if isinstance(x, Tensor) and x._requires_grad:
                out._cut = _NoGradCut(x)
                break


def _shared(inputs, arrays: list) -> bool:
    """Give each input that shares its array object with an earlier, different input a view of
    its own (changing `arrays` in place); whether any did."""
    if len(arrays) == 2:  # the usual binary op, checked without a loop
        if arrays[0] is not arrays[1] or inputs[0] is inputs[1]:
            return False
        arrays[1] = arrays[1].view()
        return True
    first = {}  # id(array) -> the input it first came from
    changed = False
    for i, (x, a) in enumerate(zip(inputs, arrays, strict=True)):
        if not isinstance(a, ndarray):
            continue
        owner = first.setdefault(id(a), x)
        if owner is not x:
            arrays[i] = a.view()
            changed = True
    return changed


def _zero_d(ctx, scalar) -> ndarray:
    """A 0-d result as an array; if forward saved it, the saved value becomes that array too
    (create_graph recognises a saved output by identity)."""
    data = np.asarray(scalar)
    saved = getattr(ctx, "saved_tensors", None)
    if saved and any(s is scalar for s in saved):
        ctx.saved_tensors = tuple(data if s is scalar else s for s in saved)
    return data


PLAIN = (ndarray, np.generic, int, float, tuple)  # what ops take besides tensors and lists


def _foreign(cls, x) -> TypeError:
    return TypeError(
        f"{cls.__name__.lower()}: cannot combine a minilucid tensor with {type_name(x)}; pass "
        "numbers, NumPy arrays or minilucid tensors (for a torch tensor t: "
        "ml.tensor(t.detach().numpy()))"
    )


def _explain(cls, arrays, error: ValueError) -> ValueError:
    """Turn NumPy's broadcasting complaint into one that names the op and the shapes."""
    name = cls.__name__.lower()
    if str(error).partition(":")[0].replace("_", "") == name:  # the op explained itself
        return error
    shapes = [np.shape(a) for a in arrays if isinstance(a, ndarray | list | tuple)]
    if len(shapes) > 1:
        try:
            np.broadcast_shapes(*shapes)
        except ValueError:
            listed = " and ".join(str(s) for s in shapes)
            return ValueError(
                f"{name}: shapes {listed} cannot be broadcast together - aligned from the right, "
                "each pair of dimensions must be equal or one of them 1. "
                "Reshape or unsqueeze one operand so the dimensions line up."
            )
    return ValueError(f"{name}: {error}")
