"""Checks for the exercises of chapter 04 (Shapes).

Each check runs the learner's code on many inputs, compares with the right answer and says in
plain words what differs (which input, which gradient, which entry, expected and got). Then it
plugs the learner's code into the real engine: their `sum_to_shape` un-broadcasts for the engine's
backward, their ops run inside real graphs and under `gradcheck`. A check returns the picture of
that graph, so the check cell shows it.
"""

from __future__ import annotations

import numpy as np

from minilucid.function import Function
from minilucid.gradcheck import gradcheck
from minilucid.ops.elementwise import Add, Mul
from minilucid.tensor import Tensor, float64
from minilucid_course.checks.common import (
    attempt,
    attempt_each,
    call,
    cases_of,
    chapter_register,
    frozen,
    judged_cases,
    judged_entry,
    number,
)
from minilucid_course.checks.exercise import LAB_SEED, Wrong

_register = chapter_register("04")


def _count(name: str, right: bool | None = None) -> int:
    """How many cases the check ran (for its ✓ line); with `right`, only those so marked."""
    found = cases_of(__name__, name)
    return len(found) if right is None else sum(bool(c[-1]) == right for c in found)


# --------------------------------------------------------------------------------------------
# Shared helpers


def _entry(where: tuple) -> str:
    return "(" + ", ".join(str(int(i)) for i in where) + (",)" if len(where) == 1 else ")")


def _compare(what: str, got, expected: np.ndarray, note: str = "") -> None:
    """Shape first, then values; the message names the first entry that differs."""
    if got is None:
        raise Wrong(f"{what}: expected an array of shape {expected.shape}, got None")
    try:
        got_shape = np.shape(got)
        if got_shape == expected.shape:
            got = np.asarray(got, dtype=float64)
    except (TypeError, ValueError):
        raise Wrong(f"{what}: expected an array of shape {expected.shape}, got no array") from None
    if got_shape != expected.shape:
        raise Wrong(f"{what}: expected shape {expected.shape}, got shape {got_shape}{note}")
    bad = ~np.isclose(got, expected, rtol=1e-6, atol=1e-9)
    if bad.any():
        where = np.unravel_index(int(np.argmax(bad)), expected.shape)
        raise Wrong(
            f"{what}: wrong at entry {_entry(where)}: expected {number(expected[where])}, "
            f"got {number(got[where])} ({int(bad.sum())} of {expected.size} entries differ)"
            f"{note}"
        )


def _graph_check(what: str, fn, inputs) -> None:
    try:
        gradcheck(fn, inputs)
    except NotImplementedError:
        raise
    except AssertionError as error:  # GradcheckError is an AssertionError
        raise AssertionError(f"{what}: {error}") from error
    except Exception as error:
        raise AssertionError(f"{what} raised {type(error).__name__}: {error}") from error


def _leaf(array: np.ndarray, name: str) -> Tensor:
    return Tensor(np.array(array, dtype=float64), requires_grad=True, name=name)


def _draw_backward(root: Tensor):
    """The backward picture of root (runs backward); plain backward if pictures are unavailable."""
    try:
        from minilucid import viz
    except ImportError:
        root.backward(retain_graph=True)
        return None
    return viz.draw_backward(root)


def _shape_text(shape: tuple) -> str:
    return str(tuple(shape))


# --------------------------------------------------------------------------------------------
# Exercise 1: sum_to_shape

SUM_TO_SHAPE_PAIRS = frozen(
    __name__,
    "SUM_TO_SHAPE_PAIRS",
    (
        ((3, 4), (3, 4)),
        ((3, 4), (4,)),
        ((3, 4), (1, 4)),
        ((3, 4), (3, 1)),
        ((4, 4), (1, 4)),
        ((4, 4), (4, 1)),
        ((3, 4), (1, 1)),
        ((3, 4), ()),
        ((5,), (1,)),
        ((2, 3, 4), (4,)),
        ((2, 3, 4), (3, 1)),
        ((2, 3, 4), (2, 1, 4)),
        ((2, 3, 4), (1, 3, 1)),
        ((2, 1, 3), (1, 1, 3)),
    ),
)


def _grad_of_shape(shape: tuple, seed: int = LAB_SEED) -> np.ndarray:
    """Distinct entries, so that summing the wrong dimension cannot give the right numbers."""
    size = int(np.prod(shape))
    values = np.arange(1, size + 1, dtype=float64) * np.where(np.arange(size) % 3 == 1, -1, 1)
    if seed != LAB_SEED:
        values = np.random.default_rng(seed).permutation(values)
    return values.reshape(shape)


