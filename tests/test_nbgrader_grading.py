"""One class run grades every kind of hostile hand-in, next to honest students (issue 26).

The class has one assignment of the tests' own (ch99: two exercises in the registry's probe and
judge form, shipped beside the notebook in grading_kit/warmup_checks.py). One `nbgrader
autograde` grades every hand-in below; each hostile one must earn no more than the same answers
without its tamper, the honest students (graded first and last) keep full marks, nothing the
hand-ins did is left on the machine, and `make audit` lists every hostile hand-in, escaped.
A second, smaller run grades chapter 03 as the course ships it: honest full marks, stub and
wrong 0.
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook
from nbgrading import meta, nbgrader, processes_running, scores, submission

from minilucid_course import audit, classroom, dashboard, sandbox

pytest.importorskip("nbgrader")

ROOT = Path(__file__).resolve().parents[1]
KIT = Path(__file__).parent / "grading_kit"
ASSIGNMENT, NOTEBOOK = "ch99", "99_warmup.ipynb"
SCALE, MEAN = "ex99_1_scale", "ex99_2_mean"
HONEST = {
    SCALE: "def scale(x, a):\n    return a * x\n",
    MEAN: "def mean(v):\n    return float(sum(v) / len(v))\n",
}
WRONG = {SCALE: "def scale(x, a):\n    return x\n", MEAN: "def mean(v):\n    return 0.0\n"}
STUB = "# YOUR CODE HERE\nraise NotImplementedError()"
ESCAPES = "\x1b[2J\x1b[32mpass 28, fail 0\x1b[0m\u202e"
CANARY = "/tmp/minilucid-grading-canary"  # what a hostile hand-in would leave behind

TAMPER = {
    "display_hook": "import sys\nsys.addaudithook(lambda *a: sys.displayhook(1.0))\n",
    "frame": "_real = (lambda: 0).__globals__\n",
    "gc": "import gc\n_seen = [o for o in gc.get_objects() if type(o) is dict]\n",
    "settrace": "import sys\nsys.settrace(lambda frame, event, arg: None)\n",
    "setprofile": "import sys\nsys.setprofile(lambda frame, event, arg: None)\n",
    "thread": "import threading\nthreading.Thread(target=lambda: None).start()\n",
    "del_patch": (
        "_real = np.allclose\n\n\nclass Undo:\n    def __del__(self):\n"
        "        np.allclose = _real\n\n\nnp.allclose = lambda *a, **k: True\n_undo = Undo()\n"
    ),
    "ctypes": (
        "import ctypes\n"
        f"ctypes.CDLL(None).system(b'git -C {ROOT} show HEAD:solutions > {CANARY}')\n"
    ),
    "pth": (
        "import site\n"
        "open(site.getsitepackages()[0] + '/zz_minilucid.pth', 'w').write("
        f"'import os; os.system(\"touch {CANARY}\")')\n"
    ),
    "setsid": "import subprocess\nsubprocess.Popen(['setsid', 'sleep', '4242'])\n",
    "network": "import socket\nsocket.create_connection(('1.1.1.1', 80), timeout=2)\n",
}
EQ_TRICK = (
    "class Always:\n    def __eq__(self, other):\n        return True\n\n"
    "    def __float__(self):\n        return 0.0\n\n    def __array__(self, dtype=None):\n"
    "        return np.zeros(0)\n\n\n"
)
EXTRA_TOP = 'check_warmup_scale = check_warmup_mean = lambda *a: print("✓")\n'


TIMEOUT = 4  # seconds a hand-in may run here


def release_source() -> nbformat.NotebookNode:
    """The ch99 notebook as a teacher writes it (nbgrader's format)."""

    def cell(source, grade_id, **flags):
        made = new_code_cell(source)
        made.metadata["nbgrader"] = {
            "grade_id": grade_id,
            "grade": flags.get("points") is not None,
            "solution": flags.get("solution", False),
            "locked": not flags.get("solution", False),
            "schema_version": 3,
            **({"points": flags["points"]} if flags.get("points") else {}),
        }
        return made

    def answer(grade_id):
        header, body = HONEST[grade_id].split("\n", 1)
        return f"{header}\n    ### BEGIN SOLUTION\n{body}    ### END SOLUTION\n"

    return new_notebook(
        cells=[
            new_markdown_cell("# Warm-up\nTwo small exercises."),
            cell(
                "import numpy as np\n\nfrom warmup_checks import check_warmup_mean, "
                "check_warmup_scale",
                "ex99_setup",
            ),
            cell(answer(SCALE), f"{SCALE}_answer", solution=True),
            cell("check_warmup_scale(scale)", f"{SCALE}_check", points=2),
            cell(answer(MEAN), f"{MEAN}_answer", solution=True),
            cell("check_warmup_mean(mean)", f"{MEAN}_check", points=2),
        ],
        metadata={
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}
        },
    )


