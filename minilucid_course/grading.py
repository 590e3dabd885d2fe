"""How `nbgrader autograde` grades a minilucid hand-in: rebuilt, read, run fenced in, judged apart.

The class's nbgrader_config.py (written by `python -m minilucid_course.classroom`) puts
`HandInExecute` in place of nbgrader's own Execute step. No Jupyter kernel runs the hand-in.
For each hand-in it

1. rebuilds the notebook from the class's release copy (`minilucid_course.handin`): every cell
   but the answer cells is the release's; answers are matched by grade id; added cells and cells
   without their release metadata are left out (`make audit` lists them);
2. reads each answer cell with the static policy (`minilucid_course.policy`): a refused answer
   cell does not run, and the checks of its exercise fail with the policy's message;
3. runs the rebuilt cells in order in the sandbox (`minilucid_course.sandbox`: bubblewrap, as an
   unprivileged user, no network, nothing of the class in sight, limits, every process killed
   at the end), each check's probe writing plain data to a channel file, with a seed chosen
   here, per hand-in;
4. judges that data in a clean process of its own (`python -s -m minilucid_course.judge`), and
   writes each check cell's output from the verdict: a stream for a pass, an error for a fail.
   Nothing the hand-in printed or displayed reaches the graded notebook, so nbgrader's points
   are the judge's alone;
5. records a hand-in that ran past its time (`hand_in_timeout`) or ended its process: its check
   cells from where it stopped score 0 with the reason, and grading goes on;
6. copies the gradebook before and compares it after: should it have changed, it is put back
   and the hand-in scores 0.

Without bubblewrap and user namespaces grading refuses, naming what is missing;
`c.HandInExecute.without_sandbox = True` runs hand-ins as plain processes of the grader instead,
and says on every hand-in what that cannot promise (docs/teaching.md).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from nbformat.v4 import new_output
from nbgrader.preprocessors import Execute
from traitlets import Bool, Integer

from minilucid_course import handin, policy, sandbox
from minilucid_course.checks.exercise import CHANNEL, SEED

STOPPED = "HandInStopped"
CHECKS = "minilucid_course.checks"
REFUSED = "PolicyRefused"
UNSANDBOXED = (
    "graded WITHOUT the sandbox (without_sandbox = True): this hand-in ran as the grader's own "
    "user, could read and write what that user can, reach the network, and leave processes "
    "behind; only its judged checks are as trustworthy as with the sandbox"
)


class SandboxMissing(RuntimeError):
    """This machine cannot run a hand-in in the sandbox."""


def _meta(cell) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {}) or {}


def _key(grade_id: str) -> str:
    return "_".join(grade_id.split("_")[:2])


def _dump(path: str) -> list[str] | None:
    """The gradebook's content (None when it is not an SQLite file here)."""
    if not path or not Path(path).is_file():
        return None
    with sqlite3.connect(path) as db:
        return list(db.iterdump())


def _copy_database(source: Path | str, target: Path | str) -> None:
    source, target = sqlite3.connect(source), sqlite3.connect(target)
    try:
        source.backup(target)
    finally:
        source.close()
        target.close()


def refusals(nb) -> dict[str, str]:
    """{answer grade_id: the policy's message} for each answer cell the policy refuses."""
    return {
        grade_id: policy.message(found, f"answer {grade_id}")
        for grade_id, found in policy.notebook_violations(nb).items()
    }


def check_cells(nb) -> list[tuple[int, object]]:
    """(index, cell) of every graded code cell that is not an answer."""
    return [
        (i, c)
        for i, c in enumerate(nb.cells)
        if c.cell_type == "code" and _meta(c).get("grade") and not _meta(c).get("solution")
    ]


def checks_modules(nb) -> list[str]:
    """The course's check modules the notebook's own cells import (the judge imports those)."""
    found = []
    for cell in nb.cells:
        if cell.cell_type != "code" or _meta(cell).get("solution"):
            continue
        for line in cell.source.splitlines():
            words = line.split()
            if len(words) > 1 and words[0] == "from" and words[1].startswith(CHECKS + "."):
                found.append(words[1])
    return sorted(set(found))


