"""Checks for the exercises of chapter 01 (the Tensor as a node)."""

import numpy as np

import minilucid as ml
from minilucid.tensor import Tensor
from minilucid_course.checks.common import call


def _label(obj, names: dict) -> str:
    if id(obj) in names:
        return names[id(obj)]
    if isinstance(obj, Tensor):
        return f"another tensor {obj!r}"
    return repr(obj)


def _labels(items, names: dict) -> str:
    return "[" + ", ".join(_label(x, names) for x in items) + "]"


def _leaf(value, name):
    return ml.tensor(value, requires_grad=True, name=name)


# --------------------------------------------------------------------------------------------
# Exercise 1: parents_of


def check_parents_of(parents_of) -> None:
    a, b = _leaf(2.0, "a"), _leaf(3.0, "b")
    k = ml.tensor(5.0, name="k")  # a tensor that does not require grad
    c = a * b
    d = c + a
    names = {id(a): "a", id(b): "b", id(c): "c", id(d): "d", id(k): "k"}
    cases = [
        (a, "the leaf a", [], "a leaf was made by no op: its list is empty"),
        (c, "c = a * b", [a, b], "the op's inputs, in the order the op took them"),
        (d, "d = c + a (with c = a * b)", [c, a], "only the op's own inputs, not theirs"),
        (a * 3, "a * 3", [a], "the 3 is a plain number, not a tensor: leave it out"),
        (3 * a, "3 * a", [a], "the 3 is a plain number, not a tensor: leave it out"),
        (a + a, "a + a", [a, a], "one entry per input, even when a tensor is used twice"),
        (
            a * k,
            "a * k (k = ml.tensor(5.0), which does not require grad)",
            [a, k],
            "k is a tensor the op consumed, even though it needs no gradient",
        ),
    ]
    for t, what, expected, why in cases:
        got = call(f"parents_of({what})", parents_of, t)
        if not isinstance(got, list | tuple):
            raise AssertionError(
                f"parents_of({what}) returned {got!r}; return a list of tensors, "
                f"here {_labels(expected, names)} ({why})"
            )
        got = list(got)
        if len(got) != len(expected) or not all(g is e for g, e in zip(got, expected, strict=True)):
            raise AssertionError(
                f"parents_of({what}): expected {_labels(expected, names)}, "
                f"got {_labels(got, names)} - {why}"
            )
    print("✓ parents_of: leaves, + and *, constants and a tensor used twice all come out right")


# --------------------------------------------------------------------------------------------
# Exercise 2: graph_size


def check_graph_size(graph_size) -> None:
    a, b = _leaf(2.0, "a"), _leaf(3.0, "b")
    h = a * b
    twin_a, twin_b = _leaf(2.0, "p"), _leaf(2.0, "q")  # equal values, different tensors
    v = _leaf([1.0, 2.0, 3.0], "v")
    cases = [
        (a, "the leaf a", (1, 0), "a leaf is one tensor and no op"),
        (h, "h = a * b", (3, 1), "a, b and h; one Mul"),
        (h * h + h, "h * h + h (h = a * b)", (5, 3), "a, b, h, h*h and the sum; h counts once"),
        (twin_a * twin_b, "p * q with p and q both 2.0", (3, 1), "p and q are two tensors"),
        (a * 3, "a * 3", (2, 1), "the 3 is a constant, not a tensor"),
        (a * ml.tensor(5.0), "a * ml.tensor(5.0)", (3, 1), "ml.tensor(5.0) is a leaf tensor"),
        ((v + v) * v, "(v + v) * v with v of shape (3,)", (3, 2), "v, v+v and the product"),
    ]
    for t, what, expected, why in cases:
        got = call(f"graph_size({what})", graph_size, t)
        if not isinstance(got, tuple | list) or len(got) != 2:
            raise AssertionError(
                f"graph_size({what}) returned {got!r}; return a pair (tensors, ops), "
                f"here {expected}"
            )
        if tuple(got) != expected:
            raise AssertionError(
                f"graph_size({what}): expected (tensors, ops) = {expected} ({why}), "
                f"got {tuple(got)}"
            )
    depth = 5000
    y = a
    for _ in range(depth):
        y = y + a
    got = call(f"graph_size of a chain of {depth} additions y = y + a", graph_size, y)
    if tuple(got) != (depth + 1, depth):
        raise AssertionError(
            f"graph_size of a chain of {depth} additions y = y + a: expected "
            f"{(depth + 1, depth)} (a and the {depth} sums; {depth} Add ops), got {tuple(got)}"
        )
    print("✓ graph_size: every tensor and op counted once, a 5000-op chain without recursion")


# --------------------------------------------------------------------------------------------
# Exercise 3: 3x^2 + 2x + 1 in at most 4 ops


