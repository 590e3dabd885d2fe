"""Which exercises pass: run each exercise notebook in a fresh kernel and read its check cells.

    python -m minilucid_course.progress               every notebook in work/ (or exercises/)
    python -m minilucid_course.progress 02            only chapter 02 (a number, name or path)
    python -m minilucid_course.progress --solutions   the answered notebooks (all should pass)

For each check cell (an nbgrader cell with `grade: true`) it prints one line: passed, not
implemented yet (the stub still raises NotImplementedError), or failing (the first line of the
check's message), with the points it is worth.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import nbformat
import zmq
from nbclient import NotebookClient
from traitlets.config import Config

ROOT = Path(__file__).resolve().parents[1]
EXERCISES = ROOT / "exercises"
SOLUTIONS = ROOT / "solutions"
WORK = ROOT / "work"

PASSED, TODO, FAILING, ERROR = "passed", "not implemented yet", "failing", "error"
# what an exercise notebook's check cell raises: the guard's plain forms, or the raw ones
NOT_DONE_NAMES = ("NotDone", "NotImplementedError")
FAILED_NAMES = ("CheckFailed", "AssertionError")


@dataclass
class Result:
    grade_id: str
    points: float
    status: str  # one of PASSED, TODO, FAILING, ERROR
    detail: str = ""

    @property
    def earned(self) -> float:
        return self.points if self.status == PASSED else 0.0


@dataclass
class NotebookReport:
    path: Path
    results: list[Result]
    setup_errors: list[str]  # errors in cells that are not checks: the notebook itself is broken

    @property
    def points(self) -> tuple[float, float]:
        return sum(r.earned for r in self.results), sum(r.points for r in self.results)


def _first_line(text: str) -> str:
    for line in (text or "").splitlines():
        if line.strip():
            return line.strip()
    return ""


def _error_of(cell) -> dict | None:
    for output in cell.get("outputs", []):
        if output.get("output_type") == "error":
            return output
    return None


def execute(path: Path | str, timeout: int = 600):
    """Run a notebook top to bottom in a fresh python3 kernel, keeping going after errors."""
    path = Path(path)
    nb = nbformat.read(str(path), as_version=4)
    os.environ.setdefault("JUPYTER_PREFER_ENV_PATH", "1")  # the kernel of this environment
    config = Config()
    if zmq.has("curve"):  # encrypt the local kernel connection when pyzmq can
        config.KernelManager.transport_encryption = "auto"
    client = NotebookClient(
        nb,
        config=config,
        timeout=timeout,
        kernel_name="python3",
        allow_errors=True,
        record_timing=False,
        resources={"metadata": {"path": str(path.parent)}},
    )
    client.execute()
    return nb


def report(path: Path | str) -> NotebookReport:
    path = Path(path)
    nb = execute(path)
    results, setup_errors = [], []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        meta = cell.metadata.get("nbgrader", {})
        error = _error_of(cell)
        if not meta.get("grade"):
            if error is not None:
                setup_errors.append(
                    f"cell {index}: {error.get('ename')}: {_first_line(error.get('evalue'))}"
                )
            continue
        points = float(meta.get("points", 0) or 0)
        grade_id = meta.get("grade_id", f"cell {index}")
        if error is None:
            results.append(Result(grade_id, points, PASSED))
        elif error.get("ename") in NOT_DONE_NAMES:
            results.append(Result(grade_id, points, TODO))
        elif error.get("ename") in FAILED_NAMES:
            detail = _first_line(error.get("evalue")) or "the check failed"
            results.append(Result(grade_id, points, FAILING, detail))
        else:
            detail = f"{error.get('ename')}: {_first_line(error.get('evalue'))}"
            results.append(Result(grade_id, points, ERROR, detail))
    return NotebookReport(path, results, setup_errors)


def _fmt(x: float) -> str:
    return f"{x:g}"


def select(folder: Path, chapter: str | None) -> list[Path]:
    if chapter:
        candidate = Path(chapter)
        if candidate.suffix == ".ipynb" and candidate.exists():
            return [candidate]
        found = [p for p in sorted(folder.glob("*.ipynb")) if p.stem.startswith(chapter)]
        if not found and chapter.isdigit():
            found = [
                p for p in sorted(folder.glob("*.ipynb")) if p.stem.startswith(f"{chapter:0>2}")
            ]
        return found
    return sorted(folder.glob("*.ipynb"))


def _learners_folder() -> Path:
    """work/ (the learner's copies, made by `make lab`) once it exists, else exercises/."""
    return WORK if any(WORK.glob("*.ipynb")) else EXERCISES


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("chapter", nargs="?", help="chapter number, name or notebook path")
    parser.add_argument("--solutions", action="store_true", help="run solutions/ instead")
    parser.add_argument("--dir", help="folder of exercise notebooks (default exercises/)")
    parser.add_argument("--strict", action="store_true", help="exit 1 unless everything passes")
    args = parser.parse_args(argv)

    folder = Path(args.dir) if args.dir else (SOLUTIONS if args.solutions else _learners_folder())
    strict = args.strict or args.solutions
    paths = select(folder, args.chapter)
    if not paths:
        what = f"matching {args.chapter!r} " if args.chapter else ""
        print(f"progress: no notebooks {what}in {folder}")
        return 1 if strict else 0

    earned = total = 0.0
    passed = count = 0
    broken = False
    for n, path in enumerate(paths):
        print(("\n" if n else "") + path.name)
        rep = report(path)
        width = max((len(r.grade_id) for r in rep.results), default=0)
        for r in rep.results:
            line = f"  {r.grade_id:<{width}}  {_fmt(r.earned):>3}/{_fmt(r.points):<3} {r.status}"
            if r.detail:
                line += f": {r.detail}"
            print(line)
        for err in rep.setup_errors:
            broken = True
            print(f"  ! {err} (not a check cell: restart the kernel and run all, or re-fetch)")
        got, out_of = rep.points
        print(f"  points: {_fmt(got)}/{_fmt(out_of)}")
        earned += got
        total += out_of
        passed += sum(r.status == PASSED for r in rep.results)
        count += len(rep.results)
    print(f"\ntotal: {_fmt(earned)}/{_fmt(total)} points; {passed} of {count} exercises pass")
    if strict and (passed != count or broken):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