def _array_data(value, *_):
    """A learner's result as plain data: a float64 array, or what it is when it is none."""
    if value is None:
        return {"none": True}
    try:
        return {"array": np.array(value, dtype=float64)}
    except (TypeError, ValueError):
        return {"kind": type(value).__name__[:40]}


def _all_ran(items: list, n: int) -> bool:
    return len(items) == n and "raised" not in items[-1]


def _judged_array(entry, what: str):
    """The learner's array out of one entry of probe data (None when they returned None)."""
    entry = judged_entry(entry, what, what)
    if entry.get("none") is True:
        return None
    if "array" not in entry:
        raise Wrong(f"{what} returned a {str(entry.get('kind'))[:40]}, not an array")
    return entry["array"]


def _reference_sum_to_shape(grad: np.ndarray, shape: tuple) -> np.ndarray:
    extra = grad.ndim - len(shape)
    grad = grad.sum(axis=tuple(range(extra)))
    stretched = tuple(i for i, (g, s) in enumerate(zip(grad.shape, shape, strict=True)) if g != s)
    return grad.sum(axis=stretched, keepdims=True)


def _summing_with(op, sum_to_shape):
    """The package's binary `op`, its gradients summed back to each input's shape by yours.

    The gradients then reach the engine already of their inputs' shapes, so the engine's own
    sum_to_shape has nothing left to do: what arrives at the leaves is what your function summed.
    """

    class UsingYours(op):
        @staticmethod
        def forward(ctx, a, b):
            ctx.in_shapes = (np.shape(a), np.shape(b))
            return op.forward(ctx, a, b)

        @staticmethod
        def backward(ctx, grad):
            grads = op.backward(ctx, grad)
            return tuple(sum_to_shape(g, s) for g, s in zip(grads, ctx.in_shapes, strict=True))

    UsingYours.__name__ = UsingYours.__qualname__ = f"{op.__name__}UsingYours"
    return UsingYours


def _sum_engine_inputs(seed: int) -> tuple:
    rng = np.random.default_rng(4 if seed == LAB_SEED else seed)
    return rng.normal(size=(3, 4)), rng.normal(size=(4,)), rng.normal(size=(3, 1))


def _sum_engine_loss(sum_to_shape, seed: int) -> tuple:
    """((x + b) * c).sum() with + and * un-broadcasting by `sum_to_shape`; and x, b, c."""
    x0, b0, c0 = _sum_engine_inputs(seed)
    add, mul = _summing_with(Add, sum_to_shape), _summing_with(Mul, sum_to_shape)
    x, b, c = _leaf(x0, "x"), _leaf(b0, "b"), _leaf(c0, "c")
    return mul.apply(add.apply(x, b), c).sum(), (x, b, c)


def _probe_sum_to_shape(cases, sum_to_shape):
    calls = (
        (_grad_of_shape(grad_shape, cases["seed"]), shape)
        for grad_shape, shape in cases_of(__name__, "SUM_TO_SHAPE_PAIRS")
    )
    pairs = attempt_each(calls, sum_to_shape, _array_data)
    engine = {}
    if _all_ran(pairs, _count("SUM_TO_SHAPE_PAIRS")):
        loss, leaves = _sum_engine_loss(sum_to_shape, cases["seed"])
        record = attempt(loss.backward)
        if record[0] == "raised":
            engine = {"raised": list(record)}
        else:
            engine = {t.name: _array_data(t.grad) for t in leaves}
    return {"pairs": pairs, "engine": engine}


def _judge_sum_to_shape(cases, data) -> str:
    shapes = cases_of(__name__, "SUM_TO_SHAPE_PAIRS")
    pairs = judged_cases(data, "pairs", len(shapes))
    for (grad_shape, shape), entry in zip(shapes, pairs, strict=False):
        what = f"sum_to_shape(grad of shape {grad_shape}, {_shape_text(shape)})"
        got = _judged_array(entry, what)
        expected = _reference_sum_to_shape(_grad_of_shape(grad_shape, cases["seed"]), shape)
        note = ""
        if np.shape(got) != expected.shape and np.size(got) == expected.size:
            note = " - the numbers may be right, but a dimension of size 1 was dropped"
        _compare(what, got, expected, note)
    x0, b0, c0 = _sum_engine_inputs(cases["seed"])
    said = "the engine's backward of ((x + b) * c).sum()"
    engine = judged_entry(data.get("engine"), said, said)
    expected = (
        np.broadcast_to(c0, (3, 4)),
        (c0 * np.ones((3, 4))).sum(axis=0),
        (x0 + b0).sum(axis=1, keepdims=True),
    )
    for name, want in zip("xbc", expected, strict=True):
        what = (
            f"in the engine's backward of ((x + b) * c).sum() with x {x0.shape}, b {b0.shape}, "
            f"c {c0.shape}, where + and * un-broadcast with your sum_to_shape: {name}.grad"
        )
        _compare(what, _judged_array(engine.get(name), what), want)
    return (
        f"✓ sum_to_shape: all {_count('SUM_TO_SHAPE_PAIRS')} shape pairs right, and the engine's "
        "backward ran on it: b.grad (4,), c.grad (3, 1)"
    )


