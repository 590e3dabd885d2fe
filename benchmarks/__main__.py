"""`python -m benchmarks [--quick] [--only NAME ...] [--out FILE]`: run, print, write RESULTS.md."""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from benchmarks import conv, deep, gpt, matmul, mlp, report, tiny, training
from benchmarks.machine import describe, pin_torch_threads, torch
from benchmarks.report import Row
from benchmarks.timing import CLOCKS, interleave, phased, use_clock

RESULTS = Path(__file__).with_name("RESULTS.md")
BENCHMARKS = ("mlp", "training", "tiny", "deep", "matmul", "conv", "gpt")

FULL = {
    "repeats": 15,
    "block": 0.2,
    "deep_sizes": {10_000: 5, 100_000: 5, 1_000_000: 3},
    "matmul_size": 1024,
    "matmul_repeats": 7,
}
QUICK = {
    "repeats": 3,
    "block": 0.01,
    "deep_sizes": {10_000: 1},
    "matmul_size": 256,
    "matmul_repeats": 3,
}

TARGETS = {  # minilucid's ratio to NumPy by hand, or an absolute figure
    "mlp_small": 1.5,
    "mlp_large": 1.15,
    "training": 1.3,
    "tiny": 2.5,
    "deep_us": 5.0,
    "deep_kb": 0.5,
    "matmul": 1.05,
    "conv": 1.3,
    "backward_forward": 3.0,
}

NOTES = """\
- Every engine runs the same workload on the same data in one process, on one thread (the
  thread variables above are set before NumPy or PyTorch is imported, and PyTorch's own thread
  pools are set to 1). Rounds alternate the order of the engines (A B C, C B A, ...); each
  round times a block of about {block} s per engine, after a warm-up. Figures are medians over
  {repeats} rounds; a ratio is the median of the per-round ratios, so a neighbour's load on the
  machine falls on both sides of it. Times are {clock} time (see "clock" above). `gc` stays on,
  as it is in real use; it is collected before each block.
- Before any timing, each engine's loss and gradients are checked against the hand-written
  NumPy ones (and those against central differences in float64); a mismatch stops the run.
- MLP step = forward + backward + SGD update (`p -= lr * grad`), float32, softmax
  cross-entropy. "backward / forward" is the ratio of the two phases within the step.
- Training epoch: chapter 09's loop over the digits' training split (shuffled, mini-batches
  of 32, the last one short): fetch the batch, forward, backward (with zero_grad), Adam step.
  minilucid runs it through `DataLoader`, `nn` and `optim`; PyTorch through its own. Before
  timing, one epoch of every engine from the same weights in the same order must end at the
  hand-written epoch's weights.
- Tiny ops: 100 ops (25 x mul, add, tanh, exp) on one-element tensors; time per op of forward
  plus backward.
- Deep chain: n sequential ops (`y = tanh(y * w)`, n/2 times) on one-element tensors, one fresh
  process per size and engine (PyTorch is imported only in its own: its modules would make
  Python's cyclic collector slower for the others). Backward includes dropping the graph
  afterwards, for every engine; the collector's share is measured with `gc.callbacks`. Peak
  memory per node is measured with `tracemalloc` (everything Python and NumPy allocate;
  PyTorch's allocator is invisible to it, hence "-"), and also as the growth of the resident
  set, which every engine shows. "Still held after backward" is what remains allocated once
  backward has returned, the output tensor still referenced: the graph should be gone. (About
  0.2 MB remains whatever the depth: Python's bounded free lists of tuples, which tracemalloc
  counts as allocated.)
- Bare graph (tiny ops and deep chain only): `benchmarks/bare.py`, the least a graph-per-op
  engine in Python can do - a node per op, the same sort and sweep as minilucid, and nothing
  else (no op contexts, broadcasting, dtypes, hooks, grad mode or checks; four ops). It shows
  what recording a graph in Python costs at all, apart from what being a library adds.
- Matmul chain: `sum(X @ W1 @ W2 @ W3 @ W4)`, square float32 matrices, forward and backward.
- Conv2d layer: `conv2d(x, W, b, padding=1)` forward, then backward from a fixed upstream
  gradient to x, W and b, float32. The hand-written version is im2col + matmul in the layout
  minilucid uses too, (N, C*kh*kw, Ho*Wo), so that W @ buffer is the output in place and no
  gradient needs a transpose; the buffer's size is stated beside it. Neither writes a second
  output-sized array for the bias: the hand-written one adds it in place, minilucid's conv2d
  multiplies it in as one more column of the weight against a row of ones.
- Tiny GPT step: chapter 13's program `notebooks/capstone/tiny_gpt.py`, loaded once as it is
  and once with its import line changed, so minilucid and PyTorch run the same model code on
  the same batch from the same weights (their losses and gradients are compared first): the
  loss, zero_grad and backward, gradient clipping and an AdamW step. It has no hand-written
  NumPy version; its second row is minilucid's time over PyTorch's.
- The hand-written NumPy versions are written as a careful person writes them: the same
  ufunc and BLAS calls an engine needs, in-place where it is natural, no copies.
"""


