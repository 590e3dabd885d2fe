"""Speed and memory of minilucid, measured against hand-written NumPy (and PyTorch on CPU).

Run `python -m benchmarks` (or `make bench`); `python -m benchmarks --quick` is a fast smoke
run. Every number is a median over interleaved repeats, and every engine runs in the same
process on one thread, so that the ratios compare like with like.

The thread limits below must be in place before NumPy (or PyTorch) is first imported: the BLAS
libraries read them once, when they load. When NumPy is already loaded (the package imported
from a test, say), they could no longer take effect and are left alone.
"""

import os
import sys

THREADS = "1"
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
PINNED = "numpy" not in sys.modules  # True: the limits are set before any BLAS loaded

if PINNED:
    for _name in THREAD_VARIABLES:
        os.environ[_name] = THREADS
