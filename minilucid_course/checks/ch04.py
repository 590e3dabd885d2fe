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
from minilucid_course.checks.common import call, cases_of, frozen, number


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
        raise AssertionError(f"{what}: expected an array of shape {expected.shape}, got None")
    got_shape = np.shape(got)
    if got_shape != expected.shape:
        raise AssertionError(
            f"{what}: expected shape {expected.shape}, got shape {got_shape}{note}"
        )
    got = np.asarray(got, dtype=float64)
    bad = ~np.isclose(got, expected, rtol=1e-6, atol=1e-9)
    if bad.any():
        where = np.unravel_index(int(np.argmax(bad)), expected.shape)
        raise AssertionError(
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


def _grad_of_shape(shape: tuple) -> np.ndarray:
    """Distinct entries, so that summing the wrong dimension cannot give the right numbers."""
    size = int(np.prod(shape))
    values = np.arange(1, size + 1, dtype=float64) * np.where(np.arange(size) % 3 == 1, -1, 1)
    return values.reshape(shape)


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


def check_sum_to_shape(sum_to_shape):
    """Many shape pairs against the right sums, then the engine's backward running on yours."""
    for grad_shape, shape in cases_of(__name__, "SUM_TO_SHAPE_PAIRS"):
        grad = _grad_of_shape(grad_shape)
        what = f"sum_to_shape(grad of shape {grad_shape}, {_shape_text(shape)})"
        got = call(what, sum_to_shape, grad.copy(), shape)
        expected = _reference_sum_to_shape(grad, shape)
        note = ""
        if np.shape(got) != expected.shape and np.size(got) == expected.size:
            note = " - the numbers may be right, but a dimension of size 1 was dropped"
            note += " (keep summed dimensions with keepdims=True)"
        _compare(what, got, expected, note)

    # The real engine, running ops whose backward un-broadcasts with your function.
    rng = np.random.default_rng(4)
    x0, b0, c0 = rng.normal(size=(3, 4)), rng.normal(size=(4,)), rng.normal(size=(3, 1))
    add, mul = _summing_with(Add, sum_to_shape), _summing_with(Mul, sum_to_shape)
    x, b, c = _leaf(x0, "x"), _leaf(b0, "b"), _leaf(c0, "c")
    loss = mul.apply(add.apply(x, b), c).sum()
    picture = call("the engine's backward of ((x + b) * c).sum()", _draw_backward, loss)
    expected = (
        np.broadcast_to(c0, (3, 4)),
        (c0 * np.ones((3, 4))).sum(axis=0),
        (x0 + b0).sum(axis=1, keepdims=True),
    )
    for t, want in zip((x, b, c), expected, strict=True):
        what = (
            f"in the engine's backward of ((x + b) * c).sum() with x {x0.shape}, b {b0.shape}, "
            f"c {c0.shape}, where + and * un-broadcast with your sum_to_shape: {t.name}.grad"
        )
        _compare(what, t.grad, want)
    print(
        f"✓ sum_to_shape: all {_count('SUM_TO_SHAPE_PAIRS')} shape pairs right, and the engine's "
        "backward ran on it: b.grad (4,), c.grad (3, 1)"
    )
    return picture


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


def _two_gradients(what: str, grads) -> tuple:
    if not isinstance(grads, tuple | list) or len(grads) != 2:
        kind = type(grads).__name__
        raise AssertionError(
            f"{what}: backward must return two gradients (one for A, one for B) as a tuple, "
            f"got {kind}" + (f" of length {len(grads)}" if isinstance(grads, tuple | list) else "")
        )
    return tuple(grads)


def check_matmul_backward(op):
    """`op` is a Function for 2-D Z = A @ B: its backward directly, in a graph, under gradcheck."""
    rng = np.random.default_rng(2)
    for shape_a, shape_b in cases_of(__name__, "MATMUL_SHAPES"):
        a, b = rng.normal(size=shape_a), rng.normal(size=shape_b)
        ctx = _op_context(op, a, b)
        what = f"{op.__name__} with A of shape {shape_a} and B of shape {shape_b}"
        z = np.asarray(call(f"{what}: forward", op.forward, ctx, a, b))
        _compare(f"{what}: forward", z, a @ b)
        g = rng.normal(size=z.shape)
        grads = _two_gradients(what, call(f"{what}: backward", op.backward, ctx, g))
        for name, got, want, formula in (
            ("A", grads[0], g @ b.T, "G @ B^T"),
            ("B", grads[1], a.T @ g, "A^T @ G"),
        ):
            shape = a.shape if name == "A" else b.shape
            note = f" (the gradient of {name} has {name}'s shape {shape}; it is {formula})"
            label = f"{what}, incoming gradient G of shape {g.shape}: the gradient for {name}"
            _compare(label, got, want, note)

    # In a real graph, next to the engine's own ops, and against central differences.
    x0, w0, b0 = rng.normal(size=(2, 3)), rng.normal(size=(3, 4)), rng.normal(size=(4,))
    _graph_check(
        f"gradcheck of {op.__name__}.apply(x, W) with x (2, 3), W (3, 4)",
        lambda x, w: op.apply(x, w),
        (_leaf(x0, "x"), _leaf(w0, "W")),
    )
    x, w, bias = _leaf(x0, "x"), _leaf(w0, "W"), _leaf(b0, "b")
    loss = (op.apply(x, w) + bias).sum()
    picture = call(f"backward of ({op.__name__}.apply(x, W) + b).sum()", _draw_backward, loss)
    _compare("in a real graph: W.grad", w.grad, x0.T @ np.ones((2, 4)))

    batched = _batched_works(op, rng)
    extra = "batched operands work too" if batched else "batched operands: not yet (optional)"
    print(
        f"✓ {op.__name__}.backward: G @ B^T and A^T @ G right for 2-D operands, in a graph "
        f"and under gradcheck; {extra}"
    )
    return picture


def _batched_works(op, rng) -> bool:
    """Optional part: (2, 2, 3) @ (3, 4) and (2, 2, 3) @ (2, 3, 4) through the real engine."""
    for shape_a, shape_b in (((2, 2, 3), (3, 4)), ((2, 2, 3), (2, 3, 4))):
        inputs = (_leaf(rng.normal(size=shape_a), "A"), _leaf(rng.normal(size=shape_b), "B"))
        try:
            gradcheck(lambda a, b: op.apply(a, b), inputs)
        except Exception:  # the optional part only reports; it does not fail the check
            return False
    return True


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


def check_getitem_backward(op):
    """`op` is a Function for z = a[index]; repeated indices must add up their gradients."""
    rng = np.random.default_rng(3)
    for shape, index in cases_of(__name__, "GETITEM_CASES"):
        a = rng.normal(size=shape)
        ctx = _op_context(op, a)
        what = f"{op.__name__}: x of shape {shape}, z = x{_index_text(index)}"
        z = np.asarray(call(f"{what}: forward", op.forward, ctx, a, index))
        _compare(f"{what}: forward", z, a[index])
        g = rng.normal(size=z.shape)
        got = call(f"{what}: backward", op.backward, ctx, g)
        if isinstance(got, tuple | list):
            got = got[0] if len(got) == 1 else got
        expected = np.zeros(shape)
        np.add.at(expected, index, g)
        note = ""
        if _repeats(shape, index):
            lossy = np.zeros(shape)
            lossy[index] += g
            note = (
                " - this index picks some entries more than once; every pick sends its own "
                "gradient back and they must add up"
            )
            if np.shape(got) == shape and np.allclose(np.asarray(got, dtype=float64), lossy):
                note += (
                    ". Yours kept only one pick per entry, as `out[index] = grad` and "
                    "`out[index] += grad` do with repeated indices"
                )
        _compare(
            f"{what}, incoming gradient of shape {g.shape}: the gradient for x", got, expected, note
        )

    # An embedding lookup in a real graph: row 1 is looked up three times.
    table0, ids = rng.normal(size=(5, 3)), np.array([1, 3, 1, 1])
    _graph_check(
        f"gradcheck of {op.__name__}.apply(E, index=[1, 3, 1, 1]) with E (5, 3)",
        lambda e: op.apply(e, index=ids),
        (_leaf(table0, "E"),),
    )
    # The same lookup, small enough for the picture to show every number: E[1] is used 3 times.
    table = _leaf(rng.normal(size=4), "E")
    weights = Tensor(np.array([1.0, 2.0, 3.0, 4.0]), name="w")
    loss = (op.apply(table, index=ids) * weights).sum()
    picture = call(
        f"backward of ({op.__name__}.apply(E, index=[1, 3, 1, 1]) * w).sum()", _draw_backward, loss
    )
    _compare(
        f"in a real graph, ({op.__name__}.apply(E, index=[1, 3, 1, 1]) * w).sum() with "
        "w = [1, 2, 3, 4]: E.grad",
        table.grad,
        np.array([0.0, 8.0, 0.0, 2.0]),
        " (E[1] was used three times, with weights 1, 3 and 4)",
    )
    print(
        f"✓ {op.__name__}.backward: gradients land where each number came from, repeated "
        f"indices add up ({_count('GETITEM_CASES')} indexings, a real graph, gradcheck)"
    )
    return picture


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


def check_mean_backward(op):
    """`op` is a Function for z = mean of a over dim (keepdim optional)."""
    rng = np.random.default_rng(5)
    for shape, dim, keepdim in cases_of(__name__, "MEAN_CASES"):
        a = rng.normal(size=shape)
        ctx = _op_context(op, a)
        what = f"{op.__name__}: x of shape {shape}, z = x.mean(dim={dim}, keepdim={keepdim})"
        axes = tuple(range(len(shape))) if dim is None else dim
        z = np.asarray(call(f"{what}: forward", op.forward, ctx, a, dim=dim, keepdim=keepdim))
        _compare(f"{what}: forward", z, a.mean(axis=axes, keepdims=keepdim))
        g = rng.normal(size=z.shape)
        try:
            got = call(f"{what}: backward", op.backward, ctx, g)
        except AssertionError as error:
            if keepdim or "broadcast" not in str(error):
                raise
            raise AssertionError(
                f"{what}: backward could not spread the incoming gradient of shape {g.shape} "
                f"over {shape}. Without keepdim the reduced dimensions are missing from it, and "
                "broadcasting lines shapes up from the right, so they meet the wrong axes: here "
                "NumPy refuses, and for a square input it would quietly give a wrong answer "
                "(chapter 04, section 4, the square-matrix trap). Put the reduced dimensions "
                "back as size 1 first (np.expand_dims), then spread."
            ) from None
        if isinstance(got, tuple | list) and len(got) == 1:
            got = got[0]
        count = a.size // max(z.size, 1)
        restored = g if keepdim else np.expand_dims(g, axes)
        expected = np.broadcast_to(restored / count, shape)
        note = (
            f" (each of the {count} numbers averaged into an output gets 1/{count} of that "
            "output's gradient)"
        )
        _compare(
            f"{what}, incoming gradient of shape {g.shape}: the gradient for x", got, expected, note
        )

    x0 = rng.normal(size=(3, 4))
    _graph_check(
        f"gradcheck of {op.__name__}.apply(x, dim=1) with x (3, 4)",
        lambda x: op.apply(x, dim=1),
        (_leaf(x0, "x"),),
    )
    x = _leaf(x0, "x")
    means = op.apply(x, dim=1)
    loss = (means * means).sum()
    picture = call(
        f"backward of (m * m).sum() with m = {op.__name__}.apply(x, dim=1)", _draw_backward, loss
    )
    expected = np.broadcast_to(2 * x0.mean(axis=1, keepdims=True) / x0.shape[1], x0.shape)
    _compare(
        f"in a real graph, (m * m).sum() with m = {op.__name__}.apply(x, dim=1): x.grad",
        x.grad,
        expected,
    )
    print(
        f"✓ {op.__name__}.backward: right for {_count('MEAN_CASES')} choices of dim and keepdim, "
        "in a real graph and under gradcheck"
    )
    return picture


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


def check_batched_matmul(matmul_backward):
    """matmul_backward(a, b, grad) -> (grad_a, grad_b), each of exactly its operand's shape."""
    rng = np.random.default_rng(6)
    for shape_a, shape_b in cases_of(__name__, "BATCHED_SHAPES"):
        a, b = rng.normal(size=shape_a), rng.normal(size=shape_b)
        g = rng.normal(size=(a @ b).shape)
        what = f"matmul_backward with a {shape_a}, b {shape_b} (z = a @ b has shape {g.shape})"
        grads = _two_gradients(what, call(what, matmul_backward, a.copy(), b.copy(), g.copy()))
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
                    f" - {name} has shape {shape}: every batch dimension that broadcasting added "
                    f"to it (or stretched from size 1) was used once per entry of the batch "
                    f"{batch}, so its gradient must be summed over it"
                )
                if len(got_shape) == len(shape):
                    note += ", keeping a stretched dimension as size 1"
            _compare(f"{what}: the gradient for {name}", got, want, note)

    # In the engine: an op whose backward is yours, under gradcheck on a broadcast batch.
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

    a0, b0 = rng.normal(size=(2, 1, 2, 3)), rng.normal(size=(4, 3, 2))
    _graph_check(
        "gradcheck of an op whose backward is your matmul_backward, (2, 1, 2, 3) @ (4, 3, 2)",
        lambda x, w: YourMatMul.apply(x, w),
        (_leaf(a0, "A"), _leaf(b0, "B")),
    )
    print(
        f"✓ matmul_backward: both gradients right, of exactly their operands' shapes, for "
        f"{_count('BATCHED_SHAPES')} pairs whose batch dimensions broadcast, and under gradcheck"
    )
