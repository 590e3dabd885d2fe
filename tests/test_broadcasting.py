"""Broadcasting in every binary op, on shapes that hypothesis makes up.

For each pair (or triple) of mutually broadcastable shapes: the forward equals NumPy's, and each
input's gradient has that input's shape and matches central differences - so the engine summed
the broadcast copies back correctly.
"""

from __future__ import annotations

import numpy as np
import pytest
from gradients import assert_grads_match, f64
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import mutually_broadcastable_shapes

import minilucid as ml

PAIRS = mutually_broadcastable_shapes(num_shapes=2, max_dims=4, max_side=3)
TRIPLES = mutually_broadcastable_shapes(num_shapes=3, max_dims=3, max_side=3)
MATMUL = mutually_broadcastable_shapes(signature=np.matmul.signature, max_dims=2, max_side=3)
SEEDS = st.integers(0, 2**32 - 1)

BINARY = {  # name: (op, NumPy's op, domain of each input)
    "add": (lambda a, b: a + b, np.add, ("real", "real")),
    "sub": (lambda a, b: a - b, np.subtract, ("real", "real")),
    "mul": (lambda a, b: a * b, np.multiply, ("real", "real")),
    "div": (lambda a, b: a / b, np.divide, ("real", "positive")),
    "pow": (lambda a, b: a**b, np.power, ("positive", "real")),
}


def check(fn, ref, shapes, arrays):
    out = fn(*[ml.tensor(a) for a in arrays])
    expected = ref(*arrays)
    assert out.shape == np.shape(expected)
    np.testing.assert_allclose(out.data, expected, rtol=1e-10, atol=1e-12)
    grads = assert_grads_match(fn, arrays, label=f"shapes {shapes}")
    assert [g.shape for g in grads] == [tuple(s) for s in shapes]


@pytest.mark.parametrize("name", BINARY)
@given(shapes=PAIRS, seed=SEEDS)
def test_binary_op_broadcasts(name, shapes, seed):
    fn, ref, domains = BINARY[name]
    rng = np.random.default_rng(seed)
    arrays = [f64(s, rng, d) for s, d in zip(shapes.input_shapes, domains, strict=True)]
    check(fn, ref, shapes.input_shapes, arrays)


@pytest.mark.parametrize("name", BINARY)
@given(shapes=PAIRS, seed=SEEDS, left=st.booleans())
def test_binary_op_broadcasts_against_a_numpy_array(name, shapes, seed, left):
    """One operand a plain NumPy array, on either side: only the tensor gets a gradient."""
    fn, ref, domains = BINARY[name]
    rng = np.random.default_rng(seed)
    a, b = (f64(s, rng, d) for s, d in zip(shapes.input_shapes, domains, strict=True))
    if left:  # array op tensor: NumPy must hand over to the tensor's reflected operator
        check(lambda t: fn(a, t), lambda x: ref(a, x), [b.shape], [b])
    else:
        check(lambda t: fn(t, b), lambda x: ref(x, b), [a.shape], [a])


@given(shapes=TRIPLES, seed=SEEDS)
def test_where_broadcasts(shapes, seed):
    rng = np.random.default_rng(seed)
    cond_shape, a_shape, b_shape = shapes.input_shapes
    cond = rng.random(cond_shape) < 0.5
    arrays = [f64(a_shape, rng), f64(b_shape, rng)]
    check(
        lambda a, b: ml.where(ml.tensor(cond), a, b),
        lambda a, b: np.where(cond, a, b),
        [a_shape, b_shape],
        arrays,
    )


@given(shapes=MATMUL, seed=SEEDS)
def test_matmul_broadcasts_batch_dims(shapes, seed):
    """Batch dimensions broadcast; 1-D operands on either side or both (hypothesis makes both)."""
    rng = np.random.default_rng(seed)
    arrays = [f64(s, rng) for s in shapes.input_shapes]
    check(lambda a, b: a @ b, np.matmul, shapes.input_shapes, arrays)


@st.composite
def reductions(draw):
    shape = draw(st.lists(st.integers(1, 3), min_size=1, max_size=4).map(tuple))
    n = len(shape)
    dims = draw(st.lists(st.integers(-n, n - 1), min_size=1, max_size=n, unique_by=lambda d: d % n))
    dim = dims[0] if len(dims) == 1 and draw(st.booleans()) else tuple(dims)
    return shape, dim, draw(st.booleans()), draw(st.sampled_from(["sum", "mean", "max", "min"]))


@given(case=reductions(), seed=SEEDS)
def test_reductions_over_any_dims(case, seed):
    shape, dim, keepdim, name = case
    x = f64(shape, np.random.default_rng(seed))
    axis = dim if isinstance(dim, int) else tuple(d % len(shape) for d in dim)
    check(
        lambda t: getattr(t, name)(dim=dim, keepdim=keepdim),
        lambda a: getattr(np, name)(a, axis=axis, keepdims=keepdim),
        [shape],
        [x],
    )
