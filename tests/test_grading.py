"""The sandbox itself (minilucid_course/sandbox.py), with code the policy would refuse run in it
directly: what a hand-in could do if it got past the policy. And the pieces of grading that need
no nbgrader: the rebuild from the release, the judge's reading of a channel."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook
from nbgrading import processes_running

from minilucid_course import grading, handin, judge, sandbox

ROOT = Path(__file__).resolve().parents[1]
needs_sandbox = pytest.mark.skipif(bool(sandbox.missing()), reason="no sandbox on this machine")

ESCAPE = f"""
import os, socket, subprocess, sys
found = {{}}
found["uid"] = os.getuid()
found["repo"] = sorted(os.listdir({str(ROOT)!r}))
for name, path in {{"git": {str(ROOT / ".git")!r},
                    "solutions": {str(ROOT / "solutions")!r}, "class": {{here!r}}}}.items():
    found[name] = os.path.exists(path)
try:
    socket.create_connection(("1.1.1.1", 80), timeout=2)
    found["network"] = True
except OSError:
    found["network"] = False
try:
    open({str(Path(sys.prefix) / "zz_minilucid_test.pth")!r}, "w").write("import os")
    found["venv_writable"] = True
except OSError:
    found["venv_writable"] = False
found["env"] = sorted(os.environ)
found["processes"] = len([p for p in os.listdir("/proc") if p.isdigit()])
try:
    done = subprocess.run(["git", "-C", {str(ROOT)!r}, "show", "HEAD:README.md"],
                          capture_output=True)
    found["git_show"] = done.returncode == 0 and len(done.stdout) > 0
except OSError:
    found["git_show"] = False
subprocess.Popen(["setsid", "sleep", "4243"], start_new_session=True)
try:
    with open("big", "wb") as f:
        f.write(b"0" * (sandbox.FILE_SIZE + 1) if False else b"0" * {sandbox.FILE_SIZE + 1})
    found["big_file"] = True
except OSError:
    found["big_file"] = False
