"""The graduation capstone (notebooks/capstone/digits_cnn.py, chapter 12) runs with minilucid,
and, with its import line changed and nothing else, with PyTorch: both reach at least 97% test
accuracy, within one point of each other, and a reloaded checkpoint scores the same.

Each run is a fresh Python process that reports at the end which of the two frameworks it
imported, so the PyTorch run is known to use no minilucid at all.
"""

from __future__ import annotations

import ast
import difflib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PROGRAM = ROOT / "notebooks" / "capstone" / "digits_cnn.py"
DIGITS = ROOT / "minilucid" / "datasets" / "digits.npz"
OURS, THEIRS = "import minilucid as torch", "import torch"

# Runs the program named by argv[1] as __main__ (with the rest of argv), then says which of the
# two frameworks are in sys.modules.
RUNNER = """
import runpy, sys
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
found = sorted({name.split(".")[0] for name in sys.modules} & {"minilucid", "torch"})
print("frameworks imported:", ",".join(found))
"""


def pytorch_version(text: str) -> str:
    """The program with its import line changed, the only change PyTorch needs."""
    return text.replace(OURS + "\n", THEIRS + "\n", 1)


def run(program: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT), OPENBLAS_NUM_THREADS="1")
    return subprocess.run(
        [sys.executable, "-c", RUNNER, str(program), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def report(done: subprocess.CompletedProcess) -> dict:
    """Test accuracy, the reloaded checkpoint's score, and the frameworks the run imported."""
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    test = re.search(r"^test accuracy [\d.]+% \((\d+)/(\d+)\)$", out, re.M)
    again = re.search(r"^reloaded from the checkpoint: (\d+)/(\d+)$", out, re.M)
    found = re.search(r"^frameworks imported: (.*)$", out, re.M)
    assert test and again and found, f"unexpected output:\n{out}"
    return {
        "correct": int(test[1]),
        "total": int(test[2]),
        "reloaded": int(again[1]),
        "accuracy": int(test[1]) / int(test[2]),
        "imported": found[1].split(",") if found[1] else [],
    }


@pytest.fixture(scope="module")
def minilucid_run(tmp_path_factory) -> dict:
    return report(run(PROGRAM, cwd=tmp_path_factory.mktemp("minilucid")))


def test_the_program_differs_from_its_pytorch_version_in_the_import_line_only():
    text = PROGRAM.read_text(encoding="utf-8")
    tree = ast.parse(text)
    docstring, first = tree.body[0], tree.body[1]
    assert isinstance(docstring, ast.Expr) and isinstance(docstring.value, ast.Constant)
    assert ast.get_source_segment(text, first) == OURS, "the first line of code is not the import"
    import_lines = [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        and any(
            name.startswith(("minilucid", "torch"))
            for name in [getattr(node, "module", None) or ""] + [a.name for a in node.names]
        )
    ]
    assert import_lines == [first.lineno], "only the first line of code may import a framework"
    changed = [
        line
        for line in difflib.ndiff(text.splitlines(), pytorch_version(text).splitlines())
        if line[:2] in ("- ", "+ ")
    ]
    assert changed == ["- " + OURS, "+ " + THEIRS]


def test_the_runner_reports_what_a_program_imports(tmp_path):
    program = tmp_path / "uses_minilucid.py"
    program.write_text(
        "import minilucid\nprint('test accuracy 50.0% (1/2)')\n"
        "print('reloaded from the checkpoint: 1/2')\n",
        encoding="utf-8",
    )
    assert report(run(program, cwd=tmp_path))["imported"] == ["minilucid"]


def test_with_minilucid_it_learns_and_the_checkpoint_reloads(minilucid_run):
    assert minilucid_run["imported"] == ["minilucid"]  # and no torch behind its back
    assert minilucid_run["total"] == 359  # the digits' test split
    assert minilucid_run["accuracy"] >= 0.97
    assert minilucid_run["reloaded"] == minilucid_run["correct"]


def test_with_pytorch_it_runs_unchanged_and_matches_minilucid(minilucid_run, tmp_path):
    pytest.importorskip("torch")
    program = tmp_path / "digits_cnn.py"
    program.write_text(pytorch_version(PROGRAM.read_text(encoding="utf-8")), encoding="utf-8")
    # the copy lives outside the repository, so it is told where the digits are
    theirs = report(run(program, "--data", str(DIGITS), cwd=tmp_path))
    assert theirs["imported"] == ["torch"], "the PyTorch run imported minilucid"
    assert theirs["total"] == minilucid_run["total"]
    assert theirs["accuracy"] >= 0.97
    assert theirs["reloaded"] == theirs["correct"]
    gap = abs(theirs["accuracy"] - minilucid_run["accuracy"])
    assert gap <= 0.01, (
        f"test accuracy: minilucid {minilucid_run['accuracy']:.1%}, "
        f"PyTorch {theirs['accuracy']:.1%} - more than one point apart"
    )
