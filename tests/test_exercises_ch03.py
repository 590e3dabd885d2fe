"""Chapter 03's checks accept the solutions and reject plausible wrong answers."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from forgery import forged_data_test
from nbharness import Wrong, mutation_tests, run_check

from minilucid import Tensor
from minilucid.autograd import backward, topological_order
from minilucid.ops.broadcast import sum_to_shape
from minilucid_course.checks import ch03

NB = Path(__file__).resolve().parents[1] / "solutions" / "03_reverse_mode.ipynb"

EXERCISES = {
    "sort": ("ex03_1_topological_order_answer", "ex03_1_topological_order_check"),
    "sweep": ("ex03_2_backward_sweep_answer", "ex03_2_backward_sweep_check"),
    "steps": ("ex03_3_step_numbers_answer", "ex03_3_step_numbers_check"),
    "hand": ("ex03_4_hand_gradients_answer", "ex03_4_hand_gradients_check"),
    "scalar": ("ex03_5_scalar_answer", "ex03_5_scalar_check"),
    "neuron": ("ex03_5_train_neuron_answer", "ex03_5_train_neuron_check"),
}

# every earlier check cell re-runs before the one under test; these stand in for them
STAND_INS = {check: "pass" for _, check in EXERCISES.values()}

RECURSIVE_SORT = """
def topological_order(root):
    order, visited = [], {}

    def visit(node):
        if id(node) in visited:
            return
        visited[id(node)] = True
        if node.grad_fn is not None:
            for parent in node.grad_fn.parents:
                if isinstance(parent, Tensor) and parent.requires_grad:
                    visit(parent)
        order.append(node)

    visit(root)
    return order
"""

PRE_ORDER_SORT = """
def topological_order(root):
    order, visited, stack = [], {}, [root]
    while stack:
        node = stack.pop()
        if id(node) in visited:
            continue
        visited[id(node)] = True
        order.append(node)
        if node.grad_fn is not None:
            for parent in reversed(node.grad_fn.parents):
                if isinstance(parent, Tensor) and parent.requires_grad:
                    stack.append(parent)
    return order[::-1]
"""

BREADTH_FIRST_SORT = """
def topological_order(root):
    met, seen, i = [root], {id(root): True}, 0
    while i < len(met):
        node = met[i]
        i += 1
        if node.grad_fn is not None:
            for parent in node.grad_fn.parents:
                if isinstance(parent, Tensor) and parent.requires_grad and id(parent) not in seen:
                    seen[id(parent)] = True
                    met.append(parent)
    return met[::-1]
"""

EMPTIES_THE_CASES = """
import minilucid_course.checks.ch03 as _checks