def _walk(root: Tensor) -> tuple[list, list]:
    """(tensors, ops) of root's graph in a fixed order, without recursion."""
    tensors, ops, seen = [], [], {}
    stack = [root]
    while stack:
        t = stack.pop()
        if id(t) in seen:
            continue
        seen[id(t)] = True
        tensors.append(t)
        if t._ctx is not None:
            ops.append(t._ctx)
            stack.extend(p for p in reversed(t._ctx.parents) if isinstance(p, Tensor))
    return tensors, ops


MAX_POLY_OPS = 4


def check_poly(poly):
    """Check value and graph of poly(x) = 3x^2 + 2x + 1; return the picture of its graph."""
    for values in (2.0, [-1.0, 0.0, 0.5, 2.0]):
        x = ml.tensor(values, requires_grad=True, name="x")
        what = f"poly(x) with x = {x.data.tolist()}"
        y = call(what, poly, x)
        if not isinstance(y, Tensor):
            raise AssertionError(f"{what} returned {type(y).__name__}; return a Tensor")
        expected = 3 * x.data**2 + 2 * x.data + 1
        if y.shape != expected.shape or not np.allclose(y.data, expected):
            raise AssertionError(f"{what}: expected 3x² + 2x + 1 = {expected}, got {y.data}")
        if y.grad_fn is None:
            raise AssertionError(
                f"{what}: the value is right but y has no grad_fn - it is not connected to x. "
                "Compute with x itself (x * x), not with x.data, so each step becomes a node."
            )
        tensors, ops = _walk(y)
        leaves = [t for t in tensors if t._ctx is None]
        others = [t for t in leaves if t is not x]
        if others:
            raise AssertionError(
                f"{what}: the graph has a leaf tensor other than x: {others[0]!r}. Write the "
                "constants as plain numbers and compute everything from x with tensor "
                "operations (a result made from x.data is cut off from the graph)."
            )
        if not any(t is x for t in leaves):
            raise AssertionError(f"{what}: x does not appear in y's graph")
        if len(ops) > MAX_POLY_OPS:
            listed = ", ".join(type(op).__name__ for op in ops)
            raise AssertionError(
                f"{what}: the value is right, but the graph has {len(ops)} ops ({listed}); "
                f"use at most {MAX_POLY_OPS}. Factor x out of the first two terms."
            )
    uses = sum(p is x for op in ops for p in op.parents)
    print(f"✓ poly: 3x² + 2x + 1 in {len(ops)} ops, x feeds {uses} of them")
    from minilucid import viz

    y.name = y.name or "y"
    return viz.draw_graph(y)


# --------------------------------------------------------------------------------------------
# Exercise 4: predict shapes and dtypes


def _prediction_cases() -> list:
    ml.manual_seed(0)
    return [
        ("a", "ml.tensor(2.5)", lambda: ml.tensor(2.5)),
        ("b", "ml.tensor([[1, 2, 3]])", lambda: ml.tensor([[1, 2, 3]])),
        ("c", "ml.tensor(np.linspace(0, 1, 4))", lambda: ml.tensor(np.linspace(0, 1, 4))),
        ("d", "ml.zeros(2, 3) + ml.ones(3)", lambda: ml.zeros(2, 3) + ml.ones(3)),
        ("e", "ml.randn(4, 1) * ml.rand(3)", lambda: ml.randn(4, 1) * ml.rand(3)),
        (
            "f",
            "ml.tensor([1.0, 2.0]) + ml.tensor(np.array([1.0, 2.0]))",
            lambda: ml.tensor([1.0, 2.0]) + ml.tensor(np.array([1.0, 2.0])),
        ),
        ("g", "ml.tensor(3.0) * 2", lambda: ml.tensor(3.0) * 2),
    ]


def check_predictions(predict) -> None:
    got = call("predict()", predict)
    if not isinstance(got, dict):
        raise AssertionError(f"predict() returned {type(got).__name__}; return a dict")
    for label, expression, make in _prediction_cases():
        result = make()
        if label not in got:
            raise AssertionError(f"predict() has no entry {label!r} (for {expression})")
        entry = got[label]
        if not isinstance(entry, tuple | list) or len(entry) != 2:
            raise AssertionError(
                f"predict()[{label!r}] is {entry!r}; give a pair (shape, dtype name), "
                f"for example ((2, 3), 'float32')"
            )
        shape, dtype = entry
        try:
            shape_ok = tuple(shape) == result.shape
        except TypeError:
            shape_ok = False
        try:
            dtype_ok = dtype is not None and np.dtype(dtype) == result.dtype
        except TypeError:
            dtype_ok = False
        if not shape_ok:
            raise AssertionError(
                f"{label} = {expression}: the shape you predicted, {shape!r}, is not right. "
                "Line the shapes up from the right, and remember that one number has shape ()."
            )
        if not dtype_ok:
            raise AssertionError(
                f"{label} = {expression}: the shape is right, the dtype you predicted, "
                f"{dtype!s}, is not. Where do the numbers come from (a Python float or int, a "
                "NumPy array), and which dtype wins when two meet?"
            )
    print("✓ predictions: all 7 shapes and dtypes right")


