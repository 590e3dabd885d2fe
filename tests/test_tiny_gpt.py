"""The tiny GPT program (notebooks/capstone/tiny_gpt.py, chapter 13) sorts digits, with minilucid
and, with its import line changed and nothing else, with PyTorch.

The full minilucid training is `make tiny-gpt` (a few minutes); it writes the checkpoints that
ship beside the programs and that chapter 13 shows. Here minilucid scores the sorting checkpoint
on the held-out sequences, and retrains each program from its seed on a fifth of its budget:
the first loss is the stored curve's first point (one forward pass, before any update), and the
model then does what the chapter claims of the full budget (the sorting one sorts 99% of the
held-out sequences; the character one brings its held-out loss below 0.6 of its start).
Nothing else is compared with the stored weights or curves: a training run rounds differently
on another CPU or BLAS library, and over hundreds of steps those differences grow into another,
equally good, run. PyTorch, where installed, trains in full.
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


SHORT = 200  # steps: a fifth of the programs' budget (the sorting one sorts 99.8% after 150)
CHAR_SHORT = 100  # the character model: its held-out loss from 4.26 to 2.30 by then


def test_a_fifth_of_the_training_from_seed_0_sorts_99_percent(tmp_path):
    """`make tiny-gpt`'s run, shortened: the stored curve's start, then the chapter's claim."""
    ours = report(run(PROGRAM, "--seed", "0", "--steps", str(SHORT), cwd=tmp_path))
    stored = ml.load(CHECKPOINT)
    assert ours["imported"] == ["minilucid"]
    assert abs(ours["losses"][0] - stored["losses"][0]) <= 1e-4  # printed to 4 decimals
    assert ours["losses"][-1] < ours["losses"][0] / 10, ours["losses"]
    assert ours["right"] >= 990, f"{ours['right']}/1000 sorted after {SHORT} steps"


def test_a_tenth_of_the_character_models_training_lowers_its_held_out_loss(tmp_path):
    """The second half of `make tiny-gpt`, a tenth as long; the checkpoint holds what ch13 says."""
    again = tmp_path / "again.npz"
    done = run(CHAR_PROGRAM, "--seed", "0", "--steps", str(CHAR_SHORT), "--save", str(again),
               cwd=CHAR_PROGRAM.parent)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    stored, retrained = ml.load(CHAR_CHECKPOINT), ml.load(again)
    np.testing.assert_allclose(retrained["held_out"][0], stored["held_out"][0], rtol=1e-4)
    np.testing.assert_allclose(retrained["losses"][0], stored["losses"][0], rtol=1e-4)
    assert retrained["held_out"][-1] < 0.6 * retrained["held_out"][0], retrained["held_out"]
    # the checkpoint: from above a uniform guess (ln 62) to 1.64 after 1000 steps, and above the
    # training batches' loss at the end
    assert stored["held_out"][0] > np.log(62)
    assert stored["held_out"][-1] == pytest.approx(1.64, abs=0.005)
    assert stored["held_out"][-1] > np.mean(stored["losses"][-100:])


def test_with_pytorch_it_runs_unchanged_and_sorts_99_percent(tmp_path):
    pytest.importorskip("torch")
    program = tmp_path / "tiny_gpt.py"
    program.write_text(pytorch_version(PROGRAM.read_text(encoding="utf-8")), encoding="utf-8")
    theirs = report(run(program, cwd=tmp_path))
    assert theirs["imported"] == ["torch"], "the PyTorch run imported minilucid"
    assert theirs["right"] >= 990, f"{theirs['right']}/1000 sorted"