_checks.GRAPHS = ()
_checks.SWEEP_GRAPHS = ()
"""

LIST_OF_VISITED_SORT = """
def topological_order(root):
    order, visited, stack = [], [], [(root, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
            continue
        if node in visited:
            continue
        visited.append(node)
        stack.append((node, True))
        if node.grad_fn is not None:
            for parent in reversed(node.grad_fn.parents):
                if isinstance(parent, Tensor) and parent.requires_grad:
                    stack.append((parent, False))
    return order
"""

MUTANTS = {
    "sort": {
        "recursive": RECURSIVE_SORT,
        "recursive, and empties the check's graphs": Wrong(
            RECURSIVE_SORT + EMPTIES_THE_CASES, "RecursionError"
        ),
        "visited tensors kept in a list": Wrong(LIST_OF_VISITED_SORT, "truth value"),
        "no visited mark": [("        if id(node) in visited:\n            continue\n", "")],
        "pre-order instead of post-order": PRE_ORDER_SORT,
        "breadth first": BREADTH_FIRST_SORT,
        "tensors that do not require grad kept": Wrong(
            [
                (
                    "if isinstance(parent, Tensor) and parent.requires_grad:",
                    "if isinstance(parent, Tensor):",
                )
            ],
            "'c'",
            "does not require grad",
        ),
        "constants kept": [
            (
                "if isinstance(parent, Tensor) and parent.requires_grad:",
                "if True:",
            )
        ],
    },
    "sweep": {
        "assigns instead of accumulating": [
            (
                "            if parent in grads:\n"
                "                grads[parent] = grads[parent] + g\n"
                "            else:\n"
                "                grads[parent] = g\n",
                "            grads[parent] = g\n",
            )
        ],
        "accumulates in place (+=)": Wrong(
            [("grads[parent] = grads[parent] + g", "grads[parent] += g")],
            "same array",
            "+=",
        ),
        "assigns, and empties the check's graphs": Wrong(
            [
                (
                    "            if parent in grads:\n"
                    "                grads[parent] = grads[parent] + g\n"
                    "            else:\n"
                    "                grads[parent] = g\n",
                    "            grads[parent] = g\n",
                ),
                ("    return grads\n", "    return grads\n" + EMPTIES_THE_CASES),
            ],
            "used more than once",
        ),
        "forgets the seed": [("grads = {root: np.ones_like(root.data)}", "grads = {}")],
        "seeds with zeros": [("np.ones_like(root.data)", "np.zeros_like(root.data)")],
        "walks the order forwards": [("reversed(order)", "order")],
    },
    "steps": {
        "reversed order": [
            (
                '{"loss": 1, "g": 2, "h": 3, "w": 4, "x": 5}',
                '{"x": 1, "w": 2, "h": 3, "g": 4, "loss": 5}',
            )
        ],
        "breadth first": [
            (
                '{"loss": 1, "g": 2, "h": 3, "w": 4, "x": 5}',
                '{"loss": 1, "h": 2, "g": 3, "x": 4, "w": 5}',
            )
        ],
        "a number used twice": [
            (
                '{"loss": 1, "g": 2, "h": 3, "w": 4, "x": 5}',
                '{"loss": 1, "g": 2, "h": 3, "w": 4, "x": 4}',
            )
        ],
    },
    "hand": {
        "h not accumulated": [
            (
                '{"loss": 1.0, "g": 6.0, "h": 14.0, "w": 28.0, "x": 48.0}',
                '{"loss": 1.0, "g": 6.0, "h": 8.0, "w": 16.0, "x": 30.0}',
            )
        ],
        "x not accumulated": [
            (
                '{"loss": 1.0, "g": 6.0, "h": 14.0, "w": 28.0, "x": 48.0}',
                '{"loss": 1.0, "g": 6.0, "h": 14.0, "w": 28.0, "x": 42.0}',
            )
        ],
        "local derivatives swapped": [
            (
                '{"loss": 1.0, "g": 6.0, "h": 14.0, "w": 28.0, "x": 48.0}',
                '{"loss": 1.0, "g": 8.0, "h": 14.0, "w": 42.0, "x": 34.0}',
            )
        ],
    },
    "scalar": {
        "assigns instead of accumulating": Wrong(
            [("parent.grad += local * node.grad", "parent.grad = local * node.grad")],
            "the gradient of leaf 1",
        ),
        "tanh derivative 1 - tanh": [("1.0 - t * t", "1.0 - t")],
        "tanh derivative taken at the input": [("1.0 - t * t", "1.0 - self.data * self.data")],
        "product rule with its own value": [
            ("((self, other.data), (other, self.data))", "((self, self.data), (other, other.data))")
        ],
        "no reflected operators": [
            (
                "    __radd__ = __add__  # 2 + a: Python asks a.__radd__(2); addition does not "
                "mind the order\n    __rmul__ = __mul__\n",
                "",
            )
        ],
        "sweep in the sort's order": [("for node in reversed(order):", "for node in order:")],
        "no visited record": [
            ("            elif id(node) not in visited:\n", "            else:\n"),
        ],
        "pre-order sort": [
            (
                "            if expanded:\n                order.append(node)\n"
                "            elif id(node) not in visited:\n"
                "                visited.add(id(node))\n"
                "                stack.append((node, True))\n",
                "            if expanded:\n                continue\n"
                "            elif id(node) not in visited:\n"
                "                visited.add(id(node))\n"
                "                order.insert(0, node)\n",
            )
        ],
        "recursive sort": Wrong(
            [
                (
                    "        order, visited, stack = [], set(), [(self, False)]\n"
                    "        while stack:  # iterative post-order depth-first search\n"
                    "            node, expanded = stack.pop()\n"
                    "            if expanded:\n"
                    "                order.append(node)\n"
                    "            elif id(node) not in visited:\n"
                    "                visited.add(id(node))\n"
                    "                stack.append((node, True))\n"
                    "                stack.extend((parent, False) for parent, _ in node.parents)\n",
                    "        order, visited = [], set()\n\n"
                    "        def visit(node):\n"
                    "            if id(node) not in visited:\n"
                    "                visited.add(id(node))\n"
                    "                for parent, _ in node.parents:\n"
                    "                    visit(parent)\n"
                    "                order.append(node)\n\n"
                    "        visit(self)\n",
                )
            ],
            "recursion limit",
        ),
    },
    "neuron": {
        "never zeroes the gradients": Wrong(
            [("        w.grad, b.grad = 0.0, 0.0\n", "")], "w.grad"
        ),
        "steps up the gradient": [("w.data -= lr * w.grad", "w.data += lr * w.grad")],
        "loss recorded after the update": [
            (
                "        w.data -= lr * w.grad\n        b.data -= lr * b.grad\n"
                "        losses.append(loss.data)\n",
                "        w.data -= lr * w.grad\n        b.data -= lr * b.grad\n"
                "        losses.append(sum(((w * x + b).tanh() + -y).data ** 2 "
                "for x, y in zip(xs, ys)))\n",
            )
        ],
        "mean instead of sum": [("losses.append(loss.data)", "losses.append(loss.data / len(xs))")],
        "returns Scalars": [("return w.data, b.data, losses", "return w, b, losses")],
        "forgets the bias": [("b.data -= lr * b.grad", "pass")],
    },
}


test_the_solution_passes, test_a_wrong_answer_is_rejected, test_the_stub_raises = mutation_tests(
    NB, EXERCISES, MUTANTS, stand_ins=STAND_INS
)


test_forged_data_is_wrong = forged_data_test(NB, EXERCISES, STAND_INS)


# --- messages say what is wrong, in plain words (checkers called directly: fast) -------------


def _exec(source: str):
    namespace = {"Tensor": Tensor, "np": np}
    exec(source, namespace)
    return namespace["topological_order"]


def test_recursion_is_reported_in_plain_words():
    with pytest.raises(AssertionError, match="RecursionError.*nested calls"):
        ch03.check_topological_order(_exec(RECURSIVE_SORT))


def test_a_wrong_order_names_both_tensors():
    with pytest.raises(AssertionError) as info:
        ch03.check_topological_order(_exec(PRE_ORDER_SORT))
    message = str(info.value)
    assert "diamond" in message and "'a'" in message and "'b'" in message


def test_duplicates_are_named():
    def twice(root):
        order = topological_order(root)
        return order[:1] + order

    with pytest.raises(AssertionError, match="lists tensor 'x' twice"):
        ch03.check_topological_order(twice)


def _sweep(accumulate: bool):
    def sweep(root, order):
        grads = {root: np.ones_like(root.data)}
        for node in reversed(order):
            ctx = node.grad_fn
            if ctx is None:
                continue
            sent = ctx.backward(ctx, grads[node])
            for parent, g in zip(ctx.parents, sent, strict=True):
                if not (isinstance(parent, Tensor) and parent.requires_grad):
                    continue
                g = sum_to_shape(g, parent.shape)
                grads[parent] = grads[parent] + g if accumulate and parent in grads else g
        return grads

    return sweep


def test_overwriting_is_explained_and_names_the_tensor_and_entry():
    with pytest.raises(AssertionError) as info:
        ch03.check_backward_sweep(_sweep(accumulate=False))
    message = str(info.value)
    assert "d(y)/d(h)" in message and "entry (0,)" in message and "more than once" in message


def test_a_correct_sweep_passes(capsys):
    ch03.check_backward_sweep(_sweep(accumulate=True))
    assert capsys.readouterr().out.startswith("✓")


def test_step_numbers_name_the_pair_in_the_wrong_order():
    with pytest.raises(AssertionError, match="'h'.*before 'g'"):
        ch03.check_step_numbers({"loss": 1, "h": 2, "g": 3, "x": 4, "w": 5})


def test_hand_gradients_say_which_one_is_wrong():
    with pytest.raises(AssertionError, match=r"d\(loss\)/d\(h\) is not 8"):
        ch03.check_hand_gradients({"loss": 1, "g": 6, "h": 8, "w": 16, "x": 30})


# --- the chapter's package code: backward's sort= and trace= --------------------------------


def test_backward_sweeps_the_order_the_given_sort_returns():
    calls = []

    def sort(root):
        calls.append(root)
        return topological_order(root)

    root, (x,) = ch03._diamond()
    steps = []
    backward(root, gradient=np.ones(2), sort=sort, trace=steps)
    assert calls == [root]
    assert [t.name for t, _, _ in steps] == ["loss", "b", "a", "x"]
    np.testing.assert_allclose(x.grad, 36 * np.array([2.0, -1.0]))
    a_step = steps[2]
    np.testing.assert_allclose(a_step[1], [24.0, -12.0])  # 12 from loss + 12 through b


def test_the_deep_chain_needs_no_recursion():
    root, (x,) = ch03._chain()
    order = topological_order(root)
    assert len(order) == ch03.CHAIN_DEPTH + 1 and order[0] is x and order[-1] is root


@pytest.mark.parametrize(
    "key, said",
    [
        ("scalar", "✓ your Scalar engine agrees with minilucid"),
        ("neuron", "✓ your neuron trains exactly as minilucid's replay"),
    ],
)
def test_the_engine_and_neuron_checks_say_what_they_did(key, said, capsys):
    keys = list(EXERCISES)
    earlier = {EXERCISES[k][1]: "pass" for k in keys[: keys.index(key)]}
    run_check(NB, EXERCISES[key][1], replace=earlier)
    assert said in capsys.readouterr().out