SUM_TO_SHAPE = _register(
    "check_sum_to_shape",
    "Un-broadcast a gradient: sum_to_shape",
    _probe_sum_to_shape,
    _judge_sum_to_shape,
    forbidden=("sum_to_shape",),
)


def check_sum_to_shape(sum_to_shape):
    """The check of Exercise 1; returns the backward picture of the engine running on yours."""
    SUM_TO_SHAPE.lab_check(sum_to_shape)
    loss, _ = _sum_engine_loss(sum_to_shape, LAB_SEED)
    return call("the engine's backward of ((x + b) * c).sum()", _draw_backward, loss)


# --------------------------------------------------------------------------------------------
# Exercise 2: MatMul.backward

MATMUL_SHAPES = frozen(
    __name__,
    "MATMUL_SHAPES",
    (((2, 3), (3, 4)), ((3, 3), (3, 3)), ((4, 2), (2, 3)), ((1, 3), (3, 1))),
)


def _op_context(op, *arrays):
    """A fresh context of `op` whose inputs all want gradients, as Function.apply would make."""
    ctx = op()
    ctx.parents = tuple(Tensor(a, requires_grad=True) for a in arrays)
    return ctx


OPTIONAL_BATCHED = ((2, 2, 3), (3, 4)), ((2, 2, 3), (2, 3, 4))


def _matmul_arrays(seed: int, k: int, shape_a, shape_b) -> tuple:
    """Case k's A, B and incoming gradient G (of A @ B's shape)."""
    rng = np.random.default_rng((2 if seed == LAB_SEED else seed, k))
    a, b = rng.normal(size=shape_a), rng.normal(size=shape_b)
    return (
        a,
        b,
        rng.normal(
            size=np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
            + (
                a.shape[-2],
                b.shape[-1],
            )
        ),
    )


def _probe_matmul(cases, op):
    seed, runs = cases["seed"], []
    for k, (shape_a, shape_b) in enumerate(cases_of(__name__, "MATMUL_SHAPES")):
        a, b, g = _matmul_arrays(seed, k, shape_a, shape_b)
        ctx = _op_context(op, a, b)
        record = attempt(op.forward, ctx, a, b)
        if record[0] == "raised":
            runs.append({"raised": ["forward", *record]})
            break
        z = _array_data(record[1])
        record = attempt(op.backward, ctx, g)
        if record[0] == "raised":
            runs.append({"raised": ["backward", *record]})
            break
        runs.append({"z": z, "grads": _pair_data(record[1]), "incoming_after": np.array(g)})
    data = {"name": _name_of(op), "runs": runs, "graph": {}, "batched": []}
    if not _all_ran(runs, _count("MATMUL_SHAPES")):
        return data
    x0, w0, g0 = _matmul_arrays(seed, 100, (2, 3), (3, 4))
    x, w = _leaf(x0, "x"), _leaf(w0, "W")
    record = attempt(lambda: (op.apply(x, w) * Tensor(g0)).sum().backward())
    data["graph"] = (
        {"raised": list(record)}
        if record[0] == "raised"
        else {"x": _array_data(x.grad), "W": _array_data(w.grad)}
    )
    for k, (shape_a, shape_b) in enumerate(OPTIONAL_BATCHED):  # the optional part
        a0, b0, g0 = _matmul_arrays(seed, 200 + k, shape_a, shape_b)
        a, b = _leaf(a0, "A"), _leaf(b0, "B")
        record = attempt(lambda a=a, b=b, g0=g0: (op.apply(a, b) * Tensor(g0)).sum().backward())
        ran = record[0] != "raised"
        data["batched"].append(
            {"A": _array_data(a.grad), "B": _array_data(b.grad)} if ran else {"raised": True}
        )
    return data


def _name_of(op) -> str:
    name = getattr(op, "__name__", None)
    return name[:40] if isinstance(name, str) else "op"


