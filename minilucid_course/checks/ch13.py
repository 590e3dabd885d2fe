"""Checks for the exercises of chapter 13: attention, a GPT built from the learner's parts, and
its training.

Each check is an `Exercise` (see exercise.py): a probe that runs the learner's code on the cases
and returns plain data, and a judge that recomputes every reference in NumPy, here, from the
cases alone. The module checks load the cases' parameters into the learner's module by the
names the statements give (the contract), so the judge can compute what the module must give.
"""

from __future__ import annotations

import functools
import math
from types import MappingProxyType

import numpy as np

import minilucid as ml
from minilucid_course.checks.common import attempt, raised_message
from minilucid_course.checks.exercise import Exercise, Wrong, register

SEP, LENGTH = 10, 6  # the sorting task: six digits 0-9, then the separator token 10
ATOL, RTOL = 1e-5, 1e-4  # float32 answers against float64 references
PACKAGED = (
    "scaled_dot_product_attention",
    "ScaledDotProductAttention",
    "MultiheadAttention",
    "SelfAttention",
    "run_path",
)


# --------------------------------------------------------------------------------------------
# Plumbing shared by the probes and judges


def _register(check, title, probe, judge, cases, **facts) -> Exercise:
    """Register one of this chapter's exercises."""
    return register(Exercise(check, "13", title, probe, judge, cases, **facts))


def _reading(judge):
    """A judge that turns data it cannot read (missing keys, wrong types) into Wrong."""

    @functools.wraps(judge)
    def read(cases, data):
        try:
            return judge(cases, data)
        except Wrong:
            raise
        except (KeyError, TypeError, ValueError, IndexError, AttributeError) as error:
            raise Wrong(
                f"the results of the answer have a form no answer gives ({type(error).__name__})"
            ) from None

    return read


def _plain(value):
    """A learner's result as plain data: a tensor or array becomes its array, else its type."""
    if isinstance(value, ml.Tensor):
        return {"array": np.array(value.data)}
    if isinstance(value, np.ndarray) and value.dtype.kind in "biuf":
        return {"array": np.array(value)}
    if isinstance(value, bool | int | float | np.number) and not isinstance(value, np.bool_):
        return {"array": np.array(value)}
    return {"type": type(value).__name__}


def _run(fn, *args):
    """attempt(fn, *args) as plain data: {"array": ...}, {"type": ...} or {"raised": [...]}."""
    record = attempt(fn, *args)
    if record[0] == "raised":
        return {"raised": list(record)}
    return _plain(record[1])


def _got(what: str, record: dict, shape=None) -> np.ndarray:
    """The array in a _run record, or Wrong naming what came back instead."""
    if "raised" in record:
        raise Wrong(raised_message(what, tuple(record["raised"])))
    if "array" not in record:
        raise Wrong(f"{what} returned a {record['type']}, not a tensor or an array")
    got = np.asarray(record["array"])
    if got.dtype.kind not in "biuf":
        raise Wrong(f"{what} returned an array of {got.dtype}")
    if shape is not None and got.shape != tuple(shape):
        raise Wrong(f"{what} has shape {got.shape}, expected {tuple(shape)}")
    return got


def _close(a, b, atol=ATOL, rtol=RTOL) -> bool:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return a.shape == b.shape and np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True)


def _normal(rng, *shape, scale=1.0):
    return rng.standard_normal(shape) * scale


# --------------------------------------------------------------------------------------------
# NumPy references: attention and the modules of the contract, from their parameters by name


def _softmax(s: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        e = np.exp(s - s.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)


ALLOWED = MappingProxyType(
    {  # which key j query i may read, as (L, S) bool arrays
        "causal": lambda L, S: np.tri(L, S, dtype=bool),  # j <= i: the rule
        "diagonal": lambda L, S: np.tri(L, S, -1, dtype=bool),  # j < i: itself masked too
        "reversed": lambda L, S: ~np.tri(L, S, dtype=bool),  # j > i: the bool mask read backwards
        "past hidden": lambda L, S: ~np.tri(L, S, -1, dtype=bool),  # j >= i: the past masked
        "all": lambda L, S: np.ones((L, S), dtype=bool),
    }
)


def _weights(q, k, mask=None, scale=None, fill=-np.inf, after=False, axis=-1):
    """softmax(q k^T * scale) with the keys outside `mask` (a name of ALLOWED) filled first."""
    E, S = q.shape[-1], k.shape[-2]
    scale = {None: 1 / math.sqrt(E), "S": 1 / math.sqrt(S), "E": 1 / E, "1": 1.0}.get(scale, scale)
    scores = q @ np.swapaxes(k, -1, -2) * scale
    allowed = None if mask is None else ALLOWED[mask](*scores.shape[-2:])
    if allowed is not None and not after:
        scores = np.where(allowed, scores, fill)
    if axis == -1:
        weights = _softmax(scores)
    else:
        weights = np.swapaxes(_softmax(np.swapaxes(scores, -1, -2)), -1, -2)
    if allowed is not None and after:
        weights = np.where(allowed, weights, 0.0)
    return weights


def _attention(q, k, v, mask=None, **variant):
    return _weights(q, k, mask, **variant) @ v


def _attention_grads(q, k, v, g, mask=None):
    """dq, dk, dv of sum(out * g) for out = softmax(q k^T / sqrt(E), masked) v."""
    c = 1 / math.sqrt(q.shape[-1])
    w = _weights(q, k, mask)
    dw = g @ np.swapaxes(v, -1, -2)
    ds = w * (dw - (dw * w).sum(axis=-1, keepdims=True))
    return ds @ k * c, np.swapaxes(ds, -1, -2) @ q * c, np.swapaxes(w, -1, -2) @ g


def _linear(p: dict, name: str, x):
    y = x @ p[f"{name}.weight"].T
    return y + p[f"{name}.bias"] if f"{name}.bias" in p else y


def _layer_norm(p: dict, name: str, x):
    centred = x - x.mean(axis=-1, keepdims=True)
    normed = centred / np.sqrt((centred**2).mean(axis=-1, keepdims=True) + 1e-5)
    return normed * p[f"{name}.weight"] + p[f"{name}.bias"]


_ERF = np.vectorize(math.erf, otypes=[np.float64])


def _gelu(x, exact: bool):
    if exact:
        return 0.5 * x * (1 + _ERF(x / math.sqrt(2)))
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))


