"""exercises/ is what nbgrader's preprocessors make of solutions/, and solutions/ is well formed."""

from __future__ import annotations

import re
from collections import Counter

import nbformat
import pytest
from conftest import EXERCISES, SOLUTIONS, notebooks_in, skip_if_none, tiny_solution_notebook

from minilucid_course import make_exercises

NAME = re.compile(r"^\d\d_[a-z0-9_]+\.ipynb$")


def _nbgrader(cell) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {}) or {}


def _solution_notebooks():
    paths = notebooks_in(SOLUTIONS)
    skip_if_none(paths, SOLUTIONS)
    return paths


# --------------------------------------------------------------------------------------------
# The real notebooks


@pytest.fixture
def committed_exercises(tmp_path):
    """exercises/ as the course ships it: a notebook answered in place counts as committed."""
    return make_exercises.as_committed(EXERCISES, tmp_path / "exercises")


def test_exercises_are_up_to_date(committed_exercises):
    if not notebooks_in(SOLUTIONS) and not notebooks_in(EXERCISES):
        pytest.skip("no solutions/ or exercises/ notebooks yet")
    problems = make_exercises.check(SOLUTIONS, committed_exercises)
    assert not problems, "run `make exercises`:\n" + "\n".join(problems)


def test_exercises_hold_no_answers_and_no_outputs(committed_exercises):
    paths = notebooks_in(committed_exercises)
    skip_if_none(paths, EXERCISES)
    for path in paths:
        nb = nbformat.read(str(path), as_version=4)
        for index, cell in enumerate(nb.cells):
            where = f"{path.name} cell {index}"
            assert "BEGIN SOLUTION" not in cell.source, where
            assert "END SOLUTION" not in cell.source, where
            assert "BEGIN HIDDEN TESTS" not in cell.source, where
            if cell.cell_type == "code":
                assert cell.outputs == [] and cell.execution_count is None, where


def test_notebook_names():
    for folder in (SOLUTIONS, EXERCISES):
        for path in notebooks_in(folder):
            assert NAME.match(path.name), f"{path}: name it NN_topic.ipynb"


def test_solution_notebooks_carry_nbgrader_metadata():
    seen: Counter = Counter()
    for path in _solution_notebooks():
        nb = nbformat.read(str(path), as_version=4)
        assert nb.metadata.get("kernelspec", {}).get("name") == "python3", path.name
        answers = checks = 0
        for index, cell in enumerate(nb.cells):
            meta = _nbgrader(cell)
            where = f"{path.name} cell {index}"
            if "BEGIN SOLUTION" in cell.source:
                assert meta.get("solution") is True, f"{where}: answer code outside an answer cell"
            if not meta:
                continue
            assert meta.get("schema_version") == 3, f"{where}: nbgrader schema_version must be 3"
            assert isinstance(meta.get("grade_id"), str) and meta["grade_id"], where
            seen[meta["grade_id"]] += 1
            for key in ("solution", "grade", "locked"):
                assert isinstance(meta.get(key), bool), f"{where}: nbgrader {key!r} missing"
            if meta["grade"]:
                checks += 1
                assert cell.cell_type == "code", f"{where}: a check cell is code"
                assert meta["locked"] is True, f"{where}: a check cell is locked"
                assert meta["solution"] is False, f"{where}: a check cell is not an answer"
                points = meta.get("points")
                assert isinstance(points, int | float) and points > 0, f"{where}: points > 0"
            if meta["solution"]:
                answers += 1
                assert meta["locked"] is False, f"{where}: an answer cell is not locked"
                if cell.cell_type == "code":
                    assert "### BEGIN SOLUTION" in cell.source, f"{where}: no ### BEGIN SOLUTION"
                    begin = next(ln for ln in cell.source.splitlines() if "BEGIN SOLUTION" in ln)
                    assert begin.startswith((" ", "\t")), (
                        f"{where}: put the answer inside the function body, so the stub still "
                        "defines the name"
                    )
        assert answers and checks, f"{path.name}: needs answer cells and check cells"
    twice = [gid for gid, n in seen.items() if n > 1]
    assert not twice, f"grade_ids used more than once: {twice}"


