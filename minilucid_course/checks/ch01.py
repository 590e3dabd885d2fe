"""Checks for the exercises of chapter 01 (the Tensor as a node).

Each check is a probe and a judge (minilucid_course.checks.exercise): the probe builds the
case's graph, calls the learner's function and turns what came back into plain data (tensors as
indices into the graph's list of tensors); the judge builds the same graph in its own process
and computes every expected answer there.
"""

import numpy as np

import minilucid as ml
from minilucid.tensor import Tensor
from minilucid_course.checks.common import (
    attempt,
    attempt_each,
    chapter_register,
    graph_tensors,
    judged_cases,
    judged_entry,
)
from minilucid_course.checks.exercise import LAB_SEED, Wrong

STRANGER = -1  # a tensor that is not in the case's graph
NOT_A_TENSOR = -2


_register = chapter_register("01")


def _values(seed: int, n: int) -> list[float]:
    """n leaf values: the chapter's 2.0, 3.0, ... in the lab, others under a grading seed."""
    if seed == LAB_SEED:
        return [2.0, 3.0, 5.0, 1.0][:n]
    rng = np.random.default_rng(seed)
    return [float(v) for v in np.round(rng.uniform(0.5, 4.0, size=n), 2)]


def _leaf(value, name):
    return ml.tensor(value, requires_grad=True, name=name)


def _indices(items, nodes: list) -> list[int]:
    """Learner's tensors as indices into `nodes` (STRANGER, NOT_A_TENSOR for the others)."""
    index = {id(t): k for k, t in enumerate(nodes)}
    return [index.get(id(x), STRANGER) if isinstance(x, Tensor) else NOT_A_TENSOR for x in items]


def _int_list(value, what: str) -> list[int]:
    if not isinstance(value, list) or not all(type(v) is int for v in value):
        raise Wrong(f"the results of your answer hold nothing for {what}")
    return value


def _returned(value) -> dict:
    """What a learner's function returned, when it is not what the exercise asks for."""
    shown = repr(value) if value is None or type(value) in (bool, int, float, str) else None
    return {"kind": type(value).__name__, "shown": shown[:80] if shown else None}


def _returned_text(entry) -> str:
    kind, shown = entry.get("kind"), entry.get("shown")
    if not isinstance(kind, str):
        raise Wrong("the results of your answer do not say what it returned")
    return shown if isinstance(shown, str) else f"a {kind[:40]}"


def _probe_each(calls, fn, convert) -> dict:
    """Each result as convert(result, *args), or what it is when convert gives None."""

    def converted(result, *args):
        value = convert(result, *args)
        return _returned(result) if value is None else value

    return {"cases": attempt_each(calls, fn, converted)}


# --------------------------------------------------------------------------------------------
# Exercise 1: parents_of


def _parents_graphs(seed: int) -> list:
    """(what, nodes, root, why) per case; nodes[-1] is root, the learner gets root."""
    va, vb, vk = _values(seed, 3)
    a, b = _leaf(va, "a"), _leaf(vb, "b")
    k = ml.tensor(vk, name="k")  # a tensor that does not require grad
    c = a * b
    d = c + a
    base = [a, b, k, c, d]
    cases = [
        ("the leaf a", a, "a leaf was made by no op: its list is empty"),
        ("c = a * b", c, "the op's inputs, in the order the op took them"),
        ("d = c + a (with c = a * b)", d, "only the op's own inputs, not theirs"),
        ("a * 3", a * 3, "the 3 is a plain number, not a tensor"),
        ("3 * a", 3 * a, "the 3 is a plain number, not a tensor"),
        ("a + a", a + a, "one entry per input, even when a tensor is used twice"),
        (
            "a * k (k = ml.tensor(5.0), which does not require grad)",
            a * k,
            "k is a tensor the op consumed, even though it needs no gradient",
        ),
    ]
    return [(what, base + [root], root, why) for what, root, why in cases]