def _head(p, pre, x, **variant):
    q, k, v = (_linear(p, f"{pre}{n}", x) for n in ("query", "key", "value"))
    return _attention(q, k, v, **{"mask": "causal", **variant})


def _multi(p, pre, x, heads, same=False, project=True, **variant):
    outs = [_head(p, f"{pre}heads.{0 if same else h}.", x, **variant) for h in range(heads)]
    y = np.concatenate(outs, axis=-1)
    return _linear(p, f"{pre}proj", y) if project else y


def _mlp(p, pre, x, exact=False, activation=True):
    h = _linear(p, f"{pre}mlp.0", x)
    return _linear(p, f"{pre}mlp.2", _gelu(h, exact) if activation else h)


def _block(p, pre, x, heads, order="pre", exact=False):
    def attend(y):
        return _multi(p, f"{pre}attention.", y, heads)

    def mlp(y):
        return _mlp(p, pre, y, exact)

    def norm1(y):
        return _layer_norm(p, f"{pre}norm1", y)

    def norm2(y):
        return _layer_norm(p, f"{pre}norm2", y)

    if order == "post":
        h = norm1(x + attend(x))
        return norm2(h + mlp(h))
    if order == "no residual":
        return mlp(norm2(attend(norm1(x))))
    if order == "one norm":
        h = x + attend(norm1(x))
        return h + mlp(norm1(h))
    if order == "mlp reads x":
        h = x + attend(norm1(x))
        return h + mlp(norm2(x))
    h = x + attend(norm1(x))
    return h + mlp(norm2(h))


def _gpt(p, idx, heads, layers, positions=True, final_norm=True, exact=False):
    T = idx.shape[-1]
    x = p["tokens.weight"][idx]
    if positions:
        x = x + p["positions.weight"][:T]
    for i in range(layers):
        x = _block(p, f"blocks.{i}.", x, heads, exact=exact)
    if final_norm:
        x = _layer_norm(p, "norm", x)
    return _linear(p, "head", x)


# the contract: parameter names and shapes of each module the learner builds


def _head_names(width, size, pre=""):
    return {f"{pre}{n}.weight": (size, width) for n in ("query", "key", "value")}


