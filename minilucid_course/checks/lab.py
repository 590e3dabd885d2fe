"""What the checks need in a learner's notebook: plain messages, a time limit, the policy's word.

Importing any chapter's checks in IPython (an exercise notebook's first cell does) installs this
once per kernel. After each cell, every `check_*` function (and checker helper) the notebook
imported from `minilucid_course.checks` is bound to a copy that

- first reads the answer it is handed with grading's static policy (`minilucid_course.policy`):
  code grading would refuse fails here with the same message, naming the construct and line;
- runs the check with a time limit, and turns what it raises into one plain line (`CheckFailed`,
  `NotDone`): no traceback through the checker;
- displays a picture it returns rather than leaving it as the cell's value.

A stub's NotImplementedError, or a NameError in a cell's own code (a name not written yet),
shows as "not done yet". Nothing here guards grading: grading runs hand-ins in a sandbox and
judges them in a process of their own (`minilucid_course.grading`). A learner who rebinds these
names in the lab only changes their own lab.
"""

from __future__ import annotations

import functools
import inspect
import signal
import sys
import textwrap
import threading

from minilucid_course.checks.common import NOT_DONE, CheckFailed, NotDone

TIME_LIMIT = 60.0  # seconds a check (with the learner code it runs) may take
CHECK_MODULES = "minilucid_course.checks."
PICTURE_REPRS = ("_repr_mimebundle_", "_repr_svg_", "_repr_png_", "_repr_html_")


class TimeLimit(BaseException):
    """A check ran past TIME_LIMIT."""


def _written_in_notebook(code) -> bool:
    filename = getattr(code, "co_filename", "")
    return "ipykernel_" in filename or filename.startswith("<ipython-input")


def _learner_frame(tb):
    """The innermost traceback frame in notebook code (or the innermost of all)."""
    found = last = None
    while tb is not None:
        last = tb
        if _written_in_notebook(tb.tb_frame.f_code):
            found = tb
        tb = tb.tb_next
    return found or last


def _not_done_line(tb) -> str:
    frame = _learner_frame(tb)
    name = frame.tb_frame.f_code.co_name if frame is not None else "<module>"
    return NOT_DONE.format(what="your answer" if name == "<module>" else f"your {name}")


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


def plain_failure(error: BaseException, limit: float | None = None) -> BaseException:
    """What a check or the learner's code raised, as the one message the learner sees."""
    limit = TIME_LIMIT if limit is None else limit
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


def refused(name: str, answers: tuple) -> str | None:
    """The policy's message on the answers handed to check `name`, or None when it accepts them."""
    from minilucid_course import policy
    from minilucid_course.checks.exercise import REGISTRY

    exercise = REGISTRY.get(name)
    forbidden = exercise.forbidden if exercise else ()
    imports = exercise.imports if exercise else ()
    for answer in answers:
        if not (inspect.isfunction(answer) or inspect.isclass(answer)):
            continue
        code = getattr(answer, "__code__", None)
        if code is not None and not _written_in_notebook(code):
            continue  # the package's own function, or a check's: not the learner's answer
        try:
            source = inspect.getsource(answer)
        except (OSError, TypeError):
            continue
        found = policy.violations(textwrap.dedent(source), forbidden, imports)
        if found:
            return policy.message(found, f"your {answer.__name__}")
    return None


def _show(value) -> None:
    from IPython.display import display

    display(value)


def _wrapped(name: str, fn):
    is_check = name.startswith("check_")

    @functools.wraps(fn)
    def run(*args, **kwargs):
        if is_check:
            message = refused(name, args)
            if message:
                raise CheckFailed(message)
        try:
            result = _with_time_limit(TIME_LIMIT, lambda: fn(*args, **kwargs))
        except KeyboardInterrupt:
            raise
        except BaseException as error:  # noqa: B036 - TimeLimit too; all become one line
            raise plain_failure(error) from None
        if result is not None and (is_check or any(hasattr(result, r) for r in PICTURE_REPRS)):
            _show(result)
            return None
        return result

    run.__wrapped_check__ = fn
    return run


def _is_exercise_check(value) -> bool:
    """An Exercise's lab_check (a check in the registry), wherever it was imported from."""
    from minilucid_course.checks.exercise import Exercise

    owner = getattr(value, "__self__", None)
    return isinstance(owner, Exercise) and getattr(value, "__func__", None) is Exercise.lab_check


def _bind(shell) -> None:
    """Bind each check and checker helper the notebook imported to its plain-message copy."""
    ns = shell.user_ns
    for name, value in list(ns.items()):
        if name.startswith("_") or not callable(value) or isinstance(value, type):
            continue
        if getattr(value, "__wrapped_check__", None) is not None:
            continue
        if _is_exercise_check(value):
            ns[name] = _wrapped(value.__self__.check, value)
            continue
        module = sys.modules.get(getattr(value, "__module__", None) or "")
        if module is None or not module.__name__.startswith(CHECK_MODULES):
            continue
        if getattr(module, name, None) is value:
            ns[name] = _wrapped(name, value)


def _not_done(shell, etype, value, tb, tb_offset=None):
    """A stub's NotImplementedError, or a NameError in a cell's own code: one line."""
    if isinstance(value, NameError):
        frame = _learner_frame(tb)
        if frame is not None and frame.tb_frame.f_code.co_name != "<module>":
            shell.showtraceback((etype, value, tb))  # a bug inside a function: as usual
            return []
        name = getattr(value, "name", None) or str(value)
        value = NotDone(
            f"not done yet: `{name}` is not defined. Write the answer that defines it, run "
            "its cell, then run this one again."
        )
        etype = NotDone
    elif not hasattr(value, "_render_traceback_"):
        value = NotDone(_not_done_line(tb))
        etype = NotDone
    shell.showtraceback((etype, value, tb))
    return value._render_traceback_()


_installed_in: set[int] = set()


def install(shell=None) -> bool:
    """Set up the checks in this IPython shell (once); False when not running in IPython."""
    if shell is None:
        try:
            from IPython import get_ipython
        except ImportError:
            return False
        shell = get_ipython()
    if shell is None or id(shell) in _installed_in:
        return shell is not None
    shell.events.register("post_run_cell", lambda *args: _bind(shell))
    shell.set_custom_exc((NotImplementedError, NameError), _not_done)
    _installed_in.add(id(shell))
    return True
