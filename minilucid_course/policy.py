"""What answer code may do, read from its source before anything runs (Python's `ast`).

An answer to an exercise computes with NumPy, `math` and minilucid's public API. It never needs
to reach into the interpreter, the file system or other programs, so grading refuses an answer
cell that

- imports anything but numpy, math, minilucid (not its `_private` modules), a few plain parts of
  the standard library (`ALLOWED`), and the modules its exercise names (`Exercise.imports`);
- reads or writes a dunder attribute (`x.__class__`, `f.__globals__`, `C.__subclasses__`); it may
  define them in its own classes (`def __init__`), call `super().__init__(...)` and the like,
  and `object.__setattr__(self, ...)`;
- names a built-in that reaches by name or runs text (`getattr`, `setattr`, `vars`, `globals`,
  `locals`, `exec`, `eval`, `compile`, `open`, `__import__`, `breakpoint`, `input`, ...);
- touches frames, code objects, NumPy's `ctypeslib`/`.ctypes` or NumPy's file functions;
- uses the package's own version of what its exercise builds (`Exercise.forbidden`).

    violations(source, forbidden=("topological_order",))   # [] or [Violation(line, what), ...]

Each violation names the construct and its line, in the learner's words; the lab shows them when
a check runs, `make progress` lists them, grading does not run a refused cell, and `make audit`
lists them for the teacher.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass

ALLOWED = {
    "numpy",
    "math",
    "minilucid",
    "__future__",
    "collections",
    "dataclasses",
    "functools",
    "itertools",
    "typing",
    "random",
    "statistics",
    "string",
    "abc",
    "enum",
    "numbers",
}
BUILTINS = {
    "getattr": "reads an attribute by name",
    "setattr": "writes an attribute by name",
    "delattr": "deletes an attribute by name",
    "vars": "reads an object's namespace",
    "globals": "reads the notebook's namespace",
    "locals": "reads a frame's namespace",
    "exec": "runs text as code",
    "eval": "runs text as code",
    "compile": "compiles text to code",
    "open": "opens a file",
    "__import__": "imports by name",
    "breakpoint": "starts a debugger",
    "input": "waits for typed input",
    "get_ipython": "reaches into IPython",
    "memoryview": "reaches raw memory",
    "__builtins__": "reaches Python's builtins",
}
ATTRIBUTES = {
    "ctypes": "NumPy's raw memory (ctypes)",
    "ctypeslib": "NumPy's ctypes bridge",
    "_implementation": "a NumPy function's insides",
    "f_back": "a frame",
    "f_globals": "a frame",
    "f_locals": "a frame",
    "f_code": "a frame",
    "tb_frame": "a frame",
    "tb_next": "a traceback",
    "gi_frame": "a generator's frame",
    "gi_code": "a code object",
    "cr_frame": "a coroutine's frame",
    "ag_frame": "a generator's frame",
    "co_code": "a code object",
    "__traceback__": "a traceback",
    "save": "a file (NumPy's save)",
    "savez": "a file (NumPy's savez)",
    "savez_compressed": "a file (NumPy's savez_compressed)",
    "savetxt": "a file (NumPy's savetxt)",
    "load": "a file (NumPy's load)",
    "loadtxt": "a file (NumPy's loadtxt)",
    "genfromtxt": "a file (NumPy's genfromtxt)",
    "fromfile": "a file (NumPy's fromfile)",
    "tofile": "a file (NumPy's tofile)",
    "memmap": "a file (NumPy's memmap)",
    "open_memmap": "a file (NumPy's open_memmap)",
    "DataSource": "a file (NumPy's DataSource)",
    "Formatter": "reads attributes by name (string.Formatter)",
    "get_field": "reads an attribute by name (string.Formatter)",
    "get_type_hints": "runs text as code (typing.get_type_hints)",
    "ForwardRef": "runs text as code (typing.ForwardRef)",
    "evaluate_forward_ref": "runs text as code (typing)",
    "_evaluate": "runs text as code (typing.ForwardRef)",
}

# dunder attributes that only do what an operator or a container does (`caught.__setitem__`,
# `Base.__init__(self)`): the interpreter's insides (__class__, __dict__, __globals__, __code__,
# __closure__, __subclasses__, __getattribute__, __setattr__, ...) stay out
_OPERATORS = "add sub mul truediv floordiv mod pow matmul neg pos abs eq ne lt le gt ge"
PLAIN_DUNDERS = (
    {f"__{name}__" for name in _OPERATORS.split()}
    | {f"__r{name}__" for name in "add sub mul truediv floordiv mod pow matmul".split()}
    | {
        f"__{name}__"
        for name in "init call len iter next contains getitem setitem delitem repr str name".split()
    }
)


@dataclass(frozen=True)
class Violation:
    line: int
    what: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.what}"


def _dunder(name: str) -> bool:
    return len(name) > 4 and name.startswith("__") and name.endswith("__")


def _module_allowed(name: str, extra: Iterable[str]) -> bool:
    parts = name.split(".")
    if parts[0] == "minilucid":
        return not any(p.startswith("_") for p in parts[1:])
    return parts[0] in ALLOWED or name in extra or parts[0] in extra


def _allowed_dunder(node: ast.Attribute, parents: dict) -> bool:
    """super().__init__(...) and the like; object.__setattr__(self, ...)."""
    if node.attr in PLAIN_DUNDERS:
        return True
    value = node.value
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
        return value.func.id == "super"
    call = parents.get(id(node))
    if isinstance(value, ast.Name) and value.id == "object" and node.attr == "__setattr__":
        return (
            isinstance(call, ast.Call)
            and call.func is node
            and bool(call.args)
            and isinstance(call.args[0], ast.Name)
            and call.args[0].id == "self"
        )
    return False


def imported_names(source: str) -> set[str]:
    """The names the imports of `source` bind (np for `import numpy as np`, ...)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def _root_name(node) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def violations(
    source: str,
    forbidden: Iterable[str] = (),
    imports: Iterable[str] = (),
    imported: Iterable[str] = (),
) -> list[Violation]:
    """What in `source` (one answer cell) the policy refuses, by line; [] when nothing.

    `imported`: names the notebook's other cells import (np, ml, Tensor): an answer may not
    write their attributes (`np.allclose = ...`, `Tensor.backward = ...`).
    """
    try:
        tree = ast.parse(source)
    except SyntaxError as error:
        return [Violation(error.lineno or 0, f"is not valid Python ({error.msg})")]
    forbidden, imports = set(forbidden), tuple(imports)
    imported = set(imported) | imported_names(source)
    parents = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parents[id(child)] = node
    in_class_body = set()  # names a class body defines and reads (`__radd__ = __add__`)
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for statement in node.body:
                if isinstance(statement, (ast.Assign, ast.AnnAssign)):
                    in_class_body.update(
                        id(n) for n in ast.walk(statement) if isinstance(n, ast.Name)
                    )
    found = []
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Import):
            for alias in node.names:
                if not _module_allowed(alias.name, imports):
                    found.append(Violation(line, f"imports {alias.name}, not allowed in an answer"))
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level or not _module_allowed(module, imports):
                shown = "." * node.level + module
                found.append(Violation(line, f"imports from {shown}, not allowed in an answer"))
            for alias in node.names:
                if alias.name in forbidden:
                    found.append(
                        Violation(line, f"imports {alias.name}, the package's own version")
                    )
                elif alias.name.startswith("_") or alias.name == "*":
                    found.append(Violation(line, f"imports {alias.name} from {module}"))
        elif isinstance(node, ast.Attribute):
            if _dunder(node.attr) and not _allowed_dunder(node, parents):
                found.append(Violation(line, f"uses the attribute .{node.attr}"))
            elif node.attr in ATTRIBUTES:
                found.append(Violation(line, f"uses .{node.attr} ({ATTRIBUTES[node.attr]})"))
            elif node.attr in forbidden:
                found.append(Violation(line, f"uses .{node.attr}, the package's own version"))
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
            for target in targets:
                for part in ast.walk(target):
                    if isinstance(part, ast.Attribute) and _root_name(part) in imported:
                        found.append(
                            Violation(line, f"writes {ast.unparse(part)}, part of what it imported")
                        )
        if isinstance(node, ast.Name):
            if node.id in BUILTINS:
                found.append(Violation(line, f"uses {node.id} ({BUILTINS[node.id]})"))
            elif _dunder(node.id) and id(node) not in in_class_body:
                found.append(Violation(line, f"uses the name {node.id}"))
    return sorted(set(found), key=lambda v: (v.line, v.what))


