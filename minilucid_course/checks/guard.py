"""Grading that holds: in a notebook, a check runs as shipped, on the engine as shipped.

Importing any chapter's checks in IPython (an exercise notebook's first cell does) installs one
guard per kernel. Before and after every cell it

1. records, the first time it sees them, the functions and classes of minilucid, of the course's
   checks, of NumPy's top level and of Python's builtins (which object each name holds, each
   class's methods, each function's code and defaults), and refuses a minilucid function whose
   code was written in the notebook (a change made before the checks were imported);
2. compares them with that record: a replaced `autograd.backward`, `Tensor.__add__`, checker
   function or `np.allclose` is a change, remembered until the kernel restarts;
3. binds each `check_*` name the notebook imported to a guarded copy of the real check, and puts
   it back when a cell rebinds the name (a redefined check is remembered too).

A guarded check fails, and so scores nothing under `nbgrader autograde`, when anything above
changed or its own name was redefined. Otherwise it runs the real check with a time limit and
turns what it raises into one plain message (`CheckFailed`, `NotDone`: no traceback through the
checker). Whatever the check returns is displayed, never left as the cell's value (nbgrader reads
a check cell's value as a partial grade). An untouched stub called in a check cell itself says
"not done yet" in one line too.

The guard holds the real objects in closures, not in module globals a cell could rebind. It keeps
honest learners' grades honest and stops the cheats one writes in an answer cell; it is not a
sandbox against code written to take the Python process apart (nbgrader runs learner code with
the teacher's rights, and says so).
"""

from __future__ import annotations

import functools
import signal
import sys
import threading
import types

from minilucid_course.checks.common import NOT_DONE, CheckFailed, NotDone

TIME_LIMIT = 60.0  # seconds a check (with the learner code it runs) may take
WATCHED = ("minilucid", "minilucid_course")  # packages recorded in full
TOP_LEVEL_ONLY = ("numpy", "builtins")  # modules whose own names are recorded
CHECK_MODULES = "minilucid_course.checks."
BUILTIN_KINDS = (types.BuiltinFunctionType, type)
PICTURE_REPRS = ("_repr_mimebundle_", "_repr_svg_", "_repr_png_", "_repr_html_")
_MISSING = object()


class TimeLimit(BaseException):
    """Raised in the learner's code when a check runs too long (BaseException: not swallowed)."""


def _same(a, b) -> bool:
    return a is b


def _watched(name: str) -> bool:
    return any(name == p or name.startswith(p + ".") for p in WATCHED) or name in TOP_LEVEL_ONLY


def _written_in_notebook(fn) -> bool:
    filename = getattr(getattr(fn, "__code__", None), "co_filename", "")
    return "ipykernel_" in filename or filename.startswith("<ipython-input")


def _functions_in(value) -> list:
    """The plain functions a class attribute or module name stands for."""
    if isinstance(value, property):
        return [f for f in (value.fget, value.fset, value.fdel) if f is not None]
    if isinstance(value, (staticmethod, classmethod)):
        return [value.__func__]
    if isinstance(value, types.FunctionType):
        return [value]
    return []


