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


# --- probes and judges (minilucid_course.checks.exercise) -----------------------------------


def attempt(fn, *args, **kwargs):
    """For a probe: run learner code and return ("ok", result) or ("raised", type, first line).

    NotImplementedError passes through (not done yet). The result is the learner's object: the
    probe turns it into plain data before it returns.
    """
    try:
        with np.errstate(all="ignore"):
            return ("ok", fn(*args, **kwargs))
    except NotImplementedError:
        raise
    except RecursionError:
        return ("raised", "RecursionError", "maximum recursion depth exceeded")
    except Exception as error:  # the learner's own bug, kept as data
        text = str(error).strip().splitlines()
        return ("raised", type(error).__name__, text[0][:300] if text else "")


def raised_message(what: str, record, hint: str = "") -> str | None:
    """For a judge: the one-line message for a ("raised", ...) record, or None for ("ok", ...)."""
    if record[0] != "raised":
        return None
    _, name, text = record
    if name == "RecursionError":
        return (
            f"{what} hit Python's recursion limit (RecursionError): it needs one nested call "
            "per tensor along the chain. What could keep the tensors still to visit instead?"
        )
    message = f"{what} raised {name}" + (f": {text}" if text else "")
    return message.rstrip(".") + f". {hint}" if hint else message


def graph_tensors(root) -> list:
    """Every tensor `root` was computed from (constants included, root first), each once, in an
    order fixed by how the graph was built: a probe and a judge that build the same graph get
    the same list, so an order of tensors travels between them as indices into it."""
    from minilucid.tensor import Tensor

    nodes, seen, stack = [], set(), [root]
    while stack:
        t = stack.pop()
        if id(t) in seen:
            continue
        seen.add(id(t))
        nodes.append(t)
        if t._ctx is not None:
            stack.extend(p for p in reversed(t._ctx.parents) if isinstance(p, Tensor))
    return nodes


def judged_entry(entry, where: str, said: str | None = None) -> dict:
    """For a judge: one case's entry of probe data, a dict; Wrong when it is damaged or records
    what the learner's code raised (`said`: how the message names the call, `where` by default;
    a record of four items starts with the name of the call that raised)."""
    from minilucid_course.checks.exercise import Wrong

    if not isinstance(entry, dict):
        raise Wrong(f"the results of your answer hold nothing for {where}")
    if "raised" not in entry:
        return entry
    record = entry["raised"]
    if not isinstance(record, list) or len(record) not in (3, 4) or record[-3] != "raised":
        raise Wrong(f"the results of your answer hold nothing for {where}")
    record = [str(r) for r in record]
    said = f"{record[0]} for {where}" if len(record) == 4 else (said or where)
    raise Wrong(raised_message(said, record[-3:]))


def judged_cases(data, key: str, n: int) -> list:
    """For a judge: data[key], one entry per case, or fewer when the last one is what the
    answer raised (a probe stops at the first case the learner's code raises on); Wrong for
    anything else."""
    from minilucid_course.checks.exercise import Wrong

    items = data.get(key) if isinstance(data, dict) else None
    if not isinstance(items, list) or not items or len(items) > n:
        raise Wrong(f"the results of your answer hold no {key} for the {n} cases of the check")
    if len(items) < n and not (isinstance(items[-1], dict) and "raised" in items[-1]):
        raise Wrong(f"the results of your answer hold no {key} for the {n} cases of the check")
    return items


def attempt_each(calls, fn, convert) -> list:
    """For a probe: convert(result, *args) of fn(*args) for each args of `calls` (a lazy
    iterable, so that each case can be made just before its call), up to the first call that
    raises, whose record ends the list as {"raised": [...]}."""
    out = []
    for args in calls:
        record = attempt(fn, *args)
        if record[0] == "raised":
            out.append({"raised": list(record)})
            break
        out.append(convert(record[1], *args))
    return out


def chapter_register(chapter: str):
    """register(Exercise(...)) for one chapter's exercises, positional and short: the check's
    name, its title, probe, judge; the cases are the seed alone unless given."""

    def add(check: str, title: str, probe, judge, **more):
        from minilucid_course.checks.exercise import Exercise, register

        more.setdefault("cases", lambda seed: {"seed": seed})
        exercise = Exercise(
            check=check, chapter=chapter, title=title, probe=probe, judge=judge, **more
        )
        return register(exercise)

    return add


def float_array(x):
    """For a probe: a learner's numbers (a tensor's, an array's, a number) as a float64 array,
    or None when they are none or not numbers."""
    from minilucid.tensor import Tensor

    if isinstance(x, Tensor):
        x = x.data
    if not isinstance(x, np.ndarray | np.generic | int | float) or isinstance(x, bool):
        return None
    x = np.asarray(x)
    return np.array(x, dtype=np.float64) if x.dtype.kind in "biuf" else None