_NAMES = ("a", "b", "k", "c", "d", "the result")


def _probe_parents(cases, parents_of):
    graphs = _parents_graphs(cases["seed"])
    nodes = {id(root): nodes for _, nodes, root, _ in graphs}

    def convert(got, root):
        if isinstance(got, list | tuple):
            return {"parents": _indices(list(got), nodes[id(root)])}
        return None

    return _probe_each(((root,) for _, _, root, _ in graphs), parents_of, convert)


def _labels(indices) -> str:
    shown = []
    for i in indices:
        if 0 <= i < len(_NAMES):
            shown.append(_NAMES[i])
        else:
            shown.append("a number" if i == NOT_A_TENSOR else "another tensor")
    return "[" + ", ".join(shown) + "]"


def _judge_parents(cases, data) -> str:
    graphs = _parents_graphs(cases["seed"])
    entries = judged_cases(data, "cases", len(graphs))
    for (what, nodes, root, why), entry in zip(graphs, entries, strict=False):
        entry = judged_entry(entry, what, f"parents_of({what})")
        index = {id(t): i for i, t in enumerate(nodes)}
        ctx = root._ctx
        expected = (
            [] if ctx is None else [index[id(p)] for p in ctx.parents if isinstance(p, Tensor)]
        )
        if "parents" not in entry:
            raise Wrong(
                f"parents_of({what}) returned {_returned_text(entry)}; the exercise asks for a "
                f"list of tensors, here {_labels(expected)} ({why})"
            )
        got = _int_list(entry["parents"], f"parents_of({what})")
        if got != expected:
            raise Wrong(
                f"parents_of({what}): expected {_labels(expected)}, got {_labels(got)} - {why}"
            )
    return "✓ parents_of: leaves, + and *, constants and a tensor used twice all come out right"


PARENTS = _register(
    "check_parents_of",
    "The parents of a tensor",
    _probe_parents,
    _judge_parents,
)
check_parents_of = PARENTS.lab_check


# --------------------------------------------------------------------------------------------
# Exercise 2: graph_size

CHAIN = 5000


def _size_graphs(seed: int) -> list:
    """(what, root, why) per case."""
    va, vb, vt = _values(seed, 3)
    a, b = _leaf(va, "a"), _leaf(vb, "b")
    h = a * b
    twin_a, twin_b = _leaf(vt, "p"), _leaf(vt, "q")  # equal values, different tensors
    v = _leaf([1.0, 2.0, vt], "v")
    y = a
    for _ in range(CHAIN):
        y = y + a
    return [
        ("the leaf a", a, "a leaf is one tensor and no op"),
        ("h = a * b", h, "a, b and h; one Mul"),
        ("h * h + h (h = a * b)", h * h + h, "a, b, h, h*h and the sum; h counts once"),
        ("p * q with p and q both equal", twin_a * twin_b, "p and q are two tensors"),
        ("a * 3", a * 3, "the 3 is a constant, not a tensor"),
        ("a * ml.tensor(5.0)", a * ml.tensor(5.0), "ml.tensor(5.0) is a leaf tensor"),
        ("(v + v) * v with v of shape (3,)", (v + v) * v, "v, v+v and the product"),
        (
            f"a chain of {CHAIN} additions y = y + a",
            y,
            f"a and the {CHAIN} sums; {CHAIN} Add ops",
        ),
    ]


def _pair(got, root):
    if (
        isinstance(got, tuple | list)
        and len(got) == 2
        and all(isinstance(n, int | np.integer) and not isinstance(n, bool) for n in got)
    ):
        return {"size": [int(n) for n in got]}
    return None


def _probe_size(cases, graph_size):
    calls = ((root,) for _, root, _ in _size_graphs(cases["seed"]))
    return _probe_each(calls, graph_size, _pair)


