"""The learner's working copy: exercises/ copied once into work/, which git ignores.

    python -m minilucid_course.workspace prepare      copy exercise notebooks missing from work/
    python -m minilucid_course.workspace reset 03     chapter 03 afresh; the old copy is kept in
                                                      work/backups/

`make lab` runs `prepare` every time: a chapter that arrives with `git pull` appears in work/,
and nothing already there is ever overwritten. Because work/ is not part of the repository,
answering exercises never changes a tracked file: `git pull` has nothing to conflict with and
`make test` checks the course as committed.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXERCISES = ROOT / "exercises"
WORK = ROOT / "work"
BACKUPS = "backups"


def prepare(exercises: Path = EXERCISES, work: Path = WORK) -> list[Path]:
    """Copy each exercise notebook that work/ does not have yet; return the copies made."""
    copied = []
    work.mkdir(parents=True, exist_ok=True)
    for source in sorted(exercises.glob("*.ipynb")):
        target = work / source.name
        if not target.exists():
            shutil.copy2(source, target)
            copied.append(target)
    return copied


def chapter_notebooks(chapter: str, exercises: Path = EXERCISES) -> list[Path]:
    """Exercise notebooks of a chapter given as 3, 03, 03_reverse_mode or a path."""
    name = Path(chapter).name
    prefix = f"{int(name):02d}" if name.isdigit() else name.removesuffix(".ipynb")
    return [p for p in sorted(exercises.glob("*.ipynb")) if p.stem.startswith(prefix)]


def reset(chapter: str, exercises: Path = EXERCISES, work: Path = WORK) -> list[str]:
    """Put a fresh copy of a chapter's exercises in work/, moving the old one to a backup."""
    notebooks = chapter_notebooks(chapter, exercises)
    if not notebooks:
        raise SystemExit(f"reset: no exercise notebook for chapter {chapter!r} in {exercises}")
    done = []
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for source in notebooks:
        target = work / source.name
        if target.exists():
            backup = work / BACKUPS / f"{source.stem}.{stamp}.ipynb"
            backup.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(str(target), str(backup))
            done.append(f"{_show(target)}: your copy is now {_show(backup)}")
        work.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)
        done.append(f"{_show(target)}: a fresh copy of {_show(source)}")
    return done


def _show(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("prepare", help="copy exercise notebooks missing from work/")
    one = sub.add_parser("reset", help="a fresh copy of one chapter, keeping a backup")
    one.add_argument("chapter", help="chapter number or name, e.g. 03")
    args = parser.parse_args(argv)
    if args.command == "prepare":
        copied = prepare()
        if copied:
            print(f"work/: copied {len(copied)} exercise notebook(s); answer them there")
        return 0
    if not args.chapter:
        print("reset: which chapter? e.g.  make reset CH=03")
        return 1
    for line in reset(args.chapter):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