def _matmul_mistake(g, a, b, name: str, got) -> str:
    """A note naming a gradient that equals G @ B or A @ G: the product without its transpose."""
    shape = a.shape if name == "A" else b.shape
    if name == "A" and g.shape[1] == b.shape[0]:
        label, wrong = "G @ B, with B not transposed", g @ b
    elif name == "B" and a.shape[1] == g.shape[0]:
        label, wrong = "A @ G, with A not transposed", a @ g
    else:
        return f" (the gradient for {name} has {name}'s shape {shape})"
    want = g @ b.T if name == "A" else a.T @ g
    if np.shape(got) == wrong.shape and np.allclose(got, wrong) and not np.allclose(wrong, want):
        return f" (every entry equals {label})"
    return f" (the gradient for {name} has {name}'s shape {shape})"


def _judge_matmul(cases, data) -> str:
    shapes = cases_of(__name__, "MATMUL_SHAPES")
    runs = judged_cases(data, "runs", len(shapes))
    name = _op_name(data)
    for k, ((shape_a, shape_b), run) in enumerate(zip(shapes, runs, strict=False)):
        a, b, g = _matmul_arrays(cases["seed"], k, shape_a, shape_b)
        what = f"{name} with A of shape {shape_a} and B of shape {shape_b}"
        record = run.get("raised") if isinstance(run, dict) else None
        if isinstance(record, list) and len(record) == 4 and record[0] == "backward":
            if record[2] == "ValueError" and "matmul" in str(record[3]):
                raise Wrong(
                    f"{what}, incoming gradient G of shape {g.shape}: backward multiplied two "
                    f"arrays whose inner dimensions differ (NumPy's matmul refused them); the "
                    f"arrays at hand are G {g.shape}, A {shape_a} and B {shape_b}"
                )
        run = _incoming_untouched(run, what, g)
        _compare(f"{what}: forward", _judged_array(run.get("z"), f"{what}: forward"), a @ b)
        entry = run.get("grads")
        pair = entry.get("pair") if isinstance(entry, dict) else None
        if not isinstance(pair, list) or len(pair) != 2:
            kind = str(entry.get("kind"))[:40] if isinstance(entry, dict) else "nothing"
            length = entry.get("length") if isinstance(entry, dict) else None
            raise Wrong(
                f"{what}: backward must return two gradients (one for A, one for B), got {kind}"
                + (f" of length {length}" if type(length) is int else "")
            )
        for side, got_entry, want in (("A", pair[0], g @ b.T), ("B", pair[1], a.T @ g)):
            label = f"{what}, incoming gradient G of shape {g.shape}: the gradient for {side}"
            got = _judged_array(got_entry, label)
            _compare(label, got, want, _matmul_mistake(g, a, b, side, got))
    x0, w0, g0 = _matmul_arrays(cases["seed"], 100, (2, 3), (3, 4))
    said = f"in a real graph, ({name}.apply(x, W) * G).sum() with x (2, 3), W (3, 4)"
    graph = judged_entry(data.get("graph"), said, said)
    _compare(f"{said}: x.grad", _judged_array(graph.get("x"), f"{said}: x.grad"), g0 @ w0.T)
    _compare(f"{said}: W.grad", _judged_array(graph.get("W"), f"{said}: W.grad"), x0.T @ g0)
    batched = data.get("batched")
    if not isinstance(batched, list) or len(batched) != len(OPTIONAL_BATCHED):
        raise Wrong("the results of your answer hold nothing for the optional batched operands")
    extra = "batched operands: not yet (optional)"
    if all(isinstance(entry, dict) and "raised" not in entry for entry in batched):
        right = True
        for k, ((shape_a, shape_b), entry) in enumerate(
            zip(OPTIONAL_BATCHED, batched, strict=True)
        ):
            a, b, g = _matmul_arrays(cases["seed"], 200 + k, shape_a, shape_b)
            want = _reference_matmul_grads(a, b, g)
            got = [entry.get(n) if isinstance(entry, dict) else None for n in "AB"]
            for entry_of, w in zip(got, want, strict=True):
                array = entry_of.get("array") if isinstance(entry_of, dict) else None
                ok = isinstance(array, np.ndarray) and array.shape == w.shape
                right = right and ok and bool(np.allclose(array, w, rtol=1e-6, atol=1e-9))
        if right:
            extra = "batched operands work too"
    return (
        f"✓ {name}.backward: G @ B^T and A^T @ G right for {_count('MATMUL_SHAPES')} pairs of "
        f"2-D operands and in a real graph; {extra}"
    )


MATMUL = _register(
    "check_matmul_backward",
    "The backward of a matrix product",
    _probe_matmul,
    _judge_matmul,
    forbidden=("MatMul",),
)


def check_matmul_backward(op):
    """The check of Exercise 4; returns the backward picture of (op.apply(x, W) + b).sum()."""
    MATMUL.lab_check(op)
    rng = np.random.default_rng(2)
    x = _leaf(rng.normal(size=(2, 3)), "x")
    w, bias = _leaf(rng.normal(size=(3, 4)), "W"), _leaf(rng.normal(size=(4,)), "b")
    loss = (op.apply(x, w) + bias).sum()
    return call(f"backward of ({op.__name__}.apply(x, W) + b).sum()", _draw_backward, loss)