def _judge_size(cases, data) -> str:
    graphs = _size_graphs(cases["seed"])
    entries = judged_cases(data, "cases", len(graphs))
    for (what, root, why), entry in zip(graphs, entries, strict=False):
        entry = judged_entry(entry, what, f"graph_size({what})")
        nodes = graph_tensors(root)
        expected = (len(nodes), sum(t._ctx is not None for t in nodes))
        if "size" not in entry:
            raise Wrong(
                f"graph_size({what}) returned {_returned_text(entry)}; the exercise asks for a "
                f"pair of whole numbers (tensors, ops)"
            )
        got = _int_list(entry["size"], f"graph_size({what})")
        if len(got) != 2:
            raise Wrong(f"the results of your answer hold nothing for graph_size({what})")
        if tuple(got) != expected:
            raise Wrong(
                f"graph_size({what}): expected (tensors, ops) = {expected} ({why}), "
                f"got {tuple(got)}"
            )
    return "✓ graph_size: every tensor and op counted once, a 5000-op chain without recursion"


SIZE = _register(
    "check_graph_size",
    "Counting a graph",
    _probe_size,
    _judge_size,
    forbidden=("topological_order",),
)
check_graph_size = SIZE.lab_check


# --------------------------------------------------------------------------------------------
# Exercise 3: 3x^2 + 2x + 1 in at most 4 ops

MAX_POLY_OPS = 4


def _walk(root: Tensor) -> tuple[list, list]:
    """(tensors, ops) of root's graph in a fixed order, without recursion."""
    tensors = graph_tensors(root)
    return tensors, [t._ctx for t in tensors if t._ctx is not None]


def _poly_inputs(seed: int) -> list:
    if seed == LAB_SEED:
        return [2.0, [-1.0, 0.0, 0.5, 2.0]]
    rng = np.random.default_rng(seed)
    return [float(np.round(rng.uniform(1.0, 3.0), 2)), np.round(rng.uniform(-2, 2, 4), 2).tolist()]


def _poly_data(y, x):
    if not isinstance(y, Tensor):
        return None
    tensors, ops = _walk(y)
    leaves = [t for t in tensors if t._ctx is None]
    others = [t for t in leaves if t is not x]
    return {
        "values": np.array(y.data, dtype=np.float64),
        "graph": y._ctx is not None,
        "ops": [type(op).__name__[:40] for op in ops],
        "x_is_leaf": any(t is x for t in leaves),
        "other_leaf": repr(others[0])[:80] if others else None,
        "x_uses": sum(p is x for op in ops for p in op.parents),
    }


def _probe_poly(cases, poly):
    calls = ((ml.tensor(v, requires_grad=True, name="x"),) for v in cases["inputs"])
    return _probe_each(calls, poly, _poly_data)


def _judge_poly(cases, data) -> str:
    inputs = cases["inputs"]
    entries = judged_cases(data, "cases", len(inputs))
    ops = uses = None
    for values, entry in zip(inputs, entries, strict=False):
        x = np.array(values, dtype=np.float32)
        what = f"poly(x) with x = {x.tolist()}"
        entry = judged_entry(entry, what, what)
        if "values" not in entry:
            raise Wrong(f"{what} returned {_returned_text(entry)}; the exercise asks for a Tensor")
        got = entry["values"]
        expected = 3 * x.astype(np.float64) ** 2 + 2 * x + 1
        if (
            not isinstance(got, np.ndarray)
            or got.shape != expected.shape
            or not np.allclose(got, expected, rtol=1e-5, atol=1e-5)
        ):
            shown = got if isinstance(got, np.ndarray) else "no values"
            raise Wrong(f"{what}: expected 3x² + 2x + 1 = {expected}, got {shown}")
        ops, uses, other = entry["ops"], entry["x_uses"], entry["other_leaf"]
        if not isinstance(ops, list) or not all(isinstance(o, str) for o in ops):
            raise Wrong(f"the results of your answer hold no graph for {what}")
        if entry["graph"] is not True:
            raise Wrong(
                f"{what}: the value is right but y has no grad_fn - it is not connected to x, "
                "so no step of it is a node of the graph"
            )
        if other is not None:
            raise Wrong(
                f"{what}: the graph has a leaf tensor other than x: {str(other)[:80]} (a result "
                "made from x.data is cut off from the graph, and becomes a leaf of its own)"
            )
        if entry["x_is_leaf"] is not True:
            raise Wrong(f"{what}: x does not appear in y's graph")
        if len(ops) > MAX_POLY_OPS:
            raise Wrong(
                f"{what}: the value is right, but the graph has {len(ops)} ops "
                f"({', '.join(ops)}); the exercise allows at most {MAX_POLY_OPS}"
            )
        if type(uses) is not int:
            raise Wrong(f"the results of your answer hold no graph for {what}")
    return f"✓ poly: 3x² + 2x + 1 in {len(ops)} ops, x feeds {uses} of them"


