"""Re-run notebooks top to bottom and store their outputs in place, with nbconvert.

    python -m minilucid_course.execute notebooks/*.ipynb solutions/*.ipynb

Each notebook runs in a fresh python3 kernel of this environment, from its own folder, as nbval
runs it. No per-cell timings are stored (old ones are removed), and each cell's prints are
merged into one stream output per stream (as nbval compares them), so re-running an unchanged
notebook changes nothing but what its cells print. Stops at the first cell that raises, unless
the cell is tagged raises-exception.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import nbformat
import zmq
from nbconvert.preprocessors import (
    CellExecutionError,
    CoalesceStreamsPreprocessor,
    ExecutePreprocessor,
)
from traitlets.config import Config

TIMING_KEYS = ("execution", "ExecuteTime")


def execute(path: Path | str, timeout: int = 600) -> None:
    path = Path(path)
    os.environ.setdefault("JUPYTER_PREFER_ENV_PATH", "1")  # the kernel of this environment
    nb = nbformat.read(str(path), as_version=4)
    config = Config()
    if zmq.has("curve"):  # encrypt the local kernel connection when pyzmq can
        config.KernelManager.transport_encryption = "auto"
    executor = ExecutePreprocessor(
        config=config, timeout=timeout, kernel_name="python3", record_timing=False
    )
    executor.preprocess(nb, {"metadata": {"path": str(path.parent)}})
    # consecutive prints become one output, however the kernel happened to flush them
    CoalesceStreamsPreprocessor().preprocess(nb, {})
    for cell in nb.cells:
        for key in TIMING_KEYS:
            cell.metadata.pop(key, None)
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        nbformat.write(nb, f)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="+", help="notebooks to run and store")
    parser.add_argument("--timeout", type=int, default=600, help="seconds per cell")
    args = parser.parse_args(argv)
    failed = []
    for name in args.notebooks:
        print(f"executing {name}", flush=True)
        try:
            execute(name, args.timeout)
        except CellExecutionError as exc:
            failed.append(name)
            print(f"  FAILED, left unchanged: {str(exc).strip().splitlines()[-1]}")
    if failed:
        print(f"execute: {len(failed)} notebook(s) raised: {', '.join(failed)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
