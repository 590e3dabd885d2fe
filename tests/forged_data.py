"""Feed a chapter's judges forged probe data: each must say Wrong, none may pass or crash out.

A hand-in runs the probe in its own process and may send any plain data it likes. The judge
must accept only data a correct answer gives on the cases of that seed. The forgeries made from
the solution's own data:

- every number shifted (arrays keep their shapes and dtypes, the values are wrong);
- every number zero (the reference's shapes, no values);
- the solution's data of seed 0 judged under another seed (a replay of the lab's cases);
- missing parts, wrong types, nothing at all.

    test_forged_data_is_wrong = forged_data_test(NB, EXERCISES, seeded=("output_size",))
"""

from __future__ import annotations

import ast

import numpy as np
import pytest
from nbharness import answer_source, run_check

from minilucid_course.checks.exercise import all_exercises


def _map(data, fn):
    if isinstance(data, dict):
        return {k: _map(v, fn) for k, v in data.items()}
    if isinstance(data, list):
        return [_map(v, fn) for v in data]
    return fn(data)


def _shifted(value):
    if isinstance(value, np.ndarray) and value.dtype.kind in "iuf":
        return value + value.dtype.type(1)
    if type(value) in (int, float):
        return value + 1
    return value


def _zeroed(value):
    if isinstance(value, np.ndarray) and value.dtype.kind in "iuf":
        return np.zeros_like(value)
    if type(value) in (int, float):
        return type(value)(0)
    return value


def _damaged(data) -> list:
    out = [None, [], {}, "forged", 42, [data], {"data": data}]
    if isinstance(data, dict):
        out += [{k: v for k, v in data.items() if k != key} for key in data]
        out += [{**data, key: "forged"} for key in data]
    if isinstance(data, list) and data:
        out += [data[:-1], data[1:], data[: len(data) // 2]]
    return out


def answers_of(nb_path, check_id: str, check: str) -> tuple:
    """The objects the solution's check cell hands to `check`, from the notebook run up to it."""
    namespace = run_check(nb_path, check_id)
    source = answer_source(nb_path, check_id)
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == check:
            return tuple(eval(compile(ast.Expression(a), "<args>", "eval"), namespace)  # noqa: S307
                         for a in node.args)  # fmt: skip
    raise AssertionError(f"{check_id}: no call of {check}")


def forgeries(exercise, answers, other_seed: int | None) -> list[tuple[str, object, int]]:
    """(what, data, seed) for each forgery of the solution's data."""
    honest = exercise.run_probe(0, answers)
    passed, message = exercise.verdict(0, honest)
    assert passed, f"the solution's own data fails: {message}"
    out = [
        ("every number shifted", _map(honest, _shifted), 0),
        ("every number zero", _map(honest, _zeroed), 0),
    ]
    if other_seed is not None:
        out.append((f"seed 0's data judged under seed {other_seed}", honest, other_seed))
    out += [(f"damaged data #{i}", d, 0) for i, d in enumerate(_damaged(honest))]
    return out


def forged_data_test(nb_path, exercises: dict, seeded: tuple = ()):
    """A test over `exercises` (key -> (answer_id, check_id)): every forgery is judged Wrong.

    `seeded` names the exercises whose cases change with the seed (a replay must fail there).
    """

    @pytest.mark.parametrize("key", list(exercises))
    def test_forged_data_is_wrong(key):
        _, check_id = exercises[key]
        source = answer_source(nb_path, check_id)
        registry = all_exercises()
        check = next(name for name in registry if f"{name}(" in source)
        exercise = registry[check]
        answers = answers_of(nb_path, check_id, check)
        for what, data, seed in forgeries(exercise, answers, 3 if key in seeded else None):
            passed, message = exercise.verdict(seed, data)
            assert not passed, f"{check}: forged data ({what}) passed"
            assert message and "\n" not in message.strip(), (what, message)

    return test_forged_data_is_wrong
