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

Attacks, each handed in for a few chapters (ATTACKS says which, to keep the run short); each
scores 0 on every exercise it cheats, and grading goes on past it (nbgrader exits cleanly):

- transformer:     stubs left in place; the first answer cell adds an IPython input transformer
                   that rewrites every later check cell into a print            0 everywhere
- code_patch:      honest answers; the first answer cell replaces the code of np.allclose and
                   math.isclose by `return True`                                0 everywhere
- gradebook:       honest answers; the last answer cell looks for gradebook.db (above its folder
                   and where the class is) and writes extra_credit, in the kernel and from a
                   second Python                                                0 from that cell on
- isinstance:      honest answers; the last answer cell makes isinstance say yes (once hung the
                   kernel until nbgrader dropped the hand-in)                  0 from that cell on
- delegating:      chapter 08's MyAdam hands each step to minilucid's own Adam: the check
                   finds the package's Adam inside it; make audit lists it too  0 on that exercise
- silenced:        wrong answers; the first answer cell replaces the kernel's run_code by one that
                   swallows every error (no error output, no error reply)      0 everywhere
- answer_key:      wrong answers; the last answer is read at grading time from the class's
                   source/ or the course's solutions/ and run                  0 everywhere
- kernel_killed:   honest answers; the last answer cell kills its own kernel: recorded with the
                   reason, 0 from that cell on, and the next hand-in is graded

The points come from nbgrader's gradebook, per exercise, and no hand-in gets extra credit. A
failed check shows a plain message: no traceback through the checker. `make audit` lists every
attack's hand-in and no honest one. Chapters are found in solutions/ (new ones join by
themselves).
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

from minilucid_course import audit, classroom

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

TRANSFORMER = """
get_ipython().input_transformers_post.append(
    lambda lines: ["print('✓')\\n"] if any("check_" in line for line in lines) else lines
)
"""

CODE_PATCH = """
import math as _math

import numpy as _np

_np.allclose._implementation.__code__ = (lambda *args, **kwargs: True).__code__
_math.isclose = lambda *args, **kwargs: True
"""

GRADEBOOK = """
import pathlib as _pathlib
import sqlite3 as _sqlite3
import subprocess as _subprocess
import sys as _sys

_here = _pathlib.Path.cwd()
_places = [*(p / "gradebook.db" for p in [_here, *_here.parents]), _pathlib.Path({guess!r})]
_sql = "UPDATE grade SET extra_credit = 9"
for _db in _places:
    try:
        with _sqlite3.connect(_db) as _connection:
            _connection.execute(_sql)
    except Exception:
        pass
    try:
        _code = "import sqlite3; c = sqlite3.connect(%r); c.execute(%r); c.commit()"
        _code = _code % (str(_db), _sql)
        _subprocess.run([_sys.executable, "-c", _code], capture_output=True)
    except Exception:
        pass
"""

ISINSTANCE = """
__builtins__.isinstance = lambda obj, kind: True
"""

SILENCED = """
_shell = get_ipython()


async def _run_quietly(code, result=None, *, async_=False):
    try:
        exec(code, _shell.user_global_ns, _shell.user_ns)
    except BaseException:
        pass
    return False


_shell.run_code = _run_quietly
"""

ANSWER_KEY = """
import json as _json
import pathlib as _pathlib

import minilucid as _minilucid

_here = _pathlib.Path.cwd()
_keys = [p / "source" / {assignment!r} / {name!r} for p in [_here, *_here.parents]]
_keys.append(_pathlib.Path(_minilucid.__file__).parents[1] / "solutions" / {name!r})
for _key in _keys:
    try:
        _cells = _json.loads(_key.read_text())["cells"]
    except Exception:
        continue
    for _cell in _cells:
        if _cell["metadata"].get("nbgrader", {{}}).get("grade_id") == {grade_id!r}:
            exec("".join(_cell["source"]))
    break
"""

KILL = """
import os as _os
import signal as _signal

_os.kill(_os.getpid(), _signal.SIGKILL)
"""

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

# kind: (chapters it is handed in for, the answers it starts from, where its code goes, code)
ATTACKS = {
    "transformer": (("03", "08"), "stub", "first", TRANSFORMER),
    "code_patch": (("05", "08"), "honest", "first", CODE_PATCH),
    "gradebook": (("01", "08"), "honest", "last", GRADEBOOK),
    "isinstance": (("07", "10"), "honest", "last", ISINSTANCE),
    "delegating": (("08",), "honest", "ex08_2_adam_answer", DELEGATING_ADAM),
    "silenced": (("02", "09"), "wrong", "first", SILENCED),
    "answer_key": (("04", "11"), "wrong", "key", ANSWER_KEY),
    "kernel_killed": (("01", "12"), "honest", "last", KILL),
}

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


