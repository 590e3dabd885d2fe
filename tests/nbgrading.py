"""nbgrader grades every chapter right: the points for honest, wrong, stub and cheating work.

Shared by tests/test_nbgrader_grading_a.py and _b.py (half of the chapters each).

For each chapter with graded cells, an nbgrader course is made from solutions/ unchanged
(`python -m minilucid_course.classroom`), and nbgrader itself generates the assignment,
autogrades six hand-ins and exports the grades:

- honest:          the solutions' answers                          every exercise full points
- stub:            the released notebook, untouched                 0 everywhere
- wrong:           every answer returns None (or defines nothing)   0 everywhere
- redefined:       honest answers, each also redefining the checks  0 everywhere
- patched_engine:  honest answers; the last answer cell replaces autograd.backward and
                   Tensor.__add__ by wrappers that compute the same   0 from that cell on
- patched_checks:  honest answers; the last answer cell replaces the chapter's check functions
                   in their module                                  0 from that cell on

The points come from nbgrader's gradebook, per exercise. A failed check shows a plain message:
no traceback through the checker. Chapters are found in solutions/ (new ones join by themselves).
"""

from __future__ import annotations

import csv
import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from minilucid_course import classroom

pytest.importorskip("nbgrader")

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = classroom.graded_chapters(ROOT / "solutions")
KINDS = ("honest", "stub", "wrong", "redefined", "patched_engine", "patched_checks")
MARKER = re.compile(r"[ \t]*### (BEGIN|END) SOLUTION[^\n]*\n?")
REGION = re.compile(r"([ \t]*)### BEGIN SOLUTION.*?### END SOLUTION[^\n]*", re.S)

PATCH_ENGINE = """
import minilucid.autograd as _autograd
from minilucid.tensor import Tensor as _Tensor

_real_backward, _real_add = _autograd.backward, _Tensor.__add__


def _same_backward(*args, **kwargs):
    return _real_backward(*args, **kwargs)


_autograd.backward = _same_backward
_Tensor.__add__ = lambda self, other: _real_add(self, other)
"""

PATCH_CHECKS = """
import sys as _sys

for _name, _module in list(_sys.modules.items()):
    if _name.startswith("minilucid_course.checks.ch"):
        for _attr in dir(_module):
            if _attr.startswith("check_"):
                setattr(_module, _attr, lambda *args, **kwargs: print("✓"))
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


def _meta(cell) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {}) or {}


def _is_check(cell) -> bool:
    meta = _meta(cell)
    return bool(meta.get("grade")) and not meta.get("solution") and cell.cell_type == "code"


def _is_code_answer(cell) -> bool:
    return bool(_meta(cell).get("solution")) and cell.cell_type == "code"


def _wrong(source: str) -> str:
    """The answer with its solution region replaced by a plausible non-answer."""

    def replace(match):
        indent = match.group(1)
        return indent + ("return None" if indent else "pass")

    return REGION.sub(replace, source)


def submission(kind: str, released, solution):
    """The released notebook as a learner of this kind hands it in."""
    nb = nbformat.from_dict(released)
    if kind == "stub":
        return nb
    answers = {_meta(c)["grade_id"]: c.source for c in solution.cells if _meta(c).get("solution")}
    checks = "\n".join(c.source for c in solution.cells if _is_check(c))
    check_names = sorted(set(re.findall(r"\b(check_\w+)\s*\(", checks)))
    code_answers = [c for c in nb.cells if _is_code_answer(c)]
    for cell in nb.cells:
        grade_id = _meta(cell).get("grade_id")
        if grade_id not in answers:
            continue
        if kind == "wrong" and cell.cell_type == "code":
            cell.source = MARKER.sub("", _wrong(answers[grade_id]))
        else:
            cell.source = MARKER.sub("", answers[grade_id])
        if kind == "redefined" and cell.cell_type == "code":
            cell.source += "\n" + "".join(
                f"\n{name} = lambda *args, **kwargs: print('✓')" for name in check_names
            )
    last = code_answers[-1]
    if kind == "patched_engine":
        last.source += "\n" + PATCH_ENGINE
    if kind == "patched_checks":
        last.source += "\n" + PATCH_CHECKS
    return nb


def expected_points(kind: str, released) -> dict[str, float]:
    """grade_id -> the points this kind of hand-in must score."""
    out, tampered = {}, False
    last_answer = max(i for i, c in enumerate(released.cells) if _is_code_answer(c))
    for index, cell in enumerate(released.cells):
        if index > last_answer and kind.startswith("patched"):
            tampered = True
        if _is_check(cell):
            full = float(_meta(cell)["points"])
            out[_meta(cell)["grade_id"]] = (
                full if kind == "honest" or (kind.startswith("patched") and not tampered) else 0.0
            )
    return out


def scores(course: Path, assignment: str, notebook: str, student: str) -> dict[str, float]:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        graded = gradebook.find_submission_notebook(Path(notebook).stem, assignment, student)
        return {g.name: float(g.score) for g in graded.grades if g.auto_score is not None}


def plain_failures(autograded: Path) -> list[str]:
    """Check cells whose error shows more than the check's plain message."""
    problems = []
    nb = nbformat.read(str(autograded), as_version=4)
    for cell in nb.cells:
        if not _is_check(cell):
            continue
        for output in cell.get("outputs", []):
            if output.get("output_type") != "error":
                continue
            text = "\n".join(output.get("traceback", []))
            if "Traceback" in text or 'File "' in text or "minilucid_course/checks/" in text:
                problems.append(f"{_meta(cell)['grade_id']}: {text[:300]}")
    return problems


