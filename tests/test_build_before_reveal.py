"""Build before reveal: no chapter shows the answer to an exercise before the learner wrote it.

The convention, for every chapter `notebooks/NN_topic.ipynb` (00-99, today's and later ones):

1. Where the chapter reaches a piece the learner writes in an exercise, it has a **markdown cell
   tagged `exercise-break`** that motivates and specifies the piece and says where to write it:
   the learner's copy of the exercise notebook (`work/NN_topic.ipynb`, which `make lab` copies
   from exercises/) and "Exercise k" for each exercise
   it sends the learner to, then "then read on".

2. That cell's metadata says what it stands in front of, next to its tags:

       "metadata": {
         "tags": ["exercise-break"],
         "answers": ["ex03_1_topological_order_answer"],       # nbgrader grade_ids of the
                                                               # answer cells in solutions/NN
         "reveals": ["minilucid.autograd.topological_order",   # a package object: the cell
                     "reveal:minimal-backward"]                #   tagged source:<it>; or a tag
       }                                                       #   an untagged cell carries

   `reveals` names every cell that shows what those exercises ask for: the package's tagged
   cells (by object, as in their `source:` tag) and untagged teaching versions (give such a cell
   a tag `reveal:<label>` and name that tag).

3. Every cell that a break reveals comes **after** that break and has its **input collapsed**
   (cell metadata `"jupyter": {"source_hidden": true}`).

How the test knows which tagged cells answer exercises: from `reveals` (2), plus one cross-check
so that a forgotten entry cannot pass: a class or function defined in an answer cell of
`solutions/NN_topic.ipynb` whose name, without a leading `My`/`my_`, is the last part of an
object shown in the chapter's tagged cells (`MyMul` -> `...elementwise.Mul`,
`topological_order` -> `...autograd.topological_order`) must be named in some break's `reveals`.
A reveal the cross-check cannot guess (`backward_sweep` answered by `autograd.backward`) is
named by hand.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
BREAK = "exercise-break"


def _tags(cell) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []))


def _collapsed(cell) -> bool:
    return bool(cell.get("metadata", {}).get("jupyter", {}).get("source_hidden"))


def _answer_cells(solutions: Path) -> dict[str, str]:
    """{grade_id: source} of the nbgrader answer cells of a solutions notebook."""
    if not solutions.exists():
        return {}
    out = {}
    for cell in nbformat.read(str(solutions), as_version=4).cells:
        meta = cell.get("metadata", {}).get("nbgrader", {}) or {}
        if meta.get("solution") and "grade_id" in meta:
            out[meta["grade_id"]] = cell.source
    return out


def _exercise_numbers(solutions: Path) -> dict[str, str]:
    """{answer grade_id: "k"} from the nearest "Exercise k" heading above each answer cell."""
    numbers, current = {}, None
    if not solutions.exists():
        return numbers
    for cell in nbformat.read(str(solutions), as_version=4).cells:
        if cell.cell_type == "markdown":
            found = re.search(r"^#+\s*Exercise\s+(\d+)", cell.source, re.MULTILINE)
            current = found.group(1) if found else current
        meta = cell.get("metadata", {}).get("nbgrader", {}) or {}
        if meta.get("solution") and "grade_id" in meta and current is not None:
            numbers[meta["grade_id"]] = current
    return numbers


def _defined_names(source: str) -> list[str]:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    return [n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.ClassDef)]


def _problems(chapter: Path) -> list[str]:
    cells = nbformat.read(str(chapter), as_version=4).cells
    solutions = ROOT / "solutions" / chapter.name
    answers = _answer_cells(solutions)
    numbers = _exercise_numbers(solutions)
    problems = []

    def where(i: int) -> str:
        return f"{chapter.name} cell {i}"

    # cells by what they show: "source:x.y" -> x.y, and any other tag as itself
    shown_at: dict[str, list[int]] = {}
    for i, cell in enumerate(cells):
        for tag in _tags(cell):
            name = tag[len("source:") :] if tag.startswith("source:") else tag
            shown_at.setdefault(name, []).append(i)

    revealed = set()
    for i, cell in enumerate(cells):
        if BREAK not in _tags(cell):
            continue
        meta = cell.get("metadata", {})
        if cell.cell_type != "markdown":
            problems.append(f"{where(i)}: an {BREAK} cell must be markdown")
        ids, reveals = meta.get("answers"), meta.get("reveals")
        if not ids or not isinstance(ids, list):
            problems.append(f"{where(i)}: metadata 'answers' must list answer grade_ids")
            ids = []
        if not reveals or not isinstance(reveals, list):
            problems.append(f"{where(i)}: metadata 'reveals' must list what comes after it")
            reveals = []
        if f"work/{chapter.name}" not in cell.source:
            problems.append(f"{where(i)}: say where to write it: work/{chapter.name}")
        for grade_id in ids:
            if grade_id not in answers:
                problems.append(f"{where(i)}: solutions/{chapter.name} has no answer {grade_id!r}")
            elif grade_id in numbers and f"Exercise {numbers[grade_id]}" not in cell.source:
                problems.append(f"{where(i)}: name the exercise: 'Exercise {numbers[grade_id]}'")
        for name in reveals:
            revealed.add(name)
            places = shown_at.get(name)
            if not places:
                problems.append(f"{where(i)}: reveals {name!r}, but no cell is tagged with it")
                continue
            for j in places:
                if j < i:
                    problems.append(f"{where(j)} shows {name!r} before its {BREAK} (cell {i})")
                elif not _collapsed(cells[j]):
                    problems.append(
                        f"{where(j)} shows {name!r}: collapse its input "
                        '(metadata "jupyter": {"source_hidden": true})'
                    )

    # the cross-check: an answer named like a shown object must be revealed by a break
    by_last: dict[str, list[str]] = {}
    for name in shown_at:
        if name.startswith("minilucid."):
            by_last.setdefault(name.rsplit(".", 1)[1], []).append(name)
    for grade_id, source in answers.items():
        for defined in _defined_names(source):
            plain = re.sub(r"^(My|my_)", "", defined)
            for name in by_last.get(plain, []):
                if name not in revealed:
                    problems.append(
                        f"{chapter.name}: {name} answers {grade_id} ({defined}); put it after an "
                        f"{BREAK} cell whose 'reveals' names it"
                    )
    return problems


def test_every_chapter_is_found():
    assert len(CHAPTERS) >= 4, [c.name for c in CHAPTERS]


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_build_before_reveal(chapter):
    problems = _problems(chapter)
    assert not problems, "\n".join(problems)


# --- the rule itself rejects what it should ----------------------------------------------------


def _chapter(tmp_path, cells, answer="class MyMul:\n    pass\n", heading="## Exercise 1 · Mul"):
    """A tiny chapter + solutions pair in a temporary tree; returns the chapter's path."""
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "solutions").mkdir()
    chapter = nbformat.v4.new_notebook(cells=cells)
    nbformat.write(chapter, str(tmp_path / "notebooks" / "02_x.ipynb"))
    answer_cell = nbformat.v4.new_code_cell(answer)
    answer_cell.metadata["nbgrader"] = {"solution": True, "grade_id": "ex02_1_mul_answer"}
    solutions = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_markdown_cell(heading), answer_cell]
    )
    nbformat.write(solutions, str(tmp_path / "solutions" / "02_x.ipynb"))
    return tmp_path / "notebooks" / "02_x.ipynb"


