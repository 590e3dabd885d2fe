"""Run a solution notebook's check cell in-process, with answer cells swapped for other code.

Mutation tests use it to prove a check rejects plausible wrong answers:

    wrong = answer_source(NB, "ex02_1_mul_backward_answer").replace("grad * b", "-grad * b")
    with pytest.raises(AssertionError):
        run_check(NB, "ex02_1_mul_backward_check", replace={"ex02_1_mul_backward_answer": wrong})

`run_check` executes the notebook's code cells in order, in a fresh namespace, up to and
including the check cell, as a kernel would (but without one: this is fast). Every call starts
from an empty namespace; only the notebook's parsed cells are kept between calls, until the file
changes (its size or modification time).
"""

from __future__ import annotations

import contextlib
import linecache
import os
import re
import textwrap
import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # before pyplot is imported anywhere: no windows, no inline backend

import matplotlib.pyplot as plt  # noqa: E402
import nbformat  # noqa: E402
import pytest  # noqa: E402


def _nbgrader(cell) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {}) or {}


_READ: dict[str, tuple[tuple[int, int], list]] = {}


def _cells(nb_path: Path | str) -> list:
    """The notebook's cells, shared by every caller until the file changes: read them only."""
    path = str(Path(nb_path).resolve())
    info = os.stat(path)
    stamp = (info.st_size, info.st_mtime_ns)
    if path not in _READ or _READ[path][0] != stamp:
        _READ[path] = (stamp, nbformat.read(path, as_version=4).cells)
    return _READ[path][1]


def _find(cells, grade_id: str, nb_path) -> int:
    for index, cell in enumerate(cells):
        if _nbgrader(cell).get("grade_id") == grade_id:
            return index
    known = [g for c in cells if (g := _nbgrader(c).get("grade_id"))]
    raise KeyError(f"{nb_path}: no cell with grade_id {grade_id!r}; the notebook has {known}")


def answer_source(nb_path: Path | str, grade_id: str) -> str:
    """The source text of the cell with this nbgrader grade_id."""
    cells = _cells(nb_path)
    return cells[_find(cells, grade_id, nb_path)].source


def grade_ids(nb_path: Path | str, *, grade: bool | None = None, solution: bool | None = None):
    """grade_ids of the notebook's nbgrader cells, optionally only check or answer cells."""
    out = []
    for cell in _cells(nb_path):
        meta = _nbgrader(cell)
        if "grade_id" not in meta:
            continue
        if grade is not None and bool(meta.get("grade")) != grade:
            continue
        if solution is not None and bool(meta.get("solution")) != solution:
            continue
        out.append(meta["grade_id"])
    return out


def _no_display(*objs, **kwargs):
    """Stands in for IPython's display(): a check's pictures are not needed here."""
    return None


@contextlib.contextmanager
def _notebook_like_process(folder: Path):
    """cwd = the notebook's folder, display() a no-op, figures closed afterwards."""
    patched = []
    with contextlib.suppress(ImportError):
        import IPython.core.display_functions as display_functions
        import IPython.display as ipython_display

        for module in (ipython_display, display_functions):
            patched.append((module, module.display))
            module.display = _no_display
    cwd = os.getcwd()
    os.chdir(folder)
    try:
        with warnings.catch_warnings():
            # plt.show() under Agg says it cannot show; that is the point here
            warnings.filterwarnings("ignore", message=".*non-interactive.*")
            yield
    finally:
        os.chdir(cwd)
        for module, original in patched:
            module.display = original
        plt.close("all")


def run_check(
    nb_path: Path | str, check_grade_id: str, replace: dict[str, str] | None = None
) -> dict:
    """Execute code cells up to and including the check cell; raise what the check raises.

    `replace` maps answer grade_ids to the source to run in their place. Returns the namespace.
    """
    nb_path = Path(nb_path).resolve()
    replace = dict(replace or {})
    cells = _cells(nb_path)
    stop = _find(cells, check_grade_id, nb_path)
    for grade_id in replace:
        index = _find(cells, grade_id, nb_path)
        if index > stop:
            raise ValueError(f"{grade_id!r} comes after {check_grade_id!r}: it would not run")

    namespace: dict = {"__name__": "__main__", "__builtins__": __builtins__}
    namespace["display"] = _no_display  # available without an import, as in IPython
    with _notebook_like_process(nb_path.parent):
        for index, cell in enumerate(cells[: stop + 1]):
            if cell.cell_type != "code":
                continue
            source = replace.get(_nbgrader(cell).get("grade_id"), cell.source)
            filename = f"<{nb_path.name} cell {index}>"
            # keep the text findable so a traceback shows the notebook's lines
            lines = source.splitlines(keepends=True)
            linecache.cache[filename] = (len(source), None, lines, filename)
            code = compile(source, filename, "exec")
            exec(code, namespace)
    return namespace


# --- building and judging answers, for the mutation tests ----------------------------------