def log(text: str) -> None:
    print(text, end="", flush=True, file=sys.stderr)


def run_mlp(settings: dict) -> tuple[list[Row], list[Row]]:
    summary, details = [], []
    ratios_bf = {}
    for key, config in mlp.CONFIGS.items():
        models = mlp.engines(config)
        mlp.check_gradients(config, models)
        log(f"{config['title']}: gradients agree; timing ")
        cases = {n: phased(m.forward, m.backward, m.update) for n, m in models.items()}
        result = interleave(cases, settings["repeats"], settings["block"], log)
        log("\n")
        names = result.engines
        ratio = result.ratio("minilucid", "numpy")
        summary.append(
            Row(
                config["title"],
                "ms / step",
                {e: result.median(e) * 1e3 for e in names},
                {e: result.ratio(e, "numpy") for e in names if e != "numpy"},
                f"<= {TARGETS[key]}x",
                ratio <= TARGETS[key],
            )
        )
        for phase in ("forward", "backward", "update"):
            details.append(
                Row(
                    f"{config['title']}: {phase}",
                    "ms",
                    {e: result.median(e, phase) * 1e3 for e in names},
                    {e: result.ratio(e, "numpy", phase) for e in names if e != "numpy"},
                )
            )
        ratios_bf[key] = (config, {e: result.phase_ratio(e, "backward", "forward") for e in names})
    for config, bf in ratios_bf.values():
        limit = TARGETS["backward_forward"]
        summary.append(
            Row(
                f"{config['title']}: backward / forward",
                "ratio",
                bf,
                target=f"<= {limit}",
                met=bf["minilucid"] <= limit,
            )
        )
    return summary, details


def run_training(settings: dict) -> tuple[list[Row], list[Row]]:
    training.check_epoch()
    log("training epoch: weights agree after one epoch; timing ")
    models = training.engines()
    result = interleave(
        {n: training.case(m) for n, m in models.items()},
        settings["repeats"],
        settings["block"],
        log,
    )
    log("\n")
    names = result.engines
    ratio = result.ratio("minilucid", "numpy")
    summary = [
        Row(
            training.CONFIG["title"],
            "ms / epoch",
            {e: result.median(e) * 1e3 for e in names},
            {e: result.ratio(e, "numpy") for e in names if e != "numpy"},
            f"<= {TARGETS['training']}x",
            ratio <= TARGETS["training"],
        )
    ]
    details = [
        Row(
            f"Training epoch: {phase}",
            "ms / epoch",
            {e: result.median(e, phase) * 1e3 for e in names},
            {e: result.ratio(e, "numpy", phase) for e in names if e != "numpy"},
        )
        for phase in training.PHASES
    ]
    return summary, details


def run_tiny(settings: dict) -> tuple[list[Row], list[Row]]:
    models = tiny.engines()
    tiny.check_gradients(models)
    log("tiny ops: gradients agree; timing ")
    cases = {n: phased(m.forward, m.backward) for n, m in models.items()}
    result = interleave(cases, settings["repeats"], settings["block"], log)
    log("\n")
    names = result.engines
    per_op = 1e6 / tiny.OPS
    ratio = result.ratio("minilucid", "numpy")
    summary = [
        Row(
            f"Tiny ops: chain of {tiny.OPS} ops on 1-element tensors, forward + backward",
            "us / op",
            {e: result.median(e) * per_op for e in names},
            {e: result.ratio(e, "numpy") for e in names if e != "numpy"},
            f"<= {TARGETS['tiny']}x",
            ratio <= TARGETS["tiny"],
        )
    ]
    details = [
        Row(
            f"Tiny ops: {phase}",
            "us / op",
            {e: result.median(e, phase) * per_op for e in names},
            {e: result.ratio(e, "numpy", phase) for e in names if e != "numpy"},
        )
        for phase in ("forward", "backward")
    ]
    return summary, details


