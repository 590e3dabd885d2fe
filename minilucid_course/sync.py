"""Keep the chapters' tagged cells identical to the package, and check that the chapters teach it.

A chapter code cell tagged `source:<dotted.path>` (one tag per object, in order) holds the source
of those objects, read from the package:

- a module-level class or function: `inspect.getsource(obj)`;
- a method, property, staticmethod or classmethod of a class:
  `textwrap.dedent(inspect.getsource(fn))` (a property gives its getter, then its setter and
  deleter when it has them).

Each piece is stripped of trailing newlines and the pieces are joined with two blank lines.

    python -m minilucid_course.sync --write     rewrite every tagged cell of notebooks/*.ipynb
    python -m minilucid_course.sync --check     exit 1 listing every differing cell and broken tag
    python -m minilucid_course.sync --coverage  exit 1 listing public objects that no chapter
                                                shows, and objects shown more than once

The functions below are importable, so that tests can run them on copies.
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import inspect
import linecache
import pkgutil
import sys
import textwrap
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

import nbformat

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
PACKAGE = "minilucid"
TAG_PREFIX = "source:"
JOIN = "\n\n\n"


class TagError(Exception):
    """A `source:` tag that names no class, function or method of the package."""


# --------------------------------------------------------------------------------------------
# Resolving a dotted name to the source it stands for


@dataclass(frozen=True)
class Resolved:
    """What a tag names: its pieces of source, and the name coverage knows it by."""

    dotted: str
    canonical: str
    pieces: tuple[str, ...]
    cls: type | None = None  # set when the tag names a whole class


def _import_longest_module(parts: list[str]) -> tuple[ModuleType, int]:
    """Import the longest prefix of `parts` that is a module; return it and its length."""
    for n in range(len(parts), 0, -1):
        name = ".".join(parts[:n])
        try:
            return importlib.import_module(name), n
        except ModuleNotFoundError as exc:
            # only "this prefix is not a module" is expected; a missing dependency is an error
            if exc.name is None or not (name == exc.name or name.startswith(exc.name + ".")):
                raise
    raise TagError(f"no module named {parts[0]!r}")


def _functions_of(raw: object) -> list | None:
    """The functions whose source makes up a class attribute, or None if it is no method."""
    if isinstance(raw, property):
        fns = [f for f in (raw.fget, raw.fset, raw.fdel) if f is not None]
        unique = []
        for f in fns:
            if all(f is not g for g in unique):
                unique.append(f)
        return unique
    if isinstance(raw, staticmethod | classmethod):
        return [raw.__func__]
    if inspect.isfunction(raw):
        return [raw]
    return None


def _class_canonical(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _module_level_canonical(obj: object, module: ModuleType, name: str) -> str:
    """Coverage name of a module-level class or function, the same through any re-export."""
    home = sys.modules.get(getattr(obj, "__module__", None) or "")
    qualname = getattr(obj, "__qualname__", "")
    if home is not None and "<" not in qualname:
        return f"{home.__name__}.{qualname}"
    return f"{module.__name__}.{name}"


def _source(obj: object) -> str:
    try:
        return inspect.getsource(obj)
    except (OSError, TypeError) as exc:
        raise TagError(f"no source available for {obj!r}: {exc}") from None


def resolve(dotted: str) -> Resolved:
    """Resolve `pkg.module.Class.method` (or a class/function) to its source pieces."""
    parts = dotted.split(".")
    if not all(p.isidentifier() for p in parts):
        raise TagError(f"{dotted!r} is not a dotted Python name")
    module, n = _import_longest_module(parts)
    rest = parts[n:]
    if not rest:
        raise TagError(f"{dotted!r} names a module; tag its classes and functions instead")

    name = rest[0]
    if name not in vars(module):
        raise TagError(f"module {module.__name__} has no attribute {name!r}")
    obj = vars(module)[name]
    if not (inspect.isclass(obj) or inspect.isfunction(obj)):
        raise TagError(f"{module.__name__}.{name} is not a class or a function")
    canonical = _module_level_canonical(obj, module, name)

    if len(rest) == 1:
        return Resolved(
            dotted,
            canonical,
            (_source(obj),),
            cls=obj if inspect.isclass(obj) else None,
        )

    for i, attr in enumerate(rest[1:], start=1):
        if not inspect.isclass(obj):
            raise TagError(f"{'.'.join(parts[: n + i])} is not a class, so it has no {attr!r}")
        owner = next((k for k in obj.__mro__ if attr in vars(k)), None)
        if owner is None:
            raise TagError(f"class {_class_canonical(obj)} has no attribute {attr!r}")
        raw = vars(owner)[attr]
        canonical = f"{_class_canonical(owner)}.{attr}"
        last = i == len(rest) - 1
        if inspect.isclass(raw):
            obj = raw
            if last:
                return Resolved(dotted, canonical, (textwrap.dedent(_source(raw)),), cls=raw)
            continue
        fns = _functions_of(raw)
        if fns is None:
            raise TagError(f"{canonical} is not a method, property, staticmethod or classmethod")
        if not last:
            raise TagError(f"{canonical} is a method, so it has no {rest[i + 1]!r}")
        pieces = tuple(textwrap.dedent(_source(f)) for f in fns)
        return Resolved(dotted, canonical, pieces)
    raise AssertionError("unreachable")  # pragma: no cover


def expected_source(dotted_names: list[str]) -> str:
    """The text a cell tagged with these objects (in this order) must hold."""
    pieces: list[str] = []
    for dotted in dotted_names:
        pieces.extend(p.rstrip("\n") for p in resolve(dotted).pieces)
    return JOIN.join(pieces)


# --------------------------------------------------------------------------------------------
# Notebooks


def cell_tags(cell) -> list[str]:
    """The dotted names of a cell's `source:` tags, in order."""
    tags = cell.get("metadata", {}).get("tags", []) or []
    return [t[len(TAG_PREFIX) :].strip() for t in tags if t.startswith(TAG_PREFIX)]


