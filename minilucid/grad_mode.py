"""Switching graph building off and on: `no_grad`, `enable_grad`, `set_grad_enabled`.

Also the clock of in-place changes, which every recorded op reads (see `minilucid.ops.inplace`).
"""

import functools


class _GradMode:
    __slots__ = ("enabled", "replaying")

    def __init__(self) -> None:
        self.enabled = True
        self.replaying = None  # under create_graph, the op whose backward runs on tensors


GRAD_MODE = _GradMode()  # read by Function.apply on every op


class _Versions:
    __slots__ = ("clock", "stamps", "limit")

    def __init__(self) -> None:
        self.clock = 0  # advanced by every in-place change
        self.stamps = {}  # id(array) -> (weak reference to it, clock of its last change, op)
        self.limit = 1000  # the size of `stamps` at which dead arrays are next swept out


VERSIONS = _Versions()  # Function.apply notes VERSIONS.clock in every op it records


def is_grad_enabled() -> bool:
    return GRAD_MODE.enabled


class set_grad_enabled:  # noqa: N801  (a context manager named like PyTorch's)
    """Within the block, ops record the graph only if `mode` is True; restores on exit."""

    def __init__(self, mode: bool) -> None:
        self.mode = bool(mode)
        self.previous = GRAD_MODE.enabled
        GRAD_MODE.enabled = self.mode

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc) -> None:
        GRAD_MODE.enabled = self.previous


class no_grad:  # noqa: N801
    """`with no_grad():` ops inside build no graph - for evaluation and parameter updates.
    `@no_grad()` on a function runs every call of it that way."""

    def __call__(self, function):
        @functools.wraps(function)
        def without_grad(*args, **kwargs):
            with no_grad():
                return function(*args, **kwargs)

        return without_grad

    def __enter__(self) -> None:
        self.previous = GRAD_MODE.enabled
        GRAD_MODE.enabled = False

    def __exit__(self, *exc) -> None:
        GRAD_MODE.enabled = self.previous


class enable_grad:  # noqa: N801
    """`with enable_grad():` turns graph building back on inside a `no_grad` block."""

    def __enter__(self) -> None:
        self.previous = GRAD_MODE.enabled
        GRAD_MODE.enabled = True

    def __exit__(self, *exc) -> None:
        GRAD_MODE.enabled = self.previous
