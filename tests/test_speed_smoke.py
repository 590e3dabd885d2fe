"""Quick checks of the benchmarks (`python -m benchmarks`) and of the engine's cost as it grows.

The full benchmarks take minutes and are run by `make bench`; these take a few seconds.
"""

import gc
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import minilucid as ml
from minilucid.ops.unary import Relu, Tanh

ROOT = Path(__file__).resolve().parents[1]


def run_python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120
    )


def test_gradient_checks_pass_without_torch():
    """The benchmarks run where PyTorch is not installed (its column is left out)."""
    done = run_python(
        "import sys; sys.modules['torch'] = None  # `import torch` now fails\n"
        "from benchmarks.__main__ import main; sys.exit(main(['--check']))"
    )
    assert done.returncode == 0, done.stderr
    assert "gradients agree: numpy, minilucid, bare (" in done.stdout


@pytest.mark.parametrize(("op", "config"), [(Tanh, "mlp_small"), (Relu, "mlp_large")])
def test_a_fast_but_wrong_engine_fails_before_any_timing(monkeypatch, op, config):
    from benchmarks import mlp

    right = op.backward
    monkeypatch.setattr(op, "backward", staticmethod(lambda ctx, grad: 0.5 * right(ctx, grad)))
    models = {n: m for n, m in mlp.engines(mlp.CONFIGS[config]).items() if n != "torch"}
    with pytest.raises(AssertionError, match=r"minilucid's gradient of W1 differs"):
        mlp.check_gradients(mlp.CONFIGS[config], models)


def test_deep_chain_worker_reports_time_and_memory_per_node():
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.deep", "--worker", "minilucid", "20000", "--trace"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["forward_us"] > 0 and result["backward_us"] > 0
    assert 0.1e3 < result["traced_graph_b"] < 1e3  # a node costs some hundred bytes
    assert result["traced_after_b"] * result["n"] < 1e6  # the graph is gone after backward


def _backward_seconds_per_node(n: int) -> float:
    x = ml.tensor([0.5], requires_grad=True)
    best = float("inf")
    for _ in range(3):
        y = x
        for _ in range(n):
            y = (y * 0.9).tanh()
        start = time.process_time()
        y.backward()
        best = min(best, time.process_time() - start)
        x.grad = None
    return best / n


def test_backward_cost_per_node_does_not_grow_with_depth():
    """Linear in the number of nodes: a 10x deeper graph costs about 10x, not 100x."""
    gc.disable()  # this is about the algorithm, not about Python's cyclic collector
    try:
        shallow = _backward_seconds_per_node(2_000)
        deep = _backward_seconds_per_node(20_000)
    finally:
        gc.enable()
    per_node = f"{deep * 1e6:.2f} us per node at depth 20000, {shallow * 1e6:.2f} at 2000"
    assert deep < 3 * shallow, per_node


def test_leaf_gradients_are_not_aliased_by_the_engine():
    """The speed work keeps the copy on a leaf's first gradient: no two leaves share one array."""
    a = ml.tensor(np.ones(3, dtype=np.float32), requires_grad=True)
    b = ml.tensor(np.ones(3, dtype=np.float32), requires_grad=True)
    (a + b).sum().backward()  # Add sends the same array to both
    assert not np.shares_memory(a.grad, b.grad)
    a.grad *= 0
    np.testing.assert_array_equal(b.grad, [1, 1, 1])