def tagged_cells(nb) -> list[tuple[int, object, list[str]]]:
    """(index, cell, dotted names) for every code cell with `source:` tags."""
    out = []
    for index, cell in enumerate(nb.cells):
        names = cell_tags(cell)
        if names and cell.cell_type == "code":
            out.append((index, cell, names))
    return out


def notebook_paths(notebooks_dir: Path | str = NOTEBOOKS) -> list[Path]:
    notebooks_dir = Path(notebooks_dir)
    if not notebooks_dir.is_dir():
        return []
    return sorted(notebooks_dir.glob("*.ipynb"))


def read_notebook(path: Path | str):
    return nbformat.read(str(path), as_version=4)


def write_notebook(nb, path: Path | str) -> None:
    """Write as Jupyter does (1-space indent, sorted keys, trailing newline)."""
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        nbformat.write(nb, f)


def _show(path: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


@dataclass
class Problem:
    notebook: Path
    cell: int
    objects: list[str]
    message: str
    kind: str = "differs"  # "differs" or "missing"
    diff: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        names = ", ".join(self.objects)
        return f"{_show(self.notebook)}: cell {self.cell} [{names}]: {self.message}"


def _cell_problem(path: Path, index: int, cell, names: list[str]) -> tuple[Problem | None, str]:
    """Compare one tagged cell with the package; return (problem or None, expected text)."""
    try:
        expected = expected_source(names)
    except (TagError, ImportError) as exc:
        message = f"tag names a missing object: {exc}"
        return Problem(path, index, names, message, kind="missing"), ""
    if cell.source == expected:
        return None, expected
    diff = list(
        difflib.unified_diff(
            cell.source.splitlines(),
            expected.splitlines(),
            "notebook cell",
            "package",
            lineterm="",
        )
    )
    return Problem(path, index, names, "differs from the package", diff=diff), expected


def check_notebook(path: Path | str) -> list[Problem]:
    """Every tagged cell of one notebook that differs from the package or names nothing."""
    linecache.checkcache()
    path = Path(path)
    nb = read_notebook(path)
    problems = []
    for index, cell, names in tagged_cells(nb):
        problem, _ = _cell_problem(path, index, cell, names)
        if problem is not None:
            problems.append(problem)
    return problems


def check(notebooks_dir: Path | str = NOTEBOOKS) -> list[Problem]:
    """Every differing cell and every broken tag in all chapter notebooks."""
    problems = []
    for path in notebook_paths(notebooks_dir):
        problems.extend(check_notebook(path))
    return problems


def write(notebooks_dir: Path | str = NOTEBOOKS) -> tuple[dict[Path, list[int]], list[Problem]]:
    """Rewrite tagged cells from the package.

    Only notebooks with a changed cell are written, so a clean tree stays byte-identical.
    Returns ({notebook: [rewritten cell indices]}, [broken tags left untouched]).
    """
    linecache.checkcache()
    changed: dict[Path, list[int]] = {}
    broken: list[Problem] = []
    for path in notebook_paths(notebooks_dir):
        nb = read_notebook(path)
        indices = []
        for index, cell, names in tagged_cells(nb):
            problem, expected = _cell_problem(path, index, cell, names)
            if problem is None:
                continue
            if problem.kind == "missing":  # a broken tag: leave the cell alone
                broken.append(problem)
                continue
            cell.source = expected
            indices.append(index)
        if indices:
            write_notebook(nb, path)
            changed[path] = indices
    return changed, broken


# --------------------------------------------------------------------------------------------
# Coverage


def _is_public_member(name: str) -> bool:
    return not name.startswith("_") or (name.startswith("__") and name.endswith("__"))


def _defined_here(fn, module: ModuleType) -> bool:
    """Written in this module's file (not generated code such as a dataclass's __init__)."""
    if getattr(fn, "__module__", None) != module.__name__:
        return False
    code = getattr(inspect.unwrap(fn), "__code__", None)
    module_file = getattr(module, "__file__", None)
    if code is None or module_file is None:
        return False
    return Path(code.co_filename).resolve() == Path(module_file).resolve()


def public_members(cls: type, module: ModuleType) -> list[str]:
    """Public methods/properties in the class's own body, as canonical dotted names."""
    base = _class_canonical(cls)
    out = []
    namespace = vars(cls)
    for name, raw in namespace.items():
        if not _is_public_member(name):
            continue
        fns = _functions_of(raw)
        if not fns or not all(_defined_here(f, module) for f in fns):
            continue
        first = fns[0]
        if first.__name__ != name and namespace.get(first.__name__) is raw:
            continue  # `__radd__ = __add__`: an alias, taught with its original
        out.append(f"{base}.{name}")
    return out


def public_modules(package: str = PACKAGE) -> list[ModuleType]:
    """The package and every submodule whose dotted path has no part starting with `_`."""
    root = importlib.import_module(package)
    modules = [root]
    todo = [root]
    while todo:
        pkg = todo.pop(0)
        for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda i: i.name):
            if info.name.startswith("_"):
                continue
            module = importlib.import_module(f"{pkg.__name__}.{info.name}")
            modules.append(module)
            if info.ispkg:
                todo.append(module)
    return modules


