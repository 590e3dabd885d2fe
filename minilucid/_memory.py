"""Where NumPy's temporaries come from, on Linux: keeping freed memory for the next step.

A training step makes and drops the same arrays every time: a tiny GPT's step allocates hundreds
of temporaries of 100 KB to 1 MB. glibc's allocator serves an array above its mmap threshold
(128 KB at start) with fresh pages from the kernel and hands them back when the array is freed;
below it, from its heap, whose free top it gives back once it exceeds the trim threshold. Either
way the next step's array of the same size touches new pages, and each page costs the kernel a
fault: about 5,000 faults per step of the tiny GPT, a third of its time.

glibc raises both thresholds by itself when a program frees a large array (up to 32 MiB and
64 MiB on 64-bit machines), so how fast a step runs depended on what else the process had done
before. At import, minilucid sets them once to those same upper values: arrays up to 32 MiB come
from the heap, and up to 64 MiB of freed memory stays with the process for the next step. The
price is memory held back, not lost: at most 64 MiB more than the process needs at its peak.

Nothing changes when the allocator is not glibc's, when the program has chosen for itself
(glibc's MALLOC_MMAP_THRESHOLD_, MALLOC_TRIM_THRESHOLD_ or MALLOC_TOP_PAD_ variables), or with
MINILUCID_KEEP_FREED_MEMORY=0 in the environment.
"""

from __future__ import annotations

import ctypes
import os
import sys

# mallopt's parameters (glibc's malloc.h) and the values glibc's own adjustment stops at
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
MMAP_THRESHOLD = 32 * 1024 * 1024
TRIM_THRESHOLD = 2 * MMAP_THRESHOLD
_CHOSEN_BY_THE_PROGRAM = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_")


def keep_freed_memory() -> bool:
    """Set glibc's mmap and trim thresholds as described above; True when they were set."""
    if not sys.platform.startswith("linux"):
        return False
    if os.environ.get("MINILUCID_KEEP_FREED_MEMORY", "1") == "0":
        return False
    if any(name in os.environ for name in _CHOSEN_BY_THE_PROGRAM):
        return False
    try:
        libc = ctypes.CDLL(None)
        if not hasattr(libc, "gnu_get_libc_version"):  # glibc only: others' mallopt differ
            return False
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(
        mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD)
    )
