"""No answer is on screen before the learner has tried: the same rule for every chapter (00-99).

An *answer line* is a line between `### BEGIN SOLUTION` and `### END SOLUTION` in an answer cell
of `solutions/NN_topic.ipynb`, stripped, of at least 16 characters, and not a `def`/`class` line,
an import, a decorator or a comment. Two places must not hold one verbatim:

1. **The exercise notebook** `exercises/NN_topic.ipynb`, in full: statements, hints (the last hint
   may give the maths or pseudo-code, not the code), other code cells, and the stub itself (its
   docstring and comments).
2. **The chapter before the exercise's break**: no cell of `notebooks/NN_topic.ipynb` that comes
   before the `exercise-break` whose `answers` names the exercise (or, for an exercise no break
   names, no cell of the chapter at all: the learner reads it before trying).

A few lines are the framework's calling convention, written the same way by every op, loop and
walk in the course (`optimizer.step()`); they are no answer and are listed in `IDIOMS`, each one
by hand. Everything else counts, so a hint that grows into code fails here.
"""

from __future__ import annotations

import io
import re
import textwrap
import tokenize
from pathlib import Path

import nbformat
import pytest
from test_build_before_reveal import BREAK, _answer_cells, _exercise_numbers, _tags

ROOT = Path(__file__).resolve().parent.parent
SOLVED = sorted((ROOT / "solutions").glob("[0-9][0-9]_*.ipynb"))
MIN_LENGTH = 16

# the calling convention: how an op saves its output, a walk tests a node, a training loop and an
# optimiser go through batches, groups and parameters, a wrapper keeps what it wraps
IDIOMS = frozenset(
    {
        "ctx.save_for_backward(out)",
        "(out,) = ctx.saved_tensors",
        "with ml.no_grad():",
        "optimizer.zero_grad()",
        "optimizer.step()",
        "for x, y in loader:",
        "if node.grad_fn is not None:",
        "order.append(node)",
        "loss = loss_fn(model(x), y)",
        "for group in self.param_groups:",
        'for p in group["params"]:',
        "if p.grad is None:",
        "if p.grad is not None:",
        "state = self.state[p]",
        "self.dataset = dataset",
        # the shapes of a batch of images and of a convolution's weight, and the walk over a
        # kernel's offsets, which chapter 10's loop shows before any exercise
        "n, c, h, w = x.shape",
        "o, _, kh, kw = weight.shape",
        "for i in range(kh):",
        "for j in range(kw):",
        # a seed before building a model, and the container a model is built in
        "ml.manual_seed(0)",
        "model = nn.Sequential(",
    }
)

# chapters another change is rewriting under this rule; empty this list once they pass
EXPECTED_TO_FAIL: set[str] = set()

_NOT_AN_ANSWER = re.compile(r"(async\s+def|def|class|import|from)\b|#|@")


def answer_lines(source: str) -> list[str]:
    """The answer lines of one answer cell, in order, without repeats."""
    lines, inside = [], False
    for raw in source.splitlines():
        line = raw.strip()
        if line.startswith("### BEGIN SOLUTION"):
            inside = True
        elif line.startswith("### END SOLUTION"):
            inside = False
        elif inside and len(line) >= MIN_LENGTH and not _NOT_AN_ANSWER.match(line):
            if line not in IDIOMS and line not in lines:
                lines.append(line)
    return lines


def _label(cell) -> str:
    meta = cell.get("metadata", {})
    grade_id = (meta.get("nbgrader", {}) or {}).get("grade_id")
    first = next((s.strip("# ") for s in cell.source.splitlines() if s.strip()), "")
    return f"{cell.cell_type}" + (f" {grade_id}" if grade_id else "") + f": {first[:50]!r}"


