"""Chapter 01 (The Tensor as a node): every exercise check accepts the solution and rejects wrong
answers.

Also a few focused tests of the package code of chapters 00 and 01: the environment check with
and without `dot`, and the creation functions' shapes and dtypes.
"""

import functools
from pathlib import Path

import numpy as np
import pytest
from forgery import forged_data_test
from nbharness import Wrong, answer_source, mutation_tests, rejected, run_check, with_answer

import minilucid as ml
from minilucid_course import environment

NB = Path(__file__).resolve().parents[1] / "solutions" / "01_tensor_as_a_node.ipynb"

_rejected = functools.partial(rejected, NB)
_solved = functools.partial(with_answer, NB)


# --------------------------------------------------------------------------------------------
# Exercise 1: parents_of

EX1 = ("ex01_1_parents_of_check", "ex01_1_parents_of_answer")


def test_ex1_solution_passes(capsys):
    run_check(NB, EX1[0])
    out = capsys.readouterr().out
    assert "✓ parents_of" in out
    assert "parents_of(d) = ['c', 'a']" in out


# --------------------------------------------------------------------------------------------
# Exercise 2: graph_size

EX2 = ("ex01_2_graph_size_check", "ex01_2_graph_size_answer")


def test_ex2_solution_passes(capsys):
    run_check(NB, EX2[0])
    out = capsys.readouterr().out
    assert "✓ graph_size" in out
    assert "graph_size(y) = (5, 3)" in out


# --------------------------------------------------------------------------------------------
# Exercise 3: poly in at most 4 ops

EX3 = ("ex01_3_poly_check", "ex01_3_poly_answer")


def test_ex3_solution_passes(capsys):
    namespace = run_check(NB, EX3[0])
    assert "✓ poly: 3x² + 2x + 1 in 4 ops, x feeds 2 of them" in capsys.readouterr().out
    picture = namespace["check_poly"](namespace["poly"])  # the check returns the learner's graph
    assert "4 ops" in repr(picture) and "x " in repr(picture)


# --------------------------------------------------------------------------------------------
# Exercise 4: predict shapes and dtypes

EX4 = ("ex01_4_predict_check", "ex01_4_predict_answer")


def _predictions(**changes) -> str:
    right = {
        "a": ((), "float32"),
        "b": ((1, 3), "int64"),
        "c": ((4,), "float64"),
        "d": ((2, 3), "float32"),
        "e": ((4, 3), "float32"),
        "f": ((2,), "float64"),
        "g": ((), "float32"),
    }
    right.update(changes)
    return _solved(EX4[1], f"return {right!r}")


def test_ex4_solution_passes(capsys):
    run_check(NB, EX4[0])
    assert "✓ predictions" in capsys.readouterr().out
    run_check(NB, EX4[0], replace={EX4[1]: _predictions()})  # the helper's dict is right too


# --------------------------------------------------------------------------------------------
# Package code of chapters 00 and 01


def test_install_hint_names_every_platform():
    hint = environment.graphviz_install_hint()
    for command in ("apt-get install", "brew install", "conda install", "winget install"):
        assert command in hint


def test_check_environment_without_dot_says_how_to_install(monkeypatch, capsys):
    monkeypatch.setenv("PATH", "")
    found = environment.check_environment()
    out = capsys.readouterr().out
    assert found["dot (Graphviz)"] is None
    assert "MISSING  dot (Graphviz)" in out
    assert environment.graphviz_install_hint() in out


def test_check_environment_names_the_conda_package_of_a_missing_module(monkeypatch, capsys):
    real = environment.importlib.metadata.version

    def version(name):
        if name == "graphviz":
            raise environment.importlib.metadata.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr(environment.importlib.metadata, "version", version)
    found = environment.check_environment()
    out = capsys.readouterr().out
    assert found["graphviz"] is None
    assert "pip install graphviz" in out and "conda install -c conda-forge python-graphviz" in out


def test_dot_version_is_none_without_dot(monkeypatch):
    monkeypatch.setenv("PATH", "")
    assert environment.dot_version() is None


