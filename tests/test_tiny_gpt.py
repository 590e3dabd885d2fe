"""The tiny GPT program (notebooks/capstone/tiny_gpt.py, chapter 13) sorts digits, with minilucid
and, with its import line changed and nothing else, with PyTorch.

The full minilucid training is `make tiny-gpt` (a few minutes); it writes the checkpoint that
ships beside the program. Here minilucid scores that checkpoint on the held-out sequences and
trains a short budget to show the loop learns; PyTorch, where installed, trains in full.
"""

from __future__ import annotations

import ast
import difflib
import os
import re
import subprocess
import sys

import numpy as np
import pytest
from test_capstone import OURS, ROOT, RUNNER, THEIRS, pytorch_version

import minilucid as ml

PROGRAM = ROOT / "notebooks" / "capstone" / "tiny_gpt.py"
CHECKPOINT = ROOT / "notebooks" / "capstone" / "tiny_gpt.npz"
CHAR_PROGRAM = ROOT / "notebooks" / "capstone" / "char_gpt.py"
CHAR_CHECKPOINT = ROOT / "notebooks" / "capstone" / "char_gpt.npz"


def run(program, *args: str, cwd) -> subprocess.CompletedProcess:
    """test_capstone's runner, with one thread for every library and room for a full training."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    return subprocess.run(
        [sys.executable, "-c", RUNNER, str(program), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
    )


def report(done) -> dict:
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    score = re.search(r"^held-out exact match [\d.]+% \((\d+)/(\d+)\)$", out, re.M)
    losses = [float(x) for x in re.findall(r"^step +\d+: loss ([\d.]+)$", out, re.M)]
    found = re.search(r"^frameworks imported: (.*)$", out, re.M)
    assert score and found, f"unexpected output:\n{out}"
    return {
        "right": int(score[1]),
        "total": int(score[2]),
        "losses": losses,
        "imported": found[1].split(",") if found[1] else [],
    }


def test_the_program_differs_from_its_pytorch_version_in_the_import_line_only():
    text = PROGRAM.read_text(encoding="utf-8")
    tree = ast.parse(text)
    assert ast.get_source_segment(text, tree.body[1]) == OURS
    framework_imports = [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        and any(a.name.startswith(("minilucid", "torch")) for a in node.names)
    ]
    assert framework_imports == [tree.body[1].lineno]
    changed = [
        line
        for line in difflib.ndiff(text.splitlines(), pytorch_version(text).splitlines())
        if line[:2] in ("- ", "+ ")
    ]
    assert changed == ["- " + OURS, "+ " + THEIRS]


def test_the_shipped_checkpoint_sorts_99_percent_of_held_out_sequences(tmp_path):
    ours = report(run(PROGRAM, "--load", str(CHECKPOINT), cwd=tmp_path))
    assert ours["imported"] == ["minilucid"]
    assert ours["total"] == 1000
    assert ours["right"] >= 990, f"{ours['right']}/1000 sorted"


def test_retraining_reproduces_the_checkpoint_and_so_the_chapters_figures(tmp_path):
    """`make tiny-gpt` again: the same losses (chapter 13's curve), samples and weights."""
    again = tmp_path / "again.npz"
    ours = report(run(PROGRAM, "--seed", "0", "--save", str(again), cwd=tmp_path))
    stored, retrained = ml.load(CHECKPOINT), ml.load(again)
    assert retrained["samples"] == stored["samples"]
    np.testing.assert_allclose(retrained["losses"], stored["losses"], rtol=1e-3, atol=1e-5)
    for name, weight in stored["model"].items():
        np.testing.assert_allclose(retrained["model"][name].data, weight.data, atol=1e-4)
    assert ours["right"] >= 990


def test_retraining_the_character_model_reproduces_its_checkpoint(tmp_path):
    """The second half of `make tiny-gpt`: the same losses, samples before and after, weights."""
    again = tmp_path / "again.npz"
    done = run(CHAR_PROGRAM, "--seed", "0", "--save", str(again), cwd=CHAR_PROGRAM.parent)
    assert done.returncode == 0, done.stderr[-3000:]
    stored, retrained = ml.load(CHAR_CHECKPOINT), ml.load(again)
    assert retrained["before"] == stored["before"] and retrained["after"] == stored["after"]
    for key in ("losses", "held_out"):
        np.testing.assert_allclose(retrained[key], stored[key], rtol=1e-3, atol=1e-5)
    for name, weight in stored["model"].items():
        np.testing.assert_allclose(retrained["model"][name].data, weight.data, atol=1e-4)
    assert stored["held_out"][-1] < 0.6 * stored["held_out"][0]  # it learned something


def test_a_short_minilucid_run_learns(tmp_path):
    ours = report(run(PROGRAM, "--steps", "60", cwd=tmp_path))
    first, last = ours["losses"][0], ours["losses"][-1]
    assert first > 2.0 and last < first / 2, ours["losses"]  # ln(11) = 2.40 at the start


def test_with_pytorch_it_runs_unchanged_and_sorts_99_percent(tmp_path):
    pytest.importorskip("torch")
    program = tmp_path / "tiny_gpt.py"
    program.write_text(pytorch_version(PROGRAM.read_text(encoding="utf-8")), encoding="utf-8")
    theirs = report(run(program, cwd=tmp_path))
    assert theirs["imported"] == ["torch"], "the PyTorch run imported minilucid"
    assert theirs["right"] >= 990, f"{theirs['right']}/1000 sorted"
