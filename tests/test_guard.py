"""The guard in a real kernel: one plain line per failure, not done yet, time limit, and checks
that refuse to run once a check was redefined or minilucid was changed."""

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
import minilucid_course.checks.guard as guard
guard.TIME_LIMIT = 2.0
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
    "redefine": "check_double = lambda fn: print('✓ double')",
    "redefined_check": "check_double(double)",
    "other_check": "check_runs(lambda: None)",
    "patch": "import minilucid.autograd as a\na.backward = lambda *args, **kwargs: None",
    "patched_check": "check_runs(lambda: None)",
}


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    path = tmp_path_factory.mktemp("guard") / "99_guard.ipynb"
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


def test_a_redefined_check_fails_and_other_checks_still_run(outputs):
    ename, text = _error(outputs["redefined_check"])
    assert ename == "CheckFailed" and "`check_double` was redefined" in text
    assert not [o for o in outputs["other_check"].outputs if o.output_type == "error"]


def test_a_changed_engine_fails_every_later_check(outputs):
    ename, text = _error(outputs["patched_check"])
    assert ename == "CheckFailed" and "changed minilucid.autograd.backward" in text


# Each attack runs in a kernel of its own (a change is remembered until the kernel restarts):
# the setup cell, a right answer, the attack, then the check cell, which must fail and say why.
ATTACKS = {
    "an input transformer that rewrites check cells into a print": (
        "get_ipython().input_transformers_post.append(\n"
        "    lambda lines: ['print(\"ok\")\\n'] if 'check_' in ''.join(lines) else lines)",
        "shell.input_transformers_post",
    ),
    "a cleanup transformer, with the guard's events emptied": (
        "ip = get_ipython()\n"
        "for callbacks in ip.events.callbacks.values():\n"
        "    callbacks.clear()\n"
        "ip.input_transformers_cleanup.append(\n"
        "    lambda lines: ['pass\\n'] if 'check_' in ''.join(lines) else lines)",
        "shell.events",
    ),
    "an AST transformer that drops every call": (
        "import ast\n"
        "class Drop(ast.NodeTransformer):\n"
        "    def visit_Expr(self, node):\n"
        "        return ast.Pass()\n"
        "get_ipython().ast_transformers.append(Drop())",
        "shell.ast_transformers",
    ),
    "an event callback that re-patches before each cell": (
        "import math\n"
        "def again(*args):\n"
        "    math.isclose = lambda *a, **k: True\n"
        "get_ipython().events.register('pre_run_cell', again)",
        "shell.events['pre_run_cell']",
    ),
    "an exception handler that swallows the check's failure": (
        "get_ipython().set_custom_exc((Exception,), lambda *args, **kwargs: None)",
        "shell.custom_exceptions",
    ),
    "a kernel whose tracebacks are never sent": (
        "get_ipython()._showtraceback = lambda *args, **kwargs: None",
        "changed shell (its own methods)",
    ),
    "np.allclose's code replaced": (
        "import numpy as np\n"
        "np.allclose._implementation.__code__ = (lambda *a, **k: True).__code__",
        "numpy.allclose (its code)",
    ),
    "math.isclose replaced": (
        "import math\nmath.isclose = lambda *a, **k: True",
        "math.isclose",
    ),
    "np.testing.assert_allclose replaced": (
        "import numpy as np\nnp.testing.assert_allclose = lambda *a, **k: None",
        "numpy.testing.assert_allclose",
    ),
    "isinstance made to say yes": (
        "__builtins__.isinstance = lambda o, c: True",
        "builtins.isinstance",
    ),
    "the gradebook written": (
        "import sqlite3\n"
        "try:\n    sqlite3.connect('gradebook.db')\nexcept PermissionError:\n    pass",
        "opened a database (gradebook.db)",
    ),
    "another Python started (to write the gradebook from there)": (
        "import subprocess, sys\n"
        "try:\n    subprocess.run([sys.executable, '-c', 'pass'])\nexcept PermissionError:\n"
        "    pass",
        "opened a program (python",
    ),
    "the answer key read": (
        "try:\n    open('../source/ch99/99_guard.ipynb')\nexcept (PermissionError, OSError):\n"
        "    pass",
        "opened 99_guard.ipynb",
    ),
}


def _run(cells: list[str], tmp_path):
    path = tmp_path / "99_attack.ipynb"
    nb = new_notebook(cells=[new_code_cell(s) for s in [CHECKS, *cells]])
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nbformat.write(nb, str(path))
    return progress.execute(path).cells[1:]


@pytest.mark.parametrize("attack", ATTACKS)
def test_an_attack_fails_the_check_it_cheats(attack, tmp_path):
    code, words = ATTACKS[attack]
    right, attacked, check = _run([CELLS["right"], code, "check_double(double)"], tmp_path)
    assert not [o for o in attacked.outputs if o.output_type == "error"], attacked.outputs
    ename, text = _error(check)
    assert ename == "CheckFailed" and text.startswith("✗ this notebook ") and words in text, text


def test_an_answer_cannot_open_the_gradebook(tmp_path):
    (cell,) = _run(["import sqlite3\nsqlite3.connect('gradebook.db')"], tmp_path)
    errors = [o for o in cell.outputs if o.output_type == "error"]
    assert errors and errors[0].ename == "PermissionError", cell.outputs
    assert not (tmp_path / "gradebook.db").exists()