def values_as_grades(autograded: Path) -> list[str]:
    """Check cells whose output nbgrader would read as a partial grade (a cell value)."""
    nb = nbformat.read(str(autograded), as_version=4)
    return [
        _meta(cell)["grade_id"]
        for cell in nb.cells
        if _is_check(cell)
        and any(o.get("output_type") == "execute_result" for o in cell.get("outputs", []))
    ]


def _table(points: dict[str, dict[str, float]], expected) -> str:
    ids = list(next(iter(expected.values())))
    width = max(len(i) for i in ids)
    lines = [" " * width + "".join(f"{k:>16}" for k in KINDS)]
    for grade_id in ids:
        cells = []
        for kind in KINDS:
            got, want = points[kind].get(grade_id), expected[kind][grade_id]
            mark = "" if got == want else f" (want {want:g})"
            cells.append(f"{'-' if got is None else f'{got:g}'}{mark:>8}".rjust(16))
        lines.append(grade_id.ljust(width) + "".join(cells))
    return "\n".join(lines)


def half(part: int) -> list:
    """Every other graded chapter (part 0 or 1): two test files, so two workers share the work."""
    chapters = CHAPTERS[part::2]
    return chapters or [pytest.param(None, marks=pytest.mark.skip("no graded chapters here"))]


def chapter_id(path) -> str:
    return path.name[:2] if path else "none"


def grade_each_kind_of_hand_in(solution_path, tmp_path):
    """Generate, autograde and export one chapter; assert the points of every hand-in."""
    course = tmp_path / "course"
    sources = classroom.init_course(course, [solution_path])
    (assignment,) = sources
    name = solution_path.name
    nbgrader(course, "generate_assignment", assignment, "--force")  # adds it to the gradebook
    released_path = course / "release" / assignment / name
    released = nbformat.read(str(released_path), as_version=4)
    assert "BEGIN SOLUTION" not in released_path.read_text(encoding="utf-8")
    solution = nbformat.read(str(solution_path), as_version=4)

    for kind in KINDS:
        handed_in = course / "submitted" / kind / assignment / name
        handed_in.parent.mkdir(parents=True)
        nbformat.write(submission(kind, released, solution), str(handed_in))
    nbgrader(course, "autograde", assignment, "--force")  # adds the students too
    nbgrader(course, "export")

    points = {kind: scores(course, assignment, name, kind) for kind in KINDS}
    expected = {kind: expected_points(kind, released) for kind in KINDS}
    table = _table(points, expected)
    print(f"\n{name}\n{table}")
    assert points == expected, f"{name}: points per exercise\n{table}"

    rows = {r["student_id"]: r for r in csv.DictReader((course / "grades.csv").open())}
    assert float(rows["honest"]["score"]) == float(rows["honest"]["max_score"]) > 0
    assert float(rows["stub"]["score"]) == 0
    honest = course / "autograded" / "honest" / assignment / name
    assert not values_as_grades(honest), f"check cells with a value: {values_as_grades(honest)}"
    for kind in ("stub", "wrong", "redefined", "patched_engine", "patched_checks"):
        autograded = course / "autograded" / kind / assignment / name
        assert not plain_failures(autograded), "\n".join(plain_failures(autograded))