# --------------------------------------------------------------------------------------------
# Exercise 3: the backward of indexing (repeated indices accumulate)

GETITEM_CASES = frozen(
    __name__,
    "GETITEM_CASES",
    (
        ((5,), np.array([1, 3, 1, 1])),
        ((4, 3), np.array([2, 0, 2])),
        ((4, 3), (np.array([0, 0, 3, 0]), np.array([1, 1, 2, 1]))),
        ((6,), np.array([[0, 5], [5, 5]])),
        ((4, 3), (slice(None), np.array([2, 2]))),
        ((4, 3), slice(1, 3)),
        ((4, 3), 2),
        ((4, 3), (1, 2)),
    ),
)


def _index_text(index) -> str:
    def one(i):
        if isinstance(i, slice):
            parts = ["" if v is None else str(v) for v in (i.start, i.stop)]
            return ":".join(parts) + ("" if i.step is None else f":{i.step}")
        if isinstance(i, np.ndarray):
            return str(i.tolist())
        return str(i)

    parts = index if isinstance(index, tuple) else (index,)
    return "[" + ", ".join(one(i) for i in parts) + "]"


def _repeats(shape: tuple, index) -> bool:
    counts = np.zeros(shape)
    np.add.at(counts, index, 1)
    return bool((counts > 1).any())


def _getitem_arrays(seed: int, k: int, shape, index) -> tuple:
    rng = np.random.default_rng((3 if seed == LAB_SEED else seed, k))
    a = rng.normal(size=shape)
    return a, np.asarray(rng.normal(size=np.shape(a[index])))


LOOKUP = (1, 3, 1, 1)  # row 1 looked up three times (an index array: np.array of it)
LOOKUP_WEIGHTS = (1.0, 2.0, 3.0, 4.0)


def _lookup_table(seed: int) -> np.ndarray:
    return np.random.default_rng((3 if seed == LAB_SEED else seed, 1000)).normal(size=4)


def _lookup_loss(op, seed: int) -> tuple:
    table = _leaf(_lookup_table(seed), "E")
    weights = Tensor(np.array(LOOKUP_WEIGHTS), name="w")
    return (op.apply(table, index=np.array(LOOKUP)) * weights).sum(), table


def _probe_getitem(cases, op):
    runs = _op_runs(
        op,
        (
            (a, (index,), {}, g)
            for k, (shape, index) in enumerate(cases_of(__name__, "GETITEM_CASES"))
            for a, g in [_getitem_arrays(cases["seed"], k, shape, index)]
        ),
    )
    return _with_graph(op, runs, _count("GETITEM_CASES"), lambda: _lookup_loss(op, cases["seed"]))


def _judge_getitem(cases, data) -> str:
    shapes = cases_of(__name__, "GETITEM_CASES")
    runs = judged_cases(data, "runs", len(shapes))
    name = _op_name(data)
    for k, ((shape, index), run) in enumerate(zip(shapes, runs, strict=False)):
        a, g = _getitem_arrays(cases["seed"], k, shape, index)
        what = f"{name}: x of shape {shape}, z = x{_index_text(index)}"
        z, got = _judged_run(run, what, g)
        _compare(f"{what}: forward", z, a[index])
        expected = np.zeros(shape)
        np.add.at(expected, index, g)
        note = ""
        if _repeats(shape, index):
            lossy = np.zeros(shape)
            lossy[index] += g
            note = (
                " - this index picks some entries more than once, and each pick uses the entry "
                "once more"
            )
            if np.shape(got) == shape and np.allclose(got, lossy):
                note += (
                    ". Yours kept only one pick per entry, as `out[index] = grad` and "
                    "`out[index] += grad` do with repeated indices"
                )
        _compare(
            f"{what}, incoming gradient of shape {g.shape}: the gradient for x", got, expected, note
        )
    said = f"in a real graph, ({name}.apply(E, index=[1, 3, 1, 1]) * w).sum() with w = [1, 2, 3, 4]"
    expected = np.zeros(4)
    np.add.at(expected, np.array(LOOKUP), np.array(LOOKUP_WEIGHTS))
    got = _judged_array(data.get("graph"), f"{said}: backward")
    _compare(
        f"{said}: E.grad", got, expected, " (E[1] was used three times, with weights 1, 3 and 4)"
    )
    return (
        f"✓ {name}.backward: gradients land where each number came from, repeated "
        f"indices add up ({_count('GETITEM_CASES')} indexings and a real graph)"
    )


