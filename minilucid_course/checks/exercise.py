"""One registry entry per exercise: its probe, its judge, and the facts the course's tools read.

A check is two halves that meet only through plain data:

- the **probe** calls the learner's code on the exercise's cases and returns what came out as
  plain data (None, bool, int, float, str, lists, dicts with str keys, numeric NumPy arrays);
  it never decides anything;
- the **judge** is a pure function of the cases and that data: it recomputes every reference
  value itself and returns the one-line "✓" message, or raises `Wrong` with the message that
  names the mistake and the case that shows it.

In the lab both halves run in the kernel, one after the other, and the data between them goes
through the same encoding as in grading (`plain.encode`/`plain.decode`), so a learner sees
exactly what a grader would decide. In grading the probe runs in the hand-in's sandbox and
writes its data to the grading channel; the judge runs in a clean process that no hand-in code
has touched (`minilucid_course.judge`).

    EXERCISE = register(Exercise(
        check="check_topological_order", chapter="03", title="The topological sort",
        probe=_probe_order, judge=_judge_order, cases=_order_cases,
        forbidden=("topological_order",),     # the package's own version of the answer
    ))
    check_topological_order = EXERCISE.lab_check   # what the exercise notebook imports
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from types import MappingProxyType

from minilucid_course.checks import plain
from minilucid_course.checks.common import CheckFailed, NotDone

# Grading sets this to a file the probe appends its records to (one JSON line per check call).
CHANNEL = "MINILUCID_PROBE_CHANNEL"
# Grading sets this to the seed of the cases (secret to nobody: the judge recomputes the cases).
SEED = "MINILUCID_PROBE_SEED"
LAB_SEED = 0


class Wrong(AssertionError):
    """What a judge raises: the answer is wrong, and the message says how, in one line."""


def _no_cases(seed: int):
    return None


@dataclass(frozen=True)
class Exercise:
    """Everything the course knows about one exercise, in one place."""

    check: str  # the function the check cell calls, e.g. "check_topological_order"
    chapter: str  # "03"
    title: str  # "The topological sort" (what the dashboard and the teacher's tables show)
    probe: Callable  # probe(cases, *answers) -> plain data (runs the learner's code)
    judge: Callable  # judge(cases, data) -> str: the ✓ message; raises Wrong (never runs it)
    cases: Callable = _no_cases  # cases(seed) -> what probe and judge share (built, not stored)
    forbidden: tuple[str, ...] = ()  # names an answer must not use: the package's own version
    imports: tuple[str, ...] = ()  # modules an answer may import beyond the policy's defaults
    reveals: tuple[str, ...] = ()  # package objects the chapter shows after this exercise
    after: Callable | None = None  # after(*answers): lab-only extras once passed (never graded)
    notes: dict = field(default_factory=dict)  # anything else a tool reads (kept read-only)

    def run_probe(self, seed: int, answers: tuple):
        """The probe's data, encoded and decoded as grading sends it; NotDone passes through."""
        try:
            data = self.probe(self.cases(seed), *answers)
        except NotImplementedError:
            raise NotDone(
                "not done yet: the answer still raises NotImplementedError. Write your answer "
                "in its cell, run that cell, then run this one again."
            ) from None
        return plain.decode(plain.encode(data))

    def verdict(self, seed: int, data) -> tuple[bool, str]:
        """(passed, message): the judge's decision on decoded probe data."""
        try:
            return True, str(self.judge(self.cases(seed), data))
        except Wrong as wrong:
            return False, str(wrong)
        except Exception as error:  # data a judge cannot read is data no right answer gives
            return False, (
                f"{self.check}: the results of your answer have a form no answer gives "
                f"({type(error).__name__} while reading them)"
            )

    def lab_check(self, *answers) -> None:
        """The check as the exercise notebook calls it."""
        channel = os.environ.get(CHANNEL)
        if channel:  # grading: only the data leaves; the judge decides elsewhere
            seed = int(os.environ.get(SEED, LAB_SEED))
            try:
                record = {"check": self.check, "data": self.run_probe(seed, answers)}
            except NotDone:
                record = {"check": self.check, "not_done": True}
            with open(channel, "ab") as out:
                out.write(plain.encode(record) + b"\n")
            print(f"{self.check}: handed to the grader")
            return
        data = self.run_probe(LAB_SEED, answers)
        passed, message = self.verdict(LAB_SEED, data)
        if not passed:
            raise CheckFailed(message)
        print(message)
        if self.after is not None:
            self.after(*answers)


_REGISTRY: dict[str, Exercise] = {}
REGISTRY = MappingProxyType(_REGISTRY)  # check name -> Exercise, read-only


def register(exercise: Exercise) -> Exercise:
    """Add an exercise to the registry (once per check name) and return it."""
    if exercise.check in _REGISTRY and _REGISTRY[exercise.check] is not exercise:
        raise ValueError(f"{exercise.check}: registered twice")
    _REGISTRY[exercise.check] = exercise
    return exercise


def all_exercises() -> dict[str, Exercise]:
    """Every registered exercise of every chapter (imports each chapter's checks)."""
    import importlib
    import pkgutil

    import minilucid_course.checks as package

    for info in pkgutil.iter_modules(package.__path__):
        if info.name.startswith("ch"):
            importlib.import_module(f"{package.__name__}.{info.name}")
    return dict(_REGISTRY)