def run_deep(settings: dict, engines: list[str]) -> tuple[list[Row], list[Row]]:
    summary, details = [], []
    deep.check_gradients(engines)
    for n, repeats in settings["deep_sizes"].items():
        runs = {e: [] for e in engines}
        log(f"deep chain of {n:.0e} ops: gradients agree; timing ")
        for i in range(repeats):
            for e in engines if i % 2 == 0 else reversed(engines):
                runs[e].append(deep.spawn(e, n, clock_name=settings["clock"]))
                log(".")
        traced = {e: deep.spawn(e, n, trace=True) for e in engines if e != "torch"}
        log(" traced\n")

        def med(engine, key, runs=runs):
            return statistics.median(r[key] for r in runs[engine])

        def total(r):
            return r["forward_us"] + r["backward_us"]

        def paired(engine, runs=runs):
            pairs = zip(runs[engine], runs["numpy"], strict=True)
            return statistics.median(total(a) / total(b) for a, b in pairs)

        label = f"Deep chain, {n:.0e} ops"
        us = {e: statistics.median(total(r) for r in runs[e]) for e in engines}
        peak_kb = {e: traced[e]["traced_peak_b"] / 1e3 if e in traced else None for e in engines}
        held_kb = {"minilucid": traced["minilucid"]["traced_after_b"] * n / 1e3}
        summary.append(
            Row(
                f"{label}: forward + backward",
                "us / node",
                us,
                {e: paired(e) for e in engines if e != "numpy"},
                f"<= {TARGETS['deep_us']} us",
                us["minilucid"] <= TARGETS["deep_us"],
            )
        )
        summary.append(
            Row(
                f"{label}: peak memory (tracemalloc)",
                "kB / node",
                peak_kb,
                {"minilucid": peak_kb["minilucid"] / peak_kb["numpy"]},
                f"<= {TARGETS['deep_kb']} kB",
                peak_kb["minilucid"] <= TARGETS["deep_kb"],
            )
        )
        summary.append(
            Row(
                f"{label}: still held after backward (tracemalloc)",
                "kB in all",
                held_kb,
                target="< 1000 kB, whatever n",
                met=held_kb["minilucid"] < 1000,
            )
        )
        for key, what in (
            ("forward_us", "forward"),
            ("backward_us", "backward (and dropping the graph)"),
            ("collector_us", "of forward + backward: in Python's cyclic collector"),
        ):
            details.append(Row(f"{label}: {what}", "us / node", {e: med(e, key) for e in engines}))
        details.append(
            Row(
                f"{label}: graph after forward (tracemalloc)",
                "kB / node",
                {e: traced[e]["traced_graph_b"] / 1e3 if e in traced else None for e in engines},
            )
        )
        for key, what in (("rss_peak_b", "peak"), ("rss_after_b", "after backward")):
            details.append(
                Row(
                    f"{label}: resident memory growth, {what}",
                    "kB / node",
                    {e: med(e, key) / 1e3 for e in engines},
                )
            )
    return summary, details


def run_matmul(settings: dict) -> tuple[list[Row], list[Row]]:
    size = settings["matmul_size"]
    models = matmul.engines(size)
    matmul.check_gradients(models)
    log(f"matmul chain {size}: gradients agree; timing ")
    cases = {n: phased(m.forward, m.backward) for n, m in models.items()}
    result = interleave(cases, settings["matmul_repeats"], settings["block"], log)
    log("\n")
    names = result.engines
    ratio = result.ratio("minilucid", "numpy")
    summary = [
        Row(
            f"Matmul chain, {matmul.DEPTH} x ({size} x {size}), forward + backward",
            "ms",
            {e: result.median(e) * 1e3 for e in names},
            {e: result.ratio(e, "numpy") for e in names if e != "numpy"},
            f"<= {TARGETS['matmul']}x",
            ratio <= TARGETS["matmul"],
        )
    ]
    details = [
        Row(
            f"Matmul chain: {phase}",
            "ms",
            {e: result.median(e, phase) * 1e3 for e in names},
            {e: result.ratio(e, "numpy", phase) for e in names if e != "numpy"},
        )
        for phase in ("forward", "backward")
    ]
    return summary, details


def run_conv(settings: dict) -> tuple[list[Row], list[Row]]:
    models = conv.engines()
    conv.check_gradients(models)
    log("conv2d layer: outputs and gradients agree; timing ")
    cases = {n: phased(m.forward, m.backward) for n, m in models.items()}
    result = interleave(cases, settings["repeats"], settings["block"], log)
    log("\n")
    names = result.engines
    ratio = result.ratio("minilucid", "numpy")
    summary = [
        Row(
            conv.TITLE,
            "ms",
            {e: result.median(e) * 1e3 for e in names},
            {e: result.ratio(e, "numpy") for e in names if e != "numpy"},
            f"<= {TARGETS['conv']}x",
            ratio <= TARGETS["conv"],
        ),
        Row(
            "Conv2d layer: the im2col buffer (N x C*kh*kw x Ho*Wo, float32; minilucid: + a row "
            "of ones for the bias)",
            "kB",
            {"numpy": conv.buffer_bytes() / 1e3, "minilucid": conv.buffer_bytes(True) / 1e3},
        ),
    ]
    details = [
        Row(
            f"Conv2d layer: {phase}",
            "ms",
            {e: result.median(e, phase) * 1e3 for e in names},
            {e: result.ratio(e, "numpy", phase) for e in names if e != "numpy"},
        )
        for phase in ("forward", "backward")
    ]
    return summary, details


