"""Forged probe data for the judges: what a hand-in could send instead of its answer's results.

A judge reads only plain data, and a hand-in may write any plain data it likes. Each judge must
then say Wrong (or fail to read it, which the exercise counts as Wrong) for everything but the
data of a correct answer. `forged_data_test` builds one test per exercise from the solution
notebook: the solution's own probe data passes, and every forgery of it fails.

    test_forged_data_is_wrong = forged_data_test(NB, EXERCISES, STAND_INS)
"""

from __future__ import annotations

import ast

import numpy as np
import pytest
from nbharness import answer_source, grade_ids, run_check

from minilucid_course.checks import plain
from minilucid_course.checks.exercise import LAB_SEED, REGISTRY, all_exercises

OTHER_SEED = 20261204  # a grading seed: the cases differ from the lab's, the solution passes


def _numbers_moved(value):
    """Every number and numeric array moved off by one (bools and strings kept)."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int | float):
        return value + 1
    if isinstance(value, np.ndarray):
        return value if value.dtype.kind == "b" else value + 1
    if isinstance(value, list):
        return [_numbers_moved(v) for v in value]
    return {k: _numbers_moved(v) for k, v in value.items()}


def _arrays_reshaped(value):
    """Every array given one more axis: the right values in the wrong shape."""
    if isinstance(value, np.ndarray):
        return value[..., None]
    if isinstance(value, list):
        return [_arrays_reshaped(v) for v in value]
    if isinstance(value, dict):
        return {k: _arrays_reshaped(v) for k, v in value.items()}
    return value


def _lists_cut(value):
    """Every list one item short."""
    if isinstance(value, list):
        return [_lists_cut(v) for v in value[:-1]]
    if isinstance(value, dict):
        return {k: _lists_cut(v) for k, v in value.items()}
    return value


def _has(value, kind) -> bool:
    if isinstance(value, kind):
        return True
    if isinstance(value, list):
        return any(_has(v, kind) for v in value)
    if isinstance(value, dict):
        return any(_has(v, kind) for v in value.values())
    return False


def forgeries(data) -> list[tuple[str, object]]:
    """(label, forged data) for one correct answer's data."""
    out = [
        ("nothing", None),
        ("a string", "✓ all right"),
        ("an empty list", []),
        ("an empty dict", {}),
        ("every number off by one", _numbers_moved(data)),
    ]
    if _has(data, np.ndarray):
        out.append(("every array with one more axis", _arrays_reshaped(data)))
    if _has(data, list):
        out.append(("every list one item short", _lists_cut(data)))
    if isinstance(data, dict):
        out += [(f"no {key!r}", {k: v for k, v in data.items() if k != key}) for key in data]
    return out


def solution_answers(nb_path, check_id: str, stand_ins: dict) -> tuple[str, tuple]:
    """(check name, the answers the check cell passes) from the solution notebook."""
    source = answer_source(nb_path, check_id)
    call = next(
        node.value
        for node in ast.parse(source).body
        if isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Call)
        and isinstance(node.value.func, ast.Name)
        and node.value.func.id.startswith("check_")
    )
    order = grade_ids(nb_path)
    stop = order.index(check_id)
    replace = {g: s for g, s in stand_ins.items() if g in order and order.index(g) < stop}
    replace[check_id] = "pass"
    namespace = run_check(nb_path, check_id, replace=replace)
    answers = tuple(
        eval(compile(ast.Expression(a), "<check>", "eval"), namespace) for a in call.args
    )
    return call.func.id, answers


def forged_data_test(nb_path, exercises: dict, stand_ins: dict | None = None):
    all_exercises()

    @pytest.mark.parametrize("key", list(exercises))
    def test_forged_data_is_wrong(key):
        check, answers = solution_answers(nb_path, exercises[key][1], dict(stand_ins or {}))
        exercise = REGISTRY[check]
        data = exercise.run_probe(LAB_SEED, answers)
        passed, message = exercise.verdict(LAB_SEED, data)
        assert passed, f"the solution's own data fails: {message}"
        other = exercise.run_probe(OTHER_SEED, answers)
        passed, message = exercise.verdict(OTHER_SEED, other)
        assert passed, f"the solution fails on the cases of seed {OTHER_SEED}: {message}"
        for label, forged in forgeries(data):
            if plain.encode(forged) == plain.encode(data):
                continue  # nothing of that kind to forge in this exercise's data
            passed, message = exercise.verdict(LAB_SEED, forged)
            assert not passed, f"{check}: forged data ({label}) passes: {message}"
            assert "\n" not in message and message, (label, message)

    return test_forged_data_is_wrong
