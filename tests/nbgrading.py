"""What the grading tests share: nbgrader run from this environment, hand-ins made from the
release and the solutions, and the points nbgrader's gradebook holds."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat

MARKER = re.compile(r"[ \t]*### (BEGIN|END) SOLUTION[^\n]*\n?")
REGION = re.compile(r"([ \t]*)### BEGIN SOLUTION.*?### END SOLUTION[^\n]*", re.S)

DELEGATING_ADAM = """
class MyAdam(Optimizer):
    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps))
        self.inner = ml.optim.Adam([p for g in self.param_groups for p in g["params"]])

    def step(self) -> None:
        for mine, theirs in zip(self.param_groups, self.inner.param_groups, strict=True):
            theirs.update(mine)
        self.inner.state = self.state
        self.inner.step()
"""


def nbgrader(course: Path, *args: str) -> str:
    bin_dir = str(Path(sys.executable).parent)  # nbgrader calls its `alembic` by name
    result = subprocess.run(
        [sys.executable, "-m", "nbgrader", *args],
        cwd=course,
        env={**os.environ, "PATH": bin_dir + os.pathsep + os.environ.get("PATH", "")},
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert result.returncode == 0, f"nbgrader {' '.join(args)} failed:\n{result.stderr[-3000:]}"
    return result.stdout + result.stderr


def meta(cell) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {}) or {}


def is_check(cell) -> bool:
    m = meta(cell)
    return bool(m.get("grade")) and not m.get("solution") and cell.cell_type == "code"


def is_code_answer(cell) -> bool:
    return bool(meta(cell).get("solution")) and cell.cell_type == "code"


def wrong(source: str) -> str:
    """The answer with its solution region replaced by a plausible non-answer."""

    def replace(match):
        indent = match.group(1)
        return indent + ("return None" if indent else "pass")

    return REGION.sub(replace, source)


def submission(kind: str, released, solution):
    """The released notebook as a learner hands it in: "honest", "stub" or "wrong" answers."""
    nb = nbformat.from_dict(released)
    if kind == "stub":
        return nb
    answers = {meta(c)["grade_id"]: c.source for c in solution.cells if meta(c).get("solution")}
    for cell in nb.cells:
        grade_id = meta(cell).get("grade_id")
        if grade_id not in answers:
            continue
        source = answers[grade_id]
        if kind == "wrong" and cell.cell_type == "code":
            source = wrong(source)
        cell.source = MARKER.sub("", source)
    return nb


def scores(course: Path, assignment: str, notebook: str, student: str) -> dict[str, float]:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        graded = gradebook.find_submission_notebook(Path(notebook).stem, assignment, student)
        return {g.name: float(g.score) for g in graded.grades if g.auto_score is not None}


def processes_running(word: str) -> list[str]:
    """The command lines of the machine's processes that contain `word` (a hand-in's leftover)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            line = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if word in line:
            found.append(line)
    return found
