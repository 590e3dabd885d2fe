"""What the checks do in a real kernel (minilucid_course/checks/lab.py): one plain line per
failure, not done yet, a time limit, pictures displayed, and the grading policy's word on an
answer before its check runs."""

from __future__ import annotations

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from minilucid_course import progress

CHECKS = '''
import sys, types
module = types.ModuleType("minilucid_course.checks.ch99")
exec("""
def check_double(fn):
    got = fn(3)
    assert got == 6, "double(3) should be 6; check the factor"
    print("✓ double")

def check_runs(fn):
    fn()
    print("✓ runs")

def picture_of(fn):
    from IPython.display import HTML
    return HTML("<b>picture</b>")
""", module.__dict__)
sys.modules[module.__name__] = module
import minilucid
import minilucid_course.checks
import minilucid_course.checks.lab as lab
lab.TIME_LIMIT = 2.0
from minilucid_course.checks.ch99 import check_double, check_runs, picture_of
'''

CELLS = {
    "stub": "def double(x):\n    raise NotImplementedError()",
    "stub_check": "check_double(double)",
    "none": "def double(x):\n    return None",
    "none_check": "check_double(double)",
    "crash": "def double(x):\n    return x / 0",
    "crash_check": "check_double(double)",
    "loop_check": "def forever():\n    while True:\n        pass\ncheck_runs(forever)",
    "right": "def double(x):\n    return 2 * x",
    "right_check": "check_double(double)",
    "picture": "picture_of(double)",
    "undefined_check": "check_double(triple)",
    "refused": "def double(x):\n    return x.__class__(2 * x)",
    "refused_check": "check_double(double)",
}


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    path = tmp_path_factory.mktemp("lab") / "99_lab.ipynb"
    nb = new_notebook(cells=[new_code_cell(CHECKS)] + [new_code_cell(s) for s in CELLS.values()])
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nbformat.write(nb, str(path))
    ran = progress.execute(path)
    assert not [o for o in ran.cells[0].outputs if o.output_type == "error"], ran.cells[0].outputs
    return dict(zip(CELLS, ran.cells[1:], strict=True))


def _error(cell):
    errors = [o for o in cell.outputs if o.output_type == "error"]
    assert len(errors) == 1, cell.outputs
    text = "\n".join(errors[0].traceback)
    assert "Traceback" not in text and 'File "' not in text, text
    assert len(errors[0].traceback) <= 3, text
    return errors[0].ename, text


def test_an_untouched_stub_says_not_done_yet(outputs):
    ename, text = _error(outputs["stub_check"])
    assert ename == "NotDone" and text.startswith("not done yet: your double")


def test_a_wrong_answer_gets_the_checks_message_only(outputs):
    ename, text = _error(outputs["none_check"])
    assert ename == "CheckFailed" and text == "✗ double(3) should be 6; check the factor"


def test_a_crash_in_learner_code_is_one_plain_line(outputs):
    ename, text = _error(outputs["crash_check"])
    assert ename == "CheckFailed"
    assert text == "✗ your code raised ZeroDivisionError in double: division by zero"


def test_code_that_never_returns_hits_the_time_limit(outputs):
    ename, text = _error(outputs["loop_check"])
    assert ename == "CheckFailed" and "did not finish within 2 seconds" in text


def test_a_right_answer_passes_and_a_picture_is_displayed_not_returned(outputs):
    assert not [o for o in outputs["right_check"].outputs if o.output_type == "error"]
    kinds = [o.output_type for o in outputs["picture"].outputs]
    assert kinds == ["display_data"], kinds  # never an execute_result nbgrader reads as points


def test_a_name_the_learner_has_not_written_yet_is_not_done(outputs):
    ename, text = _error(outputs["undefined_check"])
    assert ename == "NotDone" and "`triple` is not defined" in text


def test_an_answer_grading_would_refuse_fails_with_the_policys_message(outputs):
    ename, text = _error(outputs["refused_check"])
    assert ename == "CheckFailed"
    assert "grading refuses your double: line 2: uses the attribute .__class__" in text