GETITEM = _register(
    "check_getitem_backward",
    "The backward of indexing, where indices repeat",
    _probe_getitem,
    _judge_getitem,
    forbidden=("GetItem", "IndexAdd"),
)


def check_getitem_backward(op):
    """The check of Exercise 3; returns the backward picture of the lookup through yours."""
    GETITEM.lab_check(op)
    loss, _ = _lookup_loss(op, LAB_SEED)
    return call(
        f"backward of ({op.__name__}.apply(E, index=[1, 3, 1, 1]) * w).sum()", _draw_backward, loss
    )


# --------------------------------------------------------------------------------------------
# Exercise 4 (optional): the backward of mean over dims, with keepdim

MEAN_CASES = frozen(
    __name__,
    "MEAN_CASES",
    (
        ((3, 4), None, False),
        ((3, 4), 1, False),
        ((4, 4), 1, False),
        ((4, 4), 0, False),
        ((3, 4), 1, True),
        ((2, 3, 4), (0, 2), False),
        ((2, 3, 4), -1, True),
        ((2, 3, 4), (0, 1), True),
        ((5,), 0, False),
    ),
)


def _mean_arrays(seed: int, k: int, shape, dim, keepdim) -> tuple:
    """The input and the incoming gradient of mean case k."""
    rng = np.random.default_rng((5 if seed == LAB_SEED else seed, k))
    a = rng.normal(size=shape)
    z = a.mean(axis=tuple(range(len(shape))) if dim is None else dim, keepdims=keepdim)
    return a, np.asarray(rng.normal(size=np.shape(z)))


def _mean_graph_input(seed: int) -> np.ndarray:
    return np.random.default_rng((5 if seed == LAB_SEED else seed, 1000)).normal(size=(3, 4))


def _mean_graph_loss(op, seed: int) -> tuple:
    x = _leaf(_mean_graph_input(seed), "x")
    means = op.apply(x, dim=1)
    return (means * means).sum(), x


def _op_runs(op, runs) -> list:
    """For a probe: per (a, forward's other arguments, its options, incoming gradient): the
    op's forward and backward arrays, and the incoming gradient as backward left it; up to the
    first call that raises (its record names "forward" or "backward")."""
    out = []
    for a, args, options, g in runs:
        ctx = _op_context(op, a)
        record = attempt(op.forward, ctx, a, *args, **options)
        if record[0] == "raised":
            out.append({"raised": ["forward", *record]})
            break
        z = _array_data(record[1])
        record = attempt(op.backward, ctx, g)
        if record[0] == "raised":
            out.append({"raised": ["backward", *record]})
            break
        got = record[1]
        if isinstance(got, tuple | list) and len(got) == 1:
            got = got[0]
        out.append({"z": z, "grad": _array_data(got), "incoming_after": np.array(g)})
    return out


def _with_graph(op, runs: list, n: int, make_loss) -> dict:
    """A probe's data: the op's name, its runs and, when all n ran, the gradient a real graph
    gives its leaf (make_loss() -> (loss, leaf))."""
    graph = {}
    if _all_ran(runs, n):
        loss, leaf = make_loss()
        record = attempt(loss.backward)
        graph = {"raised": list(record)} if record[0] == "raised" else _array_data(leaf.grad)
    return {"name": _name_of(op), "runs": runs, "graph": graph}


def _judged_run(run, what: str, g: np.ndarray) -> tuple:
    """(forward's array, backward's) of one run; Wrong when backward changed g in place."""
    run = _incoming_untouched(run, what, g)
    return _judged_array(run.get("z"), f"{what}: forward"), _judged_array(
        run.get("grad"), f"{what}: backward"
    )


def _incoming_untouched(run, what: str, g: np.ndarray) -> dict:
    """One run's entry of probe data; Wrong when backward changed the incoming gradient g."""
    run = judged_entry(run, what, what)
    after = run.get("incoming_after")
    if not isinstance(after, np.ndarray) or after.shape != g.shape:
        raise Wrong(f"the results of your answer hold nothing for {what}")
    if not np.array_equal(after, g):
        raise Wrong(
            f"{what}: backward changed the incoming gradient in place (an operation such "
            f"as /= on grad, or on a view of it); that array of shape {g.shape} belongs "
            "to the engine, which may hand it to other ops too"
        )
    return run


def _op_name(data) -> str:
    name = data.get("name") if isinstance(data, dict) else None
    if not isinstance(name, str):
        raise Wrong("the results of your answer do not say what your op is")
    return name[:40]


