"""What every chapter's checks share: running learner code, and saying what is wrong in one place.

A check raises `AssertionError` with a plain message (which input, expected versus got, what to
try) when an answer is wrong, and lets `NotImplementedError` through when the stub is untouched.
In a notebook the guard (`minilucid_course.checks.guard`) turns those into `CheckFailed` and
`NotDone`, which IPython shows as their message alone: no traceback through the checker, so none
of its test cases or expected values.

    from minilucid_course.checks.common import call

    order = call("your topological_order(loss)", topological_order, loss, returns=list)
"""

from __future__ import annotations

from types import MappingProxyType

import numpy as np

NOT_DONE = (
    "not done yet: {what} still raises NotImplementedError. Write your answer in its cell, run "
    "that cell, then run this one again."
)


class CheckFailed(AssertionError):
    """A failed check. Jupyter shows its message alone, not a traceback through the checker."""

    def _render_traceback_(self) -> list[str]:
        lines = str(self).splitlines() or ["the check failed"]
        return ["✗ " + lines[0], *lines[1:]]


class NotDone(NotImplementedError):
    """An exercise whose stub is untouched: one line, "not done yet"."""

    def _render_traceback_(self) -> list[str]:
        return [str(self)]


def type_name(value) -> str:
    return "None" if value is None else type(value).__name__


def call(what: str, fn, *args, returns: type | tuple | None = None, hint: str = "", **kwargs):
    """Run learner code `fn(*args, **kwargs)`, described to the learner as `what`.

    NotImplementedError passes through (not done yet); an AssertionError the learner's code
    raises, a crash, a recursion limit, or (with `returns`) a result of another type becomes an
    AssertionError of one plain line. NumPy's warnings are silenced while it runs: a check
    judges results, and a warning printed to stderr would cost the points under nbgrader.
    """
    try:
        with np.errstate(all="ignore"):
            result = fn(*args, **kwargs)
    except NotImplementedError:
        raise
    except RecursionError:
        raise AssertionError(
            f"{what} hit Python's recursion limit (RecursionError). Walk the graph with an "
            "explicit stack - a list you append to and pop from - instead of recursive calls."
        ) from None
    except Exception as error:  # the learner's own bug, in one line
        text = str(error).strip().splitlines()
        message = f"{what} raised {type(error).__name__}" + (f": {text[0]}" if text else "")
        message = message.rstrip(".") + f". {hint}" if hint else message
        raise AssertionError(message) from None
    if returns is not None and not isinstance(result, returns):
        wanted = (
            " or ".join(t.__name__ for t in returns)
            if isinstance(returns, tuple)
            else returns.__name__
        )
        extra = " (did you forget `return`?)" if result is None else ""
        raise AssertionError(
            f"{what} returned {type_name(result)}{extra}; it should return a {wanted}"
        )
    return result


def not_the_package_inside(what: str, obj, packaged: tuple, name: str) -> None:
    """Refuse an answer object that keeps the package's own version of what the exercise builds
    (an Adam inside MyAdam, say): its results would be right and nothing of it the learner's.
    Looks at the object's attributes and one level into the lists, tuples and dicts they hold."""
    seen = list(vars(obj).values()) if hasattr(obj, "__dict__") else []
    for value in list(seen):
        if isinstance(value, (list, tuple)):
            seen += list(value)
        elif isinstance(value, dict):
            seen += list(value.values())
    for value in seen:
        if isinstance(value, packaged) and not isinstance(value, type(obj)):
            raise AssertionError(
                f"{what} keeps minilucid's own {type(value).__name__} and lets it do the work; "
                f"write {name} yourself (the exercise is the update, not a call to the package)"
            )


def number(x) -> str:
    """A number as a check prints it: six significant digits."""
    return f"{float(x):.6g}"


# --- the cases a check runs: frozen at import, read from the frozen copy -------------------
#
# A check's case lists live in its module as `NAME = frozen(__name__, "NAME", [...])`, and the
# check reads them with `cases_of(__name__, "NAME")`. The module attribute is a tuple (or a
# read-only mapping) that cannot be cleared, and the check does not read it: an answer cell that
# empties or replaces it (`checks.ch03.GRAPHS = ()`) changes nothing. No cases: the check fails.

_REGISTRY: dict[tuple[str, str], object] = {}
REGISTERED = MappingProxyType(_REGISTRY)  # what the tests look at: read-only


def _freeze(value):
    if isinstance(value, dict | MappingProxyType):
        return MappingProxyType({k: _freeze(v) for k, v in value.items()})
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # a namedtuple keeps its type
        return type(value)(*(_freeze(v) for v in value))
    if isinstance(value, list | tuple):
        return tuple(_freeze(v) for v in value)
    if isinstance(value, set | frozenset):
        return frozenset(value)
    if isinstance(value, np.ndarray):
        value = value.copy()
        value.flags.writeable = False
    return value


def frozen(module: str, name: str, items):
    """Register a check's cases under (module, name), frozen all the way down; return them."""
    value = _freeze(items)
    if len(value) == 0:
        raise ValueError(f"{module}.{name}: a check needs at least one case")
    _REGISTRY[(module, name)] = value
    return value


def cases_of(module: str, name: str):
    """The frozen cases registered as (module, name); never none."""
    value = _REGISTRY.get((module, name))
    if value is None or len(value) == 0:
        raise AssertionError(
            f"this check found no cases to run ({name}): its case list was changed. Restart the "
            "kernel and run the notebook again from the top, without changing the checks."
        )
    return value