def test_creation_shapes_and_dtypes():
    assert ml.zeros(2, 3).shape == (2, 3) and ml.zeros((2, 3)).dtype == ml.float32
    assert ml.ones(4, dtype=ml.float64).dtype == ml.float64
    x = ml.tensor(np.arange(6.0).reshape(2, 3))
    assert ml.zeros_like(x).dtype == ml.float64 and ml.ones_like(x).shape == (2, 3)
    assert ml.arange(5).data.tolist() == [0, 1, 2, 3, 4]
    assert ml.tensor(2.5).dtype == ml.float32 and ml.tensor([1, 2]).dtype == ml.int64
    with pytest.raises(ValueError, match="sizes must be non-negative"):
        ml.zeros(2, -1)


def test_manual_seed_repeats_the_numbers():
    ml.manual_seed(3)
    first = ml.randn(2, 2).data.copy(), ml.rand(3).data.copy()
    ml.manual_seed(3)
    assert np.array_equal(ml.randn(2, 2).data, first[0])
    assert np.array_equal(ml.rand(3).data, first[1])
    assert ml.rand(1000).data.min() >= 0 and ml.rand(1000).data.max() < 1


def test_ops_record_parents_only_when_a_gradient_is_wanted():
    a = ml.tensor(2.0, requires_grad=True)
    b = ml.tensor(3.0)
    y = a * b + a
    assert not y.is_leaf and y.grad_fn.parents[1] is a and y.grad is None
    assert (b * b).is_leaf and (b * b).grad_fn is None


# --------------------------------------------------------------------------------------------
# Exercise 5: count the paths (a problem whose answer is not in the chapter)

EX5 = ("ex01_5_count_paths_check", "ex01_5_count_paths_answer")


def test_ex5_solution_passes(capsys):
    run_check(NB, EX5[0])
    out = capsys.readouterr().out
    assert "✓ count_paths" in out
    assert "1024 paths from a, and d(d)/da = 1024" in out


def _edited(old: str, new: str) -> str:
    source = answer_source(NB, EX5[1])
    assert old in source, "the solution changed; update this mutant"
    return source.replace(old, new)


def test_ex5_stub_raises_not_implemented():
    stub = _solved(EX5[1], "raise NotImplementedError()")
    with pytest.raises(NotImplementedError):
        run_check(NB, EX5[0], replace={EX5[1]: stub})


# --- the one style: every wrong answer above, fed to its check ---------------------------

EXERCISES = {
    "parents_of": ("ex01_1_parents_of_answer", "ex01_1_parents_of_check"),
    "graph_size": ("ex01_2_graph_size_answer", "ex01_2_graph_size_check"),
    "poly": ("ex01_3_poly_answer", "ex01_3_poly_check"),
    "predict": ("ex01_4_predict_answer", "ex01_4_predict_check"),
    "count_paths": ("ex01_5_count_paths_answer", "ex01_5_count_paths_check"),
}