class Record:
    """Which object each watched name holds, recorded once, compared on demand."""

    def __init__(self):
        self.entries: list[tuple[str, object, object]] = []  # (what, getter, expected)
        self.modules: set[str] = set()
        self.early: list[str] = []  # minilucid functions already written in the notebook

    def add_new_modules(self) -> None:
        for name, module in list(sys.modules.items()):
            if name in self.modules or not isinstance(module, types.ModuleType):
                continue
            if not _watched(name):
                continue
            self.modules.add(name)
            self._add_module(name, module)

    def _add_module(self, name: str, module) -> None:
        full = name not in TOP_LEVEL_ONLY
        namespace = vars(module)
        for attr, value in list(namespace.items()):
            if not (callable(value) or isinstance(value, types.ModuleType)):
                continue
            if not full and name == "builtins" and not isinstance(value, BUILTIN_KINDS):
                continue  # IPython swaps exit, quit, get_ipython, display in and out per cell
            where = f"{name}.{attr}"
            self._add(where, lambda ns=namespace, a=attr: ns.get(a, _MISSING), value)
            if not full:
                continue
            self._add_functions(where, value)
            if isinstance(value, type) and value.__module__ == name:
                self._add_class(where, value)

    def _add_class(self, where: str, cls: type) -> None:
        members = cls.__dict__  # a live view
        for attr, value in list(members.items()):
            if attr in ("__dict__", "__weakref__", "__doc__", "__module__"):
                continue
            if not (callable(value) or isinstance(value, (property, staticmethod, classmethod))):
                continue
            here = f"{where}.{attr}"
            self._add(here, lambda m=members, a=attr: m.get(a, _MISSING), value)
            self._add_functions(here, value)

    def _add_functions(self, where: str, value) -> None:
        for fn in _functions_in(value):
            if _written_in_notebook(fn):
                self.early.append(where)
            parts = (fn.__code__, fn.__defaults__, fn.__kwdefaults__)
            self._add(
                f"{where} (its code)",
                lambda f=fn: (f.__code__, f.__defaults__, f.__kwdefaults__),
                parts,
            )

    def _add(self, what: str, getter, expected) -> None:
        self.entries.append((what, getter, expected))

    def changes(self) -> list[str]:
        changed = list(self.early)
        for what, getter, expected in self.entries:
            now = getter()
            if isinstance(expected, tuple) and isinstance(now, tuple):
                same = len(now) == len(expected) and all(
                    a is b for a, b in zip(now, expected, strict=True)
                )
            else:
                same = now is expected
            if not same:
                changed.append(what)
        return changed


def _learner_frame(tb):
    """The innermost traceback frame in notebook code (or the innermost of all)."""
    found = last = None
    while tb is not None:
        last = tb
        if _written_in_notebook(types.SimpleNamespace(__code__=tb.tb_frame.f_code)):
            found = tb
        tb = tb.tb_next
    return found or last


def _not_done_line(tb) -> str:
    frame = _learner_frame(tb)
    name = frame.tb_frame.f_code.co_name if frame is not None else "<module>"
    what = "your answer" if name == "<module>" else f"your {name}"
    return NOT_DONE.format(what=what)


def _with_time_limit(seconds: float, run):
    usable = hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
    if not usable:  # Windows, or a worker thread: no alarm clock
        return run()

    def on_alarm(signum, frame):
        raise TimeLimit()

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return run()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _plain_failure(error: BaseException, limit: float) -> BaseException:
    """What a check or the learner's code raised, as the one message the learner sees."""
    if isinstance(error, (CheckFailed, NotDone)):
        return error
    if isinstance(error, NotImplementedError):
        return NotDone(_not_done_line(error.__traceback__))
    if isinstance(error, AssertionError):
        return CheckFailed(str(error).strip() or "the check failed")
    if isinstance(error, TimeLimit):
        return CheckFailed(
            f"your code did not finish within {limit:g} seconds: an endless loop? Look for a "
            "loop whose condition never changes, or a graph walk that revisits tensors."
        )
    if isinstance(error, RecursionError):
        return CheckFailed(
            "your code hit Python's recursion limit (RecursionError). Walk the graph with an "
            "explicit stack instead of recursive calls."
        )
    frame = _learner_frame(error.__traceback__)
    where = ""
    if frame is not None and frame.tb_frame.f_code.co_name != "<module>":
        where = f" in {frame.tb_frame.f_code.co_name}"
    text = str(error).strip().splitlines()
    return CheckFailed(
        f"your code raised {type(error).__name__}{where}" + (f": {text[0]}" if text else "")
    )


def _changed_message(changes: list[str]) -> str:
    shown = ", ".join(changes[:3]) + (f" and {len(changes) - 3} more" if len(changes) > 3 else "")
    return (
        f"this notebook changed {shown}. The checks trust only minilucid, the checks and NumPy "
        "as they ship: remove that change, restart the kernel and run all cells."
    )


def _redefined_message(name: str) -> str:
    return (
        f"`{name}` was redefined in this notebook, and a check cannot be replaced: remove that "
        "definition, restart the kernel and run all cells."
    )