def run_hand_in(nb, files: list[Path], seed: int, timeout: float, use_sandbox: bool = True):
    """(verdicts, stop reason or None) for a rebuilt notebook: run it fenced in, then judge."""
    refused = refusals(nb)
    cells = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        source = cell.source
        if _meta(cell).get("grade_id") in refused:
            source = handin.STUB
        lines = [line for line in source.splitlines() if not line.lstrip().startswith("!")]
        cells.append({"index": index, "source": "\n".join(lines)})
    with tempfile.TemporaryDirectory(prefix="minilucid-hand-in-") as scratch:
        work = Path(scratch) / "work"
        work.mkdir()
        for item in files:
            shutil.copy(item, work / item.name)
        (work / "cells.json").write_text(json.dumps(cells), encoding="utf-8")
        (work / "channel").write_bytes(b"")
        sandbox.prepare(work)
        argv = [sys.executable, "-s", "-m", "minilucid_course.runner", "cells.json"]
        env = {
            CHANNEL: f"{sandbox.INSIDE}/channel",
            SEED: str(seed),
            "PYTHONPATH": sandbox.package_path(),  # the course's packages, as grading has them
        }
        if use_sandbox:
            status, _log = sandbox.run(work, argv, env, timeout)
        else:
            status = _run_plainly(work, argv, env, timeout)
        reason = None
        if status == -9:
            reason = f"this hand-in ran longer than {timeout:g} s in all"
        elif status != 0:
            reason = f"this hand-in ended its process (status {status}) or used up its limits"
        request = {
            "seed": seed,
            "channel": str(work / "channel"),
            "cells": [],
            "modules": [str(p) for p in files if p.suffix == ".py"],
            "imports": checks_modules(nb),
            "stopped": reason is not None,
        }
        for index, cell in check_cells(nb):
            grade_id = _meta(cell).get("grade_id", "")
            answers = [g for g in refused if _key(g) == _key(grade_id)]
            request["cells"].append(
                {
                    "index": index,
                    "checks": policy.called_checks(cell.source),
                    "refused": refused[answers[0]] if answers else None,
                }
            )
        verdicts = judge(request, Path(scratch))
    return verdicts, reason, refused


