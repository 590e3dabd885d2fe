"""How autograde runs a hand-in (minilucid_course/grading.py), one notebook at a time: a kernel
that dies or overruns is recorded, not dropped; a hand-in that writes the gradebook has it put
back and scores nothing; the kernel runs fenced in, away from the class folder."""

from __future__ import annotations

import os
import shutil
import sqlite3

import pytest
from nbformat.v4 import new_code_cell, new_notebook

pytest.importorskip("nbgrader")

from minilucid_course import grading  # noqa: E402


def _graded(source: str, grade_id: str):
    cell = new_code_cell(source)
    cell.metadata["nbgrader"] = {"grade": True, "grade_id": grade_id, "points": 1}
    return cell


def _run(cells, tmp_path, **traits):
    course = tmp_path / "course"
    folder = course / "autograded" / "ada" / "ch99"
    folder.mkdir(parents=True)
    gradebook = course / "gradebook.db"
    with sqlite3.connect(gradebook) as db:
        db.execute("CREATE TABLE grade (id TEXT, extra_credit REAL)")
        db.execute("INSERT INTO grade VALUES ('a', 0)")
    nb = new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    resources = {
        "metadata": {"path": str(folder)},
        "nbgrader": {"student": "ada", "assignment": "ch99", "db_url": f"sqlite:///{gradebook}"},
    }
    traits = {"timeout": 60, **traits}
    nb, _ = grading.HandInExecute(**traits).preprocess(nb, resources)
    with sqlite3.connect(gradebook) as db:
        extra = db.execute("SELECT extra_credit FROM grade").fetchone()[0]
    return nb, extra


def _stopped(cell) -> list[str]:
    return [o["evalue"] for o in cell.get("outputs", []) if o.get("ename") == grading.STOPPED]


def test_a_kernel_that_dies_is_recorded_from_there_on(tmp_path):
    cells = [
        _graded("x = 1", "before"),
        new_code_cell("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)"),
        _graded("x", "after"),
    ]
    nb, _ = _run(cells, tmp_path)
    assert not _stopped(nb.cells[0])
    assert "the kernel died" in _stopped(nb.cells[1])[0]
    assert "the kernel died" in _stopped(nb.cells[2])[0]


def test_a_hand_in_past_its_time_budget_is_recorded(tmp_path):
    cells = [new_code_cell("import time\ntime.sleep(30)"), _graded("1", "after")]
    nb, _ = _run(cells, tmp_path, hand_in_timeout=3)
    assert "ran longer than 3 s" in _stopped(nb.cells[1])[0]


def test_a_hand_in_that_writes_the_gradebook_scores_nothing_and_it_is_put_back(tmp_path):
    write = (
        "import sqlite3\n"
        "with sqlite3.connect('../../../gradebook.db') as db:\n"
        "    db.execute('UPDATE grade SET extra_credit = 9')"
    )
    nb, extra = _run([new_code_cell(write), _graded("1", "after")], tmp_path, sandbox=False)
    assert extra == 0
    assert "changed the gradebook" in _stopped(nb.cells[1])[0]


@pytest.mark.skipif(
    not (hasattr(os, "geteuid") and os.geteuid() == 0 and shutil.which("unshare")),
    reason="the class folder is hidden from the kernel only when autograde runs as root on Linux",
)
def test_as_root_the_kernel_cannot_see_the_class_folder(tmp_path):
    here, course = str(tmp_path), str(tmp_path / "course")
    look = f"import os\nprint(os.getcwd().startswith({here!r}), os.access({course!r}, os.R_OK))"
    nb, _ = _run([new_code_cell(look), _graded("1", "after")], tmp_path)
    assert nb.cells[0].outputs[0]["text"].split() == ["False", "False"], nb.cells[0].outputs


def test_a_kernel_that_ignores_interrupts_is_recorded(tmp_path):
    hang = "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    pass"
    cells = [new_code_cell(hang), _graded("1", "after")]
    nb, _ = _run(cells, tmp_path, hand_in_timeout=8, timeout=3)
    assert _stopped(nb.cells[1]), nb.cells[1].outputs


def test_a_class_made_in_the_repository_hides_its_grading_folders_not_the_course(tmp_path):
    root = grading.SOLUTIONS.parent
    hidden = grading.hidden_from_kernel(root / "gradebook.db")
    assert str(root) not in hidden and str(grading.SOLUTIONS) in hidden
    assert grading.hidden_from_kernel(tmp_path / "gradebook.db") == [
        str(tmp_path),
        str(grading.SOLUTIONS),
    ]
