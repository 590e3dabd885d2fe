"""Short, deterministic words for arrays and tensors, shared by the pictures and their listings."""

import numpy as np

from minilucid.tensor import Tensor


def _values(a, limit: int = 6) -> str:
    """The entries when there are at most `limit` of them, else the range."""
    a = np.asarray(a)
    if a.size <= limit:
        text = np.array2string(
            a, precision=4, separator=", ", suppress_small=True, max_line_width=120
        )
        return text
    return f"min {a.min():.4g}, max {a.max():.4g}"


def _one_line(text: str) -> str:
    return " ".join(part.strip() for part in text.splitlines())


def _summary(a) -> str:
    """A gradient on an edge: its entries when few, else its shape and largest magnitude."""
    a = np.asarray(a)
    if a.size <= 4:
        return _one_line(_values(a))
    return f"{a.shape} max|g| {np.abs(a).max():.3g}"


def _meta(t: Tensor) -> str:
    return f"{t.shape} {t.dtype}"


def _roles(t: Tensor, root: Tensor) -> list:
    """output / leaf or parameter / requires grad: what tells a node apart."""
    roles = ["output"] if t is root else []
    if t._ctx is None:
        roles.append("parameter" if type(t).__name__ == "Parameter" else "leaf")
        if t.requires_grad:
            roles.append("requires grad")
    return roles


def _constant(x, name: str = "") -> str:
    """A plain number or array an op consumed: its values when few, else what it is
    (`int64 (32,) targets`: dtype, shape and the name the op gives that input)."""
    if np.ndim(x):
        if np.size(x) > 4:
            return f"{np.asarray(x).dtype} {np.shape(x)} {name if len(name) > 1 else 'array'}"
        return _one_line(_values(x, limit=4))
    return repr(x.item() if isinstance(x, np.ndarray | np.generic) else x)


def _summed(before, after) -> str:
    return f"sum over broadcast {tuple(before)} -> {tuple(after)}"


def _short(a, limit: int = 6, width: int = 32) -> str:
    """The values on one line for a node: the entries when few and short, else the range."""
    a = np.asarray(a)
    if a.size <= limit:
        text = _one_line(_values(a, limit))
        if len(text) <= width:
            return text
    if a.size == 0:
        return "empty"
    return f"min {a.min():.4g}, max {a.max():.4g}"


def _heat(a, rows: int = 8, cols: int = 12) -> list | None:
    """A gradient of more than 4 entries as a small grid for a heat map: at most rows x cols
    block means, each scaled by the largest magnitude to -1..1 (None for 4 entries or fewer)."""
    a = np.asarray(a, dtype=np.float64)
    if a.size <= 4:
        return None
    grid = a.reshape(1, -1) if a.ndim < 2 else a.reshape(a.shape[0], -1)
    grid = _blocks(_blocks(grid, rows).T, cols).T
    top = np.abs(grid).max()
    scaled = grid / top if top > 0 else grid
    return [[round(float(v), 2) for v in row] for row in scaled]


def _blocks(grid, most: int):
    """The rows of grid averaged in at most `most` nearly equal blocks."""
    if len(grid) <= most:
        return grid
    return np.stack([part.mean(axis=0) for part in np.array_split(grid, most)])