def hand_in(released, answers: dict[str, str], before: dict[str, str] | None = None):
    """The release with these answers (a missing one keeps the stub), code put before some."""
    nb = nbformat.from_dict(json.loads(json.dumps(released)))
    for cell in nb.cells:
        grade_id = meta(cell).get("grade_id", "").removesuffix("_answer")
        if meta(cell).get("solution"):
            cell.source = (before or {}).get(grade_id, "") + answers.get(grade_id, STUB)
    return nb


def students(released) -> dict[str, tuple[object, dict[str, float]]]:
    """student -> (hand-in, points it must score: those of the same answers untampered)."""
    full, none = {SCALE: 2.0, MEAN: 2.0}, {SCALE: 0.0, MEAN: 0.0}
    out = {
        "aa_honest": (hand_in(released, HONEST), full),
        "stub": (hand_in(released, {}), none),
        "wrong": (hand_in(released, WRONG), none),
    }
    for kind, code in TAMPER.items():  # wrong answers, the tamper in the first answer cell
        out[kind] = (hand_in(released, WRONG, before={SCALE: code}), none)
    added = hand_in(released, {})
    added.cells.insert(0, new_code_cell(EXTRA_TOP))
    out["added_top_cell"] = (added, none)
    lost = hand_in(released, HONEST)
    for cell in lost.cells:
        if meta(cell).get("grade_id") == f"{SCALE}_answer":
            del cell.metadata["nbgrader"]
    out["lost_metadata"] = (lost, {SCALE: 0.0, MEAN: 2.0})
    trick = {
        SCALE: EQ_TRICK + "def scale(x, a):\n    return Always()\n",
        MEAN: "def mean(v):\n    return Always()\n",
    }
    out["eq_trick"] = (hand_in(released, trick), none)
    escaped = {**HONEST, MEAN: f"# {ESCAPES}\n" + HONEST[MEAN]}
    out["escape"] = (hand_in(released, escaped), full)
    endless = {**HONEST, MEAN: "def mean(v):\n    while True:\n        pass\n"}
    out["endless"] = (hand_in(released, endless), {SCALE: 2.0, MEAN: 0.0})
    out["zz_honest"] = (hand_in(released, HONEST), full)
    return out


# what the course's own commands rewrite while other test files run beside this one (make lab
# and make teacher switch nbgrader's lab extension and keep a workspace; setup's pip writes the
# egg-info): a change there is theirs, not a hand-in's
REWRITTEN_BY_THE_COURSE = (
    "etc/jupyter/labconfig/page_config.json",
    "share/minilucid-teacher-workspaces/",
    ".egg-info/",
)


def fingerprint() -> dict[str, str]:
    """Every file of the course's packages, solutions and environment: name -> size and time."""
    found = {}
    for top in (
        ROOT / "minilucid",
        ROOT / "minilucid_course",
        ROOT / "solutions",
        Path(sys.prefix),
    ):
        for path in sorted(top.rglob("*")):
            if any(part in str(path) for part in REWRITTEN_BY_THE_COURSE):
                continue
            if path.is_file() and "__pycache__" not in path.parts:
                info = path.stat()
                found[str(path)] = f"{info.st_size} {info.st_mtime_ns}"
    return found


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """The ch99 class after one autograde of every student: (course, released, points, log)."""
    if sandbox.missing():
        pytest.skip("no sandbox here: " + "; ".join(sandbox.missing()))
    course = tmp_path_factory.mktemp("class") / "course"
    classroom.init_course(course, [])
    with open(course / "nbgrader_config.py", "a", encoding="utf-8") as config:
        # an honest hand-in of this assignment grades in about 0.5 s; the endless one spins
        # until this limit (of CPU time and of wall-clock time) stops it
        config.write(f"c.HandInExecute.hand_in_timeout = {TIMEOUT}\n")
    source = course / "source" / ASSIGNMENT
    source.mkdir(parents=True)
    nbformat.write(release_source(), str(source / NOTEBOOK))
    shutil.copy(KIT / "warmup_checks.py", source / "warmup_checks.py")
    nbgrader(course, "generate_assignment", ASSIGNMENT, "--force")
    released = nbformat.read(str(course / "release" / ASSIGNMENT / NOTEBOOK), as_version=4)
    everyone = students(released)
    for student, (nb, _points) in everyone.items():
        folder = course / "submitted" / student / ASSIGNMENT
        folder.mkdir(parents=True)
        nbformat.write(nb, str(folder / NOTEBOOK))
    extra = new_notebook(cells=[new_code_cell(f"print('{ESCAPES}')")])
    nbformat.write(extra, str(course / "submitted" / "escape" / ASSIGNMENT / f"{ESCAPES}.ipynb"))
    Path(CANARY).unlink(missing_ok=True)
    before = fingerprint()
    started = time.monotonic()
    log = nbgrader(course, "autograde", ASSIGNMENT, "--force")
    seconds = time.monotonic() - started
    after = fingerprint()
    nbgrader(course, "export")
    points = {s: scores(course, ASSIGNMENT, NOTEBOOK, s) for s in everyone}
    return {
        "course": course,
        "students": everyone,
        "points": points,
        "log": log,
        "seconds": seconds,
        "changed": sorted(
            path for path in before.keys() | after.keys() if before.get(path) != after.get(path)
        ),
    }


