"""Checks for the exercises of chapter 13 (attention and a tiny transformer).

Expected values come from NumPy written here (attention, its backward, the heads' reshaping) or
from minilucid's own ops on the same inputs, never from the learner's code. Each check raises
AssertionError with a plain-words message, or prints one line.
"""

from __future__ import annotations

import numpy as np

import minilucid as ml
from minilucid_course.checks.common import call

# --------------------------------------------------------------------------------------------
# NumPy references


def _softmax(s: np.ndarray, axis: int = -1) -> np.ndarray:
    e = np.exp(s - s.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _weights(q, k, causal: bool, scale=None, future: bool = False, fill=-np.inf, axis=-1):
    """softmax(q k^T * scale) with, if causal, the entries above the diagonal filled."""
    scale = 1 / np.sqrt(q.shape[-1]) if scale is None else scale
    scores = q @ np.swapaxes(k, -1, -2) * scale
    if causal:
        L, S = scores.shape[-2:]
        allowed = np.tri(L, S, dtype=bool)
        scores = np.where(allowed.T if future else allowed, scores, fill)
    return _softmax(scores, axis)


def _attention(q, k, v, causal: bool, **variant):
    return _weights(q, k, causal, **variant) @ v


def _close(a, b) -> bool:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return a.shape == b.shape and np.allclose(a, b, rtol=1e-6, atol=1e-8)


def _array(x, what: str) -> np.ndarray:
    data = x.data if isinstance(x, ml.Tensor) else x
    if not isinstance(data, np.ndarray | np.generic | float | int):
        raise AssertionError(f"{what} should be an array or a tensor, got {type(x).__name__}")
    return np.asarray(data)


def _inputs(seed: int, *shapes) -> list:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s) for s in shapes]


# --------------------------------------------------------------------------------------------
# Exercise 1: the embedding's backward


def check_embedding_backward(embedding_backward) -> None:
    """embedding_backward(indices, grad, num_embeddings) -> the weight's gradient."""
    cases = [
        (np.array([2, 0, 2, 2]), 4, 3),  # token 2 three times, token 1 and 3 never
        (np.array([[1, 4, 1], [0, 1, 1]]), 6, 2),  # a batch of sequences: row 1 four times
    ]
    for seed, (indices, rows, dim) in enumerate(cases):
        (grad,) = _inputs(seed, (*indices.shape, dim))
        what = f"embedding_backward(indices of shape {indices.shape}, grad {grad.shape}, {rows})"
        got = _array(call(what, embedding_backward, indices, grad, rows), what)
        want = np.zeros((rows, dim))
        np.add.at(want, indices, grad)
        if got.shape != want.shape:
            raise AssertionError(
                f"{what} has shape {got.shape}; the weight's gradient has the weight's shape, "
                f"(num_embeddings, embedding_dim) = {want.shape}"
            )
        if _close(got, want):
            continue
        once = np.zeros((rows, dim))
        once[indices] += grad  # buffered: a repeated index keeps one of its gradients
        unused = np.setdiff1d(np.arange(rows), indices)
        if _close(got, once):
            raise AssertionError(
                f"{what}: a token used several times collects only one of its gradients. "
                "`d[indices] += grad` writes each repeated row once; every use must add its "
                "gradient (a loop over the positions, or np.add.at)."
            )
        if unused.size and not _close(got[unused], 0):
            raise AssertionError(
                f"{what}: rows {unused.tolist()} are used by no token, so their gradient is 0; "
                "start from zeros"
            )
        bad = int(np.argmax(~np.isclose(got, want).all(axis=1)))
        raise AssertionError(
            f"{what}: row {bad} is wrong. Row r's gradient is the sum of grad at every position "
            "whose index is r."
        )
    print("✓ embedding_backward adds up the gradient of every use of a token")


# --------------------------------------------------------------------------------------------
# Exercise 2: attention from scratch


def _attention_mistakes(E: int, causal: bool) -> dict:
    mistakes = {
        "the scores are not scaled: divide q @ k^T by sqrt(E), E = q.shape[-1]": {"scale": 1.0},
        "the scores are divided by E; divide them by sqrt(E)": {"scale": 1 / E},
        "softmax runs over the wrong dimension; each query's weights over the keys must add "
        "up to 1 (dim=-1)": {"axis": -2},
    }
    if causal:
        future = "the causal mask hides the past instead of the future: position i may attend "
        future += "to 0..i, so fill the entries above the diagonal (j > i)"
        zero = "masked scores are set to 0, which still gets weight exp(0); fill them with -inf"
        mistakes[future], mistakes[zero] = {"future": True}, {"fill": 0.0}
    else:
        mistakes["the mask is applied although causal=False: only mask when asked"] = {
            "causal": True
        }
    return mistakes