def _break(**meta):
    cell = nbformat.v4.new_markdown_cell("Write it now: work/02_x.ipynb, Exercise 1, then read on.")
    cell.metadata.update({"tags": [BREAK], **meta})
    return cell


def _mul(collapsed=True):
    cell = nbformat.v4.new_code_cell("class Mul: ...")
    cell.metadata["tags"] = ["source:minilucid.ops.elementwise.Mul"]
    if collapsed:
        cell.metadata["jupyter"] = {"source_hidden": True}
    return cell


def _check(monkeypatch, chapter):
    monkeypatch.setitem(globals(), "ROOT", chapter.parent.parent)
    return _problems(chapter)


META = {"answers": ["ex02_1_mul_answer"], "reveals": ["minilucid.ops.elementwise.Mul"]}


def test_the_convention_passes(tmp_path, monkeypatch):
    assert _check(monkeypatch, _chapter(tmp_path, [_break(**META), _mul()])) == []


def test_a_reveal_before_its_break_fails(tmp_path, monkeypatch):
    problems = _check(monkeypatch, _chapter(tmp_path, [_mul(), _break(**META)]))
    assert any("before its exercise-break" in p for p in problems), problems


def test_a_reveal_left_open_fails(tmp_path, monkeypatch):
    problems = _check(monkeypatch, _chapter(tmp_path, [_break(**META), _mul(collapsed=False)]))
    assert any("collapse its input" in p for p in problems), problems


def test_an_answer_shown_without_any_break_fails(tmp_path, monkeypatch):
    problems = _check(monkeypatch, _chapter(tmp_path, [_mul()]))
    assert any("answers ex02_1_mul_answer (MyMul)" in p for p in problems), problems


def test_a_break_without_its_metadata_or_pointer_fails(tmp_path, monkeypatch):
    bare = nbformat.v4.new_markdown_cell("Stop here.")
    bare.metadata["tags"] = [BREAK]
    problems = _check(monkeypatch, _chapter(tmp_path, [bare, _mul()]))
    text = "\n".join(problems)
    assert "'answers'" in text and "'reveals'" in text and "work/02_x.ipynb" in text


def test_a_break_naming_the_wrong_exercise_fails(tmp_path, monkeypatch):
    chapter = _chapter(tmp_path, [_break(**META), _mul()], heading="## Exercise 2 · Mul")
    problems = _check(monkeypatch, chapter)
    assert any("'Exercise 2'" in p for p in problems), problems


def test_a_reveal_that_no_cell_carries_fails(tmp_path, monkeypatch):
    meta = {"answers": ["ex02_1_mul_answer"], "reveals": ["reveal:minimal-mul"]}
    problems = _check(monkeypatch, _chapter(tmp_path, [_break(**meta)], answer="x = 1\n"))
    assert any("no cell is tagged with it" in p for p in problems), problems
