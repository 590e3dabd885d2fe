"""Grading that holds: in a notebook, a check runs as shipped, on the engine as shipped.

Importing any chapter's checks in IPython (an exercise notebook's first cell does) installs one
guard per kernel. As each cell starts to run, and after it ends, it

1. records, the first time it sees them, the functions and classes of minilucid, of the course's
   checks and of the IPython kernel's own machinery (which object each name holds, each class's
   methods, each function's code and defaults), the names and code of NumPy's modules
   (`np.allclose`'s implementation, `np.testing`, ...), of `math` and of Python's builtins, and
   the kernel's input transformers, event callbacks and exception handlers; it refuses a
   minilucid function whose code was written in the notebook (a change made before the checks
   were imported);
2. compares them with that record: a replaced `autograd.backward`, `Tensor.__add__`, checker
   function, `np.allclose` (or its `__code__`), `math.isclose`, `isinstance`, an added input or
   AST transformer, event callback or exception handler, or a kernel method such as
   `showtraceback` is a change, remembered until the kernel restarts, and put back as it was
   (so a later check cell runs, and its failure shows, as shipped);
3. binds each `check_*` name the notebook imported to a guarded copy of the real check, and puts
   it back when a cell rebinds the name (a redefined check is remembered too).

An audit hook (Python's `sys.addaudithook`, which no later code can remove) sees what a cell does
as it does it: a class of the watched modules or a function's `__code__` written (even when the
cell puts it back before the check ends), a database opened, the gradebook or a notebook file
(the answer key) opened or handed to a program. The first two are changes; the last are refused
as well. It also looks as each notebook cell starts, so a check cell runs its check, or fails,
even when the events above were emptied.

A guarded check fails, and so scores nothing under `nbgrader autograde`, when anything above
changed or its own name was redefined; a check cell fails for the same reason before it runs.
Otherwise the check runs with a time limit and what it raises becomes one plain message
(`CheckFailed`, `NotDone`: no traceback through the checker). Whatever the check returns is
displayed, never left as the cell's value (nbgrader reads a check cell's value as a partial
grade). An untouched stub called in a check cell itself says "not done yet" in one line too.

The guard holds the real objects in closures, not in module globals a cell could rebind. It keeps
honest learners' grades honest and stops the cheats an answer cell can write; it is not a
sandbox against code written to take the Python process apart (reaching into the guard's
closures, replacing how the kernel runs a cell). docs/teaching.md says what grading guarantees;
`make audit` lists the hand-ins that try such things, for a person to read.
"""

from __future__ import annotations

import builtins
import functools
import os
import re
import signal
import sys
import threading
import types

from minilucid_course.checks.common import NOT_DONE, CheckFailed, NotDone

TIME_LIMIT = 60.0  # seconds a check (with the learner code it runs) may take
WATCHED = ("minilucid", "minilucid_course")  # packages recorded in full
# the kernel's own machinery, recorded in full: how a cell is transformed, run and reported
KERNEL_MODULES = (
    "IPython.core.interactiveshell",
    "IPython.core.events",
    "IPython.core.inputtransformer2",
    "IPython.core.displayhook",
    "IPython.core.displaypub",
    "IPython.core.ultratb",
    "IPython.core.compilerop",
    "IPython.core.history",
    "ipykernel.zmqshell",
    "ipykernel.ipkernel",
    "ipykernel.kernelbase",
    "ipykernel.displayhook",
    "ipykernel.iostream",
    "jupyter_client.session",
)
NAMES_AND_CODE = ("numpy",)  # these packages: every module's names and its functions' code
TOP_LEVEL_ONLY = ("math", "builtins")  # modules whose own names are recorded
# parts of the kernel reached from the shell; (attribute path, lists it keeps in order)
SHELL_PARTS = (
    ((), ("input_transformers_post", "ast_transformers")),
    (("events",), ()),
    (("input_transformer_manager",), ("cleanup_transforms", "line_transforms")),
    (("displayhook",), ()),
    (("displayhook", "session"), ()),
    (("displayhook", "pub_socket"), ()),
    (("display_pub",), ()),
    (("kernel",), ()),
    (("kernel", "session"), ()),
    (("compile",), ()),
    (("InteractiveTB",), ()),
    (("history_manager",), ()),
)
SHELL_VALUES = ("custom_exceptions", "CustomTB")  # plain attributes of the shell
CODE_ATTRIBUTES = ("__code__", "__defaults__", "__kwdefaults__")
ANSWER_KEYS = (".ipynb", "gradebook.db")  # files an answer never opens
# what an answer never does: its audit events (a database, a file, a program started)
REFUSED_EVENTS = ("open", "sqlite3.connect", "subprocess.Popen", "os.system", "os.posix_spawn")
REFUSED_EVENTS += ("os.exec", "os.spawn", "os.fork", "os.forkpty", "pty.spawn")
# the programs the course itself starts: Graphviz's, and fontconfig's (matplotlib's first font
# cache, as in a fresh grading folder)
ALLOWED_PROGRAMS = ("dot", "neato", "twopi", "circo", "fdp", "sfdp", "osage", "patchwork")
ALLOWED_PROGRAMS += ("fc-list", "fc-match")
CHECK_MODULES = "minilucid_course.checks."
BUILTIN_KINDS = (types.BuiltinFunctionType, type)
PICTURE_REPRS = ("_repr_mimebundle_", "_repr_svg_", "_repr_png_", "_repr_html_")
_MISSING = object()


