"""The names a transformer needs (chapter 13), in the style of the op table of test_ops.py.

Each differentiable case is one line `fn(m, F, *xs)` that runs on minilucid and on torch; it is
checked against NumPy (forward), central differences in float64 (first and second derivatives,
every entry of every input) and, where torch is installed, torch (values, gradients and double
backward). Then what has no gradient (topk's indices, multinomial, the modules) and bad inputs.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from gradients import assert_grads_match, weights_for
from test_errors import assert_plain
from test_higher_order import hessian_vector_product
from test_higher_order import (
    test_gradient_of_gradient_matches_central_differences as second_derivatives_match,
)
from test_ops import Case, run

import minilucid as ml
import minilucid.nn.functional as MF

S3 = (2, 3, 4)
IDX = np.array([[1, 4, 1], [0, 1, 1]])  # int64, with repeats: row 1 collects five gradients
MASK = np.array([True, False, False, True])  # broadcasts along the last dim of S3
MASK_3D = np.random.default_rng(3).standard_normal((2, 1, 4)) > 0
KEEP = np.array(  # (L, S) = (4, 5): who attends to whom; every row keeps someone
    [[1, 0, 1, 0, 0], [1, 1, 0, 0, 1], [0, 0, 1, 1, 1], [1, 1, 1, 1, 0]], dtype=bool
)
BIAS = np.random.default_rng(4).standard_normal((4, 5))
BLIND = KEEP.copy()
BLIND[2] = False  # query 2 may attend to no key
ERF = np.vectorize(math.erf)


def gelu_ref(x):
    return 0.5 * x * (1 + ERF(x / math.sqrt(2)))


def gelu_tanh_ref(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))


def attention_ref(q, k, v, keep=None, bias=None, scale=None):
    scores = q @ np.swapaxes(k, -1, -2) * (1 / math.sqrt(q.shape[-1]) if scale is None else scale)
    if keep is not None:
        scores = np.where(keep, scores, -np.inf)
    if bias is not None:
        scores = scores + bias
    with np.errstate(invalid="ignore"):  # a row that keeps nothing is nan here
        e = np.exp(scores - scores.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True) @ v


def layer_norm_ref(x, dims):
    axes = tuple(range(x.ndim - dims, x.ndim))
    centred = x - x.mean(axes, keepdims=True)
    return centred / np.sqrt((centred**2).mean(axes, keepdims=True) + 1e-5)


def causal(L):
    return np.tri(L, L, dtype=bool)


def topk_ref(x, k, axis, largest=True):
    order = np.argsort(-x if largest else x, axis=axis, kind="stable")
    return np.take_along_axis(x, np.take(order, np.arange(k), axis=axis), axis=axis)


QKV = ((2, 4, 3), (2, 5, 3), (2, 5, 2))
SELF = ((2, 4, 3), (2, 4, 3), (2, 4, 3))
HEADS = ((2, 2, 3, 4), (2, 2, 3, 4), (2, 2, 3, 4))

CASES = [
    Case("embedding", lambda m, F, w: F.embedding(m.tensor(IDX), w), lambda w: w[IDX], ((5, 3),)),
    Case(
        "embedding 1-d",
        lambda m, F, w: F.embedding(m.tensor([2, 0, 2]), w),
        lambda w: w[[2, 0, 2]],
        ((3, 4),),
    ),
    Case(
        "embedding then tanh",
        lambda m, F, w: F.embedding(m.tensor(IDX), w).tanh(),
        lambda w: np.tanh(w[IDX]),
        ((5, 3),),
    ),  # fmt: skip
    Case("gelu", lambda m, F, x: F.gelu(x), gelu_ref, (S3,)),
    Case("gelu tanh", lambda m, F, x: F.gelu(x, approximate="tanh"), gelu_tanh_ref, (S3,)),
    Case("GELU module", lambda m, F, x: m.nn.GELU()(x * 3), lambda x: gelu_ref(x * 3), (S3,)),
    Case(
        "masked_fill",
        lambda m, F, x: x.masked_fill(m.tensor(MASK), -1.5),
        lambda x: np.where(MASK, -1.5, x),
        (S3,),
    ),
    Case(
        "masked_fill 3-d mask",
        lambda m, F, x: (x * x).masked_fill(m.tensor(MASK_3D), 0.0),
        lambda x: np.where(MASK_3D, 0.0, x * x),
        (S3,),
    ),
    Case(
        "masked_fill mask broadcasts the tensor",  # PyTorch's out-of-place rule
        lambda m, F, x: x.masked_fill(m.tensor(MASK_3D), 2.0),
        lambda x: np.where(MASK_3D, 2.0, x),
        ((3, 4),),
    ),
    Case("tril", lambda m, F, x: m.tril(x), lambda x: np.tril(x), ((4, 3),)),
    Case(
        "tril diagonal 1 3-d", lambda m, F, x: m.tril(x, 1), lambda x: x * np.tri(3, 4, 1), (S3,)
    ),  # fmt: skip
    Case("triu", lambda m, F, x: m.triu(x), lambda x: np.triu(x), ((3, 4),)),
    Case(
        "triu diagonal -1 3-d",
        lambda m, F, x: m.triu(x, -1),
        lambda x: x * (1 - np.tri(3, 4, -2)),
        (S3,),
    ),  # fmt: skip
    Case(
        "attention",
        lambda m, F, q, k, v: F.scaled_dot_product_attention(q, k, v),
        attention_ref,
        QKV,
    ),  # fmt: skip
    Case(
        "attention causal",
        lambda m, F, q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
        lambda q, k, v: attention_ref(q, k, v, keep=causal(4)),
        SELF,
    ),
    Case(
        "attention bool mask",
        lambda m, F, q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=m.tensor(KEEP)),
        lambda q, k, v: attention_ref(q, k, v, keep=KEEP),
        QKV,
    ),
    Case(
        "attention float mask and scale",
        lambda m, F, q, k, v: F.scaled_dot_product_attention(
            q, k, v, attn_mask=m.tensor(BIAS), scale=0.3
        ),
        lambda q, k, v: attention_ref(q, k, v, bias=BIAS, scale=0.3),
        QKV,
    ),
    Case(
        "attention heads causal",
        lambda m, F, q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
        lambda q, k, v: attention_ref(q, k, v, keep=causal(3)),
        HEADS,
    ),
    Case("gelu far", lambda m, F, x: F.gelu(x * 4), lambda x: gelu_ref(x * 4), (S3,)),
    Case(
        "gelu tanh far",
        lambda m, F, x: F.gelu(x * 4, approximate="tanh"),
        lambda x: gelu_tanh_ref(x * 4),
        (S3,),
    ),
    Case(
        "layer_norm",
        lambda m, F, x, w, b: F.layer_norm(x, (4,), w, b),
        lambda x, w, b: layer_norm_ref(x, 1) * w + b,
        (S3, (4,), (4,)),
    ),
    Case(
        "layer_norm two dims no affine",
        lambda m, F, x: F.layer_norm(x, (3, 4)),
        lambda x: layer_norm_ref(x, 2),
        (S3,),
    ),
    Case(
        "layer_norm weight only",
        lambda m, F, x, w: F.layer_norm(x, (4,), w),
        lambda x, w: layer_norm_ref(x, 1) * w,
        (S3, (4,)),
    ),
    Case(
        "attention a query that sees no key",  # PyTorch 2.13: that row's output is 0
        lambda m, F, q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=m.tensor(BLIND)),
        lambda q, k, v: np.where(BLIND.any(-1, keepdims=True), attention_ref(q, k, v, BLIND), 0),
        QKV,
    ),
    Case("topk values", lambda m, F, x: x.topk(2).values, lambda x: topk_ref(x, 2, -1), (S3,)),
    Case(
        "topk dim 0 smallest",
        lambda m, F, x: x.topk(1, dim=0, largest=False)[0],
        lambda x: topk_ref(x, 1, 0, largest=False),
        (S3,),
    ),
    Case(
        "transpose contiguous view",
        lambda m, F, x: x.transpose(1, 2).contiguous().view(2, 12),
        lambda x: np.swapaxes(x, 1, 2).reshape(2, 12),
        (S3,),
    ),
    Case(
        "heads split and merged",  # (B, T, C) -> (B, h, T, C/h) -> back, as a GPT does it
        lambda m, F, x: (
            (x.view(2, 3, 2, 2).transpose(1, 2) * 2).transpose(1, 2).contiguous().view(2, 3, 4) * x
        ),
        lambda x: 2 * x * x,
        (S3,),
    ),
]
IDS = [c.name for c in CASES]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_forward_matches_numpy(case):
    arrays = case.arrays()
    out = run(case, [ml.tensor(a) for a in arrays])
    expected = np.asarray(case.ref(*arrays))
    assert out.shape == expected.shape and out.dtype == np.float64
    np.testing.assert_allclose(out.data, expected, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_backward_matches_central_differences(case):
    assert_grads_match(lambda *xs: run(case, xs), case.arrays(), label=case.name)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_gradient_of_gradient_matches_central_differences(case):
    second_derivatives_match(case)  # test_higher_order's check, our cases


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_float32_stays_float32(case):
    xs = [ml.tensor(a.astype(np.float32), requires_grad=True) for a in case.arrays()]
    out = run(case, xs)
    assert out.dtype == np.float32
    out.backward(weights_for(out.shape))
    assert all(x.grad.dtype == np.float32 for x in xs)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_agrees_with_torch_values_gradients_and_second_derivatives(case):
    torch = pytest.importorskip("torch")
    import torch.nn.functional as TF

    arrays = case.arrays()
    xs = [ml.tensor(a, requires_grad=True) for a in arrays]
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    from torch.nn.attention import SDPBackend, sdpa_kernel

    with sdpa_kernel(SDPBackend.MATH):  # torch's fused kernels have no double backward
        out, expected = run(case, xs), case.fn(torch, TF, *ts)
    np.testing.assert_allclose(out.data, expected.detach().numpy(), rtol=1e-10, atol=1e-12)
    w1 = weights_for(out.shape)
    out.backward(w1)
    grads = torch.autograd.grad((expected * torch.tensor(w1)).sum(), ts, create_graph=True)
    for x, g in zip(xs, grads, strict=True):
        np.testing.assert_allclose(x.grad, g.detach().numpy(), rtol=1e-10, atol=1e-12)
    w2 = weights_for((sum(a.size for a in arrays),), seed=99)
    pieces = np.split(w2, np.cumsum([a.size for a in arrays])[:-1])
    terms = [(g * torch.tensor(w.reshape(g.shape))).sum() for g, w in zip(grads, pieces)]  # noqa: B905
    if any(g.requires_grad for g in grads):
        second = torch.autograd.grad(sum(terms), ts, allow_unused=True)
        theirs = np.concatenate(
            [np.zeros(a.size) if s is None else s.numpy().ravel() for s, a in zip(second, arrays)]  # noqa: B905
        )
    else:
        theirs = np.zeros(w2.size)
    ours = hessian_vector_product(case, arrays, w1, w2)
    np.testing.assert_allclose(ours, theirs, rtol=1e-8, atol=1e-9, err_msg=case.name)


# --------------------------------------------------------------------------------------------
# What has no gradient: topk's indices, multinomial; and the modules


def test_erf_is_within_a_few_units_in_the_last_place_of_math_erf():
    """A dense grid, tiny values, both branches' edges and the far tails, in float64 and
    float32 (the reference rounded from float64 to float32's grid of the result)."""
    from minilucid.ops.attention import erf_array

    tiny = np.geomspace(1e-300, 7, 4001)
    edges = [1.0, 1.5, 2.5, 6.0, 5.99999, 3.92, 1e3]
    x = np.concatenate([np.linspace(-7, 7, 70001), tiny, -tiny, edges, np.negative(edges), [0]])
    for dtype, ulps in ((np.float64, 2), (np.float32, 4)):
        xs = x.astype(dtype)
        ours = erf_array(xs)
        assert ours.dtype == dtype
        ref = np.array([math.erf(float(v)) for v in xs])
        error = np.abs(ours.astype(np.float64) - ref) / np.spacing(np.abs(ref).astype(dtype))
        assert error.max() <= ulps, (dtype, xs[np.argmax(error)], error.max())
    special = erf_array(np.array([np.inf, -np.inf, np.nan, -0.0]))
    np.testing.assert_array_equal(special[:3], [1, -1, np.nan])
    assert np.signbit(special[3])


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_slope_matches_central_differences_far_out(approximate):
    """GELU's backward reads Phi off its output: check it where that is delicate (0, tiny,
    the far tails) against central differences in float64."""
    x = np.array([0.0, -0.0, 1e-300, -1e-300, 1e-8, 0.7, -0.7, 2.5, -2.5, 6.0, -6.0, 9.0, -9.0])
    t = ml.tensor(x, requires_grad=True)
    MF.gelu(t, approximate=approximate).sum().backward()
    h = 1e-6
    ref = gelu_ref if approximate == "none" else gelu_tanh_ref
    numeric = (ref(x + h) - ref(x - h)) / (2 * h)
    np.testing.assert_allclose(t.grad, numeric, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_in_float32_is_float64_rounded(approximate):
    """The float32 paths (series, far tails, the slope read off the output, 0) agree with the
    float64 ones to float32's rounding; at 0 the slope is 1/2 exactly."""
    x = np.concatenate([np.linspace(-9, 9, 1801), [0.0, -0.0, 1e-30, -1e-30]])
    results = []
    for dtype in (np.float32, np.float64):
        t = ml.tensor(x.astype(dtype), requires_grad=True)
        y = MF.gelu(t, approximate=approximate)
        y.sum().backward()
        assert y.dtype == dtype and t.grad.dtype == dtype
        results.append((y.data.astype(np.float64), t.grad.astype(np.float64)))
    (y32, g32), (y64, g64) = results
    np.testing.assert_allclose(y32, y64, rtol=4e-6, atol=3e-7)
    np.testing.assert_allclose(g32, g64, rtol=4e-6, atol=3e-7)
    assert g32[-4] == g32[-3] == 0.5


def test_attention_float_mask_of_another_dtype_gets_its_gradient():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    q, k, v = (rng.standard_normal(s) for s in QKV)
    bias = BIAS.astype(np.float32)  # float32 beside float64 queries, as PyTorch allows
    ours = [ml.tensor(a, requires_grad=True) for a in (q, k, v)]
    mask = ml.tensor(bias, requires_grad=True)
    out = MF.scaled_dot_product_attention(*ours, attn_mask=mask)
    assert out.dtype == np.float64
    (out * out).sum().backward()
    theirs = [torch.tensor(a, requires_grad=True) for a in (q, k, v)]
    t_mask = torch.tensor(bias, requires_grad=True)
    t_out = torch.nn.functional.scaled_dot_product_attention(*theirs, attn_mask=t_mask)
    (t_out * t_out).sum().backward()
    assert mask.grad is not None and mask.grad.dtype == np.float32
    np.testing.assert_allclose(out.data, t_out.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(mask.grad, t_mask.grad.numpy(), rtol=1e-4, atol=1e-6)
    for x, t in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(x.grad, t.grad.numpy(), rtol=1e-4, atol=1e-5)


KEPT = {  # the ops whose forward keeps a value for a first-order backward (ctx.cache)
    "attention": (lambda q, k, v: MF.scaled_dot_product_attention(q, k, v, is_causal=True), QKV),
    "layer_norm": (lambda a, w, b: MF.layer_norm(a, (4,), w, b), (S3, (4,), (4,))),
}


@pytest.mark.parametrize("name", list(KEPT))
def test_a_kept_forward_value_serves_every_backward_but_not_create_graph(name):
    """The kept value gives the same gradients backward after backward (nothing changes it in
    place); under create_graph backward recomputes it with a graph, so the second derivatives
    through the very same graph equal those of a graph that never kept anything; a backward that
    frees the graph frees it too."""
    fn, shapes = KEPT[name]
    rng = np.random.default_rng(8)
    arrays = [rng.standard_normal(s) for s in shapes]
    xs = [ml.tensor(a, requires_grad=True) for a in arrays]
    out = fn(*xs)
    assert out._ctx.cache is not None
    w1, w2 = weights_for(out.shape), [weights_for(s, seed=9) for s in shapes]
    loss = (out * w1).sum()
    first = ml.grad(loss, xs, retain_graph=True)
    for g, h in zip(first, ml.grad(loss, xs, retain_graph=True), strict=True):
        np.testing.assert_array_equal(g, h)  # backward did not change the kept value
    again = ml.grad(loss, xs, create_graph=True)  # the same graph, its kept value still there
    assert out._ctx.cache is not None
    for g, h in zip(first, again, strict=True):  # recomputed (sums in another order)
        np.testing.assert_allclose(g, h.data, rtol=1e-12, atol=1e-14)
    second = ml.grad(
        sum((g * w).sum() for g, w in zip(again, w2, strict=True)), xs, allow_unused=True
    )
    fresh = [ml.tensor(a, requires_grad=True) for a in arrays]
    out2 = fn(*fresh)
    out2._ctx.cache = None  # as if forward had kept nothing: backward recomputes on tensors
    grads = ml.grad((out2 * w1).sum(), fresh, create_graph=True)
    expected = ml.grad(
        sum((g * w).sum() for g, w in zip(grads, w2, strict=True)), fresh, allow_unused=True
    )
    assert any(g is not None and np.abs(g).max() > 0 for g in second)
    for g, h in zip(second, expected, strict=True):
        assert (g is None) == (h is None)
        if g is not None:
            np.testing.assert_allclose(g, h, rtol=1e-12, atol=1e-12)
    loss.backward()  # frees the graph
    assert out._ctx.cache is None


def test_embedding_gradient_adds_up_over_repeated_indices():
    w = ml.tensor(np.zeros((5, 2)), requires_grad=True)
    MF.embedding(ml.tensor(IDX), w).sum().backward()
    np.testing.assert_array_equal(w.grad[:, 0], [1, 4, 0, 0, 1])  # row 1 is used four times


def test_topk_returns_values_and_int64_indices_largest_first():
    x = ml.tensor([[0.5, 3.0, -1.0, 2.0], [4.0, 0.0, 1.0, -2.0]])
    values, indices = x.topk(3)
    assert indices.dtype == np.int64
    np.testing.assert_array_equal(indices.data, [[1, 3, 0], [0, 2, 1]])
    np.testing.assert_array_equal(values.data, [[3.0, 2.0, 0.5], [4.0, 1.0, 0.0]])
    np.testing.assert_array_equal(ml.topk(x, 1, dim=0).indices.data, [[1, 0, 1, 0]])


def test_topk_indices_agree_with_torch():
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(0).standard_normal((3, 4, 5))
    for k, dim, largest in [(2, -1, True), (3, 1, False), (1, 0, True), (5, 2, True)]:
        ours = ml.tensor(x).topk(k, dim=dim, largest=largest)
        theirs = torch.tensor(x).topk(k, dim=dim, largest=largest)
        np.testing.assert_array_equal(ours.indices.data, theirs.indices.numpy())
        np.testing.assert_array_equal(ours.values.data, theirs.values.numpy())


def test_multinomial_draws_each_category_at_most_once_without_replacement():
    ml.manual_seed(0)
    weights = ml.tensor([[1.0, 0.0, 3.0, 2.0, 0.5]] * 200)
    drawn = ml.multinomial(weights, 4)
    assert drawn.shape == (200, 4) and drawn.dtype == np.int64
    assert all(len(set(row)) == 4 for row in drawn.data.tolist())
    assert not (drawn.data == 1).any()  # weight 0 is never drawn


def test_multinomial_frequencies_follow_unnormalised_weights():
    ml.manual_seed(1)
    weights = np.array([1.0, 0.0, 3.0, 6.0])
    for replacement in (True, False):
        first = ml.multinomial(ml.tensor(np.tile(weights, (20000, 1))), 1, replacement).data
        freq = np.bincount(first.ravel(), minlength=4) / first.size
        np.testing.assert_allclose(freq, weights / weights.sum(), atol=0.015)
    many = ml.multinomial(ml.tensor(weights), 30000, replacement=True).data
    freq = np.bincount(many, minlength=4) / many.size
    np.testing.assert_allclose(freq, weights / weights.sum(), atol=0.015)


def test_multinomial_second_draw_without_replacement_follows_the_rest():
    """P(second = j | first = i) = w_j / (total - w_i): with weights 1, 1, 8 the second draw
    after a first 2 is 0 or 1 evenly, after a first 0 it is 2 with probability 8/9."""
    ml.manual_seed(2)
    drawn = ml.multinomial(ml.tensor(np.tile([1.0, 1.0, 8.0], (30000, 1))), 2).data
    after_0 = drawn[drawn[:, 0] == 0, 1]
    assert abs((after_0 == 2).mean() - 8 / 9) < 0.03
    after_2 = drawn[drawn[:, 0] == 2, 1]
    assert abs((after_2 == 0).mean() - 0.5) < 0.02


def test_multinomial_follows_manual_seed():
    w = ml.tensor([0.2, 0.3, 0.5, 1.0])
    ml.manual_seed(7)
    a = ml.multinomial(w, 3).data, ml.multinomial(w, 5, replacement=True).data
    ml.manual_seed(7)
    b = ml.multinomial(w, 3).data, ml.multinomial(w, 5, replacement=True).data
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
    assert a[0].shape == (3,) and a[1].shape == (5,)


def test_embedding_module_weight_is_standard_normal_and_learned():
    ml.manual_seed(0)
    emb = ml.nn.Embedding(400, 50)
    assert emb.weight.shape == (400, 50) and emb.weight.requires_grad
    assert [n for n, _ in emb.named_parameters()] == ["weight"]
    assert abs(emb.weight.data.mean()) < 0.02 and abs(emb.weight.data.std() - 1) < 0.02
    assert repr(emb) == "Embedding(400, 50)"
    out = emb(ml.tensor([[3, 3]]))
    assert out.shape == (1, 2, 50)
    np.testing.assert_array_equal(out.data[0, 0], emb.weight.data[3])


def test_embedding_module_agrees_with_torch():
    torch = pytest.importorskip("torch")
    emb, theirs = ml.nn.Embedding(6, 3), torch.nn.Embedding(6, 3)
    with torch.no_grad():
        theirs.weight.copy_(torch.tensor(emb.weight.data))
    idx = np.array([[5, 0, 5], [2, 2, 2]])
    emb(ml.tensor(idx)).tanh().sum().backward()
    theirs(torch.tensor(idx)).tanh().sum().backward()
    np.testing.assert_allclose(emb.weight.grad, theirs.weight.grad.numpy(), rtol=1e-6)


def test_gelu_modes_agree_with_torch_modules():
    torch = pytest.importorskip("torch")
    x = np.linspace(-4, 4, 33)
    for mode in ("none", "tanh"):
        ours = ml.nn.GELU(approximate=mode)(ml.tensor(x)).data
        theirs = torch.nn.GELU(approximate=mode)(torch.tensor(x)).numpy()
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-15)
    assert repr(ml.nn.GELU("tanh")) == "GELU(approximate='tanh')"


def test_module_list_registers_its_modules():
    blocks = ml.nn.ModuleList([ml.nn.Linear(2, 2) for _ in range(3)])
    blocks.append(ml.nn.LayerNorm(2))
    assert len(blocks) == 4 and isinstance(blocks[-1], ml.nn.LayerNorm)
    assert [n for n, _ in blocks.named_parameters()][:2] == ["0.weight", "0.bias"]
    assert len(list(blocks.parameters())) == 8
    assert len(blocks[1:3]) == 2 and blocks[1:3][0] is blocks[1]

    class Model(ml.nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = ml.nn.ModuleList([ml.nn.Linear(2, 2), ml.nn.Linear(2, 2)])

    assert list(Model().state_dict()) == [
        "blocks.0.weight",
        "blocks.0.bias",
        "blocks.1.weight",
        "blocks.1.bias",
    ]


def test_size_and_contiguous_as_a_pytorch_script_uses_them():
    x = ml.randn(2, 3, 4)
    assert x.size() == (2, 3, 4) and x.size(-1) == 4
    assert x.contiguous() is x


# --------------------------------------------------------------------------------------------
# Bad inputs: refused with a message that names the op


def x234():
    return ml.randn(2, 3, 4, requires_grad=True)


BAD = [
    ("embedding float indices", lambda: MF.embedding(ml.tensor([0.0, 1.0]), ml.randn(3, 2)),
     TypeError, r"^embedding: indices must be integers \(int64\), got dtype float32"),
    ("embedding negative index", lambda: MF.embedding(ml.tensor([0, -1]), ml.randn(3, 2)),
     IndexError, r"^embedding: index -1 at position \(1,\) is out of range for 3 embeddings"),
    ("embedding index too large", lambda: ml.nn.Embedding(3, 2)(ml.tensor([[0, 3]])),
     IndexError, r"^embedding: index 3 at position \(0, 1\) .* use 0 to 2"),
    ("embedding 1-d weight", lambda: MF.embedding(ml.tensor([0]), ml.randn(3)),
     ValueError, r"^embedding: weight must be a \(num_embeddings, embedding_dim\) matrix"),
    ("gelu unknown mode", lambda: MF.gelu(x234(), approximate="fast"),
     ValueError, r"^gelu: approximate must be 'none' or 'tanh', got 'fast'"),
    ("GELU unknown mode", lambda: ml.nn.GELU("erf"),
     ValueError, r"^GELU: approximate must be 'none' or 'tanh', got 'erf'"),
    ("masked_fill float mask", lambda: x234().masked_fill(ml.ones(4), 0.0),
     TypeError, r"^masked_fill: the mask must be a bool tensor, got dtype float32"),
    ("masked_fill mask does not broadcast", lambda: x234().masked_fill(ml.ones(3) > 0, 0.0),
     ValueError, r"^masked_fill: mask of shape \(3,\) and tensor of shape \(2, 3, 4\) do not "
     r"broadcast"),
    ("tril 1-d", lambda: ml.tril(ml.randn(4)),
     ValueError, r"^tril: needs a matrix \(at least 2 dimensions\), got shape \(4,\)"),
    ("triu 1-d", lambda: ml.triu(ml.randn(4), 1), ValueError, r"^triu: needs a matrix"),
    ("attention feature sizes differ",
     lambda: MF.scaled_dot_product_attention(ml.randn(2, 4, 3), ml.randn(2, 5, 2),
                                             ml.randn(2, 5, 2)),
     ValueError, r"^scaled_dot_product_attention: query and key need the same last dimension "
     r"\(E\), got query \(2, 4, 3\), key \(2, 5, 2\), value \(2, 5, 2\)"),
    ("attention key and value lengths differ",
     lambda: MF.scaled_dot_product_attention(ml.randn(4, 3), ml.randn(5, 3), ml.randn(6, 3)),
     ValueError, r"^scaled_dot_product_attention: key and value need the same length"),
    ("attention 1-d query",
     lambda: MF.scaled_dot_product_attention(ml.randn(3), ml.randn(5, 3), ml.randn(5, 3)),
     ValueError, r"^scaled_dot_product_attention: inputs must be \(\.\.\., length, features\)"),
    ("attention batch dims differ",
     lambda: MF.scaled_dot_product_attention(ml.randn(2, 4, 3), ml.randn(3, 4, 3),
                                             ml.randn(3, 4, 3)),
     ValueError, r"^scaled_dot_product_attention: the batch dimensions do not broadcast"),
    ("attention mask of the wrong shape",
     lambda: MF.scaled_dot_product_attention(ml.randn(4, 3), ml.randn(5, 3), ml.randn(5, 3),
                                             attn_mask=ml.ones(4, 4) > 0),
     ValueError, r"^scaled_dot_product_attention: attn_mask of shape \(4, 4\) does not "
     r"broadcast to \(4, 5\)"),
    ("attention mask and is_causal",
     lambda: MF.scaled_dot_product_attention(ml.randn(4, 3), ml.randn(4, 3), ml.randn(4, 3),
                                             attn_mask=ml.ones(4, 4) > 0, is_causal=True),
     ValueError, r"^scaled_dot_product_attention: give attn_mask or is_causal=True, not both"),
    ("topk k too large", lambda: x234().topk(5),
     ValueError, r"^topk: k = 5 is out of range for dim -1 of size 4 \(shape \(2, 3, 4\)\)"),
    ("topk dim out of range", lambda: x234().topk(1, dim=3),
     IndexError, r"^topk: dim 3 is out of range for a tensor with 3 dimensions"),
    ("multinomial negative weight", lambda: ml.multinomial(ml.tensor([0.5, -0.1]), 1),
     ValueError, r"^multinomial: weights must be finite and non-negative"),
    ("multinomial integer weights", lambda: ml.multinomial(ml.tensor([1, 2]), 1),
     ValueError, r"^multinomial: weights must be a 1-D or 2-D float tensor, got shape \(2,\) "
     r"and dtype int64"),
    ("multinomial too many without replacement",
     lambda: ml.multinomial(ml.tensor([0.5, 0.0, 1.0]), 3),
     ValueError, r"^multinomial: cannot draw 3 samples without replacement from a row with "
     r"only 2 positive weights"),
    ("multinomial all zero", lambda: ml.multinomial(ml.zeros(2, 3), 1, replacement=True),
     ValueError, r"^multinomial: every row of weights needs at least one positive entry"),
    ("ModuleList of a non-module", lambda: ml.nn.ModuleList([ml.nn.ReLU(), "relu"]),
     TypeError, r"^ModuleList: item 1 is a str, not a Module"),
]  # fmt: skip


@pytest.mark.parametrize(("bad", "kind", "pattern"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_input_gets_a_clear_error(bad, kind, pattern):
    with pytest.raises(kind) as info:
        bad()
    assert type(info.value) is kind, f"{type(info.value).__name__}: {info.value}"
    assert_plain(info.value, pattern)


@pytest.mark.parametrize(
    "bad",
    [
        lambda torch: torch.nn.functional.embedding(torch.tensor([0.0]), torch.randn(3, 2)),
        lambda torch: torch.nn.functional.embedding(torch.tensor([3]), torch.randn(3, 2)),
        lambda torch: torch.nn.functional.gelu(torch.randn(2), approximate="fast"),
        lambda torch: torch.randn(2, 3).masked_fill(torch.ones(3), 0.0),
        lambda torch: torch.randn(2, 3).masked_fill(torch.ones(2) > 0, 0.0),
        lambda torch: torch.tril(torch.randn(4)),
        lambda torch: torch.randn(3, 4).topk(5),
        lambda torch: torch.multinomial(torch.tensor([0.5, -0.1]), 1),
    ],
)
def test_torch_refuses_the_same_inputs(bad):
    torch = pytest.importorskip("torch")
    with pytest.raises((RuntimeError, ValueError, IndexError, TypeError)):
        bad(torch)
