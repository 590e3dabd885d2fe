"""Two packages: `pip install .` gives the engine alone, and the engine imports nothing of the
course; the course package installs from its own pyproject.toml; CI runs the README's command."""

from __future__ import annotations

import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_the_engine_never_imports_the_course():
    hits = []
    for path in sorted((ROOT / "minilucid").rglob("*.py")):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if re.search(r"\b(import|from)\s+minilucid_course\b", line):
                hits.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert not hits, "\n".join(hits)
    code = (
        "import sys, minilucid, minilucid.viz\n"
        "print(any(m.startswith('minilucid_course') for m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT / "tests", capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize(
    "folder, present, absent",
    [
        (".", "minilucid/tensor.py", "minilucid_course/"),
        ("minilucid_course", "minilucid_course/checks/lab.py", "minilucid/tensor.py"),
    ],
    ids=["engine", "course"],
)
def test_each_pyproject_builds_its_own_package(tmp_path, folder, present, absent):
    pytest.importorskip("setuptools")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
            str(ROOT / folder),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    (wheel,) = tmp_path.glob("*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert present in names
    assert not any(n.startswith(absent) for n in names), [n for n in names if n.startswith(absent)][
        :5
    ]


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    commands = re.findall(r"^(make \w+)\s+# .*test suite", readme, re.M)
    assert commands, "the README names no test command"
    run = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert f"exec {commands[0]}" in run