def _probe_mean(cases, op):
    runs = _op_runs(
        op,
        (
            (a, (), {"dim": dim, "keepdim": keepdim}, g)
            for k, (shape, dim, keepdim) in enumerate(cases_of(__name__, "MEAN_CASES"))
            for a, g in [_mean_arrays(cases["seed"], k, shape, dim, keepdim)]
        ),
    )
    return _with_graph(op, runs, _count("MEAN_CASES"), lambda: _mean_graph_loss(op, cases["seed"]))


def _judge_mean(cases, data) -> str:
    shapes = cases_of(__name__, "MEAN_CASES")
    runs = judged_cases(data, "runs", len(shapes))
    name = _op_name(data)
    for k, ((shape, dim, keepdim), run) in enumerate(zip(shapes, runs, strict=False)):
        a, g = _mean_arrays(cases["seed"], k, shape, dim, keepdim)
        what = f"{name}: x of shape {shape}, z = x.mean(dim={dim}, keepdim={keepdim})"
        axes = tuple(range(len(shape))) if dim is None else dim
        record = run.get("raised") if isinstance(run, dict) else None
        if isinstance(record, list) and len(record) == 4 and record[0] == "backward":
            if not keepdim and record[2] == "ValueError" and "broadcast" in str(record[3]):
                raise Wrong(
                    f"{what}: backward could not spread the incoming gradient of shape "
                    f"{g.shape} over {shape}. Without keepdim the reduced dimensions are missing "
                    "from it, and broadcasting lines shapes up from the right, so they meet the "
                    "wrong axes: here NumPy refuses, and for a square input it would quietly "
                    "give a wrong answer (chapter 04, section 4, the square-matrix trap)."
                )
        z, got = _judged_run(run, what, g)
        _compare(f"{what}: forward", z, a.mean(axis=axes, keepdims=keepdim))
        count = a.size // max(g.size, 1)
        restored = g if keepdim else np.expand_dims(g, axes)
        expected = np.broadcast_to(restored / count, shape)
        note = f" (each output here is the mean of {count} numbers)"
        if np.shape(got) == shape:
            if count > 1 and np.allclose(got, expected * count):
                note = f" (yours is {count} times too large; each output is a mean of {count})"
            elif a.size != count and np.allclose(got, expected * count / a.size):
                note = (
                    f" (yours divides by the input's total size {a.size}; each output here is "
                    f"the mean of {count} numbers)"
                )
        _compare(
            f"{what}, incoming gradient of shape {g.shape}: the gradient for x", got, expected, note
        )
    x0 = _mean_graph_input(cases["seed"])
    said = f"in a real graph, (m * m).sum() with m = {name}.apply(x, dim=1)"
    graph = data.get("graph")
    got = _judged_array(graph, f"{said}: backward")
    expected = np.broadcast_to(2 * x0.mean(axis=1, keepdims=True) / x0.shape[1], x0.shape)
    _compare(f"{said}: x.grad", got, expected)
    return (
        f"✓ {name}.backward: right for {_count('MEAN_CASES')} choices of dim and keepdim, "
        "and in a real graph"
    )


MEAN = _register(
    "check_mean_backward",
    "The backward of mean over dimensions",
    _probe_mean,
    _judge_mean,
    forbidden=("Mean",),
)


def check_mean_backward(op):
    """The check of Exercise 2; returns the backward picture of (m * m).sum() through yours."""
    MEAN.lab_check(op)
    loss, _ = _mean_graph_loss(op, LAB_SEED)
    return call(
        f"backward of (m * m).sum() with m = {op.__name__}.apply(x, dim=1)", _draw_backward, loss
    )


# --------------------------------------------------------------------------------------------
# Exercise 5 (a real problem): the gradients of a batched matmul, batch dimensions broadcast

BATCHED_SHAPES = frozen(
    __name__,
    "BATCHED_SHAPES",
    (
        ((2, 3), (3, 4)),
        ((5, 2, 3), (3, 4)),
        ((3, 4), (6, 4, 2)),
        ((5, 2, 3), (5, 3, 4)),
        ((2, 1, 3, 4), (5, 4, 2)),
        ((1, 3, 4), (6, 4, 2)),
        ((4, 1, 2, 3), (1, 5, 3, 2)),
        ((3, 3), (2, 3, 3)),
    ),
)


def _reference_matmul_grads(a: np.ndarray, b: np.ndarray, g: np.ndarray) -> tuple:
    """Per-matrix formulas on the broadcast batch, then summed back to each operand's shape."""
    full_a = g @ np.swapaxes(b, -1, -2)
    full_b = np.swapaxes(a, -1, -2) @ g
    return _reference_sum_to_shape(full_a, a.shape), _reference_sum_to_shape(full_b, b.shape)


ENGINE_SHAPES = ((2, 1, 2, 3), (4, 3, 2))


