"""What the numbers were measured on: processor, threads, versions, date, load."""

from __future__ import annotations

import datetime
import os
import platform
import sys

import numpy as np

from benchmarks import PINNED, THREAD_VARIABLES

try:
    import torch
except ImportError:  # the PyTorch column is left out
    torch = None


def pin_torch_threads() -> None:
    if torch is not None:
        torch.set_num_threads(1)
        torch.set_num_interop_threads(1)


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def blas() -> str:
    try:
        info = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
        return f"{info.get('name', '?')} {info.get('version', '')}".strip()
    except Exception:  # older NumPy, or a build without the information
        return "unknown"


def describe() -> dict:
    threads = ", ".join(f"{v}={os.environ.get(v, 'unset')}" for v in THREAD_VARIABLES)
    threads += " (set before NumPy loaded)" if PINNED else " (NumPy was loaded first: NOT pinned)"
    if torch is not None:
        threads += f"; torch.get_num_threads()={torch.get_num_threads()}"
    try:
        load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        load = "unknown"
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": f"{cpu_model()} ({os.cpu_count()} logical cores)",
        "system": f"{platform.system()} {platform.release()} {platform.machine()}",
        "threads": threads,
        "python": platform.python_version() + f" ({platform.python_implementation()})",
        "numpy": f"{np.__version__} (BLAS: {blas()})",
        "torch": torch.__version__ if torch is not None else "not installed",
        "load average at start": load,
        "command": "python -m benchmarks " + " ".join(sys.argv[1:]),
    }
