"""What a person should read after autograde: every hand-in that does what an answer never needs.

    python -m minilucid_course.audit ~/minilucid-class      (make audit CLASS=~/minilucid-class)

Reads every cell of every file in the class's submitted/ folder, without running anything, and
lists, per hand-in:

- what grading left out of it (`minilucid_course.handin`): cells it added, answer cells whose
  nbgrader metadata is gone, release cells it changed; notebooks and files the assignment does
  not have;
- each answer cell the policy refuses (`minilucid_course.policy`: imports, dunders, frames,
  `exec`, `open`, the package's own version of the exercise, ...): grading did not run it;
- what an answer never needs, by Python's `ast` (`findings`): reaching into IPython or the
  interpreter, writing what it imported, databases, programs, the answer key's file names;
  classes that redefine how their values compare or convert (`__eq__`, `__float__`,
  `__array__`, ...);
- text holding control characters (terminal escape codes, direction overrides).

Then, from the gradebook: every nonzero extra credit and every score set by hand (confirm that
you set them), and every hand-in that ran past its time or ended its process (the reason
autograde recorded). Everything a hand-in wrote is printed escaped: no control character of
its reaches the terminal. A listing is a reason to read the hand-in, not a verdict.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import sys
import unicodedata
from pathlib import Path

from minilucid_course.grading import STOPPED

# per exercise (the answer's grade_id up to its second "_"), minilucid's own version of it
DELEGATES = {
    "ex01_2": ("autograd.topological_order",),
    "ex02_1": ("ops.elementwise.Mul",),
    "ex02_2": ("ops.elementwise.Div",),
    "ex02_3": ("ops.elementwise.Pow",),
    "ex02_4": ("numerical.numerical_grad",),
    "ex02_6": ("gradcheck.gradcheck", "numerical.numerical_grad"),
    "ex03_1": ("autograd.topological_order",),
    "ex03_2": ("autograd.backward", "autograd.grad", "tensor.Tensor.backward"),
    "ex03_3": ("autograd.topological_order",),
    "ex03_4": ("autograd.backward", "autograd.grad", "tensor.Tensor.backward"),
    "ex04_1": ("ops.broadcast.sum_to_shape", "ops.broadcast.sum_to", "ops.broadcast.SumTo"),
    "ex04_2": ("ops.reduce.Mean",),
    "ex04_3": ("ops.shape.GetItem", "ops.shape.IndexAdd"),
    "ex04_4": ("ops.linalg.MatMul",),
    "ex04_5": ("ops.linalg.MatMul",),
    "ex05_1": ("ops.unary.Sigmoid", "ops.unary.sigmoid", "nn.activation.Sigmoid"),
    "ex05_2": ("ops.softmax.LogSoftmax", "ops.softmax.logsumexp", "nn.functional.log_softmax"),
    "ex05_3b": ("ops.softmax.logsumexp",),
    "ex05_4": (
        "nn.functional.cross_entropy",
        "ops.softmax.CrossEntropy",
        "nn.loss.CrossEntropyLoss",
    ),
    "ex06_1": ("optim.sgd.SGD",),
    "ex06_2": ("tensor.Tensor.detach",),
    "ex06_3": ("nn.utils.clip_grad_norm_",),
    "ex07_1": ("nn.module.Module",),
    "ex07_2": ("nn.linear.Linear", "nn.functional.linear"),
    "ex08_1": ("optim.sgd.SGD",),
    "ex08_2": ("optim.adam.Adam", "optim.adam.AdamW"),
    "ex08_3": ("nn.utils.clip_grad_norm_",),
    "ex08_4": ("optim.lr_scheduler.CosineAnnealingLR",),
    "ex09_1": ("data.loading.DataLoader",),
    "ex10_1": ("ops.conv.out_size",),
    "ex10_2": ("ops.conv.im2col_array", "ops.conv.Im2Col"),
    "ex10_3": ("ops.conv.conv2d", "ops.conv.col2im_array", "ops.conv.Col2Im", "nn.conv.Conv2d"),
    "ex10_4": ("ops.conv.conv2d", "ops.conv.im2col_array", "ops.conv.Im2Col", "nn.conv.Conv2d"),
    "ex10_5": ("ops.conv.max_pool2d", "nn.pooling.MaxPool2d"),
    "ex11_1": ("nn.dropout.dropout", "nn.dropout.Dropout"),
    "ex11_2": (
        "nn.normalization.batch_norm",
        "nn.normalization.BatchNorm1d",
        "nn.normalization.BatchNorm2d",
    ),
    "ex11_3": ("nn.normalization.batch_norm", "nn.normalization.BatchNorm1d"),
    "ex11_4": ("nn.normalization.layer_norm", "nn.normalization.LayerNorm"),
    "ex13_1": ("ops.attention.Embedding", "ops.attention.embedding", "nn.attention.Embedding"),
    "ex13_2": ("nn.attention.scaled_dot_product_attention", "ops.sdpa.ScaledDotProductAttention"),
    "ex13_3": ("nn.attention.scaled_dot_product_attention", "ops.sdpa.ScaledDotProductAttention"),
}

IPYTHON = {
    "get_ipython",
    "input_transformers_cleanup",
    "input_transformers_post",
    "input_transformer_manager",
    "ast_transformers",
    "events",
    "set_custom_exc",
    "CustomTB",
    "custom_exceptions",
    "run_code",
    "run_cell",
    "run_ast_nodes",
    "transform_cell",
    "showtraceback",
    "_showtraceback",
    "displayhook",
    "display_pub",
    "register_magic_function",
}
MACHINERY = {
    "__code__",
    "__globals__",
    "__closure__",
    "__defaults__",
    "__kwdefaults__",
    "__builtins__",
    "__dict__",
    "_implementation",
    "f_back",
    "f_globals",
    "f_locals",
    "tb_frame",
    "gi_frame",
}
MODULES = {  # importing these in an answer: what for
    "builtins": "Python's builtins",
    "gc": "the garbage collector (reaches any object)",
    "ctypes": "ctypes (writes memory)",
    "sqlite3": "a database",
    "sqlalchemy": "a database",
    "nbgrader": "nbgrader",
    "subprocess": "programs",
    "multiprocessing": "processes",
    "signal": "signals",
    "minilucid_course": "the checks",
    "inspect": "frames and source",
    "IPython": "IPython",
    "ipykernel": "the kernel",
    "importlib": "the import system",
}
CALLS = {
    "exec": "runs text as code",
    "eval": "runs text as code",
    "compile": "compiles text",
    "setattr": "sets an attribute by name",
    "delattr": "deletes an attribute by name",
    "__import__": "imports by name",
    "globals": "reaches the notebook's namespace",
}
SYS_NAMES = {"modules", "addaudithook", "settrace", "setprofile", "_getframe", "exit", "meta_path"}
OS_NAMES = {"kill", "killpg", "_exit", "abort", "system", "fork", "execv", "execvp", "popen"}
WORDS = ("gradebook", ".ipynb", "solutions", "source/")


CONVERSIONS = {  # special methods a value defines to pass for another value
    "__eq__",
    "__ne__",
    "__float__",
    "__int__",
    "__index__",
    "__bool__",
    "__array__",
    "__array_ufunc__",
    "__array_function__",
    "__array_interface__",
    "__hash__",
    "__del__",
    "__getattr__",
    "__getattribute__",
}
PLAIN_FILES = {"timestamp.txt"}  # what nbgrader itself writes beside a hand-in


def _meta(cell) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {}) or {}


def shown(text: str) -> str:
    """`text` safe for a terminal: every control or format character written as an escape."""
    out = []
    for ch in str(text):
        if unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"):
            out.append(f"\\x{ord(ch):02x}" if ord(ch) < 256 else f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return "".join(out)


def _controls(text: str) -> bool:
    return any(
        unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Co", "Zl", "Zp") and ch not in "\n\t\r"
        for ch in text
    )


def _parse(source: str) -> ast.Module | None:
    lines = [line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))]
    try:
        return ast.parse("\n".join(lines))
    except SyntaxError:
        return None


def _dotted(node) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([node.id, *reversed(parts)])


def _aliases(trees) -> dict[str, str]:
    """name -> the dotted path it was imported as, from every import in the notebook."""
    found = {}
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    found[a.asname or a.name.split(".")[0]] = (
                        a.name if a.asname else a.name.split(".")[0]
                    )
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for a in node.names:
                    found[a.asname or a.name] = f"{node.module}.{a.name}"
    return found


def _resolve(dotted: str):
    """The object a dotted path names (importing modules as needed), or None."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except Exception:  # noqa: BLE001 - not a module at this length
            continue
        try:
            for attr in parts[cut:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return None
        return obj
    return None


def _delegates(grade_id: str) -> dict[int, str]:
    key = "_".join(grade_id.split("_")[:2])
    names = DELEGATES.get(key) or DELEGATES.get(key.rstrip("ab"), ())
    found = {}
    for name in names:
        obj = _resolve(f"minilucid.{name}")
        if obj is not None:
            found[id(obj)] = f"minilucid.{name}"
    return found


def findings(tree: ast.Module, aliases: dict[str, str], grade_id: str) -> list[tuple[int, str]]:
    """(line, what) for each thing in one answer cell that an answer never needs."""
    out = []
    forbidden = _delegates(grade_id)
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
            )
            for name in names:
                top = name.split(".")[0]
                if top in MODULES:
                    out.append((line, f"imports {name} ({MODULES[top]})"))
        elif isinstance(node, ast.Attribute):
            if node.attr in IPYTHON:
                out.append((line, f"reaches into IPython: .{node.attr}"))
            elif node.attr in MACHINERY:
                out.append((line, f"reaches into Python's machinery: .{node.attr}"))
            dotted = _dotted(node)
            module = aliases.get(dotted.split(".")[0]) if dotted else None
            if module in ("sys", "os") and node.attr in (
                SYS_NAMES if module == "sys" else OS_NAMES
            ):
                out.append((line, f"uses {module}.{node.attr}"))
        elif isinstance(node, ast.Name):
            if node.id in IPYTHON or node.id in MACHINERY:
                out.append((line, f"uses {node.id}"))
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
            for target in targets:
                dotted = _dotted(target) if isinstance(target, ast.Attribute) else None
                if dotted and dotted.split(".")[0] in aliases:
                    out.append((line, f"writes {dotted}, an attribute of what it imported"))
                imported = aliases.get(target.id, "") if isinstance(target, ast.Name) else ""
                if imported.startswith(("minilucid", "numpy", "math")):
                    out.append((line, f"rebinds {target.id}, which the notebook imported"))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id in CALLS:
                out.append((line, f"calls {node.func.id} ({CALLS[node.func.id]})"))
        elif isinstance(node, ast.FunctionDef) and node.name in CONVERSIONS:
            out.append((line, f"defines {node.name}: its values may pass for others"))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            words = [w for w in WORDS if w in node.value]
            if words:
                out.append((line, f"names {', '.join(words)} in a string"))
        if forbidden and isinstance(node, (ast.Name, ast.Attribute)):
            dotted = _dotted(node)
            head = dotted.split(".")[0] if dotted else ""
            if head in aliases:
                obj = _resolve(aliases[head] + dotted[len(head) :])
                if obj is not None and id(obj) in forbidden:
                    out.append((line, f"calls {forbidden[id(obj)]}, the package's own answer"))
    return sorted(set(out))