def check_attention(attention) -> None:
    """attention(q, k, v, causal) -> softmax(q k^T / sqrt(E), masked if causal) @ v, a tensor."""
    cases = [((4, 3), (5, 3), (5, 2), False), ((2, 4, 3), (2, 4, 3), (2, 4, 2), True)]
    for seed, (sq, sk, sv, causal) in enumerate(cases):
        q, k, v = _inputs(10 + seed, sq, sk, sv)
        tq, tk, tv = (ml.tensor(a, requires_grad=True) for a in (q, k, v))
        what = f"attention(q {sq}, k {sk}, v {sv}, causal={causal})"
        got = call(what, attention, tq, tk, tv, causal)
        if not isinstance(got, ml.Tensor):
            raise AssertionError(
                f"{what} returned {type(got).__name__}; build it from tensor ops (@, .softmax, "
                "masked_fill) so that it returns a tensor that gradients flow through"
            )
        want = _attention(q, k, v, causal)
        if got.shape != want.shape:
            raise AssertionError(f"{what} has shape {got.shape}, expected {want.shape}")
        if not _close(got.data, want):
            for message, variant in _attention_mistakes(q.shape[-1], causal).items():
                if _close(got.data, _attention(q, k, v, **{"causal": causal, **variant})):
                    raise AssertionError(f"{what}: {message}")
            raise AssertionError(f"{what} gives the wrong values")
        if not got.requires_grad:
            raise AssertionError(f"{what}: the result has no graph; use tensor ops throughout")
        (got * ml.tensor(want)).sum().backward()
        ref = [ml.tensor(a, requires_grad=True) for a in (q, k, v)]
        expected = ml.nn.functional.scaled_dot_product_attention(*ref, is_causal=causal)
        (expected * ml.tensor(want)).sum().backward()
        for name, mine, theirs in zip("qkv", (tq, tk, tv), ref, strict=True):
            if mine.grad is None or not _close(mine.grad, theirs.grad):
                raise AssertionError(f"{what}: the gradient reaching {name} is wrong")
    print("✓ attention matches softmax(q k^T / sqrt(E)) v, with and without the causal mask")


# --------------------------------------------------------------------------------------------
# Exercise 3: attention's backward by hand


def check_attention_backward(attention_backward) -> None:
    """attention_backward(q, k, v, dout) -> (dq, dk, dv) for out = softmax(q k^T / sqrt(E)) v."""
    q, k, v, dout = _inputs(20, (4, 3), (5, 3), (5, 2), (4, 2))
    what = "attention_backward(q (4, 3), k (5, 3), v (5, 2), dout (4, 2))"
    got = call(what, attention_backward, q, k, v, dout)
    if not isinstance(got, tuple | list) or len(got) != 3:
        raise AssertionError(f"{what} should return three arrays (dq, dk, dv)")
    ts = [ml.tensor(a, requires_grad=True) for a in (q, k, v)]
    ml.nn.functional.scaled_dot_product_attention(*ts).backward(dout)
    weights = _weights(q, k, causal=False)
    for name, mine, t in zip(("dq", "dk", "dv"), got, ts, strict=True):
        mine = _array(mine, f"{what}'s {name}")
        if mine.shape != t.shape:
            raise AssertionError(
                f"{what}: {name} has shape {mine.shape}; it needs its input's shape {t.shape}"
            )
        if _close(mine, t.grad):
            continue
        d_weights = dout @ v.T
        no_jacobian = d_weights * weights / np.sqrt(q.shape[-1])
        no_scale = weights * (d_weights - (d_weights * weights).sum(-1, keepdims=True))
        if name != "dv" and _close(mine, no_jacobian @ k if name == "dq" else no_jacobian.T @ q):
            raise AssertionError(
                f"{what}: {name} misses part of softmax's backward: for z = softmax(s), "
                "ds = z * (dz - sum(dz * z)) along each row"
            )
        if name != "dv" and _close(mine, no_scale @ k if name == "dq" else no_scale.T @ q):
            raise AssertionError(
                f"{what}: {name} forgets the scale: the scores are q k^T / sqrt(E), so their "
                "gradient carries 1 / sqrt(E) too"
            )
        raise AssertionError(f"{what}: {name} is wrong")
    print("✓ attention_backward agrees with the engine on dq, dk and dv")


# --------------------------------------------------------------------------------------------
# Exercise 4: multi-head self-attention by reshaping


