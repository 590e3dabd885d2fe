"""How many mechanical mutants of the solutions' answers do the exercise checks kill?

    .venv/bin/python tests/mutant_survey.py 07 08 [--per-answer 15] [--timeout 60]

The hand-written MUTANTS of tests/test_exercises_chNN.py are wrong answers the checks were
designed against. This survey makes others nobody chose: for every answer cell of
solutions/NN_*.ipynb it changes, one at a time, one thing in the code between the solution
markers (an operator, a constant, a comparison, an if test, a statement dropped, two arguments
swapped, keepdim, sum/mean, a detach or copy removed) and runs that answer's checks as
tests/nbharness.py does, earlier exercises' checks replaced by `pass`. A mutant is killed when a
check raises, survives when every check passes. The notebook up to the answer cell runs once;
each mutant runs in a forked child with a timeout. A seeded sample of each answer's mutants runs.
Survivors are printed with their diff: a human judges whether each is equivalent or a gap.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before NumPy: forked children, two cores

import argparse  # noqa: E402
import ast  # noqa: E402
import contextlib  # noqa: E402
import copy  # noqa: E402
import difflib  # noqa: E402
import importlib  # noqa: E402
import io  # noqa: E402
import multiprocessing  # noqa: E402
import random  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from nbharness import _cells, _find, _nbgrader, _no_display, _notebook_like_process  # noqa: E402

SWAP_OPS = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult,
            ast.MatMult: ast.Mult, ast.FloorDiv: ast.Div, ast.Pow: ast.Mult}  # fmt: skip
SWAP_CMP = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt,
            ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.Is: ast.IsNot, ast.IsNot: ast.Is,
            ast.In: ast.NotIn, ast.NotIn: ast.In}  # fmt: skip
SWAP_METHOD = {"sum": "mean", "mean": "sum", "max": "min", "min": "max"}
DROP_CALL = {"detach", "copy", "clone", "astype"}


def _regions(source: str) -> list[tuple[int, int]]:
    """(first, last) line numbers strictly between each BEGIN/END SOLUTION pair."""
    lines, out, begin = source.splitlines(), [], None
    for number, line in enumerate(lines, 1):
        if "### BEGIN SOLUTION" in line:
            begin = number
        elif "### END SOLUTION" in line and begin is not None:
            out.append((begin + 1, number - 1))
            begin = None
    return out


def _splice(source: str, node: ast.AST, text: str) -> str:
    """The source with node's span (byte columns, as ast counts them) replaced by text."""
    lines = source.encode().splitlines(keepends=True)
    first, last = node.lineno - 1, node.end_lineno - 1
    head, tail = lines[first][: node.col_offset], lines[last][node.end_col_offset :]
    return b"".join([*lines[:first], head, text.encode(), tail, *lines[last + 1 :]]).decode()


def _changed(node: ast.expr, edit) -> str:
    new = copy.deepcopy(node)
    edit(new)
    return f"({ast.unparse(new)})"


def _expression_mutants(node: ast.AST):
    """(label, replacement text) for the one-change mutants of an expression node."""
    if isinstance(node, ast.BinOp) and type(node.op) in SWAP_OPS:
        op = SWAP_OPS[type(node.op)]
        yield (
            f"{type(node.op).__name__} -> {op.__name__}",
            _changed(node, lambda n: setattr(n, "op", op())),
        )
    elif isinstance(node, ast.Constant) and type(node.value) in (int, float):
        value = {0: 1, 1: 0, 0.5: 2}.get(node.value, node.value + 1)
        yield f"{node.value!r} -> {value!r}", repr(value)
    elif isinstance(node, ast.Compare):
        for index, op in enumerate(node.ops):
            if type(op) in SWAP_CMP:
                new = SWAP_CMP[type(op)]
                yield (
                    f"{type(op).__name__} -> {new.__name__}",
                    _changed(node, lambda n, i=index, new=new: n.ops.__setitem__(i, new())),
                )
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.Not)):
        yield f"{type(node.op).__name__} removed", f"({ast.unparse(node.operand)})"
    elif isinstance(node, ast.BoolOp):
        other = ast.Or if isinstance(node.op, ast.And) else ast.And
        yield f"-> {other.__name__}", _changed(node, lambda n: setattr(n, "op", other()))
    elif isinstance(node, ast.IfExp):
        yield (
            "if-expression negated",
            _changed(node, lambda n: setattr(n, "test", ast.UnaryOp(ast.Not(), n.test))),
        )
    elif isinstance(node, ast.Call):
        yield from _call_mutants(node)