def audit_notebook(path: Path) -> list[str]:
    """One line per finding in the answer cells of one notebook: grade_id, line, what."""
    import nbformat

    return audit_notebook_object(nbformat.read(str(path), as_version=4))


def audit_notebook_object(nb) -> list[str]:
    """audit_notebook for a notebook already read."""
    trees = [(c, _parse(c.source)) for c in nb.cells if c.cell_type == "code"]
    aliases = _aliases(t for _c, t in trees if t is not None)
    lines = []
    for cell, tree in trees:
        if not _meta(cell).get("solution"):
            continue
        grade_id = _meta(cell).get("grade_id", "?")
        if tree is None:
            lines.append(f"{grade_id}: does not parse as Python (read it)")
            continue
        for line, what in findings(tree, aliases, grade_id):
            lines.append(f"{grade_id} line {line}: {what}")
    return lines


def audit_gradebook(course: Path) -> list[str]:
    """Nonzero extra credit and hand-set scores, for the teacher to confirm."""
    database = course / "gradebook.db"
    if not database.is_file():
        return []
    from nbgrader.api import Gradebook

    lines = []
    with Gradebook(f"sqlite:///{database}") as gradebook:
        for assignment in gradebook.assignments:
            for submission in assignment.submissions:
                for notebook in submission.notebooks:
                    for grade in notebook.grades:
                        where = f"{submission.student_id}/{assignment.name} {grade.name}"
                        if grade.extra_credit:
                            lines.append(f"{where}: extra credit {grade.extra_credit:g}")
                        if (
                            grade.manual_score is not None
                            and grade.manual_score != grade.auto_score
                        ):
                            lines.append(f"{where}: score set by hand to {grade.manual_score:g}")
    return lines