def leaks(solutions: Path) -> list[str]:
    """Each answer line on screen where it must not be, as 'chapter, exercise, line, where'."""
    name = solutions.name
    answers = _answer_cells(solutions)
    numbers = _exercise_numbers(solutions)
    exercise_nb = ROOT / "exercises" / name
    chapter_nb = ROOT / "notebooks" / name
    exercise_cells = nbformat.read(str(exercise_nb), as_version=4).cells
    chapter_cells = (
        nbformat.read(str(chapter_nb), as_version=4).cells if chapter_nb.exists() else []
    )
    breaks: dict[str, int] = {}
    for i, cell in enumerate(chapter_cells):
        if BREAK in _tags(cell):
            for grade_id in cell.get("metadata", {}).get("answers", []):
                breaks.setdefault(grade_id, i)

    found = []
    for grade_id, source in answers.items():
        exercise = f"Exercise {numbers.get(grade_id, '?')} ({grade_id})"
        before = breaks.get(grade_id, len(chapter_cells))
        for line in answer_lines(source):
            for i, cell in enumerate(exercise_cells):
                if line in cell.source:
                    found.append(
                        f"{solutions.stem}, {exercise}: {line!r} is in exercises/{name} "
                        f"cell {i} ({_label(cell)})"
                    )
            for i, cell in enumerate(chapter_cells[:before]):
                if line in cell.source:
                    found.append(
                        f"{solutions.stem}, {exercise}: {line!r} is in notebooks/{name} "
                        f"cell {i} ({_label(cell)}), before the exercise's break"
                        + ("" if grade_id in breaks else " (no break names it)")
                    )
    return found


def _marked(path: Path):
    if path.stem in EXPECTED_TO_FAIL:
        reason = f"{path.stem} is being rewritten under this rule"
        return pytest.param(path, marks=pytest.mark.xfail(reason=reason, strict=True))
    return path


def test_every_solved_chapter_is_found():
    assert len(SOLVED) >= 4, [p.name for p in SOLVED]
    names = {p.stem for p in SOLVED}
    assert EXPECTED_TO_FAIL <= names, EXPECTED_TO_FAIL - names


@pytest.mark.parametrize("solutions", [_marked(p) for p in SOLVED], ids=lambda p: p.stem)
def test_no_answer_line_is_on_screen(solutions):
    found = leaks(solutions)
    assert not found, f"{len(found)} answer line(s) on screen:\n" + "\n".join(found)


# --- the rule itself catches what it should ---------------------------------------------------

ANSWER = '''\
def double(x):
    """Twice x."""
    ### BEGIN SOLUTION
    # a comment is no answer
    import numpy as np
    twice = np.multiply(x, 2)
    optimizer.step()
    return twice
    ### END SOLUTION
'''


def test_answer_lines_skip_short_lines_defs_imports_comments_and_idioms():
    assert answer_lines(ANSWER) == ["twice = np.multiply(x, 2)"]


def _course(tmp_path, hint: str, chapter: list[str], break_at: int | None):
    """A one-exercise chapter in a temporary tree; returns its solutions notebook's path."""
    for folder in ("notebooks", "solutions", "exercises"):
        (tmp_path / folder).mkdir()
    answer = nbformat.v4.new_code_cell(ANSWER)
    answer.metadata["nbgrader"] = {"solution": True, "grade_id": "ex02_1_double_answer"}
    heading = nbformat.v4.new_markdown_cell("## Exercise 1 · double")
    stub = nbformat.v4.new_code_cell(ANSWER.split("### BEGIN")[0] + "raise NotImplementedError")
    nbformat.write(
        nbformat.v4.new_notebook(cells=[heading, answer]), tmp_path / "solutions/02_x.ipynb"
    )
    cells = [heading, nbformat.v4.new_markdown_cell(hint), stub]
    nbformat.write(nbformat.v4.new_notebook(cells=cells), tmp_path / "exercises/02_x.ipynb")
    chapter_cells = [nbformat.v4.new_code_cell(text) for text in chapter]
    if break_at is not None:
        stop = nbformat.v4.new_markdown_cell("Exercise 1 in work/02_x.ipynb, then read on.")
        stop.metadata.update({"tags": [BREAK], "answers": ["ex02_1_double_answer"]})
        chapter_cells.insert(break_at, stop)
    nbformat.write(nbformat.v4.new_notebook(cells=chapter_cells), tmp_path / "notebooks/02_x.ipynb")
    return tmp_path / "solutions" / "02_x.ipynb"


