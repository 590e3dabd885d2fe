"""Speed and memory of minilucid, measured against hand-written NumPy (and PyTorch on CPU).

Run `python -m benchmarks` (or `make bench`); `python -m benchmarks --quick` is a fast smoke
run. Every number is a median over interleaved repeats, and every engine runs in the same
process on one thread, so that the ratios compare like with like.

The thread limits below must be in place before NumPy (or PyTorch) is first imported: the BLAS
libraries read them once, when they load.
"""

import os
import sys

THREADS = "1"
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")

if "numpy" in sys.modules:
    print(
        "benchmarks: NumPy was imported before the benchmarks package, so its BLAS may use "
        "more than one thread; run `python -m benchmarks` in a fresh process.",
        file=sys.stderr,
    )
for _name in THREAD_VARIABLES:
    os.environ[_name] = THREADS