def stopped(course: Path) -> list[str]:
    """Hand-ins whose kernel died, hung or overran during autograde, with the reason."""
    import nbformat

    lines = []
    for path in sorted((course / "autograded").glob("*/*/*.ipynb")):
        nb = nbformat.read(str(path), as_version=4)
        reasons = {
            o.get("evalue", "")
            for c in nb.cells
            for o in c.get("outputs", [])
            if o.get("ename") == STOPPED
        }
        for reason in sorted(reasons):
            lines.append(f"{path.parent.parent.name}/{path.parent.name}: {reason}")
    return lines


def audit_hand_in(path: Path, course: Path) -> list[str]:
    """One line per finding in one file of a hand-in folder (submitted/<student>/<assignment>)."""
    import nbformat

    from minilucid_course import handin, policy

    assignment = path.parent.name
    if path.suffix != ".ipynb":
        return (
            []
            if path.name in PLAIN_FILES
            else [f"a file the assignment does not have: {path.name}"]
        )
    if handin.release_copy(course, assignment, path.stem) is None:
        return [f"a notebook the assignment does not have: {path.name}"]
    try:
        nb = nbformat.read(str(path), as_version=4)
    except Exception as error:  # noqa: BLE001 - whatever it holds, it is not a notebook
        return [f"{path.name}: not a notebook nbgrader can read ({type(error).__name__})"]
    lines = []
    for index, cell in enumerate(nb.cells):
        if _controls(cell.get("source", "")):
            lines.append(f"cell {index + 1}: holds control characters (escape codes?)")
    rebuilt, notes = handin.rebuild_files(path, course, assignment)
    lines += notes
    if rebuilt is not None:
        for grade_id, found in policy.notebook_violations(rebuilt).items():
            lines += [f"{grade_id} {v}: refused by the policy, not run" for v in found]
        lines += audit_notebook_object(rebuilt)
    return lines


