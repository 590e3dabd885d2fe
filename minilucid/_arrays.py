"""Helpers on Python data, arrays, shapes and dims that need no Tensor.

They import nothing of minilucid, so every module of the engine (the tensor, the op abstraction,
each ops module) can use them without joining an import circle.
"""

import numpy as np

float32 = np.dtype("float32")


def as_array(data, dtype, where: str) -> np.ndarray:
    """Python data becomes float32 (ints stay int64), NumPy arrays and scalars keep their dtype."""
    if dtype is not None:
        dtype = np.dtype(dtype)
    if isinstance(data, np.ndarray | np.generic):
        array = np.asarray(data)
    else:
        try:
            array = np.array(data)
        except ValueError:
            raise ValueError(
                f"{where}: the nested lists are ragged - every row must have the same length "
                f"(got {_ragged_place(data)}). Pad the rows or build one tensor per row."
            ) from None
        if dtype is None and array.dtype.kind == "f":
            dtype = float32
    if array.dtype.kind not in "biuf":  # bool, int, unsigned int, float
        raise TypeError(
            f"{where}: cannot make a tensor from {type_name(data)} data of dtype "
            f"{array.dtype}; use numbers, (nested) lists of numbers or a NumPy array of numbers"
        )
    return array if dtype is None or array.dtype == dtype else array.astype(dtype)


def _ragged_place(data) -> str:
    """Where nested lists first disagree, level by level: 'row lengths 2, 1' at the top level,
    else the two entries (by index path) whose lengths differ."""
    level = [(f"[{i}]", row) for i, row in enumerate(data)]
    top = True
    while level:
        sizes = [_len(x) for _, x in level]
        if len(set(sizes)) > 1:
            if top:
                return "row lengths " + ", ".join(_size(n) for n in sizes)
            odd = next(k for k, n in enumerate(sizes) if n != sizes[0])
            return (
                f"the entry {level[odd][0]} {_has(sizes[odd])}, "
                f"the entry {level[0][0]} {_has(sizes[0])}"
            )
        if sizes[0] is None:
            break
        level = [(f"{path}[{j}]", item) for path, row in level for j, item in enumerate(row)]
        top = False
    return "rows of different lengths"


def _len(x):
    return len(x) if isinstance(x, list | tuple) else None


def _size(n) -> str:
    return "scalar" if n is None else str(n)


def _has(n) -> str:
    return "is a number" if n is None else f"has length {n}"


def type_name(x) -> str:
    kind, module = type(x), type(x).__module__
    return kind.__name__ if module == "builtins" else f"{module}.{kind.__qualname__}"


def dim_or_axis(dim, axis, op: str):
    """PyTorch's `dim`, with NumPy's `axis` accepted as an alias."""
    if axis is not None:
        if dim is not None:
            raise TypeError(f"{op}: give dim or axis, not both (they mean the same)")
        return axis
    return dim


def shape_args(shape: tuple) -> tuple:
    """Accept both t.reshape(2, 3) and t.reshape((2, 3))."""
    if len(shape) == 1 and isinstance(shape[0], tuple | list):
        return tuple(shape[0])
    return tuple(shape)


def checked_axis(dim: int, ndim: int, op: str) -> int:
    size = max(ndim, 1)  # as in torch, a 0-d tensor accepts dim 0 and -1
    if not -size <= dim < size:
        low, high = -size, size - 1
        raise IndexError(
            f"{op}: dim {dim} is out of range for a tensor with {ndim} dimensions "
            f"(use {low} to {high})"
        )
    return dim % size


def flat_shape(shape: tuple, start: int, end: int) -> tuple:
    if not shape:
        return (1,)
    start = checked_axis(start, len(shape), "flatten")
    end = checked_axis(end, len(shape), "flatten")
    return (*shape[:start], int(np.prod(shape[start : end + 1])), *shape[end + 1 :])


def unsqueezed_shape(shape: tuple, dim: int) -> tuple:
    dim = checked_axis(dim, len(shape) + 1, "unsqueeze")
    return (*shape[:dim], 1, *shape[dim:])


def squeezed_shape(shape: tuple, dim) -> tuple:
    if dim is None:
        return tuple(s for s in shape if s != 1)
    dim = checked_axis(dim, len(shape), "squeeze")
    if not shape or shape[dim] != 1:  # a 0-d tensor, or a dimension that is not 1: unchanged
        return shape
    return (*shape[:dim], *shape[dim + 1 :])


def swapped_dims(ndim: int, dim0: int, dim1: int) -> tuple:
    dims = list(range(ndim))
    a, b = checked_axis(dim0, ndim, "transpose"), checked_axis(dim1, ndim, "transpose")
    dims[a], dims[b] = dims[b], dims[a]
    return tuple(dims)


def checked_axes(dim, ndim: int, op: str) -> tuple:
    """dim None, an int or a tuple of ints -> a sorted tuple of non-negative axes."""
    if dim is None or (isinstance(dim, tuple | list) and not dim):  # dim=(): all, as PyTorch
        return tuple(range(ndim))
    dims = dim if isinstance(dim, tuple | list) else (dim,)
    axes = tuple(sorted({checked_axis(d, ndim, op) for d in dims}))
    if ndim == 0:  # a 0-d tensor reduces over nothing
        return ()
    return axes


def geometry(view: np.ndarray, base: np.ndarray) -> tuple:
    """Where `view`'s numbers lie in `base`'s memory, as plain numbers: (byte offset from base's
    first number, view's shape and strides, base's shape and strides, the item size)."""
    start = view.__array_interface__["data"][0] - base.__array_interface__["data"][0]
    return (start, view.shape, view.strides, base.shape, base.strides, base.itemsize)


def positions(where: tuple) -> np.ndarray:
    """For each number of a view (its shape), its flat index in its base (C order), from
    `geometry`: a view's numbers are the base numbers at the same addresses."""
    start, shape, strides, base_shape, base_strides, item = where
    at = _addresses(shape, strides) + start
    if base_strides == _c_strides(base_shape, item):
        return at // item
    base_at = _addresses(base_shape, base_strides).ravel()
    order = np.argsort(base_at, kind="stable")
    return order[np.searchsorted(base_at[order], at)]


def _addresses(shape: tuple, strides: tuple) -> np.ndarray:
    at = np.zeros(shape, dtype=np.int64)
    for axis, (size, stride) in enumerate(zip(shape, strides, strict=True)):
        step = np.arange(size, dtype=np.int64) * stride
        at += step.reshape((size,) + (1,) * (len(shape) - axis - 1))
    return at


def _c_strides(shape: tuple, item: int) -> tuple:
    strides, step = [], item
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1)
    return tuple(reversed(strides))