class TimeLimit(BaseException):
    """Raised in the learner's code when a check runs too long (BaseException: not swallowed)."""


def _in(name: str, packages) -> bool:
    return any(name == p or name.startswith(p + ".") for p in packages)


def _how_watched(name: str) -> str | None:
    """ "full", "code" (names and functions' code), "names", or None for a module left alone."""
    if _in(name, WATCHED) or name in KERNEL_MODULES:
        return "full"
    if _in(name, NAMES_AND_CODE):
        return "code"
    return "names" if name in TOP_LEVEL_ONLY else None


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
    implementation = getattr(value, "_implementation", None)  # NumPy's dispatchers: np.allclose
    if isinstance(implementation, types.FunctionType):
        return [implementation]
    return []


def _program(event: str, args: tuple) -> str:
    """The name of the program an audit event starts ("" when it names none)."""
    if event == "subprocess.Popen":
        executable, argv = args[0], args[1]
        first = executable or (
            argv.split()[0] if isinstance(argv, str) else (list(argv) or [""])[0]
        )
    elif event == "os.system":
        first = str(args[0]).split()[0] if str(args[0]).split() else ""
    elif event in ("os.posix_spawn", "os.exec"):
        first = args[0]
    elif event == "os.spawn":
        first = args[1]
    else:
        first = ""
    return os.path.basename(os.fsdecode(first)) if first else ""


def _path(root, path: tuple):
    for attr in path:
        root = getattr(root, attr, None)
    return root


def _own_callables(obj) -> dict:
    """What an object holds itself that a method call would find first (a patched method)."""
    found = {k: v for k, v in vars(obj).items() if callable(v)} if hasattr(obj, "__dict__") else {}
    traits = getattr(obj, "_trait_values", None)  # traitlets keep settable values here
    if isinstance(traits, dict):
        found.update({f"{k} (trait)": v for k, v in traits.items() if callable(v)})
    return found


def _put_back_own(obj, own: dict) -> None:
    """Remove what a cell added to an object's own methods; put back what it replaced."""
    traits = getattr(obj, "_trait_values", None)
    for key in _own_callables(obj):
        if key not in own:
            if key.endswith(" (trait)"):
                traits.pop(key.removesuffix(" (trait)"), None)
            else:
                vars(obj).pop(key, None)
    for key, value in own.items():
        if key.endswith(" (trait)"):
            traits[key.removesuffix(" (trait)")] = value
        else:
            vars(obj)[key] = value


def _same_items(now, expected) -> bool:
    if isinstance(expected, dict):
        return (
            isinstance(now, dict)
            and now.keys() == expected.keys()
            and all(now[k] is v for k, v in expected.items())
        )
    if isinstance(expected, tuple):
        return (
            isinstance(now, tuple)
            and len(now) == len(expected)
            and all(a is b for a, b in zip(now, expected, strict=True))
        )
    return now is expected