# --------------------------------------------------------------------------------------------
# The machinery, on a tiny solution notebook (always runs)


def test_generation_makes_a_stub_and_clears_outputs(tmp_path):
    source = tiny_solution_notebook(tmp_path / "solutions" / "99_tiny.ipynb")
    text = make_exercises.generate(source)
    assert text == make_exercises.generate(source)  # deterministic
    nb = nbformat.reads(text, as_version=4)
    cells = nb.cells
    assert (
        cells[3].source == "def double(x):\n    # YOUR CODE HERE\n    raise NotImplementedError()"
    )
    assert "HIDDEN" not in cells[4].source and "double(0)" not in cells[4].source
    for cell in cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None
        assert "execution" not in cell.metadata
    assert cells[4].metadata["editable"] is False and cells[4].metadata["deletable"] is False
    assert cells[3].metadata["deletable"] is False and "editable" not in cells[3].metadata
    assert all("checksum" in c.metadata["nbgrader"] for c in cells if "nbgrader" in c.metadata)
    assert text.startswith('{\n "cells": [\n  {\n') and text.endswith("}\n")  # Jupyter layout


def test_check_mode_sees_stale_missing_and_extra_files(tmp_path):
    solutions, exercises = tmp_path / "solutions", tmp_path / "exercises"
    tiny_solution_notebook(solutions / "99_tiny.ipynb")
    assert len(make_exercises.check(solutions, exercises)) == 1  # missing
    assert (
        make_exercises.main(
            ["--check", "--solutions", str(solutions), "--exercises", str(exercises)]
        )
        == 1
    )

    written, notes = make_exercises.write(solutions, exercises)
    assert written == [exercises / "99_tiny.ipynb"] and notes == []
    first = (exercises / "99_tiny.ipynb").read_bytes()
    assert make_exercises.write(solutions, exercises) == ([], [])  # nothing to do the second time
    assert (exercises / "99_tiny.ipynb").read_bytes() == first
    assert make_exercises.check(solutions, exercises) == []

    nb = nbformat.read(str(solutions / "99_tiny.ipynb"), as_version=4)
    nb.cells[2].source += "\nMore words."
    nbformat.write(nb, str(solutions / "99_tiny.ipynb"))
    assert [
        p.endswith("out of date with " + str(solutions / "99_tiny.ipynb"))
        for p in make_exercises.check(solutions, exercises)
    ] == [True]

    (exercises / "98_stray.ipynb").write_text(first.decode())
    problems = make_exercises.check(solutions, exercises)
    assert len(problems) == 2 and "98_stray.ipynb: has no source" in problems[1]


def test_write_keeps_an_exercise_the_learner_started(tmp_path):
    solutions, exercises = tmp_path / "solutions", tmp_path / "exercises"
    tiny_solution_notebook(solutions / "99_tiny.ipynb")
    make_exercises.write(solutions, exercises)
    target = exercises / "99_tiny.ipynb"
    nb = nbformat.read(str(target), as_version=4)
    nb.cells[3].source = "def double(x):\n    return x + x"
    nbformat.write(nb, str(target))
    assert make_exercises.started_by_learner(target) == ["ex99_1_double_answer"]

    nb = nbformat.read(str(solutions / "99_tiny.ipynb"), as_version=4)
    nb.cells[2].source += "\nMore words."
    nbformat.write(nb, str(solutions / "99_tiny.ipynb"))
    written, notes = make_exercises.write(solutions, exercises)
    assert written == [] and "not overwritten" in notes[0]
    assert "return x + x" in target.read_text()
    written, _ = make_exercises.write(solutions, exercises, force=True)
    assert written == [target] and make_exercises.check(solutions, exercises) == []