def _leaks(monkeypatch, solutions):
    monkeypatch.setitem(globals(), "ROOT", solutions.parent.parent)
    return leaks(solutions)


def test_a_clean_chapter_passes(tmp_path, monkeypatch):
    solutions = _course(tmp_path, "Hint: multiply by two.", ["y = 3"], break_at=1)
    assert _leaks(monkeypatch, solutions) == []


def test_a_hint_with_the_code_is_a_leak(tmp_path, monkeypatch):
    solutions = _course(tmp_path, "Hint 3: `twice = np.multiply(x, 2)`", [], break_at=0)
    (found,) = _leaks(monkeypatch, solutions)
    assert "Exercise 1 (ex02_1_double_answer)" in found and "exercises/02_x.ipynb cell 1" in found
    assert "'twice = np.multiply(x, 2)'" in found


def test_the_answer_before_the_break_is_a_leak_and_after_it_is_not(tmp_path, monkeypatch):
    shown = ["z = 1", "twice = np.multiply(x, 2)"]
    solutions = _course(tmp_path, "Hint.", shown, break_at=2)
    (found,) = _leaks(monkeypatch, solutions)
    assert "notebooks/02_x.ipynb cell 1" in found and "before the exercise's break" in found
    (tmp_path / "later").mkdir()
    solutions = _course(tmp_path / "later", "Hint.", shown, break_at=1)
    assert _leaks(monkeypatch, solutions) == []


def test_an_exercise_no_break_names_may_not_be_shown_anywhere(tmp_path, monkeypatch):
    solutions = _course(tmp_path, "Hint.", ["z = 1", "twice = np.multiply(x, 2)"], break_at=None)
    (found,) = _leaks(monkeypatch, solutions)
    assert "no break names it" in found


# --- no run of answer tokens anywhere on an exercise notebook's screen ------------------------
#
# An answer line can be reworded a little and still be the answer. So, second rule: the tokens
# of each solution region (Python's tokenize, comments dropped, each token split as prose is)
# must not stand RUN_LENGTH or more in a row, in the same order, in any statement, hint,
# docstring, comment, string or output of the exercise notebook. Code outside those (the stub's
# signature, a helper the exercise gives) is not read: it is the exercise, not an answer.

RUN_LENGTH = 10
_PROSE_TOKEN = re.compile(r"\w+|[^\w\s]")

# exercise notebooks another change is rewriting under this rule (their hints and statements);
# empty this set once they pass. Not strict: each one passes as soon as its rewrite lands.
RUNS_EXPECTED_TO_FAIL: set[str] = set()


def prose_tokens(text: str) -> list[str]:
    return _PROSE_TOKEN.findall(text)


def answer_tokens(region: str) -> list[str]:
    """The tokens of one solution region's code, comments dropped, split as prose is."""
    kept = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(textwrap.dedent(region)).readline):
            if token.type in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE):
                continue
            kept.append(token.string)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return prose_tokens(re.sub(r"#[^\n]*", "", region))
    return prose_tokens(" ".join(kept))


_REGION = re.compile(r"^[ \t]*### BEGIN SOLUTION[^\n]*\n(.*?)^[ \t]*### END SOLUTION", re.M | re.S)


def solution_regions(path: Path) -> list[tuple[str, str]]:
    """(grade_id, region source) for every solution region of a solutions notebook."""
    out = []
    for cell in nbformat.read(str(path), as_version=4).cells:
        if cell.cell_type != "code":
            continue
        grade_id = (cell.get("metadata", {}).get("nbgrader", {}) or {}).get("grade_id", "?")
        out.extend((grade_id, region) for region in _REGION.findall(cell.source))
    return out


