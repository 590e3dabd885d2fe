"""A teacher drops solutions/ into nbgrader as assignment sources and autogrades, unchanged.

Runs nbgrader itself (its database, `generate_assignment`, `autograde`, `export`) on chapter 01:
a learner who hands in the exercises unanswered scores 0, one who hands in the answers scores
full points.
"""

import csv
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHAPTER = "01_tensor_as_a_node.ipynb"

pytest.importorskip("nbgrader")


def nbgrader(course: Path, *args: str) -> None:
    bin_dir = str(Path(sys.executable).parent)  # nbgrader calls its `alembic` by name
    result = subprocess.run(
        [sys.executable, "-m", "nbgrader", *args],
        cwd=course,
        env={**os.environ, "PATH": bin_dir + os.pathsep + os.environ.get("PATH", "")},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, f"nbgrader {' '.join(args)} failed:\n{result.stderr[-3000:]}"


def answered(released: dict, source: dict) -> dict:
    """The released notebook with each answer cell filled in from the source, markers removed."""
    answers = {
        c["metadata"]["nbgrader"]["grade_id"]: "".join(c["source"])
        for c in source["cells"]
        if c["metadata"].get("nbgrader", {}).get("solution")
    }
    for cell in released["cells"]:
        grade_id = cell["metadata"].get("nbgrader", {}).get("grade_id")
        if grade_id in answers:
            cell["source"] = re.sub(r"[ \t]*### (BEGIN|END) SOLUTION\n", "", answers[grade_id])
    return released


def test_nbgrader_generates_and_autogrades_a_chapter_unchanged(tmp_path):
    course = tmp_path / "course"
    (course / "source" / "ps01").mkdir(parents=True)
    shutil.copy(ROOT / "solutions" / CHAPTER, course / "source" / "ps01" / CHAPTER)
    (course / "nbgrader_config.py").write_text(
        f"c = get_config()\nc.CourseDirectory.root = {str(course)!r}\n"
    )
    nbgrader(course, "db", "assignment", "add", "ps01")
    nbgrader(course, "generate_assignment", "ps01", "--force")
    released = course / "release" / "ps01" / CHAPTER
    assert "BEGIN SOLUTION" not in released.read_text()

    source = json.loads((ROOT / "solutions" / CHAPTER).read_text())
    for student, notebook in [
        ("blank", json.loads(released.read_text())),
        ("answered", answered(json.loads(released.read_text()), source)),
    ]:
        nbgrader(course, "db", "student", "add", student)
        handed_in = course / "submitted" / student / "ps01" / CHAPTER
        handed_in.parent.mkdir(parents=True)
        handed_in.write_text(json.dumps(notebook))
        nbgrader(course, "autograde", "ps01", "--student", student, "--force")
    nbgrader(course, "export")

    rows = {r["student_id"]: r for r in csv.DictReader((course / "grades.csv").open())}
    points = sum(
        c["metadata"]["nbgrader"].get("points", 0)
        for c in source["cells"]
        if c["metadata"].get("nbgrader", {}).get("grade")
    )
    assert float(rows["blank"]["max_score"]) == points > 0
    assert float(rows["blank"]["score"]) == 0
    assert float(rows["answered"]["score"]) == points