def _batched_arrays(seed: int, shape_a, shape_b, k: int) -> tuple:
    rng = np.random.default_rng((6 if seed == LAB_SEED else seed, k))
    a, b = rng.normal(size=shape_a), rng.normal(size=shape_b)
    return a, b, rng.normal(size=(a @ b).shape)


def _with_your_backward(matmul_backward):
    """An op for Z = A @ B whose backward is `matmul_backward`."""

    class YourMatMul(Function):
        """Z = A @ B, with your matmul_backward as its backward"""

        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            return a @ b

        @staticmethod
        def backward(ctx, grad):
            a, b = ctx.saved_tensors
            return tuple(matmul_backward(a, b, grad))

    return YourMatMul


def _pair_data(value, *_):
    if isinstance(value, tuple | list) and len(value) == 2:
        return {"pair": [_array_data(v) for v in value]}
    return {
        "kind": type(value).__name__[:40],
        "length": len(value) if isinstance(value, tuple | list) else None,
    }


def _probe_batched(cases, matmul_backward):
    calls = (
        _batched_arrays(cases["seed"], shape_a, shape_b, k)
        for k, (shape_a, shape_b) in enumerate(cases_of(__name__, "BATCHED_SHAPES"))
    )
    pairs = attempt_each(calls, matmul_backward, _pair_data)
    engine = {}
    if _all_ran(pairs, _count("BATCHED_SHAPES")):
        a0, b0, w0 = _batched_arrays(cases["seed"], *ENGINE_SHAPES, 1000)
        a, b = _leaf(a0, "A"), _leaf(b0, "B")

        def run():
            z = _with_your_backward(matmul_backward).apply(a, b)
            (z * Tensor(w0)).sum().backward()

        record = attempt(run)
        engine = (
            {"raised": list(record)}
            if record[0] == "raised"
            else {
                "A": _array_data(a.grad),
                "B": _array_data(b.grad),
            }
        )
    return {"pairs": pairs, "engine": engine}


def _judged_pair(entry, what: str) -> list:
    entry = judged_entry(entry, what, what)
    pair = entry.get("pair")
    if not isinstance(pair, list) or len(pair) != 2:
        kind, length = str(entry.get("kind"))[:40], entry.get("length")
        raise Wrong(
            f"{what}: the exercise asks for two gradients (one for a, one for b), got a {kind}"
            + (f" of length {length}" if type(length) is int else "")
        )
    return [
        _judged_array(v, f"{what}: the gradient for {n}") for v, n in zip(pair, "ab", strict=True)
    ]


def _judge_batched(cases, data) -> str:
    shapes = cases_of(__name__, "BATCHED_SHAPES")
    pairs = judged_cases(data, "pairs", len(shapes))
    for k, ((shape_a, shape_b), entry) in enumerate(zip(shapes, pairs, strict=False)):
        a, b, g = _batched_arrays(cases["seed"], shape_a, shape_b, k)
        what = f"matmul_backward with a {shape_a}, b {shape_b} (z = a @ b has shape {g.shape})"
        grads = _judged_pair(entry, what)
        expected = _reference_matmul_grads(a, b, g)
        for name, got, want, shape in (
            ("a", grads[0], expected[0], shape_a),
            ("b", grads[1], expected[1], shape_b),
        ):
            note = ""
            got_shape = np.shape(got)
            if got_shape != shape:
                batch = (a @ b).shape[:-2]
                note = (
                    f" - {name} has shape {shape}, and broadcasting used each of its entries "
                    f"once per entry of the batch {batch}"
                )
                if len(got_shape) == len(shape):
                    note += "; a dimension it had of size 1 was stretched"
            _compare(f"{what}: the gradient for {name}", got, want, note)
    a0, b0, w0 = _batched_arrays(cases["seed"], *ENGINE_SHAPES, 1000)
    said = "in the engine, an op whose backward is your matmul_backward, (2, 1, 2, 3) @ (4, 3, 2)"
    engine = judged_entry(data.get("engine") if isinstance(data, dict) else None, said, said)
    for name, want in zip("AB", _reference_matmul_grads(a0, b0, w0), strict=True):
        _compare(f"{said}: {name}.grad", _judged_array(engine.get(name), said), want)
    return (
        f"✓ matmul_backward: both gradients right, of exactly their operands' shapes, for "
        f"{_count('BATCHED_SHAPES')} pairs whose batch dimensions broadcast, and in the engine"
    )


BATCHED = _register(
    "check_batched_matmul",
    "A real problem: the gradients of a batched matrix product",
    _probe_batched,
    _judge_batched,
    forbidden=("MatMul",),
)
check_batched_matmul = BATCHED.lab_check