def run_gpt(settings: dict) -> tuple[list[Row], list[Row]]:
    summary, details = [], []
    for gelu, (title, _) in gpt.GELUS.items():
        models = gpt.engines(gelu)
        gpt.check_gradients(models)
        log(f"tiny GPT step ({gelu} GELU): losses and gradients agree; timing ")
        result = interleave(gpt.cases(models), settings["repeats"], settings["block"], log)
        log("\n")
        names = result.engines
        summary.append(Row(title, "ms / step", {e: result.median(e) * 1e3 for e in names}))
        if "torch" in names:
            ratio = result.ratio("minilucid", "torch")
            summary.append(
                Row(
                    f"{title}: minilucid / PyTorch",
                    "ratio",
                    {"minilucid": ratio},
                    target="<= 1.0x",
                    met=ratio <= 1.0,
                )
            )
        details += [
            Row(f"{title}: {phase}", "ms", {e: result.median(e, phase) * 1e3 for e in names})
            for phase in ("forward", "backward", "update")
        ]
    return summary, details


def check_all(engines: list[str]) -> None:
    """Every gradient check of every benchmark, without timing (a few seconds)."""
    for config in mlp.CONFIGS.values():
        mlp.check_gradients(config, mlp.engines(config))
    training.check_epoch()
    tiny.check_gradients(tiny.engines())
    deep.check_gradients(engines)
    matmul.check_gradients(matmul.engines(QUICK["matmul_size"]))
    conv.check_gradients(conv.engines())
    for gelu in gpt.GELUS:
        gpt.check_gradients(gpt.engines(gelu))
    print(
        f"gradients agree: {', '.join(engines)} (MLP x 2, training epoch, tiny ops, "
        "deep chain, matmul chain, conv2d layer, tiny GPT with either GELU)"
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="a fast smoke run (small sizes)")
    parser.add_argument("--only", nargs="+", choices=BENCHMARKS, help="run only these")
    parser.add_argument(
        "--check", action="store_true", help="only compare every engine's gradients, no timing"
    )
    parser.add_argument(
        "--clock",
        choices=CLOCKS,
        default="wall",
        help="wall: elapsed time (default); cpu: this process's CPU time, steadier when other "
        "programs compete for the cores",
    )
    parser.add_argument(
        "--out",
        type=Path,
        help=f"write the Markdown report here (default: {RESULTS.name} "
        "for a full run of everything, nowhere for --quick or --only)",
    )
    args = parser.parse_args(argv)
    settings = dict(QUICK if args.quick else FULL, clock=args.clock)
    use_clock(args.clock)
    chosen = args.only or BENCHMARKS
    out = args.out or (RESULTS if not args.quick and not args.only else None)

    pin_torch_threads()
    engines = ["numpy", "minilucid", "bare"] + (["torch"] if torch is not None else [])
    if args.check:
        check_all(engines)
        return 0
    info = describe()
    info["clock"] = {"wall": "wall (time.perf_counter)", "cpu": "CPU (time.process_time)"}[
        args.clock
    ]
    started = time.perf_counter()
    summary, details = [], []
    runners = {
        "mlp": lambda: run_mlp(settings),
        "training": lambda: run_training(settings),
        "tiny": lambda: run_tiny(settings),
        "deep": lambda: run_deep(settings, engines),
        "matmul": lambda: run_matmul(settings),
        "conv": lambda: run_conv(settings),
        "gpt": lambda: run_gpt(settings),
    }
    for name in BENCHMARKS:
        if name in chosen:
            s, d = runners[name]()
            summary += s
            details += d
    info["duration"] = f"{time.perf_counter() - started:.0f} s"
    summary_table = report.table(summary, engines)
    details_table = report.table(details, engines)
    print(summary_table)
    print()
    print(report.machine_list(info))
    if out is not None:
        notes = NOTES.format(
            block=settings["block"], repeats=settings["repeats"], clock=settings["clock"]
        )
        out.write_text(report.document(info, summary_table, details_table, notes), "utf-8")
        print(f"\nwritten to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