def _run_plainly(work: Path, argv: list[str], env: dict, timeout: float) -> int:
    environment = {**sandbox.ENVIRONMENT, **env, CHANNEL: str(work / "channel"), "HOME": str(work)}
    process = subprocess.Popen(
        argv,
        cwd=work,
        env=environment,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        return process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        return -9


def judge(request: dict, scratch: Path) -> list[dict]:
    """The judge's verdicts, from a fresh Python that no hand-in code has touched."""
    done = subprocess.run(
        [sys.executable, "-s", "-m", "minilucid_course.judge"],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        cwd=scratch,
        env={
            "PATH": os.defpath,
            "LANG": "C.UTF-8",
            "OPENBLAS_NUM_THREADS": "1",
            "PYTHONPATH": sandbox.package_path(),
        },
        timeout=900,
    )
    if done.returncode != 0:
        raise RuntimeError(f"the judge failed: {done.stderr.strip()[-2000:]}")
    return json.loads(done.stdout)["verdicts"]


def write_outputs(nb, verdicts: list[dict], reason: str | None, refused: dict[str, str]) -> None:
    """Each check cell's output from its verdict; each refused answer cell shows why."""
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
        if _meta(cell).get("grade_id") in refused:
            message = refused[_meta(cell)["grade_id"]]
            cell.outputs = [new_output("error", ename=REFUSED, evalue=message, traceback=[message])]
    for verdict in verdicts:
        cell, state, message = nb.cells[verdict["index"]], verdict["state"], verdict["message"]
        if state == "pass":
            cell.outputs = [new_output("stream", name="stdout", text=message + "\n")]
        elif state == "stopped":
            why = reason or "the hand-in stopped before this cell"
            cell.outputs = [new_output("error", ename=STOPPED, evalue=why, traceback=[f"✗ {why}"])]
        else:
            ename = "NotDone" if state == "not_done" else "CheckFailed"
            lines = message.splitlines() or ["the check failed"]
            shown = lines if state == "not_done" else ["✗ " + lines[0], *lines[1:]]
            cell.outputs = [new_output("error", ename=ename, evalue=message, traceback=shown)]


class HandInExecute(Execute):
    """Grades a hand-in as the module's docstring says, in place of nbgrader's Execute."""

    hand_in_timeout = Integer(
        900, help="Seconds one hand-in may run in all (CPU and wall clock)."
    ).tag(config=True)
    without_sandbox = Bool(
        False,
        help="Grade without bubblewrap where it is missing (weaker: see docs/teaching.md).",
    ).tag(config=True)

    def preprocess(self, nb, resources=None, km=None):
        about = (resources or {}).get("nbgrader", {})
        who = f"{about.get('student', '?')}/{about.get('assignment', '?')}"
        gradebook = about.get("db_url", "").removeprefix("sqlite:///")
        course = Path(gradebook).parent if gradebook else Path.cwd()
        use_sandbox = True
        lacks = sandbox.missing()
        if lacks and not self.without_sandbox:
            raise SandboxMissing(
                "minilucid grades hand-ins only in its sandbox, and this machine lacks: "
                + "; ".join(lacks)
                + " (docs/teaching.md says what a grading machine needs)"
            )
        if lacks:
            use_sandbox = False
            self.log.warning("%s: %s", who, UNSANDBOXED)
        found = handin.release_copy(course, about.get("assignment", ""), about.get("notebook", ""))
        if found is None:
            raise RuntimeError(f"{who}: no release copy of this notebook in {course}")
        import nbformat

        release = nbformat.read(str(found[0]), as_version=4)
        rebuilt, notes = handin.rebuild(nb, release, found[1])
        for note in notes:
            self.log.info("%s: %s", who, note)
        # the files an assignment ships beside the notebook: the release's, never the hand-in's
        files = [p for p in found[0].parent.iterdir() if p.is_file() and p.suffix != ".ipynb"]
        before = _dump(gradebook)
        started = time.monotonic()
        with tempfile.TemporaryDirectory() as scratch:
            copy = Path(scratch) / "gradebook.db"
            if before is not None:
                _copy_database(gradebook, copy)
            seed = secrets.randbelow(2**31)
            verdicts, reason, refused = run_hand_in(
                rebuilt, files, seed, self.hand_in_timeout, use_sandbox
            )
            write_outputs(rebuilt, verdicts, reason, refused)
            if reason:
                self.log.warning("%s: %s; its check cells from there on score 0", who, reason)
            if before is not None and _dump(gradebook) != before:
                _copy_database(copy, gradebook)
                reason = "the gradebook changed while this hand-in ran (now put back as it was)"
                self.log.warning("%s: %s; all its graded cells score 0", who, reason)
                stop(rebuilt, 0, reason)
        self.log.info("%s: graded in %.1f s", who, time.monotonic() - started)
        nb.cells = rebuilt.cells
        return nb, resources


def stop(nb, index: int, reason: str) -> None:
    """Every graded code cell from `index` on fails with `reason` (nbgrader scores it 0)."""
    for position, cell in enumerate(nb.cells):
        graded = cell.get("metadata", {}).get("nbgrader", {}).get("grade")
        if position >= index and cell.cell_type == "code" and (graded or position == index):
            cell.outputs = [o for o in cell.get("outputs", []) if o.get("ename") != STOPPED]
            cell.outputs.append(
                new_output("error", ename=STOPPED, evalue=reason, traceback=[f"✗ {reason}"])
            )
