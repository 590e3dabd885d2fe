"""`make lab` as a learner meets it: the URL it prints opens chapter 00; no teacher tools, no
solutions in the file browser; the first run makes the working copy in work/."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def lab():
    if not (ROOT / ".venv" / "bin" / "jupyter").exists():
        pytest.skip("no .venv (make setup)")
    port = _free_port()
    args = f"--no-browser --port={port} --ip=127.0.0.1"
    process = subprocess.Popen(
        ["make", "-s", "lab", f"LAB_ARGS={args}"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own process group, ended below
    )
    lines, url = [], None
    deadline = time.time() + 300
    try:
        while time.time() < deadline and url is None:
            line = process.stdout.readline()
            if not line and process.poll() is not None:
                break
            lines.append(line)
            found = re.search(rf"(http://127\.0\.0\.1:{port}/\S*token=\S+)", line)
            url = found.group(1) if found else None
        assert url, "make lab printed no URL:\n" + "".join(lines[-30:])
        yield url, port
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)


def _get(url: str):
    for _ in range(60):
        try:
            return urllib.request.urlopen(url, timeout=30)
        except urllib.error.HTTPError:
            raise
        except OSError:
            time.sleep(1)
    raise AssertionError(f"no answer from {url}")


def test_lab_url_opens_chapter_00_without_teacher_tools_or_solutions(lab):
    url, port = lab
    token = url.split("token=", 1)[1]
    response = _get(url)
    assert response.geturl().split("?")[0].endswith("/lab/tree/notebooks/00_welcome.ipynb")
    base = f"http://127.0.0.1:{port}"
    with pytest.raises(urllib.error.HTTPError) as info:  # nbgrader's formgrader is off
        _get(f"{base}/formgrader?token={token}")
    assert info.value.code == 404
    listing = json.load(_get(f"{base}/api/contents?token={token}"))
    names = {item["name"] for item in listing["content"]}
    assert {"notebooks", "work"} <= names
    assert not {"solutions", "exercises"} & names
    assert any((ROOT / "work").glob("*.ipynb"))


def test_nbgrader_lab_extension_is_off_for_learners_and_on_for_teachers():
    jupyter = ROOT / ".venv" / "bin" / "jupyter"
    if not jupyter.exists():
        pytest.skip("no .venv (make setup)")

    def status(extra_env: dict) -> str:
        out = subprocess.run(
            [str(jupyter), "labextension", "list"],
            capture_output=True,
            text=True,
            timeout=300,
            env={**os.environ, **extra_env},
        )
        lines = [line for line in (out.stdout + out.stderr).splitlines() if "nbgrader v" in line]
        if not lines:
            pytest.skip("nbgrader's JupyterLab extension is not installed")
        return lines[0]

    assert "disabled" in status({})
    teacher = {"JUPYTER_CONFIG_PATH": str(ROOT / "minilucid_course" / "teacher")}
    assert "enabled" in status(teacher)
