"""Set up an nbgrader course folder from solutions/, one assignment per chapter.

    make class CLASS=~/minilucid-class [CH="03 05"]
    .venv/bin/python -m minilucid_course.classroom ~/minilucid-class [03 05] [--exchange DIR]

The folder gets nbgrader_config.py (the course's settings: stubs as `make exercises` writes
them, a time limit per cell long enough for every chapter, the exchange), source/chNN/NN_topic.ipynb
copied unchanged from solutions/, `nbgrader`, a script that runs nbgrader from the course's
environment (no environment to activate: `./nbgrader generate_assignment ch03`), the exchange
folder through which assignments are released, fetched, submitted and collected (writable by
every user; --exchange puts it elsewhere, e.g. /srv/nbgrader/exchange on a shared machine), and
student_nbgrader_config.py, the settings the students' nbgrader needs to find it (copy it to
/etc/jupyter/nbgrader_config.py on a shared machine; the hub configuration does it by itself).
Then, in that folder, nbgrader does the rest (docs/teaching.md lists the sequence a test runs):
generate_assignment, release_assignment, collect, autograde, export.
"""

from __future__ import annotations

import argparse
import shutil
import stat
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOLUTIONS = ROOT / "solutions"

CONFIG = """\
# nbgrader settings for a minilucid class (written by python -m minilucid_course.classroom)
c = get_config()
c.CourseDirectory.root = {root!r}
c.CourseDirectory.course_id = {course_id!r}
# what the learner sees in place of an answer: the same stub as exercises/ in the repository
c.ClearSolutions.code_stub = {{"python": "# YOUR CODE HERE\\nraise NotImplementedError()"}}
c.ClearSolutions.text_stub = "YOUR ANSWER HERE"
# the slowest chapter's slowest cell, with room to spare
c.ExecutePreprocessor.timeout = 300
c.Execute.timeout = 300
# where release_assignment puts assignments and submit puts hand-ins
c.Exchange.root = {exchange!r}

# How autograde grades each hand-in (minilucid_course/grading.py, docs/teaching.md): rebuilt
# from the release, its answers read by the policy, run in the sandbox (bubblewrap, never as
# root, no network, nothing of the class in sight), judged in a process of its own;
# {hand_in_timeout} s per hand-in in all. Without bubblewrap grading refuses; the line below,
# uncommented, grades without it and says on every hand-in what that cannot promise.
from nbgrader.converters.autograde import Autograde as _Autograde

c.Autograde.autograde_preprocessors = [
    "minilucid_course.grading.HandInExecute" if _p.__name__ == "Execute" else _p
    for _p in _Autograde.class_traits()["autograde_preprocessors"].default()
]
c.HandInExecute.hand_in_timeout = {hand_in_timeout}
# c.HandInExecute.without_sandbox = True

# Noise that says nothing to a teacher: nbgrader's own SQLAlchemy session warnings.
import warnings as _warnings

from sqlalchemy.exc import SAWarning as _SAWarning

_warnings.filterwarnings("ignore", r"Object of type <\\w+> not in session", _SAWarning)
"""

STUDENT_CONFIG = """\
# nbgrader settings for the students of a minilucid class (written by minilucid_course.classroom):
# copy to /etc/jupyter/nbgrader_config.py, or point JUPYTER_CONFIG_PATH at this file's folder
c = get_config()
c.CourseDirectory.course_id = {course_id!r}
c.Exchange.root = {exchange!r}
"""

WRAPPER = """\
#!/bin/sh
# nbgrader from the minilucid course's environment (written by minilucid_course.classroom).
# nbgrader's gradebook code draws SQLAlchemy's "not in session" warning, one per hand-in and
# nothing a teacher can act on: silenced.
QUIET="ignore:Object of type <Submitted:RuntimeWarning"
PYTHONWARNINGS="$QUIET${{PYTHONWARNINGS:+,$PYTHONWARNINGS}}" PATH={bin!r}:"$PATH" \\
    exec {python!r} -m nbgrader "$@"
"""
HAND_IN_TIMEOUT = 900  # seconds: the slowest chapter takes about a minute


def assignment_name(notebook: Path | str) -> str:
    """ch03 for 03_reverse_mode.ipynb."""
    return "ch" + Path(notebook).name[:2]


def graded_chapters(solutions_dir: Path | str = SOLUTIONS) -> list[Path]:
    """Solution notebooks that hold at least one graded cell, in chapter order."""
    import nbformat

    found = []
    for path in sorted(Path(solutions_dir).glob("[0-9][0-9]_*.ipynb")):
        nb = nbformat.read(str(path), as_version=4)
        if any(c.metadata.get("nbgrader", {}).get("grade") for c in nb.cells):
            found.append(path)
    return found


def select(chapters: list[str], solutions_dir: Path | str = SOLUTIONS) -> list[Path]:
    every = graded_chapters(solutions_dir)
    if not chapters:
        return every
    wanted = {f"{int(c):02d}" if c.isdigit() else c[:2] for c in chapters}
    return [p for p in every if p.name[:2] in wanted]


def init_course(
    root: Path | str,
    notebooks: list[Path],
    course_id: str = "minilucid",
    exchange: Path | str | None = None,
) -> dict[str, Path]:
    """Write the course's files (see the module's docstring); return {assignment: source path}."""
    root = Path(root).expanduser().resolve()
    root.mkdir(parents=True, exist_ok=True)
    exchange = Path(exchange).expanduser().resolve() if exchange else root / "exchange"
    exchange.mkdir(parents=True, exist_ok=True)
    # every student writes hand-ins into it; the sticky bit keeps them from removing others'
    exchange.chmod(stat.S_IRWXU | stat.S_IRWXG | stat.S_IRWXO | stat.S_ISVTX)
    settings = {"root": str(root), "course_id": course_id, "exchange": str(exchange)}
    (root / "nbgrader_config.py").write_text(
        CONFIG.format(**settings, hand_in_timeout=HAND_IN_TIMEOUT), encoding="utf-8"
    )
    (root / "student_nbgrader_config.py").write_text(
        STUDENT_CONFIG.format(**settings), encoding="utf-8"
    )
    bin_dir = Path(sys.executable).parent
    wrapper = root / "nbgrader"
    wrapper.write_text(WRAPPER.format(bin=str(bin_dir), python=sys.executable), encoding="utf-8")
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    sources = {}
    for notebook in notebooks:
        name = assignment_name(notebook)
        target = root / "source" / name / Path(notebook).name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(notebook, target)
        sources[name] = target
    return sources


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", help="the nbgrader course folder to create or update")
    parser.add_argument("chapters", nargs="*", help="chapter numbers (default: every chapter)")
    parser.add_argument("--exchange", help="the exchange folder (default: <folder>/exchange)")
    args = parser.parse_args(argv)
    notebooks = select(args.chapters)
    if not notebooks:
        print("classroom: no graded chapter matches", " ".join(args.chapters))
        return 1
    sources = init_course(args.folder, notebooks, exchange=args.exchange)
    for name, path in sources.items():
        print(f"{name}: {path}")
    folder = Path(args.folder).expanduser().resolve()
    print(f"next: make teacher CLASS={folder}   (Formgrader on this class), or from a shell:")
    print(f"      cd {folder} && ./nbgrader generate_assignment <chNN>")
    print("      (docs/teaching.md, 'Running a class with nbgrader')")
    return 0


if __name__ == "__main__":
    sys.exit(main())
