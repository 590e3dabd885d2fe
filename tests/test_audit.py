"""`make audit` (minilucid_course/audit.py): every honest answer passes unlisted; answers that do
what an answer never needs, or call the package's own version of their exercise, are listed."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import nbformat
import pytest

from minilucid_course import audit

ROOT = Path(__file__).resolve().parents[1]
SOLUTIONS = sorted((ROOT / "solutions").glob("[0-9][0-9]_*.ipynb"))


def _with_answer(path: Path, grade_id: str, source: str, tmp_path) -> Path:
    nb = nbformat.read(str(path), as_version=4)
    (cell,) = [c for c in nb.cells if audit._meta(c).get("grade_id") == grade_id]
    cell.source = source
    out = tmp_path / path.name
    nbformat.write(nb, str(out))
    return out


@pytest.mark.parametrize("path", SOLUTIONS, ids=lambda p: p.name[:2])
def test_the_solutions_answers_are_not_listed(path):
    assert audit.audit_notebook(path) == []


CH08 = ROOT / "solutions" / "08_optimisers.ipynb"
CH11 = ROOT / "solutions" / "11_regularisation_and_normalisation.ipynb"
LISTED = {
    "a MyAdam that hands its steps to minilucid's Adam": (
        CH08,
        "ex08_2_adam_answer",
        "class MyAdam(Optimizer):\n    def step(self):\n        ml.optim.Adam(self.params).step()",
        "calls minilucid.optim.adam.Adam",
    ),
    "a my_dropout that calls F.dropout": (
        CH11,
        "ex11_1_dropout_answer",
        "from minilucid.nn import functional as F\n\ndef my_dropout(x, p, training=True):\n"
        "    return F.dropout(x, p, training)",
        "calls minilucid.nn.dropout.dropout",
    ),
    "an input transformer": (
        CH08,
        "ex08_1_sgd_answer",
        "get_ipython().input_transformers_post.append(lambda lines: lines)",
        "reaches into IPython: .input_transformers_post",
    ),
    "a function's code replaced": (
        CH08,
        "ex08_1_sgd_answer",
        "np.allclose._implementation.__code__ = (lambda *a: True).__code__",
        "reaches into Python's machinery: .__code__",
    ),
    "math.isclose replaced": (
        CH08,
        "ex08_1_sgd_answer",
        "math.isclose = lambda *a, **k: True",
        "writes math.isclose",
    ),
    "a builtin replaced": (
        CH08,
        "ex08_1_sgd_answer",
        "__builtins__.isinstance = lambda o, c: True",
        "uses __builtins__",
    ),
    "sys.modules": (
        CH08,
        "ex08_1_sgd_answer",
        "import sys\nsys.modules['numpy'].allclose = print",
        "uses sys.modules",
    ),
    "the gradebook": (
        CH08,
        "ex08_1_sgd_answer",
        "import sqlite3\nsqlite3.connect('../gradebook.db')",
        "imports sqlite3",
    ),
    "the checks imported": (
        CH08,
        "ex08_1_sgd_answer",
        "import minilucid_course.checks.ch08 as c\nc.check_sgd = print",
        "imports minilucid_course.checks.ch08 (the checks)",
    ),
    "a check rebound": (
        CH08,
        "ex08_1_sgd_answer",
        "check_sgd = print",
        "rebinds check_sgd",
    ),
}


@pytest.mark.parametrize("case", LISTED)
def test_an_answer_that_does_what_no_answer_needs_is_listed(case, tmp_path):
    path, grade_id, source, words = LISTED[case]
    found = audit.audit_notebook(_with_answer(path, grade_id, source, tmp_path))
    assert any(line.startswith(grade_id) and words in line for line in found), found


def test_the_class_report_names_the_hand_in_and_the_gradebook_extra_credit(tmp_path):
    path, grade_id, source, _words = LISTED["a MyAdam that hands its steps to minilucid's Adam"]
    release = tmp_path / "course" / "source" / "ch08"
    release.mkdir(parents=True)
    nbformat.write(nbformat.read(str(path), as_version=4), str(release / path.name))
    handed_in = tmp_path / "course" / "submitted" / "ada" / "ch08"
    handed_in.mkdir(parents=True)
    _with_answer(path, grade_id, source, handed_in)
    honest = tmp_path / "course" / "submitted" / "bob" / "ch08"
    honest.mkdir(parents=True)
    nbformat.write(nbformat.read(str(path), as_version=4), str(honest / path.name))
    report = audit.audit(tmp_path / "course")
    assert [k for k, v in report.items() if v] == [f"ada/ch08/{path.name}"]
    assert audit.main([str(tmp_path / "course")]) == 0


@pytest.mark.filterwarnings("ignore::sqlalchemy.exc.SAWarning")  # nbgrader's own
def test_extra_credit_and_hand_set_scores_are_listed(tmp_path, monkeypatch):
    from nbgrader.api import Gradebook

    bin_dir = str(Path(sys.executable).parent)  # nbgrader calls its `alembic` by name
    monkeypatch.setenv("PATH", bin_dir + os.pathsep + os.environ.get("PATH", ""))

    with Gradebook(f"sqlite:///{tmp_path / 'gradebook.db'}") as gradebook:
        gradebook.add_assignment("ch99")
        gradebook.add_notebook("99_x", "ch99")
        for cell in ("ex1", "ex2"):
            gradebook.add_grade_cell(cell, "99_x", "ch99", max_score=1, cell_type="code")
        gradebook.add_student("ada")
        gradebook.add_submission("ch99", "ada")
        first = gradebook.find_grade("ex1", "99_x", "ch99", "ada")
        first.auto_score, first.extra_credit = 1.0, 9.0
        second = gradebook.find_grade("ex2", "99_x", "ch99", "ada")
        second.auto_score, second.manual_score = 0.0, 1.0
        gradebook.db.commit()
    assert audit.audit_gradebook(tmp_path) == [
        "ada/ch99 ex1: extra credit 9",
        "ada/ch99 ex2: score set by hand to 1",
    ]


def test_the_report_says_plainly_when_there_is_nothing_to_read(tmp_path, capsys):
    (tmp_path / "submitted").mkdir()
    assert audit.main([str(tmp_path)]) == 0
    assert "no hand-ins in" in capsys.readouterr().out
    path = SOLUTIONS[0]
    for folder in ("source", "submitted/bob"):
        target = tmp_path / folder / "ch01"
        target.mkdir(parents=True)
        nbformat.write(nbformat.read(str(path), as_version=4), str(target / path.name))
    assert audit.main([str(tmp_path)]) == 0
    assert capsys.readouterr().out.startswith("no hand-in to read: the 1 hand-in(s)")


def test_what_a_hand_in_wrote_reaches_the_screen_escaped():
    assert audit.shown("a\x1b[2Jb\u202ec\nd ✓") == "a\\x1b[2Jb\\u202ec\\x0ad ✓"