POLY = _register(
    "check_poly",
    "A polynomial in four ops",
    _probe_poly,
    _judge_poly,
    cases=lambda seed: {"seed": seed, "inputs": _poly_inputs(seed)},
)


def check_poly(poly):
    """Check value and graph of poly(x) = 3x^2 + 2x + 1; return the picture of its graph."""
    POLY.lab_check(poly)
    from minilucid import viz

    x = ml.tensor([-1.0, 0.0, 0.5, 2.0], requires_grad=True, name="x")
    y = poly(x)
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


def _plain_prediction(entry) -> dict:
    """One predicted (shape, dtype) as plain data: the shape as ints, the dtype's NumPy name."""
    if not isinstance(entry, tuple | list) or len(entry) != 2:
        return {"pair": False, "shown": repr(entry)[:80]}
    shape, dtype = entry
    try:
        shape = [int(n) for n in tuple(shape)]
    except (TypeError, ValueError):
        shape = None
    try:
        dtype_name = None if dtype is None else np.dtype(dtype).name
    except TypeError:
        dtype_name = None
    return {
        "pair": True,
        "shape": shape,
        "shape_shown": repr(entry[0])[:40],
        "dtype": dtype_name,
        "dtype_shown": str(dtype)[:40],
    }


def _probe_predictions(cases, predict):
    record = attempt(predict)
    if record[0] == "raised":
        return {"raised": list(record)}
    got = record[1]
    if not isinstance(got, dict):
        return {"returned": type(got).__name__}
    return {
        "entries": {
            label: _plain_prediction(got[label])
            for label, _, _ in _prediction_cases()
            if label in got
        }
    }


def _judge_predictions(cases, data) -> str:
    if not isinstance(data, dict):
        raise Wrong("the results of your answer hold no predictions")
    data = judged_entry(data, "predict()", "predict()")
    if "entries" not in data:
        returned = data.get("returned")
        raise Wrong(f"predict() returned {str(returned)[:40]}; the exercise asks for a dict")
    entries = data["entries"]
    if not isinstance(entries, dict):
        raise Wrong("the results of your answer hold no predictions")
    for label, expression, make in _prediction_cases():
        result = make()
        if label not in entries:
            raise Wrong(f"predict() has no entry {label!r} (for {expression})")
        entry = entries[label]
        if not isinstance(entry, dict) or entry.get("pair") is not True:
            shown = entry.get("shown") if isinstance(entry, dict) else None
            raise Wrong(
                f"predict()[{label!r}] is {str(shown)[:80]}; the exercise asks for a pair "
                "(shape, dtype name), for example ((2, 3), 'float32')"
            )
        shape, dtype = entry["shape"], entry["dtype"]
        if shape is None or tuple(_int_list(shape, f"predict()[{label!r}]")) != result.shape:
            raise Wrong(
                f"{label} = {expression}: the shape you predicted, {str(entry['shape_shown'])}, "
                "is not right. Line the shapes up from the right, and remember that one number "
                "has shape ()."
            )
        if not isinstance(dtype, str) or dtype != result.dtype.name:
            raise Wrong(
                f"{label} = {expression}: the shape is right, the dtype you predicted, "
                f"{str(entry['dtype_shown'])}, is not. Where do the numbers come from (a Python "
                "float or int, a NumPy array), and which dtype wins when two meet?"
            )
    return "✓ predictions: all 7 shapes and dtypes right"