def _multi_names(width, heads, pre=""):
    names = {}
    for h in range(heads):
        names |= _head_names(width, width // heads, f"{pre}heads.{h}.")
    return names | {f"{pre}proj.weight": (width, width), f"{pre}proj.bias": (width,)}


def _norm_names(width, name):
    return {f"{name}.weight": (width,), f"{name}.bias": (width,)}


def _block_names(width, heads, pre=""):
    return (
        _norm_names(width, f"{pre}norm1")
        | _multi_names(width, heads, f"{pre}attention.")
        | _norm_names(width, f"{pre}norm2")
        | {
            f"{pre}mlp.0.weight": (4 * width, width),
            f"{pre}mlp.0.bias": (4 * width,),
            f"{pre}mlp.2.weight": (width, 4 * width),
            f"{pre}mlp.2.bias": (width,),
        }
    )


def _gpt_names(vocab, block, width, heads, layers):
    names = {"tokens.weight": (vocab, width), "positions.weight": (block, width)}
    for i in range(layers):
        names |= _block_names(width, heads, f"blocks.{i}.")
    return names | _norm_names(width, "norm") | {"head.weight": (vocab, width)}


def _values(rng, names: dict) -> dict:
    """Seeded parameters for the names: norms' weights near 1, everything else spread out."""
    out = {}
    for name, shape in names.items():
        if "norm" in name and name.endswith(".weight"):
            out[name] = rng.uniform(0.5, 1.5, shape)
        elif name.endswith(".bias"):
            out[name] = _normal(rng, *shape, scale=0.2)
        else:
            out[name] = _normal(rng, *shape, scale=0.6)
    return out


# --------------------------------------------------------------------------------------------
# Exercise 1: the embedding's backward


def _embedding_cases(seed):
    rng = np.random.default_rng(seed)
    cases = []
    for rows, dim, indices in (
        (4, 3, [2, 0, 2, 2]),  # token 2 three times, tokens 1 and 3 never
        (6, 2, [[1, 4, 1], [0, 1, 1]]),  # a batch of sequences: token 1 four times
    ):
        indices = np.array(indices)
        cases.append({"indices": indices, "rows": rows, "grad": _normal(rng, *indices.shape, dim)})
    return cases


def _embedding_probe(cases, embedding_backward):
    return [
        _run(embedding_backward, np.array(c["indices"]), np.array(c["grad"]), c["rows"])
        for c in cases
    ]


@_reading
def _embedding_judge(cases, data):
    for case, record in zip(cases, data, strict=True):
        indices, grad, rows = case["indices"], case["grad"], case["rows"]
        what = f"embedding_backward(indices of shape {indices.shape}, grad {grad.shape}, {rows})"
        want = np.zeros((rows, grad.shape[-1]))
        np.add.at(want, indices, grad)
        got = _got(what, record)
        if got.shape != want.shape:
            raise Wrong(
                f"{what} has shape {got.shape}; the table's gradient has the table's shape, "
                f"(num_embeddings, dim) = {want.shape}"
            )
        if _close(got, want):
            continue
        counts = np.bincount(indices.ravel(), minlength=rows)
        used, unused = np.flatnonzero(counts), np.flatnonzero(counts == 0)
        if unused.size and not _close(got[unused], want[unused]):
            raise Wrong(
                f"{what}: rows {unused.tolist()} belong to tokens that appear nowhere in "
                "indices, yet their gradient is not 0"
            )
        once = np.zeros_like(want)
        once[indices] += grad  # buffered: a repeated index keeps one of its gradients
        if _close(got, once):
            raise Wrong(
                f"{what}: a token used several times keeps the gradient of only one of its "
                f"uses (token {int(np.argmax(counts))} is used {counts.max()} times)"
            )
        if _close(got, want / np.maximum(counts, 1)[:, None]):
            raise Wrong(
                f"{what}: a token used several times gets the mean of its uses' gradients "
                f"(token {int(np.argmax(counts))} is used {counts.max()} times)"
            )
        bad = used[~np.isclose(got[used], want[used]).all(axis=1)]
        row = int(bad[0]) if bad.size else int(used[0])
        uses = f"{counts[row]} time" + ("s" if counts[row] != 1 else "")
        raise Wrong(f"{what}: row {row} (token {row}, used {uses}) is wrong")
    return "✓ embedding_backward adds up the gradient of every use of a token"


EMBEDDING = _register(
    "check_embedding_backward",
    "The embedding's backward",
    _embedding_probe,
    _embedding_judge,
    _embedding_cases,
    forbidden=("embedding", "Embedding", "IndexAdd"),
    reveals=("minilucid.ops.attention.Embedding",),
)
check_embedding_backward = EMBEDDING.lab_check


# --------------------------------------------------------------------------------------------
# Exercise 2: attention from scratch


def _attention_cases(seed):
    rng = np.random.default_rng(100 + seed)
    shapes = [  # (q, k, v, causal): E differs from S, and L from S in the last one
        ((4, 3), (5, 3), (5, 2), False),
        ((2, 4, 3), (2, 4, 3), (2, 4, 2), True),
        ((2, 3, 4), (2, 5, 4), (2, 5, 2), True),
    ]
    cases = []
    for sq, sk, sv, causal in shapes:
        q, k, v = (_normal(rng, *s) for s in (sq, sk, sv))
        grad = _normal(rng, *sq[:-1], sv[-1])
        cases.append({"q": q, "k": k, "v": v, "causal": causal, "grad": grad})
    return cases


def _attention_probe(cases, attention):
    data = []
    for case in cases:
        q, k, v = (ml.tensor(case[n], requires_grad=True) for n in "qkv")
        record = attempt(attention, q, k, v, case["causal"])
        if record[0] == "raised":
            data.append({"out": {"raised": list(record)}})
            continue
        out = record[1]
        entry = {"out": _plain(out), "tensor": isinstance(out, ml.Tensor)}
        if isinstance(out, ml.Tensor) and out.requires_grad and out.shape == case["grad"].shape:
            done = attempt(lambda o=out, g=case["grad"]: (o * ml.tensor(g)).sum().backward())
            if done[0] == "ok":
                entry["grads"] = [None if t.grad is None else np.array(t.grad) for t in (q, k, v)]
        data.append(entry)
    return data


ATTENTION_MISTAKES = MappingProxyType(
    {  # the variant of the forward pass -> the mistake, in words
        (("scale", "1"),): "the scores are not scaled",
        (("scale", "E"),): "the scores are divided by E, not by its square root",
        (("scale", "S"),): "the scores are scaled by the number of keys S, not by the width E",
        (("axis", -2),): "softmax normalises over the queries, so each key's weights add up to 1",
        (("mask", "diagonal"),): "the mask hides the diagonal too: a position may not read itself",
        (("mask", "past hidden"),): "the mask hides the past and keeps the future",
        (("mask", "reversed"),): (
            "the bool mask is read the other way round: "
            "the keys a query may read are the ones filled"
        ),
        (("mask", "causal"), ("after", True)): (
            "the mask is applied after the softmax, "
            "so a row's remaining weights no longer add up to 1"
        ),
        (("mask", "causal"), ("fill", 0.0)): (
            "the masked scores are set to 0, and exp(0) still gives them weight"
        ),
    }
)


@_reading
def _attention_judge(cases, data):
    for case, entry in zip(cases, data, strict=True):
        q, k, v, causal = case["q"], case["k"], case["v"], case["causal"]
        L, S = q.shape[-2], k.shape[-2]
        what = f"attention(q {q.shape}, k {k.shape}, v {v.shape}, causal={causal})"
        if causal and L != S:
            what += f" ({L} queries, {S} keys)"
        mask = "causal" if causal else None
        want = _attention(q, k, v, mask)
        got = _got(what, entry["out"])
        if not entry["tensor"]:
            raise Wrong(f"{what} returned a NumPy array, not a tensor gradients flow through")
        if got.shape != want.shape:
            raise Wrong(f"{what} has shape {got.shape}, expected {want.shape}")
        if not _close(got, want):
            for variant, mistake in ATTENTION_MISTAKES.items():
                variant = dict(variant)
                if "mask" in variant and not causal:
                    continue
                if _close(got, _attention(q, k, v, **{"mask": mask, **variant})):
                    raise Wrong(f"{what}: {mistake}")
            if causal and _close(got, _attention(q, k, v)):
                raise Wrong(f"{what}: no mask was applied although causal=True")
            if not causal and _close(got, _attention(q, k, v, "causal")):
                raise Wrong(f"{what}: a mask was applied although causal=False")
            if np.isnan(got).any():
                raise Wrong(f"{what}: some rows are NaN, as when every score of a row is masked")
            raise Wrong(f"{what} gives the wrong values")
        grads = entry.get("grads")
        if grads is None:
            raise Wrong(f"{what}: gradients do not flow back through the result")
        for name, mine, theirs in zip(
            "qkv", grads, _attention_grads(q, k, v, case["grad"], mask), strict=True
        ):
            if mine is None or not _close(mine, theirs):
                raise Wrong(f"{what}: the gradient reaching {name} is wrong")
    return "✓ attention matches softmax(q k^T / sqrt(E)) v, with and without the causal mask"


ATTENTION = _register(
    "check_attention",
    "Attention from scratch",
    _attention_probe,
    _attention_judge,
    _attention_cases,
    forbidden=PACKAGED,
    reveals=("minilucid.nn.attention.scaled_dot_product_attention",),
)
check_attention = ATTENTION.lab_check


# --------------------------------------------------------------------------------------------
# Exercise 3: attention's backward by hand


def _backward_cases(seed):
    rng = np.random.default_rng(200 + seed)
    cases = []
    for L, S, E, Ev, causal in ((4, 5, 3, 2, False), (5, 5, 3, 2, True), (3, 4, 2, 3, True)):
        q, k, v = _normal(rng, L, E), _normal(rng, S, E), _normal(rng, S, Ev)
        cases.append({"q": q, "k": k, "v": v, "dout": _normal(rng, L, Ev), "causal": causal})
    return cases


def _backward_probe(cases, attention_backward):
    data = []
    for c in cases:
        args = [np.array(c[n]) for n in ("q", "k", "v", "dout")]
        record = attempt(attention_backward, *args, c["causal"])
        if record[0] == "raised":
            data.append({"raised": list(record)})
        elif not isinstance(record[1], tuple | list) or len(record[1]) != 3:
            data.append({"type": type(record[1]).__name__})
        else:
            data.append({"grads": [_plain(g) for g in record[1]]})
    return data


@_reading
def _backward_judge(cases, data):
    for c, entry in zip(cases, data, strict=True):
        q, k, v, dout, causal = c["q"], c["k"], c["v"], c["dout"], c["causal"]
        what = (
            f"attention_backward(q {q.shape}, k {k.shape}, v {v.shape}, dout {dout.shape}, "
            f"causal={causal})"
        )
        if "raised" in entry:
            raise Wrong(raised_message(what, tuple(entry["raised"])))
        if "grads" not in entry:
            raise Wrong(f"{what} returned a {entry['type']}, not the three arrays (dq, dk, dv)")
        mask = "causal" if causal else None
        want = _attention_grads(q, k, v, dout, mask)
        w = _weights(q, k, mask)
        dw = dout @ v.T
        c_ = 1 / math.sqrt(q.shape[-1])
        no_jacobian = w * dw
        unscaled = w * (dw - (dw * w).sum(-1, keepdims=True))
        for name, record, ref, t in zip(
            ("dq", "dk", "dv"), entry["grads"], want, (q, k, v), strict=True
        ):
            got = _got(f"{what}'s {name}", record)
            if got.shape != ref.shape:
                raise Wrong(
                    f"{what}: {name} has shape {got.shape}; it needs its input's shape {t.shape}"
                )
            if _close(got, ref):
                continue
            if causal and _close(got, _attention_grads(q, k, v, dout)["qkv".index(name[1])]):
                raise Wrong(f"{what}: {name} is the gradient of the unmasked attention")
            if name != "dv":
                if name == "dq":
                    rough, bare = no_jacobian @ k * c_, unscaled @ k
                else:
                    rough, bare = no_jacobian.T @ q * c_, unscaled.T @ q
                if _close(got, rough):
                    raise Wrong(
                        f"{what}: {name} treats softmax's backward as if each weight depended "
                        "on its own score only"
                    )
                if _close(got, bare):
                    raise Wrong(f"{what}: {name} leaves out the scores' scale 1/sqrt(E)")
            elif _close(got, ref * c_):
                raise Wrong(f"{what}: dv carries the scores' scale, which v never met")
            raise Wrong(f"{what}: {name} is wrong")
    return "✓ attention_backward gives dq, dk and dv, with and without the causal mask"


BACKWARD = _register(
    "check_attention_backward",
    "Attention's backward, by hand",
    _backward_probe,
    _backward_judge,
    _backward_cases,
    forbidden=PACKAGED + ("backward",),
)
check_attention_backward = BACKWARD.lab_check


# --------------------------------------------------------------------------------------------
# Exercises 4-7: one head, multi-head attention, the block and the GPT, built by contract


def _module_probe(cases, module_class):
    """Build the learner's module, list its parameters, load the cases' values, run it."""
    record = attempt(module_class, *cases["args"])
    if record[0] == "raised":
        return {"built": {"raised": list(record)}}
    module = record[1]
    listed = attempt(lambda: {k: list(t.shape) for k, t in module.state_dict().items()})
    if listed[0] == "raised":
        return {"built": {"ok": True}, "names": {"raised": list(listed)}}
    data = {"built": {"ok": True}, "names": {"shapes": listed[1]}}
    if set(listed[1]) != set(cases["params"]):
        return data
    params = {k: ml.tensor(np.asarray(v, dtype=np.float32)) for k, v in cases["params"].items()}
    loaded = attempt(module.load_state_dict, params)
    if loaded[0] == "raised":
        data["loaded"] = {"raised": list(loaded)}
        return data
    x = np.array(cases["x"])
    data["out"] = _run(module, ml.tensor(x if x.dtype.kind in "iu" else x.astype(np.float32)))
    return data


def _module_output(name: str, what: str, cases: dict, data: dict, shape) -> np.ndarray:
    """The module's output, after the judge has read how it was built and what it holds."""
    if "raised" in data["built"]:
        raise Wrong(raised_message(name, tuple(data["built"]["raised"])))
    names = data["names"]
    if "raised" in names:
        raise Wrong(raised_message(f"{name}.state_dict()", tuple(names["raised"])))
    shapes = {k: tuple(v) for k, v in names["shapes"].items()}
    want = {k: tuple(v.shape) for k, v in cases["params"].items()}
    if set(shapes) != set(want):
        missing = sorted(set(want) - set(shapes))
        extra = sorted(set(shapes) - set(want))
        said = (f"lacks {missing[:3]}" if missing else "") + (" and " if missing and extra else "")
        said += f"has parameters the statement does not name: {extra[:3]}" if extra else ""
        raise Wrong(f"{name} {said}")
    for key, size in want.items():
        if shapes[key] != size:
            raise Wrong(f"{name}: {key} has shape {shapes[key]}, the statement's is {size}")
    if "loaded" in data:
        raise Wrong(raised_message(f"{name}.load_state_dict", tuple(data["loaded"]["raised"])))
    return _got(what, data["out"], shape)


def _module_cases(names: dict, args: tuple, x_shape, seed: int, salt: int, tokens=None):
    rng = np.random.default_rng(salt + seed)
    x = rng.integers(0, tokens, x_shape) if tokens else _normal(rng, *x_shape)
    return {"args": list(args), "params": _values(rng, names), "x": x}


def _judge_module(name, given, cases, data, wants, done, mistakes):
    """The verdict on a module: right if it gives one of `wants`, else the first mistake it
    gives, named."""
    what = f"{name}({given})"
    refs = [want() for want in wants]
    got = _module_output(name, what, cases, data, refs[0].shape)
    if any(_close(got, ref) for ref in refs):
        return done
    _first_match(got, mistakes, what)
    raise Wrong(f"{what} gives the wrong values")


def _first_match(got, variants: dict, what: str) -> None:
    for mistake, compute in variants.items():
        if _close(got, compute()):
            raise Wrong(f"{what}: {mistake}")


def _head_cases(seed):
    return _module_cases(_head_names(8, 4), (8, 4), (2, 5, 8), seed, 300)


@_reading
def _head_judge(cases, data):
    p, x = cases["params"], cases["x"]
    return _judge_module(
        "Head(8, 4)",
        "x of shape (2, 5, 8)",
        cases,
        data,
        [lambda: _head(p, "", x)],
        "✓ Head: one causal head of attention, with its own queries, keys and values",
        {
            "the head is not causal: a position reads the ones after it": lambda: _head(
                p, "", x, mask=None
            ),
            "the scores are scaled by the model's width (8), not the head's size (4)": lambda: (
                _head(p, "", x, scale=1 / math.sqrt(8))
            ),
            "the scores are not scaled": lambda: _head(p, "", x, scale="1"),
            "queries and keys are swapped": lambda: _attention(
                _linear(p, "key", x), _linear(p, "query", x), _linear(p, "value", x), "causal"
            ),
            "the values are the keys": lambda: _attention(
                _linear(p, "query", x), _linear(p, "key", x), _linear(p, "key", x), "causal"
            ),
        },
    )


HEAD = _register(
    "check_head",
    "One head of attention",
    _module_probe,
    _head_judge,
    _head_cases,
    forbidden=PACKAGED,
)
check_head = HEAD.lab_check


def _multi_cases(seed):
    return _module_cases(_multi_names(8, 2), (8, 2), (2, 5, 8), seed, 400)


@_reading
def _multi_judge(cases, data):
    p, x = cases["params"], cases["x"]
    return _judge_module(
        "MultiHeadAttention(8, 2)",
        "x of shape (2, 5, 8)",
        cases,
        data,
        [lambda: _multi(p, "", x, 2)],
        "✓ MultiHeadAttention: two heads side by side, joined and projected",
        {
            "both halves of the output come from one head": lambda: _multi(p, "", x, 2, same=True),
            "both halves of the output come from one head (the last)": lambda: _linear(
                p, "proj", np.concatenate([_head(p, "heads.1.", x)] * 2, axis=-1)
            ),
            "the joined heads are not projected": lambda: _multi(p, "", x, 2, project=False),
            "the heads are not causal": lambda: _multi(p, "", x, 2, mask=None),
            "the heads scale by the model's width (8), not the head's size (4)": lambda: _multi(
                p, "", x, 2, scale=1 / math.sqrt(8)
            ),
            "the heads are joined in the other order": lambda: _linear(
                p, "proj", np.concatenate([_head(p, f"heads.{h}.", x) for h in (1, 0)], -1)
            ),
        },
    )


MULTI = _register(
    "check_multi_head",
    "Multi-head attention from heads",
    _module_probe,
    _multi_judge,
    _multi_cases,
    forbidden=PACKAGED,
)
check_multi_head = MULTI.lab_check


def _block_cases(seed):
    return _module_cases(_block_names(8, 2), (8, 2), (2, 5, 8), seed, 500)


@_reading
def _block_judge(cases, data):
    p, x = cases["params"], cases["x"]
    return _judge_module(
        "Block(8, 2)",
        "x of shape (2, 5, 8)",
        cases,
        data,
        [lambda: _block(p, "", x, 2), lambda: _block(p, "", x, 2, exact=True)],
        "✓ Block: a pre-norm block, each branch added back onto its input",
        {
            "it normalises after adding (post-norm, the original transformer's order)": (
                lambda: _block(p, "", x, 2, order="post")
            ),
            "a branch replaces its input instead of being added to it": lambda: _block(
                p, "", x, 2, order="no residual"
            ),
            "the MLP's branch reads norm1": lambda: _block(p, "", x, 2, order="one norm"),
            "the MLP's branch reads the block's input x, not the attention's sum": (
                lambda: _block(p, "", x, 2, order="mlp reads x")
            ),
            "the MLP has no activation between its two layers": lambda: (
                lambda h: h + _mlp(p, "", _layer_norm(p, "norm2", h), activation=False)
            )(x + _multi(p, "attention.", _layer_norm(p, "norm1", x), 2)),
        },
    )


BLOCK = _register(
    "check_block",
    "A pre-norm transformer block",
    _module_probe,
    _block_judge,
    _block_cases,
    forbidden=PACKAGED,
)
check_block = BLOCK.lab_check


GPT_ARGS = (11, 12, 8, 2, 2)  # vocab, block_size, width, heads, layers


def _gpt_cases(seed):
    return _module_cases(_gpt_names(*GPT_ARGS), GPT_ARGS, (2, 7), seed, 600, tokens=11)


@_reading
def _gpt_judge(cases, data):
    p, idx = cases["params"], np.asarray(cases["x"])
    return _judge_module(
        "TinyGPT(11, 12, 8, 2, 2)",
        "idx of shape (2, 7)",
        cases,
        data,
        [lambda: _gpt(p, idx, 2, 2), lambda: _gpt(p, idx, 2, 2, exact=True)],
        "✓ TinyGPT: embeddings, blocks, a last norm and the scores of the next token",
        {
            "the positions are not added: the model cannot tell the order of the tokens": (
                lambda: _gpt(p, idx, 2, 2, positions=False)
            ),
            "the blocks' output goes to the head without the last norm": lambda: _gpt(
                p, idx, 2, 2, final_norm=False
            ),
            "only the first block is used": lambda: _gpt(p, idx, 2, 1),
        },
    )


GPT = _register(
    "check_tiny_gpt",
    "The tiny GPT from your parts",
    _module_probe,
    _gpt_judge,
    _gpt_cases,
    forbidden=PACKAGED,
)
check_tiny_gpt = GPT.lab_check


# --------------------------------------------------------------------------------------------
# Exercises 8-9: the loss on the sorted half, and greedy decoding, on a stand-in model


def _stand_in_cases(seed, salt):
    rng = np.random.default_rng(salt + seed)
    return {
        "rows": rng.integers(0, 10, (4, LENGTH)),
        "table": _normal(rng, 11, 11),
        "positions": _normal(rng, 2 * LENGTH, 11),
    }


def _stand_in(cases, calls: list):
    """A model with PyTorch's contract, (B, T) tokens -> (B, T, 11) scores: the score of each
    token at a place depends on the token there and on the place. It records what it reads."""
    table = ml.tensor(cases["table"], requires_grad=True)
    positions = ml.tensor(cases["positions"], requires_grad=True)

    def model(idx):
        ids = np.array(idx.data if isinstance(idx, ml.Tensor) else idx)
        calls.append(ids)
        if ids.ndim != 2 or ids.dtype.kind not in "iu" or ids.shape[1] > 2 * LENGTH:
            raise ValueError(f"the model reads (B, T <= 12) integer tokens, got {ids.shape}")
        return ml.nn.functional.embedding(ml.tensor(ids), table) + positions[: ids.shape[1]]

    return model, table, positions


def _inputs_of(rows):
    answers = np.sort(rows, axis=1)
    return np.concatenate([rows, np.full((len(rows), 1), SEP), answers[:, :-1]], axis=1), answers


def _loss_cases(seed):
    return _stand_in_cases(seed, 700)


def _loss_probe(cases, sort_loss):
    calls: list = []
    model, table, positions = _stand_in(cases, calls)
    record = attempt(sort_loss, model, np.array(cases["rows"]))
    data = {"calls": [c if c.dtype.kind in "biuf" else None for c in calls[:3]]}
    if record[0] == "raised":
        return data | {"loss": {"raised": list(record)}}
    loss = record[1]
    data["loss"] = _plain(loss)
    if isinstance(loss, ml.Tensor) and loss.requires_grad:
        if attempt(loss.backward)[0] == "ok":
            data["grads"] = [
                None if t.grad is None else np.array(t.grad) for t in (table, positions)
            ]
    return data


def _cross_entropy(logits, targets):
    shifted = logits - logits.max(axis=-1, keepdims=True)
    logp = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
    return -np.take_along_axis(logp, targets[..., None], axis=-1)[..., 0]


@_reading
def _loss_judge(cases, data):
    rows, table, positions = cases["rows"], cases["table"], cases["positions"]
    what = f"sort_loss(model, rows of shape {rows.shape})"
    tokens, answers = _inputs_of(rows)
    calls = data["calls"]
    if "raised" in data["loss"] and not calls:
        raise Wrong(raised_message(what, tuple(data["loss"]["raised"])))
    if not calls:
        raise Wrong(f"{what} never calls the model")
    fed = np.asarray(calls[0])
    if fed.shape != tokens.shape:
        raise Wrong(
            f"{what} feeds the model tokens of shape {fed.shape}; it reads the digits, the "
            f"separator and the first five answers, {tokens.shape}"
        )
    if not np.array_equal(fed, tokens):
        if not np.array_equal(fed[:, : LENGTH + 1], tokens[:, : LENGTH + 1]):
            raise Wrong(f"{what}: the first seven tokens fed are not the digits and the separator")
        raise Wrong(f"{what}: the tokens fed after the separator are not the first five answers")
    logits = table[tokens] + positions[: tokens.shape[1]]
    per = _cross_entropy(logits[:, LENGTH:], answers)
    got = _got(what, data["loss"])
    if got.size != 1:
        raise Wrong(f"{what} has shape {got.shape}, not a single number")
    got = float(got.reshape(()))
    if not _close(got, per.mean()):
        if _close(got, per.sum()):
            raise Wrong(f"{what} adds the losses of the predictions instead of averaging them")
        off = _cross_entropy(logits[:, LENGTH - 1 : -1], answers).mean()
        if _close(got, off):
            raise Wrong(
                f"{what} scores each answer with the scores of the place before the one that "
                "predicts it"
            )
        everywhere = np.concatenate([tokens[:, 1:], answers[:, -1:]], axis=1)
        if _close(got, _cross_entropy(logits, everywhere).mean()):
            raise Wrong(f"{what} also scores the places that read the digits, not only answers")
        raise Wrong(f"{what} gives the wrong value")
    grads = data.get("grads")
    if grads is None or any(g is None for g in grads):
        raise Wrong(f"{what}: the loss's gradient does not reach the model's parameters")
    d_logits = _softmax(logits[:, LENGTH:])
    np.put_along_axis(
        d_logits,
        answers[..., None],
        np.take_along_axis(d_logits, answers[..., None], axis=-1) - 1,
        axis=-1,
    )
    d_logits /= answers.size
    d_table = np.zeros_like(table)
    np.add.at(d_table, tokens[:, LENGTH:], d_logits)
    d_positions = np.zeros_like(positions)
    d_positions[LENGTH:] = d_logits.sum(axis=0)
    if not (_close(grads[0], d_table) and _close(grads[1], d_positions)):
        raise Wrong(f"{what}: the gradient it sends back to the model's scores is wrong")
    return "✓ sort_loss scores the six answers, from the separator's place on"


LOSS = _register(
    "check_sort_loss",
    "The loss on the sorted half",
    _loss_probe,
    _loss_judge,
    _loss_cases,
    forbidden=("loss_of", "as_training", "run_path"),
)
check_sort_loss = LOSS.lab_check


def _decode_cases(seed):
    return _stand_in_cases(seed, 800)


def _decode_probe(cases, sort_with):
    calls: list = []
    model, _, _ = _stand_in(cases, calls)
    return {
        "out": _run(sort_with, model, np.array(cases["rows"])),
        "lengths": [int(c.shape[-1]) if c.ndim else 0 for c in calls[:20]],
    }


def _greedy(cases, teacher=False, read=-1):
    rows, table, positions = cases["rows"], cases["table"], cases["positions"]
    tokens = np.concatenate([rows, np.full((len(rows), 1), SEP)], axis=1)
    answers = np.sort(rows, axis=1)
    said = []
    for i in range(LENGTH):
        logits = table[tokens] + positions[: tokens.shape[1]]
        said.append(logits[:, read].argmax(axis=-1))
        step = answers[:, i] if teacher else said[-1]
        tokens = np.concatenate([tokens, step[:, None]], axis=1)
    return np.stack(said, axis=1)


@_reading
def _decode_judge(cases, data):
    rows = cases["rows"]
    what = f"sort_with(model, rows of shape {rows.shape})"
    want = _greedy(cases)
    got = _got(what, data["out"])
    if got.shape != want.shape:
        raise Wrong(f"{what} has shape {got.shape}, expected the six answers, {want.shape}")
    if np.array_equal(got, want):
        return "✓ sort_with writes six answers, each the model's most likely next token"
    if np.array_equal(got, np.sort(rows, axis=1)):
        raise Wrong(f"{what} returns the sorted digits themselves, not the tokens the model says")
    if np.array_equal(got, _greedy(cases, teacher=True)):
        raise Wrong(f"{what} feeds the model the true answers, which it must not know")
    if np.array_equal(got, _greedy(cases, read=0)):
        raise Wrong(f"{what} takes each answer from the scores of the first place")
    lengths = data["lengths"]
    if lengths and len(set(lengths)) == 1:
        raise Wrong(f"{what} feeds the model sequences of one length only, {lengths[0]}")
    raise Wrong(f"{what} gives the wrong answers")


DECODE = _register(
    "check_sort_with",
    "Greedy decoding",
    _decode_probe,
    _decode_judge,
    _decode_cases,
    forbidden=("run_path", "load"),
)
check_sort_with = DECODE.lab_check


# --------------------------------------------------------------------------------------------
# Exercise 10: the trained model, judged on held-out sequences


HELD_OUT = 1000
PASS = 0.99


def _training_cases(seed):
    rows = np.random.default_rng(13_000 + seed).integers(0, 10, (HELD_OUT, LENGTH))
    return {"rows": rows}


def _training_probe(cases, trained_model):
    record = attempt(trained_model)  # the learner's training run
    if record[0] == "raised":
        return {"raised": list(record)}
    listed = attempt(lambda: {k: np.array(t.data) for k, t in record[1].state_dict().items()})
    if listed[0] == "raised":
        return {"raised": list(listed)}
    return {"params": listed[1]}


def _count(names, prefix: str) -> int:
    seen = {n[len(prefix) :].split(".")[0] for n in names if n.startswith(prefix)}
    if not all(s.isdigit() for s in seen) or sorted(map(int, seen)) != list(range(len(seen))):
        raise Wrong(f"the model's parameters under {prefix!r} are not numbered 0, 1, ...")
    return len(seen)


@_reading
def _training_judge(cases, data):
    what = "the trained model"
    if "raised" in data:
        raise Wrong(raised_message("trained_model()", tuple(data["raised"])))
    p = {k: np.asarray(v, dtype=np.float64) for k, v in data["params"].items()}
    layers = _count(p, "blocks.")
    heads = _count(p, "blocks.0.attention.heads.") if layers else 0
    if not layers or not heads:
        raise Wrong(f"{what} has no blocks with heads under the statement's names")
    vocab, width = p["tokens.weight"].shape
    names = _gpt_names(vocab, p["positions.weight"].shape[0], width, heads, layers)
    if set(p) != set(names):
        raise Wrong(f"{what}'s parameters are not named as the statement names them")
    for name, shape in names.items():
        if p[name].shape != shape:
            raise Wrong(f"{what}: {name} has shape {p[name].shape}, expected {shape}")
    if vocab != SEP + 1 or p["positions.weight"].shape[0] < 2 * LENGTH:
        raise Wrong(
            f"{what} needs 11 tokens and 12 places, it has {vocab} and "
            f"{p['positions.weight'].shape[0]}"
        )
    if not all(np.isfinite(v).all() for v in p.values()):
        raise Wrong(f"{what} has parameters that are NaN or infinite")
    rows = cases["rows"]
    tokens, answers = _inputs_of(rows)
    right = 0
    for start in range(0, len(rows), 250):  # teacher-forced: the same verdict as greedy
        logits = _gpt(p, tokens[start : start + 250], heads, layers)
        said = logits[:, LENGTH:].argmax(axis=-1)
        right += int((said == answers[start : start + 250]).all(axis=1).sum())
    share = right / len(rows)
    if share < PASS:
        raise Wrong(
            f"{what} sorts {share:.1%} of {len(rows)} held-out sequences exactly "
            f"({right}/{len(rows)}); the exercise asks for {PASS:.0%}"
        )
    return (
        f"✓ the trained model sorts at least {PASS:.0%} of {len(rows)} held-out sequences exactly"
    )


TRAINING = _register(
    "check_training",
    "Training the tiny GPT",
    _training_probe,
    _training_judge,
    _training_cases,
    forbidden=PACKAGED + ("load", "loss_of"),
)
check_training = TRAINING.lab_check