MUTANTS = {
    "parents_of": {
        "forgetting leaves": Wrong(
            _solved(EX1[1], "return [p for p in t.grad_fn.parents if isinstance(p, Tensor)]"),
            "the leaf a",
            "AttributeError",
        ),
        "keeping constants": Wrong(
            _solved(EX1[1], "return [] if t.grad_fn is None else list(t.grad_fn.parents)"),
            "a * 3",
            "plain number",
        ),
        "none for a leaf": Wrong(
            _solved(
                EX1[1],
                """
        if t.grad_fn is None:
            return None
        return [p for p in t.grad_fn.parents if isinstance(p, Tensor)]
        """,
            ),
            "returned None",
            "[]",
        ),
        "removing duplicates": Wrong(
            _solved(
                EX1[1],
                """
        if t.grad_fn is None:
            return []
        unique = {id(p): p for p in t.grad_fn.parents if isinstance(p, Tensor)}
        return list(unique.values())
        """,
            ),
            "a + a",
            "expected [a, a], got [a]",
        ),
        "only tensors that require grad": Wrong(
            _solved(
                EX1[1],
                """
        if t.grad_fn is None:
            return []
        return [p for p in t.grad_fn.parents if isinstance(p, Tensor) and p.requires_grad]
        """,
            ),
            "expected [a, k], got [a]",
        ),
        "all ancestors": Wrong(
            _solved(
                EX1[1],
                """
        out, todo = [], [t]
        while todo:
            node = todo.pop()
            if node.grad_fn is not None:
                for p in node.grad_fn.parents:
                    if isinstance(p, Tensor):
                        out.append(p)
                        todo.append(p)
        return out
        """,
            ),
            "d = c + a",
            "only the op's own inputs",
        ),
    },
    "graph_size": {
        "counting a reused tensor twice": Wrong(
            _solved(
                EX2[1],
                """
        tensors, ops, to_visit = 0, 0, [t]
        while to_visit:
            node = to_visit.pop()
            tensors += 1
            if node.grad_fn is not None:
                ops += 1
                to_visit.extend(p for p in node.grad_fn.parents if isinstance(p, Tensor))
        return tensors, ops
        """,
            ),
            "h * h + h",
            "(5, 3)",
        ),
        "missing the leaves": Wrong(
            _solved(
                EX2[1],
                """
        seen, to_visit = {}, [t]
        while to_visit:
            node = to_visit.pop()
            if id(node) in seen or node.grad_fn is None:
                continue
            seen[id(node)] = node
            to_visit.extend(p for p in node.grad_fn.parents if isinstance(p, Tensor))
        return len(seen), len(seen)
        """,
            ),
            "the leaf a",
            "(1, 0)",
        ),
        "list membership that compares values": Wrong(
            _solved(
                EX2[1],
                """
        seen, ops, to_visit = [], 0, [t]
        while to_visit:
            node = to_visit.pop()
            if node in seen:
                continue
            seen.append(node)
            if node.grad_fn is not None:
                ops += 1
                to_visit.extend(p for p in node.grad_fn.parents if isinstance(p, Tensor))
        return len(seen), ops
        """,
            ),
            "p and q",
            "(3, 1)",
        ),
        "counting constants": Wrong(
            _solved(
                EX2[1],
                """
        seen, ops, to_visit = {}, 0, [t]
        while to_visit:
            node = to_visit.pop()
            if id(node) in seen:
                continue
            seen[id(node)] = node
            if isinstance(node, Tensor) and node.grad_fn is not None:
                ops += 1
                to_visit.extend(node.grad_fn.parents)
        return len(seen), ops
        """,
            ),
            "a * 3",
            "constant",
        ),
        "recursion even with a memory": Wrong(
            _solved(
                EX2[1],
                """
        def walk(node, seen):
            if id(node) in seen:
                return 0
            seen[id(node)] = node
            ops = 0
            if node.grad_fn is not None:
                ops = 1
                for p in node.grad_fn.parents:
                    if isinstance(p, Tensor):
                        ops += walk(p, seen)
            return ops

        seen = {}
        ops = walk(t, seen)
        return len(seen), ops
        """,
            ),
            "chain of 5000",
            "recursion limit",
            "still to visit",
        ),
    },
    "poly": {
        "five ops": Wrong(
            _solved(EX3[1], "return 3 * x * x + 2 * x + 1"),
            "5 ops",
            "at most 4",
        ),
        "a wrong coefficient": Wrong(
            _solved(EX3[1], "return (3 * x + 1) * x + 2"),
            "expected 3x² + 2x + 1 = 17.0",
            "got 16.0",
        ),
        "a step on the raw array": Wrong(
            _solved(EX3[1], "return ml.tensor(3 * x.data**2) + 2 * x + 1"),
            "leaf tensor other than x",
            "x.data",
        ),
        "a result with no graph": Wrong(
            _solved(EX3[1], "return ml.tensor(3 * x.data**2 + 2 * x.data + 1)"),
            "no grad_fn",
            "not connected",
        ),
        "a scalar only answer": Wrong(
            _solved(EX3[1], "v = float(x.data.flat[0])\nreturn (3 * x + 2) * v + 1"),
            "x = [-1.0, 0.0, 0.5, 2.0]",
        ),
    },
    "predict": {
        "python floats as float64": Wrong(
            _predictions(a=((), "float64"), g=((), "float64")),
            "a = ml.tensor(2.5)",
            "the dtype you predicted, float64, is not",
        ),
        "float32 winning over float64": Wrong(
            _predictions(f=((2,), "float32")),
            "f = ",
            "the dtype you predicted, float32, is not",
        ),
        "a wrong broadcast shape": Wrong(
            _predictions(e=((4, 1), "float32")),
            "e = ",
            "the shape you predicted, (4, 1), is not right",
        ),
        "shape one for a scalar": Wrong(
            _predictions(a=((1,), "float32")),
            "a = ",
            "one number has shape ()",
        ),
        "a missing entry": Wrong(
            _solved(EX4[1], "return {'a': ((), 'float32')}"),
            "no entry 'b'",
        ),
    },
    "count_paths": {
        "walking every path": Wrong(
            _solved(
                EX5[1],
                """
        count, stack = 0, [root]
        while stack:
            node = stack.pop()
            if node is leaf:
                count += 1
            if node.grad_fn is not None:
                stack.extend(p for p in node.grad_fn.parents if isinstance(p, Tensor))
        return count
        """,
            ),
            "doubled 60 times",
            "follows every path",
            "count per tensor",
        ),
        "counting reachability instead of paths": Wrong(
            _solved(
                EX5[1],
                """
        seen, stack = set(), [root]
        while stack:
            node = stack.pop()
            if id(node) in seen:
                continue
            seen.add(id(node))
            if node.grad_fn is not None:
                stack.extend(p for p in node.grad_fn.parents if isinstance(p, Tensor))
        return int(id(leaf) in seen)
        """,
            ),
            "count_paths(a * b + a, a)",
            "expected 2, got 1",
        ),
        "one edge per distinct parent": Wrong(
            _edited(
                "            for p in node.grad_fn.parents:\n",
                "            for p in dict.fromkeys(node.grad_fn.parents):\n",
            ),
            "h * h + h",
            "expected 3, got 2",
        ),
        "passing counts in the wrong order": Wrong(
            _edited("for node in reversed(order):", "for node in order:").replace(
                "+ paths[id(node)]", "+ paths.get(id(node), 0)"
            ),
            "count_paths(a * b + a, a)",
            "expected 2, got 1",
        ),
        "memoised recursion on a deep chain": Wrong(
            _solved(
                EX5[1],
                """
        memo = {}

        def count(node):
            if id(node) in memo:
                return memo[id(node)]
            total = 1 if node is leaf else 0
            if node.grad_fn is not None:
                total = (1 if node is leaf else 0) + sum(
                    count(p) for p in node.grad_fn.parents if isinstance(p, Tensor)
                )
            memo[id(node)] = total
            return total

        return count(root)
        """,
            ),
            "5000",
            "recursion limit",
        ),
        "a float count": Wrong(
            _edited("return paths.get(id(leaf), 0)", "return float(paths.get(id(leaf), 0))"),
            "int",
            "2**60",
        ),
        "one path to a tensor outside the graph": Wrong(
            _edited("return paths.get(id(leaf), 0)", "return paths.get(id(leaf), 1)"),
            "not in the graph",
            "expected 0, got 1",
        ),
        "skipping tensors that need no gradient": Wrong(
            _edited(
                "if isinstance(p, Tensor):\n                    paths",
                "if isinstance(p, Tensor) and p.requires_grad:\n                    paths",
            ),
            "needs no gradient",
            "expected 1, got 0",
        ),
    },
}

test_the_solution_passes, test_a_wrong_answer_is_rejected, test_the_stub_raises = mutation_tests(
    NB, EXERCISES, MUTANTS
)

# every earlier check cell re-runs before the one under test; these stand in for them
EARLIER_CHECKS = {check: "pass" for _, check in EXERCISES.values()}
test_forged_data_is_wrong = forged_data_test(NB, EXERCISES, EARLIER_CHECKS)


@pytest.mark.parametrize(
    "label, truth",
    [("float32 winning over float64", "float64"), ("a wrong broadcast shape", "4, 3")],
)
def test_a_wrong_prediction_is_not_told_the_answer(label, truth):
    answer, check = EXERCISES["predict"]
    with pytest.raises(AssertionError) as info:
        run_check(NB, check, replace={answer: MUTANTS["predict"][label].edits})
    assert truth not in str(info.value)