def _make_guard(shell):
    """The guard's state and functions, closed over (nothing a cell can rebind by name)."""
    record = Record()
    changed: list[str] = []  # sticky: once changed, always changed (until a restart)
    genuine: dict[str, object] = {}  # user_ns name -> the real object the notebook imported
    bound: dict[str, object] = {}  # user_ns name -> what the guard binds there
    redefined: set[str] = set()
    display = None

    def look() -> None:
        for what in record.changes():
            if what not in changed:
                changed.append(what)
        record.add_new_modules()
        protect_names()

    def protect_names() -> None:
        ns = shell.user_ns
        for name, value in list(ns.items()):
            if name in bound:
                if value is bound[name]:
                    continue
                if value is not genuine[name]:
                    redefined.add(name)  # rebound to something else: put the check back
                ns[name] = bound[name]
                continue
            module = sys.modules.get(getattr(value, "__module__", None) or "")
            if module is None or not module.__name__.startswith(CHECK_MODULES):
                continue
            if name.startswith("_") or getattr(module, name, None) is not value:
                continue
            genuine[name] = value
            bound[name] = guarded(name, value) if name.startswith("check_") else helper(value)
            ns[name] = bound[name]

    def guarded(name: str, check):
        @functools.wraps(check)
        def run_check(*args, **kwargs):
            look()
            if changed:
                raise CheckFailed(_changed_message(changed))
            if name in redefined:
                raise CheckFailed(_redefined_message(name))
            try:
                result = _with_time_limit(TIME_LIMIT, lambda: check(*args, **kwargs))
            except KeyboardInterrupt:
                raise
            except BaseException as error:  # noqa: B036 - TimeLimit too; all become one line
                failure = _plain_failure(error, TIME_LIMIT)
                look()
                if changed:  # the learner's code changed something while the check ran
                    raise CheckFailed(_changed_message(changed)) from None
                raise failure from None
            look()
            if changed:
                raise CheckFailed(_changed_message(changed))
            if result is not None:
                show(result)
            return None

        return run_check

    def helper(fn):
        """A checker's helper (a picture of the learner's op, a graph to work on): its errors in
        one line, and a picture it returns displayed rather than left as the cell's value."""
        if not callable(fn) or isinstance(fn, type):
            return fn

        @functools.wraps(fn)
        def run_helper(*args, **kwargs):
            try:
                result = _with_time_limit(TIME_LIMIT, lambda: fn(*args, **kwargs))
            except KeyboardInterrupt:
                raise
            except BaseException as error:  # noqa: B036 - TimeLimit too
                raise _plain_failure(error, TIME_LIMIT) from None
            if any(hasattr(result, r) for r in PICTURE_REPRS):
                show(result)
                return None
            return result

        return run_helper

    def show(value) -> None:
        nonlocal display
        if display is None:
            from IPython.display import display as ipython_display

            display = ipython_display
        display(value)

    def not_done(shell_, etype, value, tb, tb_offset=None):
        """IPython's handler for what an unanswered exercise raises in a cell: one line.

        A stub's NotImplementedError; or a NameError in a cell's own top-level code, as when a
        check cell names a class the learner has not written (and run) yet.
        """
        if isinstance(value, NameError):
            if _learner_frame(tb).tb_frame.f_code.co_name != "<module>":
                shell_.showtraceback((etype, value, tb))  # a bug inside a function: as usual
                return []
            name = getattr(value, "name", None) or str(value)
            value = NotDone(
                f"not done yet: `{name}` is not defined. Write the answer that defines it, run "
                "its cell, then run this one again."
            )
            etype = NotDone
        elif not hasattr(value, "_render_traceback_"):
            line = _not_done_line(tb)
            value = NotDone(line)
            etype = NotDone
        shell_.showtraceback((etype, value, tb))
        return value._render_traceback_()

    return look, not_done


_installed_in: set[int] = set()


def install(shell=None) -> bool:
    """Guard the checks in this IPython kernel (once); False when not running in IPython."""
    if shell is None:
        try:
            from IPython import get_ipython
        except ImportError:
            return False
        shell = get_ipython()
    if shell is None or id(shell) in _installed_in:
        return shell is not None
    look, not_done = _make_guard(shell)
    shell.events.register("pre_run_cell", lambda *args: look())
    shell.events.register("post_run_cell", lambda *args: look())
    shell.set_custom_exc((NotImplementedError, NameError), not_done)
    _installed_in.add(id(shell))
    return True