@dataclass
class PublicObject:
    name: str  # canonical dotted name
    kind: str  # "class", "function" or "method"
    members: tuple[str, ...] = ()  # for a class: its public methods


def public_objects(package: str = PACKAGE) -> dict[str, PublicObject]:
    """Every public class, function and method of every public module of the package."""
    objects: dict[str, PublicObject] = {}
    for module in public_modules(package):
        for name, obj in vars(module).items():
            if name.startswith("_"):
                continue
            if not (inspect.isclass(obj) or inspect.isfunction(obj)):
                continue
            if getattr(obj, "__module__", None) != module.__name__:
                continue  # imported from elsewhere
            canonical = _module_level_canonical(obj, module, name)
            if inspect.isclass(obj):
                members = tuple(public_members(obj, module))
                objects[canonical] = PublicObject(canonical, "class", members)
                for m in members:
                    objects[m] = PublicObject(m, "method")
            else:
                objects[canonical] = PublicObject(canonical, "function")
    return objects


@dataclass
class Coverage:
    untaught: list[str]
    shown_more_than_once: dict[str, list[str]]  # canonical name -> places
    broken_tags: list[Problem]

    @property
    def ok(self) -> bool:
        return not (self.untaught or self.shown_more_than_once or self.broken_tags)


def taught_places(notebooks_dir: Path | str = NOTEBOOKS):
    """Map each canonical name shown in a chapter to where it is shown.

    A tag naming a whole class shows the class and every method in its body.
    Returns (places, broken tags).
    """
    linecache.checkcache()
    places: dict[str, list[str]] = defaultdict(list)
    broken: list[Problem] = []
    for path in notebook_paths(notebooks_dir):
        nb = read_notebook(path)
        for index, _cell, names in tagged_cells(nb):
            for dotted in names:
                where = f"{path.stem} cell {index}"
                try:
                    resolved = resolve(dotted)
                except (TagError, ImportError) as exc:
                    message = f"tag names a missing object: {exc}"
                    broken.append(Problem(path, index, [dotted], message, kind="missing"))
                    continue
                places[resolved.canonical].append(where)
                if resolved.cls is not None:
                    module = sys.modules[resolved.cls.__module__]
                    for member in public_members(resolved.cls, module):
                        places[member].append(f"{where} (in class {resolved.canonical})")
    return dict(places), broken