open("found.json", "w").write(__import__("json").dumps(found))
"""


@pytest.fixture
def box():
    """A hand-in's folder where the sandbox's user can reach it (pytest's tmp_path is private)."""
    folder = Path(tempfile.mkdtemp(prefix="minilucid-test-box-"))
    yield folder / "work"
    shutil.rmtree(folder, ignore_errors=True)


@needs_sandbox
def test_code_past_the_policy_still_cannot_reach_out(box, tmp_path, monkeypatch):
    monkeypatch.setenv("MINILUCID_TEST_SECRET", "teacher's")
    here = tmp_path / "class"
    here.mkdir()
    work = box
    sandbox.prepare(work)
    (work / "escape.py").write_text(ESCAPE.replace("{here!r}", repr(str(here))))
    sandbox.prepare(work)
    status, log = sandbox.run(work, [sys.executable, "-I", "escape.py"], {}, timeout=60)
    assert status == 0, log
    found = json.loads((work / "found.json").read_text())
    assert found["uid"] != 0
    runtime = {p.name for p in sandbox.runtime() if p.parent == ROOT}
    assert set(found["repo"]) <= runtime, found["repo"]  # the packages and the environment only
    assert not (found["git"] or found["solutions"] or found["class"]), found
    assert not found["network"] and not found["venv_writable"] and not found["git_show"], found
    assert not found["big_file"], found
    assert "MINILUCID_TEST_SECRET" not in found["env"], found["env"]
    assert found["processes"] < 10, found
    assert not (Path(sys.prefix) / "zz_minilucid_test.pth").exists()
    assert not processes_running("sleep 4243")


@needs_sandbox
def test_a_hand_in_past_its_time_is_killed_with_every_process_it_started(box):
    work = box
    sandbox.prepare(work)
    code = "import subprocess, time\nsubprocess.Popen(['sleep', '4244'])\ntime.sleep(600)\n"
    (work / "slow.py").write_text(code)
    sandbox.prepare(work)
    started = time.monotonic()
    status, _log = sandbox.run(work, [sys.executable, "-I", "slow.py"], {}, timeout=3)
    assert status == -9 and time.monotonic() - started < 30
    time.sleep(0.5)
    assert not processes_running("sleep 4244")


def _cell(source, grade_id=None, **flags):
    cell = new_code_cell(source)
    if grade_id:
        cell.metadata["nbgrader"] = {"grade_id": grade_id, "schema_version": 3, **flags}
    return cell


def test_the_hand_in_is_rebuilt_from_the_release():
    release = new_notebook(
        cells=[
            new_markdown_cell("# Title"),
            _cell("import numpy as np", "setup", locked=True),
            _cell("raise NotImplementedError()", "ex1_answer", solution=True),
            _cell("check(f)", "ex1_check", grade=True, points=1),
            _cell("raise NotImplementedError()", "ex2_answer", solution=True),
        ]
    )
    handed = new_notebook(
        cells=[
            _cell("check = print"),  # added
            new_markdown_cell("# Title"),
            _cell("import numpy as np\nnp.x = 1", "setup", locked=True),  # changed
            _cell("def f(): return 1", "ex1_answer", solution=True),
            _cell("check(f)", "ex1_check", grade=True, points=1),
            _cell("def g(): return 2"),  # ex2's answer without its metadata
        ]
    )
    handed.cells[5].metadata["nbgrader"] = {}
    nb, notes = handin.rebuild(handed, release)
    assert [c.source for c in nb.cells] == [
        "# Title",
        "import numpy as np",
        "def f(): return 1",
        "check(f)",
        "raise NotImplementedError()",
    ]
    assert len(notes) == 3 and "changed the release's cell setup" in notes[1], notes


def test_the_judge_reads_only_plain_records_and_the_segment_of_each_cell(tmp_path):
    channel = tmp_path / "channel"
    channel.write_bytes(
        b'{"cell":0}\n{"check":"check_x","data":1}\nnot json\n{"cell":0,"done":true}\n'
        b'{"cell":1}\n{"cell":1,"done":false,"error":"NotImplementedError","message":""}\n'
        b'{"cell":2}\n{"cell":2,"done":false,"error":"AssertionError","message":"\x1b[2J"}\n'
    )
    per_cell, outcome = judge.segments(judge.read_channel(str(channel)))
    assert per_cell[0] == [{"check": "check_x", "data": 1}] and outcome[0]["done"] is True
    cells = [{"index": i, "checks": ["check_unknown"]} for i in (0, 1, 2, 3)]
    states = [judge.decide(c, 0, per_cell, outcome, {})["state"] for c in cells]
    assert states == ["pass", "not_done", "fail", "stopped"]


def test_without_the_sandbox_grading_refuses_and_says_what_is_missing(monkeypatch):
    monkeypatch.setattr(sandbox, "missing", lambda: ("the program bwrap (apt install bubblewrap)",))
    with pytest.raises(grading.SandboxMissing, match="apt install bubblewrap"):
        grading.HandInExecute().preprocess(new_notebook(), {"nbgrader": {}})


def test_the_sandbox_runs_as_nobody_when_grading_runs_as_root():
    if not (hasattr(os, "geteuid") and os.geteuid() == 0):
        pytest.skip("not root")
    command = sandbox.command(Path("/tmp/x/work"), ["true"], {})
    script = command[-1]
    assert command[:2] == ["unshare", "--mount"] and "--reuid=65534" in script
    assert script.index("setpriv") < script.index("bwrap")


def _warmup(answer: str):
    return new_notebook(
        cells=[
            _cell("import numpy as np\nfrom warmup_checks import check_warmup_scale", "setup"),
            _cell(answer, "ex99_1_scale_answer", solution=True),
            _cell("check_warmup_scale(scale)", "ex99_1_scale_check", grade=True, points=1),
        ]
    )


@pytest.mark.parametrize("use_sandbox", [True, False], ids=["sandbox", "without_sandbox"])
def test_a_hand_in_is_run_then_judged_apart(use_sandbox):
    if use_sandbox and sandbox.missing():
        pytest.skip("no sandbox here")
    kit = [Path(__file__).parent / "grading_kit" / "warmup_checks.py"]
    states = {}
    for name, answer in {
        "right": "def scale(x, a):\n    return a * x",
        "wrong": "def scale(x, a):\n    return x",
        "stub": "raise NotImplementedError()",
        "refused": "import os\ndef scale(x, a):\n    return a * x",
    }.items():
        verdicts, reason, refused = grading.run_hand_in(_warmup(answer), kit, 7, 60, use_sandbox)
        assert reason is None
        (verdict,) = verdicts
        states[name] = verdict["state"]
        if name == "refused":
            assert "line 1: imports os" in verdict["message"]
    assert states == {"right": "pass", "wrong": "fail", "stub": "not_done", "refused": "fail"}
