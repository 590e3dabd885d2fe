"""A learner's working copy never breaks: answers live in work/, git ignores them, tests stay green.

In a temporary clone of the committed course: the learner's copies are made, three chapters are
answered (in work/ and, against the advice, in exercises/ too), and the course's integrity tests
still pass there; `git pull` of a course update goes through; a reset keeps a backup.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from minilucid_course import classroom, workspace

ROOT = Path(__file__).resolve().parents[1]
MARKER = re.compile(r"[ \t]*### (BEGIN|END) SOLUTION[^\n]*\n?")


def git(cwd: Path, *args: str) -> str:
    result = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, f"git {' '.join(args)}: {result.stderr}"
    return result.stdout


def answer(exercise: Path, solution: Path) -> None:
    """Fill every answer cell from the solution and leave outputs behind, as a learner would."""
    answers = {
        c.metadata["nbgrader"]["grade_id"]: MARKER.sub("", c.source)
        for c in nbformat.read(str(solution), as_version=4).cells
        if c.metadata.get("nbgrader", {}).get("solution")
    }
    nb = nbformat.read(str(exercise), as_version=4)
    for n, cell in enumerate(nb.cells):
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id in answers:
            cell.source = answers[grade_id]
        if cell.cell_type == "code":
            cell.execution_count = n + 1
            cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="ran\n")]
    nbformat.write(nb, str(exercise))


@pytest.fixture
def clone(tmp_path):
    if subprocess.run(["git", "-C", str(ROOT), "rev-parse"], capture_output=True).returncode:
        pytest.skip("not a git checkout")
    target = tmp_path / "course"
    git(tmp_path, "clone", "--quiet", str(ROOT), str(target))
    git(target, "config", "user.email", "learner@example.org")
    git(target, "config", "user.name", "A Learner")
    return target


def three_chapters(clone: Path) -> list[Path]:
    chapters = classroom.graded_chapters(clone / "solutions")
    if len(chapters) < 3:
        pytest.skip("fewer than three chapters with exercises")
    return chapters[:3]


def test_answering_three_chapters_keeps_the_integrity_tests_green(clone):
    copied = workspace.prepare(clone / "exercises", clone / "work")
    assert copied and all(p.parent == clone / "work" for p in copied)
    chapters = three_chapters(clone)
    for solution in chapters:
        answer(clone / "work" / solution.name, solution)
        answer(clone / "exercises" / solution.name, solution)  # in place, against the advice
    # work/ is invisible to git; only the in-place answers show
    status = git(clone, "status", "--porcelain")
    assert "work/" not in status
    assert all(f"exercises/{s.name}" in status for s in chapters)
    # preparing again never overwrites an answered copy
    before = (clone / "work" / chapters[0].name).read_text(encoding="utf-8")
    assert workspace.prepare(clone / "exercises", clone / "work") == []
    assert (clone / "work" / chapters[0].name).read_text(encoding="utf-8") == before

    chosen = " or ".join(s.name[:2] + "_" for s in chapters)
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-n",
            "0",
            "-p",
            "no:cacheprovider",
            "tests/test_exercises_generated.py",
            "tests/test_exercises_unanswered.py",
            "-k",
            f"not unanswered_exercise_fails or {chosen}",
        ],
        cwd=clone,
        capture_output=True,
        text=True,
        timeout=1200,
        env={**os.environ, "PYTHONPATH": str(clone)},
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert " passed" in result.stdout


def test_git_pull_of_a_course_update_never_meets_the_learners_answers(clone, tmp_path):
    learner = tmp_path / "learner"
    git(tmp_path, "clone", "--quiet", str(clone), str(learner))
    workspace.prepare(learner / "exercises", learner / "work")
    solution = three_chapters(learner)[0]
    answer(learner / "work" / solution.name, solution)

    # the course changes that chapter's exercise notebook upstream
    exercise = clone / "exercises" / solution.name
    data = json.loads(exercise.read_text(encoding="utf-8"))
    data["metadata"]["course_revision"] = 2
    exercise.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    git(clone, "commit", "--quiet", "-am", "course update")

    git(learner, "pull", "--quiet")
    assert "course_revision" in (learner / "exercises" / solution.name).read_text()
    assert "ran" in (learner / "work" / solution.name).read_text()  # the answers are still there


def test_reset_restores_one_chapter_and_keeps_a_backup(clone):
    work = clone / "work"
    workspace.prepare(clone / "exercises", work)
    first, second = three_chapters(clone)[:2]
    answer(work / first.name, first)
    answer(work / second.name, second)
    lines = workspace.reset(first.name[:2], clone / "exercises", work)
    assert len(lines) == 2, lines
    fresh = (clone / "exercises" / first.name).read_text(encoding="utf-8")
    assert (work / first.name).read_text(encoding="utf-8") == fresh
    (backup,) = (work / workspace.BACKUPS).glob(f"{first.stem}.*.ipynb")
    assert "ran" in backup.read_text(encoding="utf-8")
    assert "ran" in (work / second.name).read_text(encoding="utf-8")  # other chapters untouched
    with pytest.raises(SystemExit):
        workspace.reset("99", clone / "exercises", work)


def test_work_is_ignored_by_git():
    result = subprocess.run(
        ["git", "check-ignore", "-q", "work/01_x.ipynb"], cwd=ROOT, capture_output=True
    )
    assert result.returncode == 0, "work/ must be in .gitignore"
