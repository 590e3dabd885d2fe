"""Generate exercises/NN_topic.ipynb from solutions/NN_topic.ipynb with nbgrader's preprocessors.

The solutions are the single source. Each exercise notebook is the solution notebook run through
nbconvert with nbgrader's own preprocessors, in the order `nbgrader generate_assignment` uses them
(minus the ones that need its database): LockCells, ClearSolutions, ClearOutput,
ClearHiddenTests, ComputeChecksums, CheckCellMetadata. The result has no outputs and no
execution counts, and generating twice gives identical bytes.

    python -m minilucid_course.make_exercises          write exercises/ (refuses to overwrite
                                                       an exercise a learner has started; --force)
    python -m minilucid_course.make_exercises solutions/03_reverse_mode.ipynb   only that one
    python -m minilucid_course.make_exercises --check  exit 1 if exercises/ is not what would
                                                       be written
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import nbformat
from nbconvert.exporters import NotebookExporter
from nbgrader import utils as nbgrader_utils
from nbgrader.preprocessors import (
    CheckCellMetadata,
    ClearHiddenTests,
    ClearOutput,
    ClearSolutions,
    ComputeChecksums,
    LockCells,
)
from traitlets.config import Config

ROOT = Path(__file__).resolve().parents[1]
SOLUTIONS = ROOT / "solutions"
EXERCISES = ROOT / "exercises"

PIPELINE = (LockCells, ClearSolutions, ClearOutput, ClearHiddenTests, ComputeChecksums)


def _config() -> Config:
    config = Config()
    # what the learner sees in place of the answer; nbgrader's default, spelled out
    config.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
    config.ClearSolutions.text_stub = "YOUR ANSWER HERE"
    config.ClearSolutions.begin_solution_delimeter = "BEGIN SOLUTION"
    config.ClearSolutions.end_solution_delimeter = "END SOLUTION"
    config.ClearSolutions.enforce_metadata = True
    config.ClearHiddenTests.enforce_metadata = True
    config.LockCells.lock_solution_cells = True
    config.LockCells.lock_grade_cells = True
    config.LockCells.lock_readonly_cells = True
    config.LockCells.lock_all_cells = False
    # outputs and execution counts go; so do per-cell timings left by an executed solution
    config.ClearOutput.remove_metadata_fields = {
        "collapsed",
        "scrolled",
        "execution",
        "ExecuteTime",
    }
    # nbconvert's own default preprocessors stay off: only the pipeline above runs
    config.NotebookExporter.default_preprocessors = []
    return config


def make_exporter() -> NotebookExporter:
    config = _config()
    exporter = NotebookExporter(config=config)
    for cls in PIPELINE:
        exporter.register_preprocessor(cls(config=config), enabled=True)
    # validates grade ids and nbgrader metadata (raises on a malformed notebook)
    exporter.register_preprocessor(CheckCellMetadata(config=config), enabled=True)
    return exporter


def generate(solution_path: Path | str) -> str:
    """The exercise notebook (as the exact text to store) made from one solution notebook."""
    nb = nbformat.read(str(solution_path), as_version=4)
    output, _ = make_exporter().from_notebook_node(nb, resources={})
    return output


def _pairs(solutions_dir: Path, exercises_dir: Path) -> list[tuple[Path, Path]]:
    if not solutions_dir.is_dir():
        return []
    return [(s, exercises_dir / s.name) for s in sorted(solutions_dir.glob("*.ipynb"))]


def _extras(solutions_dir: Path, exercises_dir: Path) -> list[Path]:
    if not exercises_dir.is_dir():
        return []
    names = {s.name for s in solutions_dir.glob("*.ipynb")} if solutions_dir.is_dir() else set()
    return [e for e in sorted(exercises_dir.glob("*.ipynb")) if e.name not in names]


def check(
    solutions_dir: Path | str = SOLUTIONS, exercises_dir: Path | str = EXERCISES
) -> list[str]:
    """Differences between exercises/ and what generating from solutions/ would write."""
    solutions_dir, exercises_dir = Path(solutions_dir), Path(exercises_dir)
    problems = []
    for source, target in _pairs(solutions_dir, exercises_dir):
        try:
            wanted = generate(source)
        except Exception as exc:  # a malformed solution notebook is a problem to report
            problems.append(f"{source}: cannot generate: {type(exc).__name__}: {exc}")
            continue
        if not target.exists():
            problems.append(f"{target}: missing (generated from {source.name})")
        elif target.read_text(encoding="utf-8") != wanted:
            problems.append(f"{target}: out of date with {source}")
    for extra in _extras(solutions_dir, exercises_dir):
        problems.append(f"{extra}: has no source in {solutions_dir}")
    return problems


def started_by_learner(exercise_path: Path | str) -> list[str]:
    """grade_ids of cells a learner changed (their checksum no longer matches)."""
    nb = nbformat.read(str(exercise_path), as_version=4)
    changed = []
    for cell in nb.cells:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        stored = meta.get("checksum")
        if stored and nbgrader_utils.compute_checksum(cell) != stored:
            changed.append(meta.get("grade_id", "?"))
    return changed


def touched_by_learner(path: Path) -> bool:
    """Answered or run in place: answer or locked cells changed, or outputs stored."""
    nb = nbformat.read(str(path), as_version=4)
    ran = any(c.cell_type == "code" and (c.outputs or c.execution_count) for c in nb.cells)
    return ran or bool(started_by_learner(path))


def as_committed(exercises_dir: Path | str, out_dir: Path | str) -> Path:
    """A copy of exercises/ in which each notebook a learner answered or ran in place is
    replaced by its committed version (`git show HEAD:...`), so that checks of the course's
    integrity judge the course, not the learner's work. Returns out_dir."""
    import subprocess

    exercises_dir, out_dir = Path(exercises_dir), Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    for path in sorted(exercises_dir.glob("*.ipynb")):
        text = path.read_text(encoding="utf-8")
        if touched_by_learner(path):
            top = subprocess.run(
                ["git", "rev-parse", "--show-toplevel"],
                cwd=exercises_dir,
                capture_output=True,
                text=True,
            )
            if top.returncode == 0:
                relative = path.resolve().relative_to(Path(top.stdout.strip()).resolve())
                shown = subprocess.run(
                    ["git", "show", f"HEAD:{relative.as_posix()}"],
                    cwd=exercises_dir,
                    capture_output=True,
                    text=True,
                    encoding="utf-8",
                )
                if shown.returncode == 0:
                    text = shown.stdout
        (out_dir / path.name).write_text(text, encoding="utf-8")
    return out_dir