def _call_mutants(node: ast.Call):
    func = node.func
    if len(node.args) == 2 and not any(isinstance(a, ast.Starred) for a in node.args):
        yield "arguments swapped", _changed(node, lambda n: n.args.reverse())
    for index, keyword in enumerate(node.keywords):
        if keyword.arg in ("keepdim", "keepdims") and keyword.value.__dict__.get("value") is True:
            yield (
                f"{keyword.arg}=False",
                _changed(
                    node, lambda n, i=index: setattr(n.keywords[i], "value", ast.Constant(False))
                ),
            )
    if isinstance(func, ast.Attribute) and func.attr in SWAP_METHOD:
        new = SWAP_METHOD[func.attr]
        yield f".{func.attr}( -> .{new}(", _changed(node, lambda n: setattr(n.func, "attr", new))
    if isinstance(func, ast.Attribute) and func.attr in DROP_CALL:
        yield f".{func.attr}() removed", f"({ast.unparse(func.value)})"


def _statement_mutants(node: ast.stmt):
    """Drop the statement; negate an if/while test; flip an augmented assignment."""
    docstring = isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
    if not isinstance(node, ast.Pass) and not docstring:
        yield "statement dropped", node, "pass"
    if isinstance(node, (ast.If, ast.While)):
        yield "if test negated", node.test, f"not ({ast.unparse(node.test)})"
    if isinstance(node, ast.AugAssign) and type(node.op) in SWAP_OPS:
        op = SWAP_OPS[type(node.op)]
        new = copy.deepcopy(node)
        new.op = op()
        yield f"{type(node.op).__name__}= -> {op.__name__}=", node, ast.unparse(new)


def mutants(source: str) -> list[tuple[str, str]]:
    """(label, mutated cell source) for every one-change mutant inside the solution regions."""
    tree, regions = ast.parse(source), _regions(source)
    skip = {id(n) for j in ast.walk(tree) if isinstance(j, ast.JoinedStr) for n in ast.walk(j)}
    seen, out = {ast.dump(tree)}, []
    for node in ast.walk(tree):
        if not hasattr(node, "lineno") or id(node) in skip:
            continue
        if not any(a <= node.lineno and node.end_lineno <= b for a, b in regions):
            continue
        if isinstance(node, ast.stmt):
            found = list(_statement_mutants(node))
        else:
            found = [(label, node, text) for label, text in _expression_mutants(node)]
        for label, target, text in found:
            new = _splice(source, target, text)
            try:
                key = ast.dump(ast.parse(new))
                compile(new, "<mutant>", "exec")
            except SyntaxError:
                continue
            if key not in seen:  # identical in meaning by construction (e.g. equal arguments)
                seen.add(key)
                out.append((f"line {target.lineno}: {label}", new))
    return out


def _exec(cells, namespace):
    for index, source in cells:
        exec(compile(source, f"<cell {index}>", "exec"), namespace)


def _child(cells, namespace, conn):
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        try:
            _exec(cells, namespace)
            verdict = "survived"  # every check passed
        except BaseException as error:  # noqa: BLE001 - any exception kills the mutant
            verdict = f"killed: {type(error).__name__}: {str(error).splitlines()[:1]}"
    conn.send(verdict)