def message(violations_: list[Violation], where: str = "this answer") -> str:
    """One plain line for the learner: what grading refuses, by line."""
    listed = "; ".join(str(v) for v in violations_[:3])
    more = f" (and {len(violations_) - 3} more)" if len(violations_) > 3 else ""
    return f"grading refuses {where}: {listed}{more}. An answer needs none of this."


def _key(grade_id: str) -> str:
    """ex03_1 for ex03_1_topological_order_answer: what an answer and its checks share."""
    return "_".join(grade_id.split("_")[:2])


def rules(grade_id: str, check_sources: Iterable[str]) -> tuple[set[str], set[str]]:
    """(forbidden names, extra imports) for the answer `grade_id`, whose check cells are given.

    Read from the registry (each Exercise's `forbidden` and `imports`) for the checks those cells
    call; for a chapter whose checks are not in the registry yet, from `make audit`'s list of the
    package's own versions (DELEGATES).
    """
    from minilucid_course.audit import DELEGATES
    from minilucid_course.checks.exercise import all_exercises

    registry = all_exercises()
    forbidden, imports, found = set(), set(), False
    for source in check_sources:
        for name in called_checks(source):
            if name in registry:
                found = True
                forbidden.update(registry[name].forbidden)
                imports.update(registry[name].imports)
    if not found:
        key = _key(grade_id)
        for dotted in DELEGATES.get(key) or DELEGATES.get(key.rstrip("ab"), ()):
            forbidden.add(dotted.split(".")[-1])
    return forbidden, imports


def called_checks(source: str) -> list[str]:
    """The check_* functions a check cell calls, in order."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    return [
        node.func.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id.startswith("check_")
    ]


def notebook_violations(nb) -> dict[str, list[Violation]]:
    """{answer grade_id: violations} for every code answer cell of a notebook (nbgrader's)."""
    cells = [c for c in nb.cells if c.cell_type == "code"]
    meta = [(c, c.get("metadata", {}).get("nbgrader", {}) or {}) for c in cells]
    checks = [
        (m.get("grade_id", ""), c.source)
        for c, m in meta
        if m.get("grade") and not m.get("solution")
    ]
    imported = set()
    for cell, m in meta:
        if not m.get("solution"):
            imported |= imported_names(cell.source)
    out = {}
    for cell, m in meta:
        if not m.get("solution"):
            continue
        grade_id = m.get("grade_id", "")
        mine = [source for gid, source in checks if _key(gid) == _key(grade_id)]
        forbidden, imports = rules(grade_id, mine)
        found = violations(cell.source, forbidden, imports, imported)
        if found:
            out[grade_id] = found
    return out
