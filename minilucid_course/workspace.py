"""The learner's working copy: exercises/ copied once into work/, which git ignores.

    python -m minilucid_course.workspace prepare      copy exercise notebooks missing from work/
    python -m minilucid_course.workspace reset 03     chapter 03 afresh; the old copy is kept in
                                                      work/backups/
    python -m minilucid_course.workspace update       the course's latest version (make update)

`make lab` runs `prepare` every time: a chapter that arrives with `git pull` appears in work/,
and nothing already there is ever overwritten. Because work/ is not part of the repository,
answering exercises never changes a tracked file and `make test` checks the course as committed.

Running a chapter does change it: JupyterLab saves the chapter in notebooks/ with the outputs of
your run (chapter 03 prints a timing, so every run differs), and `git pull` then refuses to
bring an update of that chapter. `update` first moves every notebook you changed to
work/backups/<time>/ (its path kept), puts back the published version, then pulls.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
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


def _git(root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=600)


def changed_files(root: Path = ROOT) -> list[str]:
    """Tracked files that differ from the last commit (staged or not), as paths from root."""
    done = _git(root, "diff", "--name-only", "-z", "HEAD")
    if done.returncode:
        raise SystemExit(f"update: {root} is not a git clone of the course ({done.stderr.strip()})")
    return sorted(p for p in done.stdout.split("\0") if p)


def update(root: Path = ROOT, work: Path | None = None) -> list[str]:
    """Set aside the notebooks a run changed, pull the course, copy new exercises into work/."""
    work = root / "work" if work is None else work
    changed = changed_files(root)
    others = [p for p in changed if not p.endswith(".ipynb")]
    if others:
        raise SystemExit(
            "update: you changed files of the course that are not notebooks: "
            + ", ".join(others)
            + ". Keep them with `git stash` (or commit them), then run `make update` again."
        )
    done = []
    if changed:
        backups = work / BACKUPS / time.strftime("%Y%m%d-%H%M%S")
        for path in changed:
            target = backups / path
            target.parent.mkdir(parents=True, exist_ok=True)
            if (root / path).exists():
                shutil.copy2(root / path, target)
                done.append(f"{path}: as you left it, in {_show(target)}")
        restored = _git(root, "checkout", "HEAD", "--", *changed)
        if restored.returncode:
            raise SystemExit(f"update: could not restore {', '.join(changed)}: {restored.stderr}")
    pulled = _git(root, "pull", "--ff-only")
    if pulled.returncode:
        raise SystemExit(
            "update: git pull failed (your notebooks are saved as listed above):\n"
            + pulled.stderr.strip()
        )
    done.append(pulled.stdout.strip().splitlines()[-1] if pulled.stdout.strip() else "pulled")
    done += [f"{_show(p)}: a new chapter's exercises" for p in prepare(root / "exercises", work)]
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
    sub.add_parser("update", help="pull the course, setting aside the notebooks you ran")
    args = parser.parse_args(argv)
    if args.command == "update":
        for line in update():
            print(line)
        return 0
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