def screen_texts(path: Path) -> list[tuple[str, str]]:
    """(where, text) for every piece of an exercise notebook a learner reads as prose."""
    texts = []
    for i, cell in enumerate(nbformat.read(str(path), as_version=4).cells):
        where = f"cell {i} ({_label(cell)})"
        if cell.cell_type != "code":
            texts.append((where, cell.source))
            continue
        try:
            for token in tokenize.generate_tokens(io.StringIO(cell.source).readline):
                if token.type in (tokenize.COMMENT, tokenize.STRING):
                    texts.append((f"{where}, a comment or string", token.string))
        except (tokenize.TokenError, IndentationError, SyntaxError):
            texts.append((where, cell.source))
        for output in cell.get("outputs", []):
            text = output.get("text") or (output.get("data") or {}).get("text/plain", "")
            text = "".join(text) if isinstance(text, list) else text
            text += "\n".join(output.get("traceback", []))
            texts.append((f"{where}, output", text))
    return texts


def longest_runs(answer: list[str], text: list[str], length: int = RUN_LENGTH) -> list[str]:
    """Every maximal run of >= length answer tokens that stands, in order, in text."""
    grams = {tuple(answer[i : i + length]) for i in range(len(answer) - length + 1)}
    runs, i = [], 0
    while i <= len(text) - length:
        if tuple(text[i : i + length]) not in grams:
            i += 1
            continue
        j = i + length  # extend while the longer run is still in the answer
        while j < len(text) and _in_order(answer, text[i : j + 1]):
            j += 1
        runs.append(" ".join(text[i:j]))
        i = j
    return runs


def _in_order(answer: list[str], run: list[str]) -> bool:
    n = len(run)
    return any(answer[k : k + n] == run for k in range(len(answer) - n + 1))


def answer_runs(name: str) -> list[str]:
    """Each answer-token run on the screen of exercises/<name>, as 'region: run, where'."""
    regions = solution_regions(ROOT / "solutions" / name)
    texts = [(where, prose_tokens(text)) for where, text in screen_texts(ROOT / "exercises" / name)]
    found = []
    for grade_id, region in regions:
        tokens = answer_tokens(region)
        for where, text in texts:
            for run in longest_runs(tokens, text):
                found.append(f"{grade_id}: {run!r} in exercises/{name} {where}")
    return found


EXERCISE_NOTEBOOKS = sorted((ROOT / "exercises").glob("[0-9][0-9]*_*.ipynb"))


def _marked_runs(path: Path):
    if path.stem in RUNS_EXPECTED_TO_FAIL:
        reason = f"{path.stem} is being rewritten under this rule"
        return pytest.param(path, marks=pytest.mark.xfail(reason=reason, strict=True))
    return path


@pytest.mark.parametrize(
    "exercises", [_marked_runs(p) for p in EXERCISE_NOTEBOOKS], ids=lambda p: p.stem
)
def test_no_run_of_answer_tokens_is_on_screen(exercises):
    assert (ROOT / "solutions" / exercises.name).exists(), exercises.name
    found = answer_runs(exercises.name)
    assert not found, f"{len(found)} run(s) of answer tokens on screen:\n" + "\n".join(found)


def test_answer_tokens_drop_comments_and_split_as_prose_does():
    region = "    grads[parent] += g  # accumulate\n    return {'a': 1e-9}\n"
    assert answer_tokens(region) == prose_tokens("grads[parent] += g\nreturn {'a': 1e-9}")
    assert "accumulate" not in answer_tokens(region)


def test_a_reworded_hint_that_keeps_the_tokens_is_a_run():
    answer = answer_tokens("value = (3 * x + 2) * x + 1\n")
    hint = prose_tokens("Horner's rule: write it as (3 * x + 2) * x + 1, one product at a time.")
    assert longest_runs(answer, hint) == ["( 3 * x + 2 ) * x + 1"]
    assert longest_runs(answer, prose_tokens("a product of (3x + 2) and x, plus one")) == []
