"""The Tensor: an array that is also a node of the computation graph.

A tensor keeps its `data` (a NumPy array), its `grad` (None until backward), and, when an op
made it, that op's context `_ctx`, whose `parents` are the tensors the op consumed. Every
operator and method below is a one-line call to its op; the ops live in `minilucid.ops`.
"""

import weakref

import numpy as np

from minilucid._arrays import (  # helpers that need no Tensor
    as_array,
    dim_or_axis,
    flat_shape,
    shape_args,
    squeezed_shape,
    swapped_dims,
    unsqueezed_shape,
)

float32 = np.dtype("float32")
float64 = np.dtype("float64")
int64 = np.dtype("int64")
long = int64  # PyTorch's other name for int64, the dtype of class labels


class _Cut(weakref.ref):
    """detach()'s note of the tensor it cut, for pictures. It keeps nothing alive, and a pickle or
    a copy of the detached tensor carries no note (nothing was cut there)."""

    __slots__ = ()

    def __reduce__(self):
        return type(None), ()


class _NoGradCut(_Cut):
    """no_grad's note, on a value an op computed without a graph, of the input that needed grad
    (for pictures: the graph stopped there)."""

    __slots__ = ()


class Tensor:
    """A NumPy array that remembers how it was computed, so that gradients can flow back."""

    __slots__ = (
        "data",
        "grad",
        "_requires_grad",
        "name",
        "_ctx",
        "_hooks",
        "_retains_grad",
        "_cut",
        "_view",  # (base, made under no_grad) for a view of another tensor's memory; unset else
        "_views",  # a base's list of weak references to its views; unset until it has one
        "__weakref__",
    )
    __hash__ = object.__hash__  # `==` is elementwise, identity is the hash
    __array_ufunc__ = None  # `array + t` calls t.__radd__ instead of NumPy looping over t

    # --- chapter 01: the node --------------------------------------------------------------

    def __init__(self, data, requires_grad: bool = False, dtype=None, name: str | None = None):
        self.data = as_array(plain(data), dtype, "Tensor")
        self.grad = None
        self.name = name
        self._ctx = None  # the op that created this tensor; None for a leaf
        self._hooks = None
        self._retains_grad = False
        self._cut = None  # detach() sets it: where the graph was cut, for pictures
        self._requires_grad = False
        if requires_grad:
            self.requires_grad_(True)

    def __repr__(self) -> str:
        body = np.array2string(self.data, separator=", ", precision=4, prefix="tensor(")
        extras = []
        if self.data.dtype != float32:
            extras.append(f"dtype={self.data.dtype}")
        if self._ctx is not None:
            extras.append(f"grad_fn=<{type(self._ctx).__name__}>")
        elif self.requires_grad:
            extras.append("requires_grad=True")
        if self.name is not None:
            extras.append(f"name={self.name!r}")
        return "tensor(" + ", ".join([body, *extras]) + ")"

    @property
    def shape(self) -> tuple:
        return self.data.shape

    @property
    def ndim(self) -> int:
        return self.data.ndim

    @property
    def dtype(self) -> np.dtype:
        return self.data.dtype

    @property
    def is_leaf(self) -> bool:
        return self._ctx is None

    @property
    def grad_fn(self):
        return self._ctx

    def item(self) -> float:
        if self.data.size != 1:
            raise ValueError(
                f"item: only a one-element tensor has an item; this one has shape {self.shape}"
            )
        return self.data.item()

    def numpy(self) -> np.ndarray:
        return readable(self, "numpy()")

    def __iter__(self):
        if self.data.ndim == 0:
            raise TypeError(
                "iter: iteration over a 0-d tensor (as PyTorch refuses it): a 0-d tensor holds "
                "one number; use .item()"
            )
        return (self[i] for i in range(len(self.data)))

    def __len__(self) -> int:
        if self.data.ndim == 0:
            raise TypeError("len: a 0-d tensor has no length")
        return len(self.data)

    def __add__(self, other):
        return Add.apply(self, other)

    def __mul__(self, other):
        return Mul.apply(self, other)

    # --- chapter 02: elementwise arithmetic -------------------------------------------------

    def __radd__(self, other):
        return Add.apply(other, self)

    def __sub__(self, other):
        return Sub.apply(self, other)

    def __rsub__(self, other):
        return Sub.apply(other, self)

    def __rmul__(self, other):
        return Mul.apply(other, self)

    def __truediv__(self, other):
        return Div.apply(self, other)

    def __rtruediv__(self, other):
        return Div.apply(other, self)

    def __neg__(self):
        return Neg.apply(self)

    def __pow__(self, other):
        return Pow.apply(self, other)

    def __rpow__(self, other):
        return Pow.apply(other, self)

    # --- chapter 03: reverse mode -----------------------------------------------------------

    def backward(
        self,
        gradient=None,
        retain_graph: bool | None = None,
        create_graph: bool = False,
        inputs=None,
    ) -> None:
        """Accumulate the gradient into .grad of every leaf (or only of the tensors `inputs`)."""
        if inputs is None:
            backward(self, gradient, retain_graph, create_graph)
            return
        inputs = (inputs,) if isinstance(inputs, Tensor) else tuple(inputs)
        found = backward(self, gradient, retain_graph, create_graph, inputs=inputs)
        for t, g in zip(inputs, found, strict=True):
            if g is not None:
                g = g.data if isinstance(g, Tensor) else g
                t.grad = g.copy() if t.grad is None else t.grad + g

    # --- chapter 04: shapes -----------------------------------------------------------------

    def sum(self, dim=None, keepdim: bool = False, *, axis=None):
        return Sum.apply(self, dim=dim_or_axis(dim, axis, "sum"), keepdim=keepdim)

    def mean(self, dim=None, keepdim: bool = False, *, axis=None):
        return Mean.apply(self, dim=dim_or_axis(dim, axis, "mean"), keepdim=keepdim)

    def max(self, dim=None, keepdim: bool = False, *, axis=None):
        return Max.apply(self, dim=dim_or_axis(dim, axis, "max"), keepdim=keepdim)

    def min(self, dim=None, keepdim: bool = False, *, axis=None):
        return Min.apply(self, dim=dim_or_axis(dim, axis, "min"), keepdim=keepdim)

    def reshape(self, *shape):
        return as_view(Reshape.apply(self, shape=shape_args(shape)), self)

    def view(self, *shape):
        return as_view(Reshape.apply(self, shape=shape_args(shape)), self, "view")

    def flatten(self, start_dim: int = 0, end_dim: int = -1):
        return as_view(Reshape.apply(self, shape=flat_shape(self.shape, start_dim, end_dim)), self)

    def unsqueeze(self, dim: int):
        return as_view(Reshape.apply(self, shape=unsqueezed_shape(self.shape, dim)), self)

    def squeeze(self, dim=None):
        return as_view(Reshape.apply(self, shape=squeezed_shape(self.shape, dim)), self)

    def permute(self, *dims):
        return as_view(Permute.apply(self, dims=shape_args(dims)), self)

    def transpose(self, dim0: int = 0, dim1: int = 1):
        return as_view(Permute.apply(self, dims=swapped_dims(self.ndim, dim0, dim1)), self)

    @property
    def T(self):  # noqa: N802  (PyTorch's name)
        return as_view(Permute.apply(self, dims=tuple(range(self.ndim - 1, -1, -1))), self)

    def __getitem__(self, index):
        return as_view(GetItem.apply(self, index=index), self)

    def matmul(self, other):
        return MatMul.apply(self, other)

    def __matmul__(self, other):
        return MatMul.apply(self, other)

    def __rmatmul__(self, other):
        return MatMul.apply(other, self)

    # --- chapter 05: functions and numerics -------------------------------------------------

    def exp(self):
        return Exp.apply(self)

    def log(self):
        return Log.apply(self)

    def sqrt(self):
        return Sqrt.apply(self)

    def abs(self):
        return Abs.apply(self)

    def __abs__(self):
        return Abs.apply(self)

    def clamp(self, min=None, max=None):  # noqa: A002  (PyTorch's names)
        return Clamp.apply(self, low=min, high=max)

    def tanh(self):
        return Tanh.apply(self)

    def sigmoid(self):
        return Sigmoid.apply(self)

    def relu(self):
        return Relu.apply(self)

    def softmax(self, dim: int = -1):
        return Softmax.apply(self, dim=dim)

    def log_softmax(self, dim: int = -1):
        return LogSoftmax.apply(self, dim=dim)

    # --- chapter 06: graph hygiene ----------------------------------------------------------

    def requires_grad_(self, requires_grad: bool = True):
        if requires_grad and self.data.dtype.kind != "f":
            raise TypeError(
                f"requires_grad: only floating-point tensors can have gradients, "
                f"this one is {self.data.dtype}. Create it with float data or dtype=float32."
            )
        if not requires_grad and self._ctx is not None:
            raise RuntimeError(
                "requires_grad_: this tensor was computed by an op; use .detach() to cut it "
                "out of the graph instead"
            )
        self._requires_grad = bool(requires_grad)
        return self

    @property
    def requires_grad(self) -> bool:
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, requires_grad: bool) -> None:
        self.requires_grad_(requires_grad)

    def detach(self):
        out = Tensor(self.data, name=self.name)
        out._cut = _Cut(self)  # for pictures: where the graph was cut (keeps nothing alive)
        return out

    def __iadd__(self, other):
        return update(self, "add_", other)

    def __isub__(self, other):
        return update(self, "sub_", other)

    def __imul__(self, other):
        return update(self, "mul_", other)

    def __itruediv__(self, other):
        return update(self, "div_", other)

    def add_(self, other, *, alpha=1):
        return update(self, "add_", other, alpha)

    def sub_(self, other, *, alpha=1):
        return update(self, "sub_", other, alpha)

    def mul_(self, other):
        return update(self, "mul_", other)

    def div_(self, other):
        return update(self, "div_", other)

    def zero_(self):
        return overwrite(self, "zero_", 0)

    def fill_(self, value):
        return overwrite(self, "fill_", value)

    def copy_(self, src):
        return overwrite(self, "copy_", src)

    def __array__(self, dtype=None, copy=None):
        if copy:
            return np.array(self.data, dtype=dtype, copy=True)
        return self.data if dtype is None else self.data.astype(dtype, copy=False)

    def retain_grad(self) -> None:
        if not self.requires_grad:
            raise RuntimeError("retain_grad: this tensor does not require grad")
        self._retains_grad = self._ctx is not None

    def register_hook(self, hook):
        """hook(grad) runs when backward reaches this tensor; it may return a new gradient.
        Returns a handle whose .remove() takes the hook off again."""
        if not self.requires_grad:
            raise RuntimeError("register_hook: this tensor does not require grad")
        self._hooks = (*(self._hooks or ()), hook)
        return HookHandle(self, hook)

    def __eq__(self, other):
        return Tensor(self.data == _raw(other))

    def __ne__(self, other):
        return Tensor(self.data != _raw(other))

    def __lt__(self, other):
        return Tensor(self.data < _raw(other))

    def __le__(self, other):
        return Tensor(self.data <= _raw(other))

    def __gt__(self, other):
        return Tensor(self.data > _raw(other))

    def __ge__(self, other):
        return Tensor(self.data >= _raw(other))

    def __bool__(self) -> bool:
        if self.data.size != 1:
            raise RuntimeError(
                f"bool: the truth value of a tensor of shape {self.shape} is ambiguous; "
                "use .all() on .data, or compare .item()"
            )
        return bool(self.data)

    def __float__(self) -> float:
        return float(self.item())

    # --- chapter 12: what the capstone needs ------------------------------------------------

    def argmax(self, dim=None, keepdim: bool = False, *, axis=None):
        return Tensor(argmax(self.data, dim=dim_or_axis(dim, axis, "argmax"), keepdim=keepdim))

    # --- chapter 13: attention --------------------------------------------------------------

    def masked_fill(self, mask, value):
        return masked_fill(self, mask, value)

    def topk(self, k: int, dim: int = -1, largest: bool = True, sorted: bool = True):  # noqa: A002
        return topk(self, k, dim, largest, sorted)

    def contiguous(self):
        return self if self.data.flags.c_contiguous else Contiguous.apply(self)

    def __setitem__(self, index, value):
        overwrite(self, "setitem", value, index)

    def numel(self) -> int:
        return self.data.size

    def split(self, split_size_or_sections, dim: int = 0) -> tuple:
        return split(self, split_size_or_sections, dim)

    def size(self, dim=None):
        return self.shape if dim is None else self.shape[dim]


def _raw(x):
    return x.data if isinstance(x, Tensor) else x


# Ops need Tensor, so they are imported after it; the methods above look them up at call time.
from minilucid._views import Contiguous, HookHandle, as_view, readable, split  # noqa: E402
from minilucid.autograd import backward  # noqa: E402
from minilucid.ops.alike import plain  # noqa: E402
from minilucid.ops.attention import masked_fill  # noqa: E402
from minilucid.ops.elementwise import Add, Div, Mul, Neg, Pow, Sub  # noqa: E402
from minilucid.ops.inplace import overwrite, update  # noqa: E402
from minilucid.ops.linalg import MatMul  # noqa: E402
from minilucid.ops.reduce import Max, Mean, Min, Sum, argmax  # noqa: E402
from minilucid.ops.sampling import topk  # noqa: E402
from minilucid.ops.shape import GetItem, Permute, Reshape  # noqa: E402
from minilucid.ops.softmax import LogSoftmax, Softmax  # noqa: E402
from minilucid.ops.unary import Abs, Clamp, Exp, Log, Relu, Sigmoid, Sqrt, Tanh  # noqa: E402