def with_answer(nb_path: Path | str, answer_id: str, body: str) -> str:
    """The answer cell with the text between its solution markers replaced by `body`."""
    source = answer_source(nb_path, answer_id)
    begin, end = source.index("### BEGIN SOLUTION"), source.index("### END SOLUTION")
    indent = source[:begin].rsplit("\n", 1)[1]
    body = textwrap.dedent(body).strip("\n")
    lines = [indent + line if line else line for line in body.splitlines()]
    return source[:begin] + "\n".join(lines).lstrip() + "\n" + indent + source[end:]


def stub_of(nb_path: Path | str, answer_id: str) -> str:
    """The answer cell as the exercise notebook has it: every solution region raises."""
    region = re.compile(r"^([ \t]*)### BEGIN SOLUTION\n.*?^[ \t]*### END SOLUTION", re.M | re.S)
    return region.sub(r"\1raise NotImplementedError()", answer_source(nb_path, answer_id))


def rejected(nb_path, check_id: str, answer_id: str, source: str, *words: str) -> str:
    """Assert the check rejects `source` with an AssertionError mentioning each of `words`."""
    with pytest.raises(AssertionError) as info:
        run_check(nb_path, check_id, replace={answer_id: source})
    message = str(info.value)
    for word in words:
        assert word in message, f"the message should mention {word!r}: {message}"
    return message


def unanswered(nb_path, check_id: str, answer_id: str) -> None:
    """The stub an exercise notebook holds fails in the check with NotImplementedError."""
    stub = with_answer(nb_path, answer_id, "raise NotImplementedError()")
    with pytest.raises(NotImplementedError):
        run_check(nb_path, check_id, replace={answer_id: stub})


def edited(nb_path, answer_id: str, edits) -> str:
    """The answer cell with each (old, new) edit applied (or `edits` itself, a whole text)."""
    if isinstance(edits, str):
        return edits
    source = answer_source(nb_path, answer_id)
    for old, new in [edits] if isinstance(edits, tuple) else edits:
        assert old in source, f"the solution of {answer_id} changed; update this mutant"
        source = source.replace(old, new)
    return source


# --- the one style of mutation test (tests/test_exercises_chNN.py) --------------------------
#
# Every chapter's test file declares
#     EXERCISES = {"key": ("<answer grade_id>", "<check grade_id>"), ...}
#     MUTANTS = {"key": {"a wrong answer, in plain words": <mutant>, ...}, ...}
# where a <mutant> is a whole answer text, a list of (old, new) edits of the solution's answer,
# or Wrong(<text or edits>, "word", ...) when the check's message must also name the mistake.
# The tests are parametrized over MUTANTS, and the teacher's tables (minilucid_course/teaching.py)
# read the labels from MUTANTS alone, so a wrong answer the tests feed is a row of the table.


class Wrong:
    """A wrong answer, and the words the check's message must contain when it rejects it."""

    def __init__(self, edits, *words: str):
        self.edits, self.words = edits, tuple(words)

    def __repr__(self) -> str:
        return f"Wrong({self.edits!r}, *{self.words!r})"


def mutant_parts(mutant) -> tuple[object, tuple[str, ...]]:
    """(edits, words) of a MUTANTS entry, whether or not it is wrapped in Wrong."""
    if isinstance(mutant, Wrong):
        return mutant.edits, mutant.words
    return mutant, ()


def mutation_tests(
    nb_path,
    exercises: dict,
    mutants: dict,
    *,
    stand_ins: dict | None = None,
    done: dict | None = None,
):
    """The three tests of the one style, parametrized over a chapter's EXERCISES and MUTANTS.

        test_the_solution_passes, test_a_wrong_answer_is_rejected, test_the_stub_raises = (
            mutation_tests(NB, EXERCISES, MUTANTS)
        )

    `stand_ins` maps grade_ids of cells before a check (earlier checks, slow pictures) to the
    source run in their place, so that each check runs alone. `done` maps an exercise to the
    words its check prints when it passes (a plain "✓" is required otherwise).
    """
    order = grade_ids(nb_path)
    stand_ins = dict(stand_ins or {})

    def run(key: str, answer: str | None = None) -> dict:
        answer_id, check_id = exercises[key]
        stop = order.index(check_id)
        replace = {g: s for g, s in stand_ins.items() if order.index(g) < stop}
        if answer is not None:
            replace[answer_id] = answer
        return run_check(nb_path, check_id, replace=replace)

    @pytest.mark.parametrize("key", list(exercises))
    def test_the_solution_passes(key, capsys):
        run(key)
        assert (done or {}).get(key, "✓") in capsys.readouterr().out

    @pytest.mark.parametrize(
        "key, label", [(key, label) for key, wrongs in mutants.items() for label in wrongs]
    )
    def test_a_wrong_answer_is_rejected(key, label):
        edits, words = mutant_parts(mutants[key][label])
        with pytest.raises(AssertionError) as info:
            run(key, edited(nb_path, exercises[key][0], edits))
        for word in words:
            assert word in str(info.value), f"the message should mention {word!r}: {info.value}"

    @pytest.mark.parametrize("key", list(exercises))
    def test_the_stub_raises(key):
        with pytest.raises(NotImplementedError):
            run(key, stub_of(nb_path, exercises[key][0]))

    return test_the_solution_passes, test_a_wrong_answer_is_rejected, test_the_stub_raises
