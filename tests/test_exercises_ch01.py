"""Chapter 01 (The Tensor as a node): every exercise check accepts the solution and rejects wrong
answers.

Also a few focused tests of the package code of chapters 00 and 01: the environment check with
and without `dot`, and the creation functions' shapes and dtypes.
"""

import functools
from pathlib import Path

import numpy as np
import pytest
from nbharness import answer_source, rejected, run_check, with_answer

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


def test_ex1_rejects_forgetting_leaves():
    wrong = _solved(EX1[1], "return [p for p in t.grad_fn.parents if isinstance(p, Tensor)]")
    _rejected(*EX1, wrong, "the leaf a", "AttributeError")


def test_ex1_rejects_keeping_constants():
    wrong = _solved(EX1[1], "return [] if t.grad_fn is None else list(t.grad_fn.parents)")
    _rejected(*EX1, wrong, "a * 3", "plain number")


def test_ex1_rejects_none_for_a_leaf():
    wrong = _solved(
        EX1[1],
        """
        if t.grad_fn is None:
            return None
        return [p for p in t.grad_fn.parents if isinstance(p, Tensor)]
        """,
    )
    _rejected(*EX1, wrong, "returned None", "[]")


def test_ex1_rejects_removing_duplicates():
    wrong = _solved(
        EX1[1],
        """
        if t.grad_fn is None:
            return []
        unique = {id(p): p for p in t.grad_fn.parents if isinstance(p, Tensor)}
        return list(unique.values())
        """,
    )
    _rejected(*EX1, wrong, "a + a", "expected [a, a], got [a]")


def test_ex1_rejects_only_tensors_that_require_grad():
    wrong = _solved(
        EX1[1],
        """
        if t.grad_fn is None:
            return []
        return [p for p in t.grad_fn.parents if isinstance(p, Tensor) and p.requires_grad]
        """,
    )
    _rejected(*EX1, wrong, "expected [a, k], got [a]")


def test_ex1_rejects_all_ancestors():
    wrong = _solved(
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
    )
    _rejected(*EX1, wrong, "d = c + a", "only the op's own inputs")


# --------------------------------------------------------------------------------------------
# Exercise 2: graph_size

EX2 = ("ex01_2_graph_size_check", "ex01_2_graph_size_answer")


def test_ex2_solution_passes(capsys):
    run_check(NB, EX2[0])
    out = capsys.readouterr().out
    assert "✓ graph_size" in out
    assert "graph_size(y) = (5, 3)" in out


def test_ex2_rejects_counting_a_reused_tensor_twice():
    wrong = _solved(
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
    )
    _rejected(*EX2, wrong, "h * h + h", "(5, 3)")


def test_ex2_rejects_missing_the_leaves():
    wrong = _solved(
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
    )
    _rejected(*EX2, wrong, "the leaf a", "(1, 0)")


def test_ex2_rejects_list_membership_that_compares_values():
    # `p in list` falls back to ==, which compares tensor values: p and q (both 2.0) merge
    wrong = _solved(
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
    )
    _rejected(*EX2, wrong, "p and q", "(3, 1)")


def test_ex2_rejects_counting_constants():
    wrong = _solved(
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
    )
    _rejected(*EX2, wrong, "a * 3", "constant")


def test_ex2_rejects_recursion_even_with_a_memory():
    wrong = _solved(
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
    )
    _rejected(*EX2, wrong, "chain of 5000", "recursion limit", "explicit stack")


# --------------------------------------------------------------------------------------------
# Exercise 3: poly in at most 4 ops

EX3 = ("ex01_3_poly_check", "ex01_3_poly_answer")


def test_ex3_solution_passes(capsys):
    namespace = run_check(NB, EX3[0])
    assert "✓ poly: 3x² + 2x + 1 in 4 ops, x feeds 2 of them" in capsys.readouterr().out
    picture = namespace["check_poly"](namespace["poly"])  # the check returns the learner's graph
    assert "4 ops" in repr(picture) and "x " in repr(picture)


def test_ex3_rejects_five_ops():
    wrong = _solved(EX3[1], "return 3 * x * x + 2 * x + 1")
    _rejected(*EX3, wrong, "5 ops", "at most 4")