def write(
    solutions_dir: Path | str = SOLUTIONS,
    exercises_dir: Path | str = EXERCISES,
    force: bool = False,
    only: list[str] | None = None,
) -> tuple[list[Path], list[str]]:
    """Write every exercise notebook that differs; return (written paths, refusals/warnings).

    `only`: file names (NN_topic.ipynb) to write; the others are left alone.
    """
    solutions_dir, exercises_dir = Path(solutions_dir), Path(exercises_dir)
    written, notes = [], []
    pairs = _pairs(solutions_dir, exercises_dir)
    if only is not None:
        pairs = [(s, t) for s, t in pairs if s.name in set(only)]
    if pairs:
        exercises_dir.mkdir(parents=True, exist_ok=True)
    for source, target in pairs:
        wanted = generate(source)
        if target.exists():
            if target.read_text(encoding="utf-8") == wanted:
                continue
            started = started_by_learner(target)
            if started and not force:
                notes.append(
                    f"{target}: not overwritten, answers were changed in "
                    f"{', '.join(started)} (use --force to discard them)"
                )
                continue
        with open(target, "w", encoding="utf-8", newline="\n") as f:
            f.write(wanted)
        written.append(target)
    for extra in _extras(solutions_dir, exercises_dir):
        notes.append(f"{extra}: has no source in {solutions_dir} (left alone)")
    return written, notes


def _show(path: Path | str) -> str:
    try:
        return str(Path(path).resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="fail if exercises/ is out of date")
    parser.add_argument("--force", action="store_true", help="overwrite started exercises")
    parser.add_argument("--solutions", default=str(SOLUTIONS), help="source folder")
    parser.add_argument("--exercises", default=str(EXERCISES), help="target folder")
    parser.add_argument(
        "only", nargs="*", help="write only these notebooks (any path; the file name counts)"
    )
    parser.add_argument(
        "--only-given", action="store_true", help="write only the notebooks named (maybe none)"
    )
    args = parser.parse_args(argv)
    only = [Path(name).name for name in args.only]
    if not (only or args.only_given):
        only = None

    n = len(_pairs(Path(args.solutions), Path(args.exercises)))
    if args.check:
        problems = check(args.solutions, args.exercises)
        for problem in problems:
            print(problem)
        if problems:
            print(f"make_exercises --check: {len(problems)} problem(s); run `make exercises`")
            return 1
        print(f"make_exercises --check: {n} exercise notebook(s) up to date")
        return 0

    written, notes = write(args.solutions, args.exercises, force=args.force, only=only)
    for path in written:
        print(f"wrote {_show(path)}")
    for note in notes:
        print(note)
    print(f"make_exercises: {len(written)} of {n} exercise notebook(s) written")
    return 1 if any("not overwritten" in note for note in notes) else 0


if __name__ == "__main__":
    sys.exit(main())