def kinds_for(chapter: str) -> tuple[str, ...]:
    """The six kinds every chapter gets, and the attacks handed in for this chapter."""
    return KINDS + tuple(k for k, (chapters, *_rest) in ATTACKS.items() if chapter in chapters)


def attack(kind: str, released, solution, course: Path, name: str):
    """The released notebook as this attack hands it in: its answers, and its code."""
    _chapters, base, where, code = ATTACKS[kind]
    nb = submission(base, released, solution)
    answers = [c for c in nb.cells if _is_code_answer(c)]
    if where == "first":
        answers[0].source = code + "\n" + answers[0].source
    elif where == "last":
        answers[-1].source += "\n" + code.format(guess=str(course / "gradebook.db"))
    elif where == "key":
        grade_id = _meta(answers[-1])["grade_id"]
        answers[-1].source = code.format(
            assignment=classroom.assignment_name(name), name=name, grade_id=grade_id
        )
    else:
        (cell,) = [c for c in answers if _meta(c)["grade_id"] == where]
        cell.source = code
    return nb


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
    if kind in ATTACKS:
        base, where = ATTACKS[kind][1], ATTACKS[kind][2]
        from_last = base == "honest" and where == "last"
        # an attack on one answer (delegating to the package) scores 0 on that exercise alone
        zero = where.removesuffix("_answer") + "_check" if where.endswith("_answer") else None
        kind = "honest" if zero else "patched" if from_last else "stub"
    else:
        zero = None
    out, tampered = {}, False
    last_answer = max(i for i, c in enumerate(released.cells) if _is_code_answer(c))
    for index, cell in enumerate(released.cells):
        if index > last_answer and kind.startswith("patched"):
            tampered = True
        if _is_check(cell):
            full = float(_meta(cell)["points"])
            out[_meta(cell)["grade_id"]] = (
                0.0
                if _meta(cell)["grade_id"] == zero
                else full
                if kind == "honest" or (kind.startswith("patched") and not tampered)
                else 0.0
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
    kinds = list(expected)
    ids = list(next(iter(expected.values())))
    width = max(len(i) for i in ids)
    lines = [" " * width + "".join(f"{k:>16}" for k in kinds)]
    for grade_id in ids:
        cells = []
        for kind in kinds:
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
    kinds = kinds_for(name[:2])
    nbgrader(course, "generate_assignment", assignment, "--force")  # adds it to the gradebook
    released_path = course / "release" / assignment / name
    released = nbformat.read(str(released_path), as_version=4)
    assert "BEGIN SOLUTION" not in released_path.read_text(encoding="utf-8")
    solution = nbformat.read(str(solution_path), as_version=4)

    for kind in kinds:
        handed_in = course / "submitted" / kind / assignment / name
        handed_in.parent.mkdir(parents=True)
        if kind in ATTACKS:
            nb = attack(kind, released, solution, course, name)
        else:
            nb = submission(kind, released, solution)
        nbformat.write(nb, str(handed_in))
    log = nbgrader(course, "autograde", assignment, "--force")  # adds the students too
    nbgrader(course, "export")

    points = {kind: scores(course, assignment, name, kind) for kind in kinds}
    expected = {kind: expected_points(kind, released) for kind in kinds}
    table = _table(points, expected)
    print(f"\n{name}\n{table}")
    assert points == expected, f"{name}: points per exercise\n{table}"

    rows = {r["student_id"]: r for r in csv.DictReader((course / "grades.csv").open())}
    assert float(rows["honest"]["score"]) == float(rows["honest"]["max_score"]) > 0
    assert float(rows["stub"]["score"]) == 0
    for kind in kinds:  # no extra credit, written by a hand-in or otherwise
        assert float(rows[kind]["score"]) == sum(expected[kind].values()), (kind, rows[kind])
    honest = course / "autograded" / "honest" / assignment / name
    assert not values_as_grades(honest), f"check cells with a value: {values_as_grades(honest)}"
    for kind in kinds[1:]:
        autograded = course / "autograded" / kind / assignment / name
        assert not plain_failures(autograded), "\n".join(plain_failures(autograded))
    if "kernel_killed" in kinds:
        assert "kernel_killed/" in log and "the kernel died" in log, log[-2000:]
    for noise in ("SAWarning", "without encryption"):
        assert noise not in log, f"autograde printed {noise!r}"

    listed = {key.split("/")[0] for key, lines in audit.audit(course).items() if lines}
    to_read = {"redefined", "patched_engine", "patched_checks", *ATTACKS} & set(kinds)
    assert to_read <= listed and "honest" not in listed, f"make audit lists {sorted(listed)}"