def survey(chapter: str, per_answer: int, timeout: float, slow: dict[str, int]):
    nb = next((ROOT / "solutions").glob(f"{chapter}_*.ipynb"))
    exercises = importlib.import_module(f"test_exercises_ch{chapter}").EXERCISES
    cells = _cells(nb)
    answers = list(dict.fromkeys(answer for answer, _ in exercises.values()))
    rows = []
    for answer_id in answers:
        checks = [check for answer, check in exercises.values() if answer == answer_id]
        others = {check for answer, check in exercises.values() if answer != answer_id}
        start, stop = _find(cells, answer_id, nb), _find(cells, checks[-1], nb)
        code = [
            (i, "pass" if _nbgrader(c).get("grade_id") in others else c.source)
            for i, c in enumerate(cells[: stop + 1])
            if c.cell_type == "code"
        ]
        before = [(i, s) for i, s in code if i < start]
        after = [(i, s) for i, s in code if i > start]
        every = mutants(cells[start].source)
        limit = slow.get(answer_id, per_answer)
        chosen = random.Random(answer_id).sample(every, min(limit, len(every)))
        namespace = {"__name__": "__main__", "__builtins__": __builtins__, "display": _no_display}
        with _notebook_like_process(nb.parent):
            with contextlib.redirect_stdout(io.StringIO()):
                _exec(before, namespace)
            solution = _run(cells[start].source, after, namespace, timeout)
            results = [(label, new, _run(new, after, namespace, timeout)) for label, new in chosen]
        rows.append((answer_id, checks, len(every), solution, results, cells[start].source))
        _print(chapter, rows[-1])
    return rows


def _run(source, after, namespace, timeout):
    parent, child = multiprocessing.Pipe(duplex=False)
    process = multiprocessing.get_context("fork").Process(
        target=_child, args=([(-1, source), *after], namespace, child)
    )
    process.start()
    verdict = parent.recv() if parent.poll(timeout) else "timeout"
    process.kill() if process.is_alive() else None
    process.join()
    return verdict


def _tally(verdicts: list[str]) -> str:
    """'N killed (A by an AssertionError), S survived, T timeouts' of a list of verdicts."""
    count = {k: sum(v.startswith(k) for v in verdicts) for k in ("killed", "survived", "timeout")}
    asserted = sum(v.startswith("killed: AssertionError") for v in verdicts)
    return (
        f"{len(verdicts)} run: {count['killed']} killed ({asserted} by an AssertionError), "
        f"{count['survived']} survived, {count['timeout']} timeouts"
    )


def _print(chapter, row):
    answer_id, checks, total, solution, results, original = row
    passes = "passes" if solution == "survived" else f"FAILS ({solution})"
    print(f"ch{chapter} {answer_id} ({', '.join(checks)}): {total} mutants, ", end="")
    print(f"{_tally([v for *_, v in results])}; the solution {passes}", flush=True)
    for label, new, verdict in results:
        if verdict == "survived":
            diff = difflib.unified_diff(original.splitlines(), new.splitlines(), n=0)
            lines = [d.strip() for d in diff if d[:1] in "+-" and d[:3] not in ("+++", "---")]
            print(f"  SURVIVED {label}:  " + "  |  ".join(lines), flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("chapters", nargs="+")
    parser.add_argument("--per-answer", type=int, default=15)
    parser.add_argument("--timeout", type=float, default=60)
    parser.add_argument("--slow", action="append", default=[], help="ANSWER_ID=N fewer mutants")
    args = parser.parse_args()
    os.nice(5)  # a survey, not a test: let the machine's other work go first
    slow = {k: int(v) for k, v in (item.split("=") for item in args.slow)}
    verdicts = []
    for chapter in args.chapters:
        for *_, results, _ in survey(chapter, args.per_answer, args.timeout, slow):
            verdicts += [verdict for *_, verdict in results]
    killed = sum(not v.startswith("survived") for v in verdicts) / max(len(verdicts), 1)
    print(f"chapters {' '.join(args.chapters)}: {_tally(verdicts)}: {killed:.1%} killed")


if __name__ == "__main__":
    main()