class Record:
    """Which object each watched name holds, recorded once, compared (and put back) on demand."""

    def __init__(self):
        # (what, getter, expected, put back or None)
        self.entries: list[tuple[str, object, object, object]] = []
        self.modules: set[str] = set()
        self.classes: dict[int, str] = {}  # id of each recorded class -> its name
        self.functions: dict[int, str] = {}  # id of each recorded function -> its name
        self.names: list[tuple] = []  # (dict, key, expected, entry) for the quick test
        self.codes: list[tuple] = []  # (function, code, defaults, kwdefaults, entry)
        self.attributes: list[tuple] = []  # (object, attribute, expected, entry)
        self.others: list[int] = []  # entries without a quick test
        self.early: list[str] = []  # minilucid functions already written in the notebook

    def add_new_modules(self) -> None:
        for name, module in list(sys.modules.items()):
            if name in self.modules or not isinstance(module, types.ModuleType):
                continue
            how = _how_watched(name)
            if how is None:
                continue
            self.modules.add(name)
            self._add_module(name, module, how)

    def _add_module(self, name: str, module, how: str) -> None:
        namespace = vars(module)
        for attr, value in list(namespace.items()):
            if not (callable(value) or isinstance(value, types.ModuleType)):
                continue
            if name == "builtins" and not isinstance(value, BUILTIN_KINDS):
                continue  # IPython swaps exit, quit, get_ipython, display in and out per cell
            where = f"{name}.{attr}"
            self._add(
                where,
                lambda ns=namespace, a=attr: ns.get(a, _MISSING),
                value,
                lambda ns=namespace, a=attr, v=value: ns.__setitem__(a, v),
                fast=(namespace, attr),
            )
            if how == "names":
                continue
            self._add_functions(where, value)
            if how == "full" and isinstance(value, type) and value.__module__ == name:
                self._add_class(where, value)

    def _add_class(self, where: str, cls: type) -> None:
        self.classes[id(cls)] = where
        members = cls.__dict__  # a live view
        for attr, value in list(members.items()):
            if attr in ("__dict__", "__weakref__", "__doc__", "__module__"):
                continue
            if not (callable(value) or isinstance(value, (property, staticmethod, classmethod))):
                continue
            here = f"{where}.{attr}"
            self._add(
                here,
                lambda m=members, a=attr: m.get(a, _MISSING),
                value,
                lambda c=cls, a=attr, v=value: setattr(c, a, v),
                fast=(members, attr),
            )
            self._add_functions(here, value)

    def _add_functions(self, where: str, value) -> None:
        for fn in _functions_in(value):
            if _written_in_notebook(fn):
                self.early.append(where)
            parts = (fn.__code__, fn.__defaults__, fn.__kwdefaults__)
            self.functions[id(fn)] = where

            def put_back(f=fn, p=parts):
                f.__code__, f.__defaults__, f.__kwdefaults__ = p

            self._add(
                f"{where} (its code)",
                lambda f=fn: (f.__code__, f.__defaults__, f.__kwdefaults__),
                parts,
                put_back,
                fast=fn,
            )
        implementation = getattr(value, "_implementation", None)
        if isinstance(implementation, types.FunctionType):
            self._add(
                f"{where} (its implementation)",
                lambda v=value: getattr(v, "_implementation", None),
                implementation,
                None,
                fast=(value, "_implementation", "attribute"),
            )

    def add_shell(self, shell) -> None:
        """The kernel's transformers, callbacks, exception handlers and own methods."""
        for path, lists in SHELL_PARTS:
            part = _path(shell, path)
            if part is None:
                continue
            where = ".".join(("shell", *path))
            if path:
                parent, attr = _path(shell, path[:-1]), path[-1]
                self._add(
                    where,
                    lambda p=path: _path(shell, p),
                    part,
                    lambda o=parent, a=attr, v=part: setattr(o, a, v),
                )
            own = _own_callables(part)
            self._add(
                f"{where} (its own methods)",
                lambda o=part: _own_callables(o),
                own,
                lambda o=part, own=own: _put_back_own(o, own),
            )
            for name in lists:
                self._add_list(f"{where}.{name}", part, name)
        events = getattr(shell, "events", None)
        for event in getattr(events, "callbacks", {}):
            self._add_list(f"shell.events[{event!r}]", events.callbacks, event, key=True)
        for attr in SHELL_VALUES:
            value = getattr(shell, attr, None)
            self._add(
                f"shell.{attr}",
                lambda a=attr: getattr(shell, a, None),
                value,
                lambda a=attr, v=value: setattr(shell, a, v),
            )

    def _add_list(self, what: str, owner, name, key: bool = False) -> None:
        def get():
            return owner.get(name) if key else getattr(owner, name, None)

        held = get()
        if not isinstance(held, list):
            return
        items = tuple(held)

        def put_back():
            if key:
                owner[name] = held
            else:
                setattr(owner, name, held)
            held[:] = items

        self._add(what, lambda: (get(), *(get() or ())), (held, *items), put_back)

    def _add(self, what: str, getter, expected, put_back, fast=None) -> None:
        """One recorded fact; `fast` names a quicker test of it (a dict and key, or a function)."""
        index = len(self.entries)
        self.entries.append((what, getter, expected, put_back))
        if isinstance(fast, tuple) and len(fast) == 3:
            self.attributes.append((fast[0], fast[1], expected, index))
        elif isinstance(fast, tuple):
            self.names.append((fast[0], fast[1], expected, index))
        elif fast is not None:
            self.codes.append((fast, *expected, index))
        else:
            self.others.append(index)

    def _suspects(self) -> list[int]:
        """The entries the quick tests cannot vouch for (most looks find none)."""
        found = list(self.others)
        for mapping, key, expected, index in self.names:
            if mapping.get(key, _MISSING) is not expected:
                found.append(index)
        for obj, attr, expected, index in self.attributes:
            if getattr(obj, attr, None) is not expected:
                found.append(index)
        for fn, code, defaults, kwdefaults, index in self.codes:
            if (
                fn.__code__ is not code
                or fn.__defaults__ is not defaults
                or fn.__kwdefaults__ is not kwdefaults
            ):
                found.append(index)
        return sorted(found)

    def changes(self) -> list[str]:
        """What differs from the record, each put back where it can be."""
        changed = list(self.early)
        for index in self._suspects():
            what, getter, expected, put_back = self.entries[index]
            try:
                same = _same_items(getter(), expected)
            except Exception:  # noqa: BLE001 - a part taken apart counts as changed
                same = False
            if same:
                continue
            changed.append(what)
            if put_back is not None:
                try:
                    put_back()
                except Exception:  # noqa: BLE001, S110 - what cannot be put back stays changed
                    pass
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
    def listed(items: list[str]) -> str:
        return ", ".join(items[:3]) + (f" and {len(items) - 3} more" if len(items) > 3 else "")

    changed = [c for c in changes if not c.startswith("opened ")]
    opened = [c.removeprefix("opened ") for c in changes if c.startswith("opened ")]
    did = [f"changed {listed(changed)}"] if changed else []
    did += [f"opened {listed(opened)}"] if opened else []
    return (
        f"this notebook {' and '.join(did)}. The checks trust only minilucid, the checks, "
        "NumPy, math, Python and the kernel as they ship, and no answer opens the gradebook, a "
        "notebook or a program: remove that code, restart the kernel and run all cells."
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
    builtin_names = vars(builtins)
    real_builtins = {k: v for k, v in builtin_names.items() if isinstance(v, BUILTIN_KINDS)}

    def note(what: str) -> None:
        if what not in changed:
            changed.append(what)

    def look() -> None:
        # builtins first, with nothing but dict operations: a patched isinstance must not
        # mislead (or hang) the rest of the look
        for name, value in real_builtins.items():
            if builtin_names.get(name, _MISSING) is not value:
                builtin_names[name] = value
                note(f"builtins.{name}")
        for what in record.changes():
            note(what)
        record.add_new_modules()
        protect_names()

    def calls_a_check(source: str) -> bool:
        names = [n for n in bound if n.startswith("check_")]
        return any(re.search(rf"\b{re.escape(n)}\s*\(", source) for n in names)

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

    seen_cell = [None]
    busy = threading.local()

    def on_audit(event: str, args: tuple) -> None:
        """Python's audit hook: what a cell does, as it does it (see the module's docstring)."""
        if getattr(busy, "now", False):
            return
        busy.now = True
        try:
            if event == "exec":
                starting_cell(args[0])
            elif event == "object.__setattr__":
                written(*args[:2])
            elif event in REFUSED_EVENTS:
                refused(event, args)
        finally:
            busy.now = False

    def starting_cell(code) -> None:
        """A notebook cell starts: look once per cell; a check cell fails here once changed."""
        if not isinstance(code, types.CodeType) or not _written_in_notebook(
            types.SimpleNamespace(__code__=code)
        ):
            return
        if code.co_name != "<module>" or seen_cell[0] == shell.execution_count:
            return
        seen_cell[0] = shell.execution_count
        look()
        if not changed:
            return
        history = getattr(getattr(shell, "history_manager", None), "input_hist_raw", None)
        source = history[-1] if history else ""
        if not source or calls_a_check(source):
            raise CheckFailed(_changed_message(changed))

    def written(obj, name: str) -> None:
        if id(obj) in record.classes:
            note(f"{record.classes[id(obj)]}.{name}")
        elif name in CODE_ATTRIBUTES and id(obj) in record.functions:
            note(f"{record.functions[id(obj)]} (its code)")

    def refused(event: str, args: tuple) -> None:
        """A database, the gradebook, a notebook (the answer key), a program: no answer's."""
        if event == "sqlite3.connect":
            database = str(args[0]) if args else ""
            history = getattr(getattr(shell, "history_manager", None), "hist_file", None)
            if database in ("", ":memory:", str(history)):
                return
            what = f"a database ({os.path.basename(database)})"
        elif event == "open":
            if isinstance(args[0], int) or not str(args[0]).endswith(ANSWER_KEYS):
                return
            what = os.path.basename(str(args[0]))
        else:
            program = _program(event, args)
            if program in ALLOWED_PROGRAMS:
                return
            what = f"a program ({program or event})"
        note(f"opened {what}")
        raise PermissionError(
            f"an answer never opens {what}: this notebook's checks now fail. Remove that code, "
            "restart the kernel and run all cells."
        )

    def start(shell_) -> None:
        shell_.events.register("post_run_cell", lambda *args: look())  # cells start: on_audit
        shell_.set_custom_exc((NotImplementedError, NameError), not_done)
        record.add_shell(shell_)
        sys.addaudithook(on_audit)

    return start


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
    _make_guard(shell)(shell)
    _installed_in.add(id(shell))
    return True