# --------------------------------------------------------------------------------------------
# Exercise 5: count the paths


class WalkTooLong(Exception):
    """Raised inside the learner's walk once it has looked at far more tensors than exist."""


class _Watched(Tensor):
    """A tensor whose grad_fn counts how often a walk asks for it (no new slots: same layout)."""

    __slots__ = ()
    budget = {"left": 0, "nodes": 0}

    @property
    def grad_fn(self):
        _Watched.budget["left"] -= 1
        if _Watched.budget["left"] < 0:
            n = _Watched.budget["nodes"]
            raise WalkTooLong(
                f"your walk asked for grad_fn more than 50 times per tensor of a graph of {n} "
                "tensors: it follows every path one by one, and there are far too many. Visit "
                "each tensor once, in an order in which a tensor comes after every tensor "
                "computed from it, and carry a count per tensor."
            )
        return self._ctx


def _reference_paths(root: Tensor, leaf) -> int:
    """Paths from leaf to root, one edge per parent slot: counts carried in reverse order."""
    order, seen, stack = [], set(), [(root, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
        elif id(node) not in seen:
            seen.add(id(node))
            stack.append((node, True))
            if node._ctx is not None:
                stack.extend((p, False) for p in node._ctx.parents if isinstance(p, Tensor))
    paths = {id(root): 1}
    for node in reversed(order):
        if node._ctx is not None:
            for p in node._ctx.parents:
                if isinstance(p, Tensor):
                    paths[id(p)] = paths.get(id(p), 0) + paths.get(id(node), 0)
    return paths.get(id(leaf), 0)


def _watch(root: Tensor) -> None:
    """Make every tensor of root's graph count the walk's visits."""
    tensors, stack, seen = [], [root], set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        tensors.append(node)
        if node._ctx is not None:
            stack.extend(p for p in node._ctx.parents if isinstance(p, Tensor))
    for t in tensors:
        t.__class__ = _Watched
    _Watched.budget.update(left=50 * len(tensors) + 100, nodes=len(tensors))


def _path_cases() -> list:
    a, b = _leaf(2.0, "a"), _leaf(3.0, "b")
    k = ml.tensor(5.0, name="k")  # does not require grad: still a tensor of the graph
    h = a * b
    doubled = a
    for _ in range(60):
        doubled = doubled + doubled
    chain = a
    for _ in range(5000):
        chain = chain * 1.0
    x = y = _leaf(1.0, "u")  # the values stay small, the counts do not
    for _ in range(40):  # a ladder: both rungs feed both rungs of the next level
        x, y = x * y, x - y
    lonely = _leaf(1.0, "z")
    return [
        ("count_paths(a, a)", a, a, "a tensor reaches itself along one path, the empty one"),
        ("count_paths(a * b, a)", h, a, "one edge, one path"),
        ("count_paths(a * b + a, a)", h + a, a, "a reaches the sum directly and through a * b"),
        ("count_paths(h * h + h, a) with h = a * b", h * h + h, a, "h feeds h * h twice"),
        ("count_paths(a * b, z) for a z not in the graph", h, lonely, "no path at all: 0"),
        ("count_paths(a * k, k), k a tensor that needs no gradient", a * k, k, "k is a tensor"),
        ("count_paths(a * 3, a)", a * 3, a, "the 3 is a number, not a tensor"),
        ("a doubled 60 times (d = d + d)", doubled, a, "every doubling doubles the count"),
        ("a chain of 5000 multiplications", chain, a, "deeper than Python's recursion limit"),
        ("a 40-level ladder from u (x, y = x * y, x - y)", x, _ladder_leaf(x), "counts grow fast"),
    ]


def _ladder_leaf(root: Tensor) -> Tensor:
    """The leaf named u at the bottom of the ladder."""
    node = root
    while node._ctx is not None:
        node = node._ctx.parents[0]
    return node


def check_count_paths(count_paths) -> None:
    for what, root, leaf, why in _path_cases():
        expected = _reference_paths(root, leaf)
        _watch(root)
        got = call(what, count_paths, root, leaf)
        if isinstance(got, bool) or not isinstance(got, int | np.integer):
            raise AssertionError(
                f"{what} returned {got!r}, a {type(got).__name__}; return a whole number (int). "
                "A float cannot hold counts like 2**60 exactly."
            )
        if int(got) != expected:
            raise AssertionError(f"{what}: expected {expected}, got {int(got)} ({why})")
    print("✓ count_paths: right on 10 graphs, 2**60 paths and a 5000-deep chain included")
    a = _leaf(1.0, "a")
    d = a
    for _ in range(10):
        d = d + d
    paths = count_paths(d, a)
    d.backward()
    print(
        f"  a doubled 10 times: {paths} paths from a, and d(d)/da = {float(a.grad):g}: "
        "with only additions, the derivative counts the paths"
    )
