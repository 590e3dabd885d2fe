"""A deep chain: n sequential ops on one-element tensors, forward and backward.

    y_0 = x;  y_{k+1} = tanh(y_k * w)   (n/2 times, so n ops; x and the shared w need gradients)

Each size and engine runs in a fresh process (`python -m benchmarks.deep --worker ...`), so that
its memory figures are its own: time per node of forward and of backward, peak memory per node,
and what is still held once backward has returned. Memory is read two ways: the growth of the
resident set (any engine), and Python's `tracemalloc` (everything NumPy and Python allocate;
blind to PyTorch's own allocator), in a second run since tracing slows the run down.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import subprocess
import sys
import tracemalloc

import numpy as np

import minilucid as ml
from benchmarks import bare
from benchmarks.timing import CLOCKS

W, X = 1.5, 0.5  # y settles near 0.86; nothing overflows or turns subnormal for long


def numpy_chain(n: int):
    x = np.array([X], dtype=np.float32)
    w = np.array([W], dtype=np.float32)

    def forward():
        y, saved = x, []
        for _ in range(n // 2):
            t = np.tanh(y * w)
            saved.append((y, t))
            y = t
        return saved

    def backward(saved):
        g = np.ones_like(x)
        d_w = np.zeros_like(w)
        for y_in, t in reversed(saved):
            g = g * (1 - t * t)
            d_w += g * y_in
            g = g * w
        return g, d_w

    return forward, backward


def engine_chain(n: int, tensor):
    """The chain on a PyTorch-shaped engine; `tensor(v)` makes a one-element leaf that requires
    grad. The same code runs on minilucid, the bare graph engine and PyTorch."""
    x, w = tensor(X), tensor(W)

    def forward():
        y = x
        for _ in range(n // 2):
            y = (y * w).tanh()
        return y

    def backward(y):
        y.backward()
        grads = x.grad, w.grad
        x.grad = w.grad = None
        return grads

    return forward, backward


def minilucid_chain(n: int):
    return engine_chain(n, lambda v: ml.tensor([v], requires_grad=True))


def bare_chain(n: int):
    """The bare graph engine (benchmarks/bare.py), for scale."""
    return engine_chain(n, lambda v: bare.tensor(np.array([v], np.float32), requires_grad=True))


def torch_chain(n: int):
    # Imported here only: PyTorch's modules add some 150,000 objects that Python's cyclic
    # collector would scan again and again while the other engines build their graphs.
    import torch

    torch.set_num_threads(1)
    return engine_chain(n, lambda v: torch.tensor([v], requires_grad=True))


CHAINS = {
    "numpy": numpy_chain,
    "minilucid": minilucid_chain,
    "bare": bare_chain,
    "torch": torch_chain,
}


def check_gradients(engines: list, n: int = 200) -> None:
    """d(y_n)/dx and d(y_n)/dw of every engine match the hand-written NumPy ones."""
    reference = None
    for engine in engines:
        forward, backward = CHAINS[engine](n)
        grads = [np.asarray(g, dtype=np.float64) for g in backward(forward())]
        if reference is None:
            reference = grads
            continue
        for name, g, ref in zip(("x", "w"), grads, reference, strict=True):
            if g.shape != ref.shape or not np.allclose(g, ref, rtol=1e-4, atol=1e-7):
                raise AssertionError(
                    f"deep chain: {engine}'s gradient of {name} is {g}, "
                    f"hand-written NumPy gives {ref}"
                )


def _rss() -> int:
    """Resident set size now, in bytes (Linux), else 0."""
    try:
        with open("/proc/self/statm", encoding="ascii") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return 0


def _reset_peak_rss() -> None:
    """Make the peak resident set start from now (Linux 4.0+); the peak inherited from the
    process that started this one would otherwise count."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
            f.write("5")
    except OSError:
        pass


def _peak_rss() -> int:
    """The peak resident set size in bytes (since `_reset_peak_rss`, on Linux)."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    scale = 1 if sys.platform == "darwin" else 1024  # ru_maxrss is bytes on macOS, else KiB
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale


class _CollectorTime:
    """Time spent in Python's cyclic garbage collector, read from `gc.callbacks`."""

    def __init__(self, clock):
        self.clock, self.spent, self.started = clock, 0.0, 0.0

    def __call__(self, phase: str, info: dict) -> None:
        if phase == "start":
            self.started = self.clock()
        else:
            self.spent += self.clock() - self.started


def measure(engine: str, n: int, trace: bool, clock_name: str = "wall") -> dict:
    """Run one forward and one backward of the chain; what it cost, per node."""
    clock = CLOCKS[clock_name]
    collector = _CollectorTime(clock)
    # Warm up the code paths, and fill Python's bounded free lists (of tuples, say), which
    # would otherwise count as memory still held after backward.
    warm_forward, warm_backward = CHAINS[engine](10_000)
    warm_backward(warm_forward())
    forward, backward = CHAINS[engine](n)
    gc.collect()  # as before every timed block: no full collection is already due at the start
    if trace:
        tracemalloc.start()
        base = tracemalloc.get_traced_memory()[0]
    _reset_peak_rss()
    rss_before = _rss()
    gc.callbacks.append(collector)
    t0 = clock()
    out = forward()
    t1 = clock()
    rss_graph = _rss()
    traced_graph = tracemalloc.get_traced_memory()[0] if trace else 0
    grads = backward(out)
    # What the engine still holds once backward has returned, the output still referenced.
    rss_after = _rss()
    traced_after = tracemalloc.get_traced_memory()[0] if trace else 0
    del out, grads  # dropping the graph is part of the cost, for every engine
    t2 = clock()
    gc.callbacks.remove(collector)
    result = {
        "engine": engine,
        "n": n,
        "forward_us": (t1 - t0) / n * 1e6,
        "backward_us": (t2 - t1) / n * 1e6,
        "collector_us": collector.spent / n * 1e6,
        "rss_graph_b": (rss_graph - rss_before) / n,
        "rss_after_b": (rss_after - rss_before) / n,
        "rss_peak_b": (_peak_rss() - rss_before) / n,
    }
    if trace:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        result["traced_graph_b"] = (traced_graph - base) / n
        result["traced_peak_b"] = (peak - base) / n
        result["traced_after_b"] = (traced_after - base) / n
    return result


def spawn(engine: str, n: int, trace: bool = False, clock_name: str = "wall") -> dict:
    """`measure` in a fresh interpreter, so that sizes and engines share no memory."""
    command = [sys.executable, "-m", "benchmarks.deep", "--worker", engine, str(n)]
    command += ["--clock", clock_name]
    if trace:
        command.append("--trace")
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(
            f"deep chain: {engine} with {n} nodes failed (exit {done.returncode}):\n"
            + done.stderr[-2000:]
        )
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", nargs=2, metavar=("ENGINE", "N"), required=True)
    parser.add_argument("--trace", action="store_true", help="also measure with tracemalloc")
    parser.add_argument("--clock", choices=CLOCKS, default="wall")
    args = parser.parse_args()
    engine, n = args.worker[0], int(float(args.worker[1]))
    print(json.dumps(measure(engine, n, args.trace, args.clock)))


if __name__ == "__main__":
    main()