def test_ex3_rejects_a_wrong_coefficient():
    wrong = _solved(EX3[1], "return (3 * x + 1) * x + 2")
    _rejected(*EX3, wrong, "expected 3x² + 2x + 1 = 17.0", "got 16.0")


def test_ex3_rejects_a_step_on_the_raw_array():
    wrong = _solved(EX3[1], "return ml.tensor(3 * x.data**2) + 2 * x + 1")
    _rejected(*EX3, wrong, "leaf tensor other than x", "x.data")


def test_ex3_rejects_a_result_with_no_graph():
    wrong = _solved(EX3[1], "return ml.tensor(3 * x.data**2 + 2 * x.data + 1)")
    _rejected(*EX3, wrong, "no grad_fn", "not connected")


def test_ex3_rejects_a_scalar_only_answer():
    wrong = _solved(EX3[1], "v = float(x.data.flat[0])\nreturn (3 * x + 2) * v + 1")
    _rejected(*EX3, wrong, "x = [-1.0, 0.0, 0.5, 2.0]")


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


def test_ex4_rejects_python_floats_as_float64():
    wrong = _predictions(a=((), "float64"), g=((), "float64"))
    _rejected(*EX4, wrong, "a = ml.tensor(2.5)", "float64", "float32")


def test_ex4_rejects_float32_winning_over_float64():
    _rejected(*EX4, _predictions(f=((2,), "float32")), "f = ", "dtype float64")


def test_ex4_rejects_a_wrong_broadcast_shape():
    _rejected(*EX4, _predictions(e=((4, 1), "float32")), "e = ", "(4, 3)")


def test_ex4_rejects_shape_one_for_a_scalar():
    _rejected(*EX4, _predictions(a=((1,), "float32")), "a = ", "shape ()")


def test_ex4_rejects_a_missing_entry():
    wrong = _solved(EX4[1], "return {'a': ((), 'float32')}")
    _rejected(*EX4, wrong, "no entry 'b'")


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


def test_ex5_rejects_walking_every_path():
    wrong = _solved(
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
    )
    _rejected(*EX5, wrong, "doubled 60 times", "follows every path", "count per tensor")


def test_ex5_rejects_counting_reachability_instead_of_paths():
    wrong = _solved(
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
    )
    _rejected(*EX5, wrong, "count_paths(a * b + a, a)", "expected 2, got 1")


def _edited(old: str, new: str) -> str:
    source = answer_source(NB, EX5[1])
    assert old in source, "the solution changed; update this mutant"
    return source.replace(old, new)


def test_ex5_rejects_one_edge_per_distinct_parent():
    wrong = _edited(
        "            for p in node.grad_fn.parents:\n",
        "            for p in dict.fromkeys(node.grad_fn.parents):\n",
    )
    _rejected(*EX5, wrong, "h * h + h", "expected 3, got 2")


def test_ex5_rejects_passing_counts_in_the_wrong_order():
    wrong = _edited("for node in reversed(order):", "for node in order:").replace(
        "+ paths[id(node)]", "+ paths.get(id(node), 0)"
    )
    _rejected(*EX5, wrong, "count_paths(a * b + a, a)", "expected 2, got 1")


def test_ex5_rejects_memoised_recursion_on_a_deep_chain():
    wrong = _solved(
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
    )
    _rejected(*EX5, wrong, "5000", "recursion limit")


def test_ex5_rejects_a_float_count():
    wrong = _edited("return paths.get(id(leaf), 0)", "return float(paths.get(id(leaf), 0))")
    _rejected(*EX5, wrong, "int", "2**60")


def test_ex5_rejects_one_path_to_a_tensor_outside_the_graph():
    wrong = _edited("return paths.get(id(leaf), 0)", "return paths.get(id(leaf), 1)")
    _rejected(*EX5, wrong, "not in the graph", "expected 0, got 1")


def test_ex5_rejects_skipping_tensors_that_need_no_gradient():
    wrong = _edited(
        "if isinstance(p, Tensor):\n                    paths",
        "if isinstance(p, Tensor) and p.requires_grad:\n                    paths",
    )
    _rejected(*EX5, wrong, "needs no gradient", "expected 1, got 0")


def test_ex5_stub_raises_not_implemented():
    stub = _solved(EX5[1], "raise NotImplementedError()")
    with pytest.raises(NotImplementedError):
        run_check(NB, EX5[0], replace={EX5[1]: stub})