def _table(graded) -> str:
    lines = [f"{'student':16}{SCALE:>16}{MEAN:>16}   (want)"]
    for student, (_nb, want) in graded["students"].items():
        got = graded["points"][student]
        got_scale, got_mean = got.get(f"{SCALE}_check"), got.get(f"{MEAN}_check")
        lines.append(f"{student:16}{got_scale!s:>16}{got_mean!s:>16}   {want[SCALE]} {want[MEAN]}")
    return "\n".join(lines)


def test_each_hand_in_earns_what_its_answers_earn_without_the_tamper(graded):
    table = _table(graded)
    print(f"\n{table}\nautograde of {len(graded['students'])} hand-ins: {graded['seconds']:.0f} s")
    for student, (_nb, want) in graded["students"].items():
        got = graded["points"][student]
        assert got == {f"{k}_check": v for k, v in want.items()}, f"{student}\n{table}"


def test_nothing_a_hand_in_did_outlives_it(graded):
    changed = graded["changed"]
    assert not changed, f"the course's files changed during autograde: {changed}"
    assert not Path(CANARY).exists()
    assert not processes_running("sleep 4242")


def test_the_endless_hand_in_is_stopped_and_grading_goes_on(graded):
    assert f"endless/ch99: this hand-in ran longer than {TIMEOUT} s" in graded["log"]


def test_make_audit_lists_every_hostile_hand_in_escaped(graded, capsys):
    assert audit.main([str(graded["course"])]) == 0
    shown = capsys.readouterr().out
    print(shown)
    assert "\x1b" not in shown and "\u202e" not in shown
    report = audit.audit(graded["course"])
    listed = {key.split("/")[0] for key, lines in report.items() if lines and key.count("/") == 2}
    listed |= {
        line.split("/")[0] for key, lines in report.items() if "/" not in key for line in lines
    }
    hostile = set(graded["students"]) - {"aa_honest", "zz_honest", "stub", "wrong"}
    assert hostile <= listed, f"not listed: {sorted(hostile - listed)}"
    assert not listed & {"aa_honest", "zz_honest", "stub", "wrong"}, sorted(listed)


def test_the_dashboard_agrees_with_the_gradebook_and_names_exercises(graded, capsys):
    assert dashboard.main([str(graded["course"])]) == 0
    shown = capsys.readouterr().out
    print(shown)
    assert "\x1b" not in shown
    assert "Scaling an array" in shown and "The mean of a vector" in shown
    (chapter,) = dashboard.summarise(graded["course"])
    for check in chapter.checks:
        passed = sum(
            1
            for s in graded["points"].values()
            if s[check.grade_id] > 0  # full points: 2
        )
        assert check.counts[dashboard.PASS] == passed, (check.grade_id, check.counts)


def test_chapter_03_as_shipped(tmp_path):
    """A real chapter through the same path: honest full marks, stub and wrong 0."""
    if sandbox.missing():
        pytest.skip("no sandbox here")
    solution_path = ROOT / "solutions" / "03_reverse_mode.ipynb"
    course = tmp_path / "course"
    (assignment,) = classroom.init_course(course, [solution_path])
    nbgrader(course, "generate_assignment", assignment, "--force")
    released = nbformat.read(str(course / "release" / assignment / solution_path.name), 4)
    solution = nbformat.read(str(solution_path), as_version=4)
    for kind in ("honest", "stub", "wrong"):
        path = course / "submitted" / kind / assignment / solution_path.name
        path.parent.mkdir(parents=True)
        nbformat.write(submission(kind, released, solution), str(path))
    nbgrader(course, "autograde", assignment, "--force")
    full = {
        meta(c)["grade_id"]: float(meta(c)["points"])
        for c in released.cells
        if meta(c).get("points")
    }
    assert scores(course, assignment, solution_path.name, "honest") == full
    for kind in ("stub", "wrong"):
        assert set(scores(course, assignment, solution_path.name, kind).values()) == {0.0}
