"""minilucid/_memory.py: a training step's arrays reuse the memory the previous step freed."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="glibc's allocator: Linux only"
)

# 20 rounds of the same 50 arrays (100 kB to 2.4 MB, as a step's temporaries): page faults counted
ROUNDS = """
import resource, sys
import numpy as np
if sys.argv[1] == "import":
    import minilucid
sizes = np.random.default_rng(0).integers(25_000, 600_000, size=50)
pages_of_one_round = int(sum(sizes)) * 4 // 4096
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(20):
    arrays = [np.ones(n, np.float32) for n in sizes]
    del arrays
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before, pages_of_one_round)
"""


def faults(*argv: str, **env: str) -> tuple[int, int]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")} | env
    out = subprocess.run(
        [sys.executable, "-c", ROUNDS, *argv], env=env, capture_output=True, text=True, check=True
    )
    counted, one_round = map(int, out.stdout.split())
    return counted, one_round


def test_after_import_the_next_rounds_arrays_fault_in_no_fresh_pages():
    counted, one_round = faults("import")
    assert counted < 1.5 * one_round, (counted, one_round)  # the first round's pages, then none


def test_the_program_can_say_no_and_its_own_malloc_settings_stand():
    import minilucid._memory as memory

    for env in ({"MINILUCID_KEEP_FREED_MEMORY": "0"}, {"MALLOC_TRIM_THRESHOLD_": "131072"}):
        script = "import minilucid._memory as m; print(m.keep_freed_memory())"
        out = subprocess.run(
            [sys.executable, "-c", script],
            env={**os.environ, **env},
            capture_output=True,
            text=True,
            check=True,
        )
        assert out.stdout.strip() == "False", env
    assert memory.TRIM_THRESHOLD == 2 * memory.MMAP_THRESHOLD == 64 * 1024 * 1024
