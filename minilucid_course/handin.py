"""A hand-in rebuilt from the release: only its answer cells are its own.

Every cell of the graded notebook comes from the class's release copy (release/, or source/
with each answer replaced by a stub), in the release's order; the answer cells (nbgrader
`solution: true`) are taken from the hand-in, matched by grade id. Everything else in the
hand-in is left out and noted, for `make audit`: cells it added, cells whose nbgrader metadata
is gone or changed, answers the release does not have, release cells it changed.

    nb, notes = rebuild(handed_in, release)
"""

from __future__ import annotations

import copy
from pathlib import Path

import nbformat

STUB = "# YOUR CODE HERE\nraise NotImplementedError()"


def _meta(cell) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {}) or {}


def release_copy(course: Path | str, assignment: str, notebook: str) -> tuple[Path, bool] | None:
    """(path, holds answers?) of the release copy of `notebook` (a name without .ipynb)."""
    course = Path(course)
    for folder, answers in (("release", False), ("source", True)):
        path = course / folder / assignment / f"{notebook}.ipynb"
        if path.is_file():
            return path, answers
    return None


def _first_line(cell) -> str:
    lines = [line for line in cell.get("source", "").splitlines() if line.strip()]
    return lines[0][:80] if lines else "(empty)"


def rebuild(handed_in, release, release_holds_answers: bool = False):
    """(the notebook to grade, notes on what was left out); see the module's docstring."""
    answers = {}
    notes = []
    release_cells = {_meta(c).get("grade_id"): c for c in release.cells if _meta(c)}
    plain_cells = {(c.cell_type, c.get("source", "")) for c in release.cells if not _meta(c)}
    for index, cell in enumerate(handed_in.cells):
        meta, grade_id = _meta(cell), _meta(cell).get("grade_id")
        where = f"cell {index + 1} ({cell.cell_type})"
        ours = release_cells.get(grade_id)
        if ours is not None and _meta(ours).get("solution"):
            if not meta.get("solution") or cell.cell_type != ours.cell_type:
                notes.append(f"{where}: answer {grade_id} lost its nbgrader metadata, left out")
            elif grade_id in answers:
                notes.append(f"{where}: a second copy of answer {grade_id}, left out")
            else:
                answers[grade_id] = cell
            continue
        if ours is not None:
            if cell.get("source", "") != ours.get("source", ""):
                notes.append(f"{where}: changed the release's cell {grade_id}, release copy used")
            continue
        if not meta and (cell.cell_type, cell.get("source", "")) in plain_cells:
            continue  # the release's own text (a hint, a heading)
        if meta.get("grade_id"):
            notes.append(f"{where}: a cell {grade_id!r} the release does not have, left out")
        elif cell.cell_type == "code" or cell.get("source", "").strip():
            notes.append(
                f"{where}: a cell the release does not have, left out: {_first_line(cell)}"
            )
    nb = copy.deepcopy(release)
    for position, cell in enumerate(nb.cells):
        meta = _meta(cell)
        if not meta.get("solution"):
            continue
        mine = answers.get(meta.get("grade_id"))
        if mine is not None:
            fresh = copy.deepcopy(cell)
            fresh.source = mine.get("source", "")
            nb.cells[position] = fresh
        elif release_holds_answers:
            cell.source = STUB if cell.cell_type == "code" else "YOUR ANSWER HERE"
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    return nb, notes


def rebuild_files(handed_in: Path | str, course: Path | str, assignment: str):
    """(rebuilt notebook, notes) for a hand-in file of `assignment`, or (None, [why])."""
    found = release_copy(course, assignment, Path(handed_in).stem)
    if found is None:
        return None, [f"no release copy of {Path(handed_in).name} in {assignment}"]
    release = nbformat.read(str(found[0]), as_version=4)
    return rebuild(nbformat.read(str(handed_in), as_version=4), release, found[1])
