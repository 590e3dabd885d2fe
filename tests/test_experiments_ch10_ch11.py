"""The stored multi-seed figures of chapters 10 and 11 come back when their runs are repeated.

The chapters load notebooks/experiments/ch10_seeds.json and ch11_seeds.json instead of training
every seed again. Here a cheap subset of those runs is repeated with the same code
(notebooks/experiments/seeds.py) and must give the stored numbers exactly; the chapters
themselves re-run seed 0 (ch11) and the seed they pick (ch10) and assert the same.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parents[1] / "notebooks" / "experiments"


def _seeds_module():
    spec = importlib.util.spec_from_file_location("seeds_experiments", HERE / "seeds.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SEEDS = _seeds_module()


def _stored(chapter: str) -> dict:
    return json.loads((HERE / f"{chapter}_seeds.json").read_text(encoding="utf-8"))


def test_ten_seeds_are_stored_for_each_comparison():
    ch10, ch11 = _stored("ch10"), _stored("ch11")
    assert ch10["seeds"] == ch11["seeds"] == list(range(10))
    assert len(ch10["cnn"]) == len(ch10["mlp"]) == 10
    assert set(ch11["regularisers"]) == set(SEEDS.REGULARISERS)
    assert all(len(runs) == 10 for runs in ch11["regularisers"].values())
    for by_lr in ch11["sweep"].values():
        assert len(by_lr) == len(SEEDS.LEARNING_RATES) and all(len(r) == 10 for r in by_lr)


@pytest.mark.parametrize("seed", [4])
def test_an_mlp_run_of_chapter_10_comes_back(seed):
    stored = _stored("ch10")["mlp"][seed]
    assert SEEDS.mlp_run(seed) == stored


@pytest.mark.parametrize(
    "name, seed",
    [("dropout p=0.5", 3), ("AdamW, weight_decay=2", 7), ("Adam, weight_decay=0.1", 9)],
)
def test_a_regulariser_run_of_chapter_11_comes_back(name, seed):
    assert SEEDS.regulariser_run(name, seed) == _stored("ch11")["regularisers"][name][seed]


@pytest.mark.parametrize("name", list(SEEDS.SWEEP_MODELS))
def test_a_learning_rate_run_of_chapter_11_comes_back(name):
    lr_index, seed = 2, 6  # learning rate 0.1, seed 6
    stored = _stored("ch11")["sweep"][name][lr_index][seed]
    assert SEEDS.sweep_run(name, SEEDS.LEARNING_RATES[lr_index], seed) == stored