PREDICT = _register(
    "check_predictions",
    "Predict shape and dtype",
    _probe_predictions,
    _judge_predictions,
)
check_predictions = PREDICT.lab_check


# --------------------------------------------------------------------------------------------
# Exercise 5: count the paths


class WalkTooLong(Exception):
    """Raised inside the learner's walk once it has looked at far more tensors than exist."""


WALK_TOO_LONG = "asked for grad_fn more than 50 times per tensor"


class _Watched(Tensor):
    """A tensor whose grad_fn counts how often a walk asks for it (no new slots: same layout)."""

    __slots__ = ()
    budget = {"left": 0, "nodes": 0}

    @property
    def grad_fn(self):
        _Watched.budget["left"] -= 1
        if _Watched.budget["left"] < 0:
            raise WalkTooLong(WALK_TOO_LONG)
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
    tensors = graph_tensors(root)
    for t in tensors:
        t.__class__ = _Watched
    _Watched.budget.update(left=50 * len(tensors) + 100, nodes=len(tensors))


def _path_cases(seed: int = LAB_SEED) -> list:
    va, vb, vk = _values(seed, 3)
    a, b = _leaf(va, "a"), _leaf(vb, "b")
    k = ml.tensor(vk, name="k")  # does not require grad: still a tensor of the graph
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


def _watched_calls(seed: int):
    """(root, leaf) per case, each graph watched just before the learner's walk gets it."""
    for _, root, leaf, _ in _path_cases(seed):
        _watch(root)
        yield root, leaf


def _count(got, root, leaf):
    if isinstance(got, int | np.integer) and not isinstance(got, bool):
        return {"count": int(got)}
    return None


def _probe_paths(cases, count_paths):
    return _probe_each(_watched_calls(cases["seed"]), count_paths, _count)


def _judge_paths(cases, data) -> str:
    graphs = _path_cases(cases["seed"])
    entries = judged_cases(data, "cases", len(graphs))
    for (what, root, leaf, why), entry in zip(graphs, entries, strict=False):
        if isinstance(entry, dict) and "raised" in entry:
            record = entry["raised"]
            if isinstance(record, list) and len(record) == 3 and record[1] == "WalkTooLong":
                n = len(graph_tensors(root))
                raise Wrong(
                    f"{what}: your walk asked for grad_fn more than 50 times per tensor of a "
                    f"graph of {n} tensors: it follows every path one by one, and there are far "
                    "too many to visit them all (a count per tensor would need each tensor once)"
                )
        entry = judged_entry(entry, what, what)
        expected = _reference_paths(root, leaf)
        if "count" not in entry:
            raise Wrong(
                f"{what} returned {_returned_text(entry)}; the exercise asks for a whole number "
                "(int). A float cannot hold counts like 2**60 exactly."
            )
        got = entry["count"]
        if type(got) is not int:
            raise Wrong(f"the results of your answer hold nothing for {what}")
        if got != expected:
            raise Wrong(f"{what}: expected {expected}, got {got} ({why})")
    return "✓ count_paths: right on 10 graphs, 2**60 paths and a 5000-deep chain included"


def _after_paths(count_paths) -> None:
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


PATHS = _register(
    "check_count_paths",
    "How many paths?",
    _probe_paths,
    _judge_paths,
    after=_after_paths,
)
check_count_paths = PATHS.lab_check
