"""An unanswered exercise notebook fails only in its checks (and stub cells), only as "not done".

So no setup cell uses the learner's code, and every check really runs the learner's code.
"""

from __future__ import annotations

import pytest
from conftest import EXERCISES, notebooks_in, tiny_solution_notebook

from minilucid_course import make_exercises, progress


def unanswered_problems(nb) -> list[str]:
    """What is wrong with an executed unanswered notebook (empty when all is well)."""
    problems = []
    checks = 0
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        meta = cell.metadata.get("nbgrader", {})
        errors = [o for o in cell.outputs if o.get("output_type") == "error"]
        is_check = bool(meta.get("grade"))
        checks += is_check
        name = meta.get("grade_id", "")
        # an answer cell whose whole body is the stub (a class to write) may say "not done"
        if errors and not is_check and not meta.get("solution"):
            problems.append(f"cell {index} {name}: not a check cell, yet raised {errors[0].ename}")
        for error in errors:
            if error.ename not in progress.NOT_DONE_NAMES:
                problems.append(
                    f"cell {index} {name}: raised {error.ename}: {error.evalue} "
                    "(expected NotImplementedError from an unanswered stub)"
                )
        if is_check and not errors:
            problems.append(
                f"cell {index} {name}: this check passes with no answer; it must call the "
                "learner's code"
            )
    if not checks:
        problems.append("no check cells (nbgrader grade: true)")
    return problems


EXERCISE_NOTEBOOKS = notebooks_in(EXERCISES)


@pytest.mark.parametrize(
    "path",
    EXERCISE_NOTEBOOKS or [pytest.param(None, marks=pytest.mark.skip("no exercises/ yet"))],
    ids=lambda p: p.name if p else "none",
)
def test_unanswered_exercise_fails_only_in_checks(path, tmp_path):
    assert path.exists()
    # as committed: a learner who answered this notebook in place does not turn this red
    if make_exercises.touched_by_learner(path):
        path = make_exercises.as_committed(path.parent, tmp_path / "exercises") / path.name
    nb = progress.execute(path)
    problems = unanswered_problems(nb)
    assert not problems, f"{path.name}:\n" + "\n".join(problems)


def test_the_rule_on_a_tiny_notebook(tmp_path):
    """Proves the rule bites: a generated stub passes it; a setup cell using the answer does not."""
    source = tiny_solution_notebook(tmp_path / "solutions" / "99_tiny.ipynb")
    make_exercises.write(source.parent, tmp_path / "exercises")
    exercise = tmp_path / "exercises" / "99_tiny.ipynb"
    nb = progress.execute(exercise)
    assert unanswered_problems(nb) == []

    # a plain cell that calls the learner's code, and a check that does not
    import nbformat
    from nbformat.v4 import new_code_cell

    nb.cells.insert(4, new_code_cell("double(1)", id="uses-answer"))
    nb.cells[5].source = "print('nothing checked')"
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
    nbformat.write(nb, str(exercise))
    problems = unanswered_problems(progress.execute(exercise))
    assert len(problems) == 2, problems
    assert "not a check cell, yet raised NotImplementedError" in problems[0]
    assert "passes with no answer" in problems[1]
