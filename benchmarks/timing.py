"""Interleaved timing: every engine runs in turn, round after round, and medians are kept.

Each engine of a benchmark is a *case*: a function `case(number)` that runs the workload
`number` times and returns the seconds it spent per phase, e.g. `{"forward": 0.1,
"backward": 0.2}`. Rounds alternate the order of the engines (A B C, then C B A, ...), so that a
neighbour's load on the machine falls on all of them alike. A ratio is taken within each round
and the median of those ratios is reported.
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable

Case = Callable[[int], dict]

CLOCKS = {
    "wall": time.perf_counter,  # elapsed time: what a user waits for
    "cpu": time.process_time,  # CPU time of this process: steadier on a machine shared with others
}
clock = CLOCKS["wall"]


def use_clock(name: str) -> None:
    """Time with the wall clock (the default) or with this process's CPU time."""
    global clock
    clock = CLOCKS[name]


def phased(forward: Callable, backward: Callable, update: Callable | None = None) -> Case:
    """A case that times `out = forward()`, `grads = backward(out)` and `update(grads)` apart."""

    def run(number: int) -> dict:
        now = clock
        spent = {"forward": 0.0, "backward": 0.0, "update": 0.0}
        for _ in range(number):
            t0 = now()
            out = forward()
            t1 = now()
            grads = backward(out)
            t2 = now()
            if update is not None:
                update(grads)
            t3 = now()
            spent["forward"] += t1 - t0
            spent["backward"] += t2 - t1
            spent["update"] += t3 - t2
        if update is None:
            del spent["update"]
        return spent

    return run


def calibrate(case: Case, block_seconds: float) -> int:
    """How many runs of `case` fill one timed block of about `block_seconds`."""
    number = 1
    while True:
        gc.collect()
        spent = sum(case(number).values())
        if spent >= block_seconds / 5 or number >= 1 << 20:
            break
        number *= 5
    return max(1, round(number * block_seconds / max(spent, 1e-9)))


class Result:
    """Per engine and phase, the seconds per run of each round; medians and paired ratios."""

    def __init__(self, rounds: dict[str, list[dict]]):
        self.rounds = rounds  # engine -> [ {phase: seconds per run}, ... ] one dict per round

    @property
    def engines(self) -> list[str]:
        return list(self.rounds)

    def per_run(self, engine: str, phase: str | None = None) -> list[float]:
        """Seconds per run in each round, for one phase or (phase None) all phases together."""
        return [sum(r.values()) if phase is None else r[phase] for r in self.rounds[engine]]

    def median(self, engine: str, phase: str | None = None) -> float:
        return statistics.median(self.per_run(engine, phase))

    def ratio(self, engine: str, reference: str, phase: str | None = None) -> float:
        """Median over rounds of engine time / reference time in the same round."""
        mine, theirs = self.per_run(engine, phase), self.per_run(reference, phase)
        return statistics.median(a / b for a, b in zip(mine, theirs, strict=True))

    def phase_ratio(self, engine: str, top: str, bottom: str) -> float:
        """Median over rounds of one phase over another for one engine (e.g. backward/forward)."""
        return statistics.median(r[top] / r[bottom] for r in self.rounds[engine])


def interleave(cases: dict[str, Case], repeats: int, block_seconds: float, log=None) -> Result:
    """Time every case `repeats` times, alternating their order from round to round."""
    numbers = {}
    for name, case in cases.items():
        case(1)  # warm up: first calls fill caches and allocators
        numbers[name] = calibrate(case, block_seconds)
    rounds: dict[str, list[dict]] = {name: [] for name in cases}
    names = list(cases)
    for i in range(repeats):
        for name in names if i % 2 == 0 else reversed(names):
            gc.collect()  # nobody pays for the garbage another engine left
            spent = cases[name](numbers[name])
            rounds[name].append({k: v / numbers[name] for k, v in spent.items()})
        if log is not None:
            log(".")
    return Result(rounds)