def find_untaught(objects: dict[str, PublicObject], places: dict[str, list[str]]) -> list[str]:
    """Public objects no chapter shows.

    A class counts as shown when it is tagged itself, or when every one of its public methods
    is shown (a class whose body the chapters show in groups of methods).
    """
    untaught = []
    for name, obj in objects.items():
        if places.get(name):
            continue
        if obj.kind == "class" and obj.members and all(places.get(m) for m in obj.members):
            continue
        untaught.append(name)
    return sorted(untaught)


def coverage(package: str = PACKAGE, notebooks_dir: Path | str = NOTEBOOKS) -> Coverage:
    objects = public_objects(package)
    places, broken = taught_places(notebooks_dir)
    twice = {name: where for name, where in sorted(places.items()) if len(where) > 1}
    return Coverage(find_untaught(objects, places), twice, broken)


# --------------------------------------------------------------------------------------------
# Command line


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true", help="rewrite tagged cells from the package")
    mode.add_argument("--check", action="store_true", help="fail if a tagged cell differs")
    mode.add_argument("--coverage", action="store_true", help="fail if an object is untaught")
    parser.add_argument("--notebooks", default=str(NOTEBOOKS), help="chapter notebook folder")
    parser.add_argument("--package", default=PACKAGE, help="package to read (default minilucid)")
    parser.add_argument("-v", "--verbose", action="store_true", help="show a diff per cell")
    args = parser.parse_args(argv)
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))

    if args.write:
        changed, broken = write(args.notebooks)
        for path, indices in changed.items():
            print(f"rewrote {_show(path)}: cells {', '.join(map(str, indices))}")
        for problem in broken:
            print(problem)
        if not changed and not broken:
            print(f"sync: {len(notebook_paths(args.notebooks))} notebook(s) already in sync")
        return 1 if broken else 0

    if args.check:
        problems = check(args.notebooks)
        for problem in problems:
            print(problem)
            if args.verbose:
                for line in problem.diff:
                    print("    " + line)
        if problems:
            print(f"sync --check: {len(problems)} problem(s); run `make sync` to rewrite cells")
            return 1
        print(f"sync --check: {len(notebook_paths(args.notebooks))} notebook(s) in sync")
        return 0

    report = coverage(args.package, args.notebooks)
    for name in report.untaught:
        print(f"untaught: {name} (no chapter tags it)")
    for name, where in report.shown_more_than_once.items():
        print(f"shown more than once: {name}: {'; '.join(where)}")
    for problem in report.broken_tags:
        print(problem)
    if not report.ok:
        n = len(report.untaught) + len(report.shown_more_than_once) + len(report.broken_tags)
        print(f"sync --coverage: {n} problem(s)")
        return 1
    print(f"sync --coverage: every public object of {args.package} is shown exactly once")
    return 0


if __name__ == "__main__":
    sys.exit(main())
