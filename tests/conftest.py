"""Shared paths and fixtures of the tests."""

from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # so tests can `from minilucid_course import sync`

NOTEBOOKS = ROOT / "notebooks"
SOLUTIONS = ROOT / "solutions"
EXERCISES = ROOT / "exercises"


# The files that take longest, first (longest first, as measured with `make test
# PYTEST_ARGS=--durations=0`): `--dist loadfile --no-loadscope-reorder` (make test) hands whole
# files to the two workers in the order they are collected, so a long file collected last would
# leave one worker running it alone at the end. Every other file keeps its place after these.
LONGEST_FIRST = (
    "tests/test_browser.py",
    "tests/test_site_browser.py",
    "tests/test_nbgrader_grading.py",
    "tests/test_lab.py",
    "tests/test_class.py",
    "tests/test_tiny_gpt.py",  # with PyTorch installed: its unchanged run under PyTorch too
    "tests/test_exercises_ch03.py",
    "tests/test_presentation_browser.py",
    "tests/test_exercises_unanswered.py",
    "tests/test_working_copy.py",
    "tests/test_traps.py",
    "tests/test_grading.py",
    "tests/test_hub.py",
    "solutions/13_attention.ipynb",
    "notebooks/10_convolutions.ipynb",
    "tests/test_exercises_ch01.py",
)


def _start_kernels_again_when_one_dies_at_start() -> None:
    """nbval starts a kernel per notebook. jupyter_client picks the kernel's five ports by binding
    to port 0 and letting go, so while the other worker starts servers and kernels too, a port
    can be taken before the kernel binds it; the kernel then dies before it answers, and every
    cell of the notebook errors. Start it again (twice at most): a kernel that cannot start at
    all still fails, with nbval's own error."""
    try:
        import nbval.kernel as nbval_kernel
    except ImportError:  # nbval is not installed: nothing to start
        return
    start = nbval_kernel.start_new_kernel

    def start_new_kernel(*args, **kwargs):
        for attempt in range(3):
            try:
                return start(*args, **kwargs)
            except RuntimeError as error:
                if "died before replying" not in str(error) or attempt == 2:
                    raise

    nbval_kernel.start_new_kernel = start_new_kernel


_start_kernels_again_when_one_dies_at_start()


def pytest_collection_modifyitems(config, items):
    rank = {name: place for place, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))


def notebooks_in(folder: Path) -> list[Path]:
    """The notebooks of a course folder; empty while the folder does not exist yet."""
    return sorted(folder.glob("*.ipynb")) if folder.is_dir() else []


def skip_if_none(paths: list[Path], folder: Path) -> None:
    if not paths:
        pytest.skip(f"no notebooks in {folder.relative_to(ROOT)}/ yet")


# --------------------------------------------------------------------------------------------
# A small fake package, for proving that sync and coverage catch what they should

FAKE_MODULE = '''\
"""A module of the fake package."""


def taught_fn(x):
    """y = x + 1"""
    return x + 1


def untaught_fn(x):
    return x


def _private_fn():
    pass


class Node:
    """A node."""

    def __init__(self, value):
        self.value = value

    def __add__(self, other):
        return Node(self.value + other.value)

    __radd__ = __add__

    @property
    def doubled(self):
        return 2 * self.value

    @doubled.setter
    def doubled(self, v):
        self.value = v / 2

    @staticmethod
    def zero():
        return Node(0)

    def _hidden(self):
        pass


class Mul:
    """z = a * b;  dz/da = b,  dz/db = a"""

    @staticmethod
    def forward(ctx, a, b):
        return a * b

    @staticmethod
    def backward(ctx, grad):
        return grad, grad
'''


@pytest.fixture
def fake_package(tmp_path, monkeypatch):
    """A package `fakeml` (fakeml.core, fakeml.ops, fakeml._private) importable for one test."""
    name = "fakeml"
    pkg = tmp_path / "pkgs" / name
    (pkg / "_private").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from fakeml.core import Node, taught_fn\n")
    (pkg / "core.py").write_text(FAKE_MODULE)
    (pkg / "ops.py").write_text(
        textwrap.dedent(
            '''\
            """Ops."""

            from fakeml.core import Mul, Node  # re-exports are not this module's objects


            def square(x):
                return x * x
            '''
        )
    )
    (pkg / "_private" / "__init__.py").write_text("def secret():\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path / "pkgs"))
    for mod in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
        monkeypatch.delitem(sys.modules, mod)
    yield name
    for mod in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
        del sys.modules[mod]


def make_notebook(path: Path, cells: list[tuple[str, list[str]]]) -> Path:
    """Write a chapter-like notebook: (source, tags) per code cell, with a title cell first."""
    from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

    nb = new_notebook(cells=[new_markdown_cell(f"# {path.stem}")])
    for source, tags in cells:
        nb.cells.append(new_code_cell(source, metadata={"tags": tags} if tags else {}))
    for i, cell in enumerate(nb.cells):
        cell.id = f"cell-{i}"  # fixed ids: the file is deterministic
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3 (ipykernel)",
        "language": "python",
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        nbformat.write(nb, f)
    return path


# --------------------------------------------------------------------------------------------
# A tiny solution notebook in the course's exercise format


def _meta(grade_id, *, solution=False, grade=False, locked=False, points=None):
    meta = {
        "solution": solution,
        "grade": grade,
        "locked": locked,
        "grade_id": grade_id,
        "schema_version": 3,
    }
    if points is not None:
        meta["points"] = points
    return {"nbgrader": meta}


def tiny_solution_notebook(path):
    """One exercise in the course's format, executed-looking (outputs, timings)."""
    from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

    setup = new_code_cell("import math\nprint('ready')", metadata=_meta("ex99_setup", locked=True))
    setup.outputs = [new_output("stream", name="stdout", text="ready\n")]
    setup.execution_count = 1
    setup.metadata["execution"] = {"iopub.status.idle": "2024-01-01T00:00:00Z"}
    answer = new_code_cell(
        "def double(x):\n    ### BEGIN SOLUTION\n    return 2 * x\n    ### END SOLUTION",
        metadata=_meta("ex99_1_double_answer", solution=True),
    )
    check = new_code_cell(
        "got = double(3)\nassert got == 6, f'double(3): expected 6, got {got}'\nprint('✓ ok')\n"
        "### BEGIN HIDDEN TESTS\nassert double(0) == 0\n### END HIDDEN TESTS",
        metadata=_meta("ex99_1_double_check", grade=True, locked=True, points=2),
    )
    nb = new_notebook(
        cells=[
            new_markdown_cell("# Exercises", metadata=_meta("ex99_title", locked=True)),
            setup,
            new_markdown_cell("Write `double`.\n<details><summary>Hint 1</summary>x</details>"),
            answer,
            check,
        ]
    )
    for i, cell in enumerate(nb.cells):
        cell.id = f"c{i}"
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(path))
    return path


# --------------------------------------------------------------------------------------------
# Hypothesis: few, fixed examples by default (fast, repeatable); HYPOTHESIS_PROFILE=thorough
# explores more.

try:
    from hypothesis import settings
except ImportError:  # a test dependency; only test_broadcasting.py needs it
    pass
else:
    settings.register_profile(
        "minilucid", max_examples=25, deadline=None, derandomize=True, database=None
    )
    settings.register_profile("thorough", max_examples=500, deadline=None)
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "minilucid"))