def audit(course: Path) -> dict[str, list[str]]:
    """{section title: lines}; hand-ins are keyed "student/assignment/file"."""
    out: dict[str, list[str]] = {}
    for path in sorted((course / "submitted").glob("*/*/*")):
        if not path.is_file():
            continue
        found = audit_hand_in(path, course)
        if found:
            out[f"{path.parent.parent.name}/{path.parent.name}/{path.name}"] = found
    out["gradebook: extra credit and scores set by hand (confirm you set them)"] = audit_gradebook(
        course
    )
    out["autograde stopped these hand-ins (their graded cells from there on score 0)"] = stopped(
        course
    )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("course", help="the class folder (nbgrader's course root)")
    args = parser.parse_args(argv)
    course = Path(args.course).expanduser()
    if not (course / "submitted").is_dir():
        print(f"audit: {course} has no submitted/ folder (is it the class folder?)")
        return 1
    report = audit(course)
    hand_ins = [k for k, v in report.items() if k.count("/") == 2 and v]
    every = sorted((course / "submitted").glob("*/*/*.ipynb"))
    if not every:
        print(f"audit: no hand-ins in {course / 'submitted'} yet (collect them first)")
    elif hand_ins:
        print(f"{len(hand_ins)} of {len(every)} hand-in file(s) to read:")
    else:
        print(
            f"no hand-in to read: the {len(every)} hand-in(s) hold only answer cells the policy "
            "accepts, nothing added or left out, nothing an answer never needs"
        )
    for title, lines in report.items():
        if lines:
            print(f"\n{shown(title)}")
            print("\n".join(f"  {shown(line)}" for line in lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