def _heads(x, heads):
    B, T, C = x.shape
    return x.reshape(B, T, heads, C // heads).transpose(0, 2, 1, 3)


def _merged(y):
    B, h, T, d = y.shape
    return y.transpose(0, 2, 1, 3).reshape(B, T, h * d)


def _multi_head_ref(module, x, heads, split=_heads, merge=_merged, causal=True):
    C = x.shape[-1]
    qkv = x @ module.qkv.weight.data.T.astype(np.float64) + module.qkv.bias.data
    q, k, v = (split(qkv[..., i * C : (i + 1) * C], heads) for i in range(3))
    y = merge(_attention(q, k, v, causal))
    return y @ module.proj.weight.data.T.astype(np.float64) + module.proj.bias.data


def _no_transpose(x, heads):
    B, T, C = x.shape
    return x.reshape(B, heads, T, C // heads)


def _merged_no_transpose(y):
    B, h, T, d = y.shape
    return y.reshape(B, T, h * d)


def check_multi_head(MultiHeadSelfAttention) -> None:  # noqa: N803  (a class)
    """MultiHeadSelfAttention(width, heads)(x) on (B, T, width): causal, heads by reshaping."""
    width, heads = 8, 2
    ml.manual_seed(0)
    what = f"MultiHeadSelfAttention({width}, {heads})"
    module = call(what, MultiHeadSelfAttention, width, heads)
    (x,) = _inputs(30, (2, 5, width))
    what += "(x of shape (2, 5, 8))"
    got = call(what, module, ml.tensor(x))
    got = _array(got, what)
    want = _multi_head_ref(module, x, heads)
    if got.shape != want.shape:
        raise AssertionError(f"{what} has shape {got.shape}, expected {want.shape}")
    if _close(got, want):
        print("✓ MultiHeadSelfAttention splits into heads, attends causally and merges them")
        return
    mistakes = {
        "the heads are made with a view to (B, heads, T, d) alone, which mixes positions "
        "into heads: view as (B, T, heads, d), then transpose(1, 2)": {"split": _no_transpose},
        "the heads are merged with a view alone, which mixes heads into positions: "
        "transpose(1, 2) back to (B, T, heads, d) first, then view (B, T, C)": {
            "merge": _merged_no_transpose
        },
        "the attention is not causal: a position may only attend to itself and those "
        "before it (is_causal=True)": {"causal": False},
    }
    for message, variant in mistakes.items():
        if _close(got, _multi_head_ref(module, x, heads, **variant)):
            raise AssertionError(f"{what}: {message}")
    raise AssertionError(f"{what} gives the wrong values")


# --------------------------------------------------------------------------------------------
# Exercise 5: a pre-norm block


def check_block(Block) -> None:  # noqa: N803  (a class)
    """Block(width)(x) = h + mlp(norm2(h)) with h = x + attention(norm1(x))."""
    ml.manual_seed(1)
    what = "Block(8)"
    block = call(what, Block, 8)
    for part in ("norm1", "attention", "norm2", "mlp"):
        if not hasattr(block, part):
            raise AssertionError(f"{what} has no {part}; keep the layers __init__ makes")
    rng = np.random.default_rng(41)  # two norms that differ, so a swap shows
    for norm in (block.norm1, block.norm2):
        for p in norm.parameters():
            p.data[...] = rng.uniform(0.5, 1.5, p.shape)
    (x,) = _inputs(40, (2, 5, 8))
    what += "(x of shape (2, 5, 8))"
    got = _array(call(what, block, ml.tensor(x)), what)
    with ml.no_grad():
        t = ml.tensor(x)
        attend, mlp, n1, n2 = block.attention, block.mlp, block.norm1, block.norm2
        h = t + attend(n1(t))
        want = (h + mlp(n2(h))).data
        variants = {
            "it normalises after adding (post-norm, the original transformer's order); a "
            "pre-norm block normalises the input of each branch: x + attention(norm1(x))": (
                lambda: n2((lambda g: g + mlp(g))(n1(t + attend(t))))
            ),
            "a branch replaces x instead of adding to it: keep the residual, x + branch(x)": (
                lambda: mlp(n2(attend(n1(t))))
            ),
            "the MLP's branch reads norm1; each branch has its own norm (norm2 for the MLP)": (
                lambda: h + mlp(n1(h))
            ),
            "the MLP's branch reads x, not h = x + attention(...): the branches run one after "
            "the other": (lambda: h + mlp(n2(t))),
        }
    if got.shape != want.shape:
        raise AssertionError(f"{what} has shape {got.shape}, expected {want.shape}")
    if _close(got, want):
        print("✓ Block: x + attention(norm1(x)), then + mlp(norm2(...)): a pre-norm block")
        return
    with ml.no_grad():
        for message, variant in variants.items():
            if _close(got, variant().data):
                raise AssertionError(f"{what}: {message}")
    raise AssertionError(f"{what} gives the wrong values")
