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


def learner_with_an_answer(clone: Path, tmp_path: Path) -> tuple[Path, Path]:
    """A learner's clone of the course with work/ made and one chapter answered there."""
    learner = tmp_path / "learner"
    git(tmp_path, "clone", "--quiet", str(clone), str(learner))
    workspace.prepare(learner / "exercises", learner / "work")
    solution = three_chapters(learner)[0]
    answer(learner / "work" / solution.name, solution)
    return learner, solution


def test_git_pull_of_a_course_update_never_meets_the_learners_answers(clone, tmp_path):
    learner, solution = learner_with_an_answer(clone, tmp_path)

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


def run_every_chapter(course: Path) -> list[Path]:
    """What JupyterLab leaves after Run All and save: new counts, this run's outputs, metadata."""
    chapters = sorted((course / "notebooks").glob("*.ipynb"))
    for n, path in enumerate(chapters):
        nb = nbformat.read(str(path), as_version=4)
        for count, cell in enumerate(c for c in nb.cells if c.cell_type == "code"):
            cell.execution_count = count + 1
            cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=f"run {n}\n")]
        nb.metadata["widgets"] = {"state": {}}
        nbformat.write(nb, str(path))
    return chapters


def snapshot(folder: Path) -> dict:
    return {p.relative_to(folder): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def test_make_update_brings_a_changed_chapter_after_every_chapter_was_run(clone, tmp_path):
    learner, solution = learner_with_an_answer(clone, tmp_path)
    chapters = run_every_chapter(learner)
    work_before = snapshot(learner / "work")

    # upstream: a chapter changes, and a new exercise notebook arrives
    changed = clone / "notebooks" / chapters[3].name
    nb = nbformat.read(str(changed), as_version=4)
    nb.cells[0].source += "\n\nA sentence added by a course update."
    nbformat.write(nb, str(changed))
    new_exercise = clone / "exercises" / "99_new_chapter.ipynb"
    new_exercise.write_bytes((clone / "exercises" / solution.name).read_bytes())
    git(clone, "add", "-A")
    git(clone, "commit", "--quiet", "-m", "course update")

    # what a plain git pull does to a learner who ran the chapters
    refused = subprocess.run(["git", "pull"], cwd=learner, capture_output=True, text=True)
    assert refused.returncode != 0 and "would be overwritten" in refused.stderr

    lines = workspace.update(learner)
    assert "course update" in git(learner, "log", "-1", "--format=%s")
    assert "added by a course update" in (learner / "notebooks" / chapters[3].name).read_text()
    assert git(learner, "status", "--porcelain") == ""  # every chapter as published
    # the learner's runs are kept, each at its path under one backup folder
    (backups,) = (learner / "work" / workspace.BACKUPS).iterdir()
    for chapter in chapters:
        kept = backups / "notebooks" / chapter.name
        assert "run " in kept.read_text(encoding="utf-8"), kept
    # work/ as it was, plus the new chapter's exercises
    work_after = snapshot(learner / "work")
    assert {k: v for k, v in work_after.items() if k.parts[0] != workspace.BACKUPS} == {
        **work_before,
        Path("99_new_chapter.ipynb"): new_exercise.read_bytes(),
    }
    assert any("99_new_chapter" in line for line in lines)

    # nothing run since: the next update only pulls
    assert workspace.update(learner)[-1].startswith("Already up to date")


def test_make_update_refuses_to_discard_a_changed_file_that_is_no_notebook(clone):
    (clone / "minilucid" / "__init__.py").write_text("# my own change\n", encoding="utf-8")
    with pytest.raises(SystemExit, match=r"minilucid/__init__\.py.*git stash"):
        workspace.update(clone)
    assert (clone / "minilucid" / "__init__.py").read_text() == "# my own change\n"
