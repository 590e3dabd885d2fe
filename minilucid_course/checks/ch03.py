"""Checks for the exercises of chapter 03 (reverse-mode autodiff), as probes and judges.

Each probe builds the chapter's graphs, runs the learner's code on them and hands back plain
data: an order as indices into the graph's list of tensors, gradients as arrays, numbers. Each
judge builds the same graphs in its own process and compares: the learner's order must be
complete, each tensor once, topological, and drive minilucid's real backward to the gradients
its own sort gives; the learner's sweep is compared tensor by tensor and entry by entry.
"""

import numpy as np

from minilucid.autograd import backward, topological_order
from minilucid.tensor import Tensor
from minilucid_course.checks.common import (
    attempt,
    cases_of,
    frozen,
    graph_tensors,
    judged_cases,
    judged_entry,
    number,
    raised_message,
)
from minilucid_course.checks.exercise import LAB_SEED, Exercise, Wrong, register

CHAIN_DEPTH = 100_000


def _values(seed: int, key: int, fixed):
    """The lab's fixed values (seed 0: the stored outputs), other seeds' own values alike."""
    fixed = np.array(fixed, dtype=np.float64)
    if seed == LAB_SEED:
        return fixed
    rng = np.random.default_rng([seed, key])
    sign = rng.choice([-1.0, 1.0], size=fixed.shape)
    return np.round(sign * rng.uniform(0.3, 2.5, size=fixed.shape), 3)


def _leaf(values, name):
    return Tensor(np.array(values, dtype=np.float64), requires_grad=True, name=name)


def _named(t, name):
    t.name = name
    return t


# --- the graphs every check uses ------------------------------------------------------------


def _reuse(seed=LAB_SEED):
    """h * h: one op uses the same tensor twice."""
    x = _leaf(_values(seed, 1, [1.0, -2.0, 3.0]), "x")
    h = _named(x * 3.0, "h")
    return _named(h * h, "y"), [x]


def _diamond(seed=LAB_SEED):
    """a feeds loss directly and through b: the shortcut that breaks a careless order."""
    x = _leaf(_values(seed, 2, [2.0, -1.0]), "x")
    a = _named(x * 3.0, "a")
    b = _named(a * 2.0, "b")
    return _named(a * b, "loss"), [x]


def _fan_out(seed=LAB_SEED):
    """x feeds three ops, w is broadcast over x."""
    x = _leaf(_values(seed, 3, [0.5, -1.5, 2.0]), "x")
    w = _leaf(_values(seed, 4, 1.5), "w")
    p = _named(x * w, "p")
    q = _named(x * x, "q")
    r = _named(p + q, "r")
    return _named(r - x / w, "out"), [x, w]


def _constant(seed=LAB_SEED):
    """c is a tensor that does not require grad: it is an input, not part of the sweep."""
    x = _leaf(_values(seed, 5, [1.5, -0.5, 2.0]), "x")
    c = Tensor(_values(seed, 6, [2.0, 3.0, -1.0]), name="c")  # requires_grad is False
    k = _named(c * c, "k")  # computed from c alone: it does not require grad either
    u = _named(x * c, "u")
    return _named(u * x + k, "z"), [x]


def _chain(seed=LAB_SEED):
    """x * c * c * ... CHAIN_DEPTH times: deeper than Python lets a function call itself."""
    x = _leaf(_values(seed, 7, 1.0), "x")
    y = x
    for _ in range(CHAIN_DEPTH):
        y = y * 1.00001
    y.name = "end of the chain"
    return y, [x]


def _shared_array(seed=LAB_SEED):
    """s = (a + b) + a: Add hands one and the same array to both of its inputs."""
    a = _leaf(_values(seed, 8, [1.0, 2.0]), "a")
    b = _leaf(_values(seed, 9, [0.5, -1.0]), "b")
    return _named(_named(a + b, "a + b") + a, "s"), [a, b]


GRAPHS = frozen(
    __name__,
    "GRAPHS",
    [
        ("y = h * h (h used twice by one op)", _reuse),
        ("a diamond: loss = a * b with b = a * 2", _diamond),
        ("x used by three ops, w broadcast", _fan_out),
        ("z = (x * c) * x + c * c, c a tensor that does not require grad", _constant),
        (f"a {CHAIN_DEPTH:,}-deep chain", _chain),
    ],
)
SWEEP_GRAPHS = frozen(
    __name__,
    "SWEEP_GRAPHS",
    [*GRAPHS[:4], ("s = (a + b) + a, where Add sends one array to both inputs", _shared_array)],
)


_tensors = graph_tensors


def _label(t, position=None) -> str:
    if t.name is not None:
        return repr(t.name)
    if position is not None:
        return f"the tensor at position {position} of the real order (a link of the chain)"
    return f"a tensor of shape {t.shape}"


def _graph_cases(seed: int, name: str) -> dict:
    return {"seed": seed, "graphs": len(cases_of(__name__, name))}


def _graph(name: str, i: int):
    return cases_of(__name__, name)[i]


def _count(data, key: str, n: int) -> list:
    """data[key], a list of n entries; Wrong for anything else."""
    items = data.get(key) if isinstance(data, dict) else None
    if not isinstance(items, list) or len(items) != n:
        raise Wrong(f"the results of your answer hold no {key} for the {n} cases of the check")
    return items


def _int_array(value, what: str) -> np.ndarray:
    if not isinstance(value, np.ndarray) or value.ndim != 1 or value.dtype.kind not in "iu":
        raise Wrong(f"{what}: the results of your answer hold no order of tensors")
    return value.astype(np.int64)


def _float_array(value, shape, what: str) -> np.ndarray:
    """A learner's array as float64, of `shape`; Wrong when it is not one."""
    if isinstance(value, bool | int | float):
        value = np.array(value, dtype=np.float64)
    if not isinstance(value, np.ndarray) or value.dtype.kind not in "biuf":
        raise Wrong(f"{what} is not an array of numbers")
    if value.shape != tuple(shape):
        raise Wrong(f"{what} has shape {value.shape}, expected {tuple(shape)}")
    return value.astype(np.float64)


def _first_bad(got, expected, rtol=1e-9, atol=1e-12):
    """The first entry where got and expected differ, or None."""
    bad = ~np.isclose(got, expected, rtol=rtol, atol=atol)
    if not bad.any():
        return None
    return tuple(int(i) for i in np.argwhere(bad)[0])


# --- exercise 1: the topological sort -------------------------------------------------------


def _probe_order(cases, sort):
    """Per graph: the learner's order as indices into _tensors(root) (-1: a tensor from
    elsewhere, -2: not a tensor), or the exception their sort raised."""
    out = []
    for i in range(cases["graphs"]):
        _, build = _graph("GRAPHS", i)
        root, _ = build(cases["seed"])
        nodes = _tensors(root)
        record = attempt(lambda root=root: list(sort(root)))
        if record[0] == "raised":
            out.append({"raised": list(record)})
            break
        index = {id(t): k for k, t in enumerate(nodes)}
        order, stranger = [], None
        for t in record[1]:
            if isinstance(t, Tensor):
                order.append(index.get(id(t), -1))
                continue
            order.append(-2)
            if stranger is None:
                shown = repr(t) if type(t) in (int, float, bool) or t is None else "an object"
                stranger = f"{shown} (a {type(t).__name__})"
        out.append({"order": np.array(order, dtype=np.int64), "stranger": stranger})
    return {"graphs": out}


def _sort_raised(label: str, record) -> str:
    _, name, text = record
    if name == "RecursionError":
        return (
            f"on {label}, your sort raised RecursionError: Python allows about 1,000 nested "
            "calls, and a recursive walk needs one per tensor along the chain"
        )
    if name == "RuntimeError" and "truth value" in text:
        return (
            f"on {label}, your sort asked a tensor for its truth value: `t in some_list` "
            "compares tensors with ==, entry by entry, and a tensor of several entries has no "
            "single truth value. What identifies a tensor without comparing its entries?"
        )
    if name in ("AttributeError", "TypeError"):
        return raised_message(
            f"on {label}, your sort",
            record,
            "Some parents are plain numbers (the 3.0 in x * 3.0): what does your sort do "
            "with them?",
        )
    return raised_message(f"on {label}, your sort", record)


def _judge_order_on(label: str, build, seed: int, got) -> None:
    if not isinstance(got, dict):
        raise Wrong(f"on {label}, the results of your answer hold no order")
    if "raised" in got:
        record = got["raised"]
        if not (isinstance(record, list) and len(record) == 3 and record[0] == "raised"):
            raise Wrong(f"on {label}, the results of your answer hold no order")
        raise Wrong(_sort_raised(label, [str(r) for r in record]))
    order = _int_array(got.get("order"), f"on {label}")
    root, leaves = build(seed)
    nodes = _tensors(root)
    if order.size and (order.min() < -2 or order.max() >= len(nodes)):
        raise Wrong(f"on {label}, the results of your answer hold no order of its tensors")
    if (order == -2).any():
        stranger = got.get("stranger")
        shown = stranger if isinstance(stranger, str) else "something else"
        raise Wrong(f"on {label}, your order holds {shown[:80]}; an order holds only tensors")
    if (order == -1).any():
        raise Wrong(
            f"on {label}, your order holds a tensor that is not part of the graph (at position "
            f"{int(np.argmax(order == -1))})"
        )
    reference = topological_order(root)
    where = {id(t): k for k, t in enumerate(reference)}
    seen = {}
    for position, k in enumerate(order.tolist()):
        t = nodes[k]
        if k in seen:
            raise Wrong(
                f"on {label}, your order lists tensor {_label(t, where.get(id(t)))} twice "
                f"(at positions {seen[k]} and {position}); each tensor belongs in it once"
            )
        if id(t) not in where:
            raise Wrong(
                f"on {label}, your order lists {_label(t)}, which does not require grad: "
                "backward sends it nothing, and an order holds only the tensors that require "
                "grad"
            )
        seen[k] = position
    placed = {id(nodes[k]): p for k, p in seen.items()}
    for t in reference:
        if id(t) not in placed:
            raise Wrong(
                f"on {label}, your order leaves out tensor {_label(t, where[id(t)])}: every "
                "tensor that requires grad and that the root was computed from belongs in it"
            )
    for t in reference:
        if t._ctx is None:
            continue
        for parent in t._ctx.parents:
            if id(parent) in placed and placed[id(parent)] > placed[id(t)]:
                raise Wrong(
                    f"on {label}, your order puts {_label(parent, where.get(id(parent)))} "
                    f"(position {placed[id(parent)]}) after {_label(t, where.get(id(t)))} "
                    f"(position {placed[id(t)]}), but {_label(t)} was computed from it: a "
                    "tensor must come after every tensor it was computed from"
                )
    # the real backward, driven by the learner's order, against the real backward
    mine = [nodes[k] for k in order.tolist()]
    backward(root, gradient=np.ones_like(root.data), sort=lambda r: mine)
    for leaf, expected in zip(leaves, _expected_leaf_grads(build, seed), strict=True):
        got_grad = np.full_like(expected, np.nan) if leaf.grad is None else leaf.grad
        index = _first_bad(got_grad, expected)
        if index is not None:
            raise Wrong(
                f"on {label}, backward driven by your order gave {leaf.name}.grad "
                f"{number(got_grad[index])} at entry {index}, expected {number(expected[index])}"
            )


def _expected_leaf_grads(build, seed) -> list:
    """The leaves' gradients as minilucid's own backward computes them."""
    if build is _chain:  # the same products in the same order, without a second chain
        grad = np.array(1.0)
        for _ in range(CHAIN_DEPTH):
            grad = grad * 1.00001
        return [grad]
    root, leaves = build(seed)
    backward(root, gradient=np.ones_like(root.data))
    return [leaf.grad for leaf in leaves]


def _judge_order(cases, data) -> str:
    graphs = judged_cases(data, "graphs", cases["graphs"])
    for i, got in enumerate(graphs):
        label, build = _graph("GRAPHS", i)
        _judge_order_on(label, build, cases["seed"], got)
    return (
        f"✓ your topological_order drives minilucid's backward correctly on {cases['graphs']} "
        f"graphs, including the {CHAIN_DEPTH:,}-deep chain"
    )


def _after_order(sort) -> None:
    root, _ = _diamond()
    steps = []
    backward(root, gradient=np.ones_like(root.data), sort=sort, trace=steps)
    print("  the diamond's backward, in the order your sort gave:")
    for step, (t, grad, _) in enumerate(steps, start=1):
        print(f"  step {step}: {t.name:<5} receives {np.array2string(grad, precision=4)}")


SORT = register(
    Exercise(
        check="check_topological_order",
        chapter="03",
        title="The topological sort",
        probe=_probe_order,
        judge=_judge_order,
        cases=lambda seed: _graph_cases(seed, "GRAPHS"),
        forbidden=("topological_order",),
        reveals=("minilucid.autograd.topological_order",),
        after=_after_order,
    )
)
check_topological_order = SORT.lab_check


# --- exercise 2: the reverse sweep ----------------------------------------------------------


def _probe_sweep(cases, sweep):
    """Per graph: the learner's gradient for each tensor of _tensors(root) (None: none given),
    and which of them share memory with another's."""
    out = []
    for i in range(cases["graphs"]):
        _, build = _graph("SWEEP_GRAPHS", i)
        root, _ = build(cases["seed"])
        nodes = _tensors(root)
        record = attempt(sweep, root, topological_order(root))
        if record[0] == "raised":
            out.append({"raised": list(record)})
            break
        grads = record[1]
        if not isinstance(grads, dict):
            out.append({"type": type(grads).__name__})
            continue
        index = {id(t): k for k, t in enumerate(nodes)}
        given = [None] * len(nodes)
        arrays = [None] * len(nodes)
        for key, value in list(grads.items()):
            k = index.get(id(key))
            if k is None:
                continue
            if isinstance(value, np.ndarray):
                arrays[k] = value
            converted = attempt(lambda v=value: np.array(v, dtype=np.float64))
            given[k] = converted[1] if converted[0] == "ok" else "not numbers"
        shared = [
            a is not None
            and any(
                b is not None and j != k and np.shares_memory(a, b) for j, b in enumerate(arrays)
            )
            for k, a in enumerate(arrays)
        ]
        out.append({"grads": given, "shared": shared})
    return {"graphs": out}


def _judge_sweep_on(label: str, build, seed: int, got) -> None:
    if not isinstance(got, dict):
        raise Wrong(f"on {label}, the results of your answer hold no gradients")
    if "raised" in got:
        record = got["raised"]
        if not (isinstance(record, list) and len(record) == 3 and record[0] == "raised"):
            raise Wrong(f"on {label}, the results of your answer hold no gradients")
        record = [str(r) for r in record]
        if record[1] == "KeyError":
            raise Wrong(
                f"on {label}, your backward_sweep looked up a tensor that had no gradient in "
                "the dict yet (KeyError): which tensors have one when the sweep reaches it?"
            )
        raise Wrong(raised_message(f"on {label}, your backward_sweep", record))
    if "type" in got:
        raise Wrong(
            f"on {label}, backward_sweep returned a {str(got['type'])[:40]}, not a dict "
            "{tensor: gradient array}"
        )
    root, _ = build(seed)
    nodes = _tensors(root)
    given = _count(got, "grads", len(nodes))
    shared = _count(got, "shared", len(nodes))
    index = {id(t): k for k, t in enumerate(nodes)}
    steps = []
    backward(root, gradient=np.ones_like(root.data), retain_graph=True, trace=steps)
    uses = {}
    for _, _, sent in steps:
        for parent, _, _ in sent:
            uses[id(parent)] = uses.get(id(parent), 0) + 1
    for t, expected, _ in steps:
        k = index[id(t)]
        name = t.name
        if given[k] is None:
            seed_note = " (the root, where the sweep starts)" if t is root else ""
            raise Wrong(
                f"on {label}, your dict has no gradient for {name!r}{seed_note} (expected "
                f"{np.array2string(expected, precision=4)})"
            )
        if isinstance(given[k], str):
            raise Wrong(f"on {label}, the gradient for {name!r} is not an array of numbers")
        value = _float_array(given[k], expected.shape, f"on {label}, the gradient for {name!r}")
        index_bad = _first_bad(value, expected)
        if index_bad is None:
            continue
        message = (
            f"on {label}, d({root.name})/d({name}) is wrong at entry {index_bad}: expected "
            f"{number(expected[index_bad])}, got {number(value[index_bad])}."
        )
        if shared[k] is True:
            message += (
                f" Your dict holds the same array for {name!r} and another tensor: an op may "
                "send one array to two inputs (Add does), and adding into it in place (+=) "
                "changes both."
            )
        elif t is root:
            message += " This is the root's own gradient, the seed of the sweep."
        elif uses.get(id(t), 0) > 1:
            message += f" {name!r} is used more than once, and receives a gradient from each use."
        raise Wrong(message)
    for k, t in enumerate(nodes):
        if not t.requires_grad and given[k] is not None:
            raise Wrong(
                f"on {label}, your dict holds a gradient for {_label(t)}, which does not "
                "require grad"
            )


def _judge_sweep(cases, data) -> str:
    graphs = judged_cases(data, "graphs", cases["graphs"])
    for i, got in enumerate(graphs):
        label, build = _graph("SWEEP_GRAPHS", i)
        _judge_sweep_on(label, build, cases["seed"], got)
    return f"✓ your backward_sweep matches minilucid's backward on {cases['graphs']} graphs"


def _after_sweep(sweep) -> None:
    root, _ = _reuse()
    grads = sweep(root, topological_order(root))
    print("  for y = h * h with h = 3 * x, your sweep gives:")
    for t in reversed(topological_order(root)):
        print(f"  d(y)/d({t.name}) = {np.array2string(np.asarray(grads[t]), precision=4)}")


SWEEP = register(
    Exercise(
        check="check_backward_sweep",
        chapter="03",
        title="The reverse sweep",
        probe=_probe_sweep,
        judge=_judge_sweep,
        cases=lambda seed: _graph_cases(seed, "SWEEP_GRAPHS"),
        forbidden=("backward",),
        reveals=("minilucid.autograd.backward",),
        after=_after_sweep,
    )
)
check_backward_sweep = SWEEP.lab_check


# --- exercises 3 and 4: the small graph, by hand ----------------------------------------------


def small_graph() -> dict:
    """x = 2, w = 3;  h = x * w;  g = h + x;  loss = h * g. Returns {name: tensor}."""
    x = Tensor(2.0, dtype=np.float64, requires_grad=True, name="x")
    w = Tensor(3.0, dtype=np.float64, requires_grad=True, name="w")
    h = _named(x * w, "h")
    g = _named(h + x, "g")
    loss = _named(h * g, "loss")
    return {"x": x, "w": w, "h": h, "g": g, "loss": loss}


def _plain_dict(answer, convert):
    """A learner's {name: value} as plain data: {"type": name} for anything but a dict; keys
    kept when they are str, values through `convert` (None when it fails)."""
    if not isinstance(answer, dict):
        return {"type": type(answer).__name__}
    out = {}
    for key, value in list(answer.items()):
        if type(key) is str:
            record = attempt(convert, value)
            out[key] = record[1] if record[0] == "ok" else None
    return {"values": out, "keys": len(answer)}


def _whole_number(value):
    if isinstance(value, bool) or not float(value).is_integer():
        return float(value)
    return int(value)


def _probe_steps(cases, steps):
    return _plain_dict(steps, _whole_number)


def _values_of(data, what: str) -> dict:
    if not isinstance(data, dict):
        raise Wrong(f"the results of your answer hold no {what}")
    if "type" in data:
        raise Wrong(f"your answer is a {str(data['type'])[:40]}, not a dict {{name: {what}}}")
    values = data.get("values")
    if not isinstance(values, dict) or not isinstance(data.get("keys"), int):
        raise Wrong(f"the results of your answer hold no {what}")
    if data["keys"] != len(values):
        raise Wrong("your dict has keys that are not names of the graph's tensors (str)")
    return values


def _judge_steps(cases, data) -> str:
    steps = _values_of(data, "step number")
    nodes = small_graph()
    names = list(nodes)
    missing = [n for n in names if n not in steps]
    if missing:
        raise Wrong(f"your dict has no step number for {', '.join(map(repr, missing))}")
    extra = [n for n in steps if n not in nodes]
    if extra:
        raise Wrong(f"the graph has no tensor called {', '.join(repr(n[:20]) for n in extra)}")
    numbers = [steps[n] for n in names]
    if not all(type(v) is int for v in numbers) or sorted(numbers) != list(
        range(1, len(names) + 1)
    ):
        shown = sorted(v for v in numbers if type(v) in (int, float))
        raise Wrong(f"the step numbers must be 1 to {len(names)}, each used once; you gave {shown}")
    if steps["loss"] != 1:
        raise Wrong(
            f"loss got step {steps['loss']}; backward starts at the output, so loss is step 1"
        )
    for name, t in nodes.items():
        if t._ctx is None:
            continue
        for parent in t._ctx.parents:
            if isinstance(parent, Tensor) and steps[parent.name] < steps[name]:
                raise Wrong(
                    f"{parent.name!r} gets step {steps[parent.name]}, before {name!r} "
                    f"(step {steps[name]}); but {name!r} uses {parent.name!r}, so {name!r} "
                    f"sends its gradient to {parent.name!r}, which is not complete before that"
                )
    real = list(reversed(topological_order(nodes["loss"])))
    listing = ", ".join(f"{t.name} {i}" for i, t in enumerate(real, start=1))
    return f"✓ a valid order for backward; minilucid's own numbering is: {listing}"


STEPS = register(
    Exercise(
        check="check_step_numbers",
        chapter="03",
        title="Which step is each tensor?",
        probe=_probe_steps,
        judge=_judge_steps,
        forbidden=("topological_order", "backward"),
    )
)
check_step_numbers = STEPS.lab_check


def _probe_hand(cases, grads):
    return _plain_dict(grads, float)


def _judge_hand(cases, data) -> str:
    grads = _values_of(data, "number")
    nodes = small_graph()
    for name in ("h", "g", "loss"):
        nodes[name].retain_grad()
    nodes["loss"].backward()
    why = {
        "loss": "This one is the seed.",
        "g": "loss = h * g.",
        "h": "h is used twice, by g = h + x and by loss = h * g.",
        "w": "h = x * w.",
        "x": "x is used twice, by h = x * w and by g = h + x.",
    }
    order = ["loss", "g", "h", "w", "x"]
    for name in order:
        if name not in grads:
            raise Wrong(f"your dict has no gradient for {name!r}")
        got = grads[name]
        if type(got) is not float:
            raise Wrong(f"the gradient for {name!r} is not a number")
        expected = float(nodes[name].grad)
        if not np.isclose(got, expected):
            raise Wrong(f"d(loss)/d({name}) is not {number(got)}. {why[name]}")
    listing = ", ".join(f"{n} {number(nodes[n].grad)}" for n in order)
    return f"✓ all five gradients agree with minilucid's backward: {listing}"


HAND = register(
    Exercise(
        check="check_hand_gradients",
        chapter="03",
        title="A backward pass by hand",
        probe=_probe_hand,
        judge=_judge_hand,
        forbidden=("backward", "grad"),
    )
)
check_hand_gradients = HAND.lab_check


# --- exercise 5: a scalar engine of your own --------------------------------------------------
#
# The learner's `Scalar` is run on expressions that minilucid also computes (float64 tensors):
# values and every leaf's gradient must agree. `train_neuron` is replayed with minilucid, step
# for step, from the same start.

ENGINE_CHAIN = 3_000  # deeper than Python's default recursion limit (1,000)

# (label, leaves, the expression as a function of the leaves); numbers on both sides of + and *
ENGINE_CASES = frozen(
    __name__,
    "ENGINE_CASES",
    [
        ("x * y", (2.0, -3.0), lambda x, y: x * y),
        ("x + y", (2.0, -3.0), lambda x, y: x + y),
        (
            "2 * x + 1 and 3 + x * 4 (numbers on either side)",
            (0.5,),
            lambda x: (2 * x + 1) * (3 + x * 4),
        ),
        ("x * x + x (x used three times)", (1.5,), lambda x: x * x + x),
        ("a diamond: a = 3x, then a * (2a)", (2.0,), lambda x: (lambda a: a * (a * 2))(x * 3)),
        ("a diamond: a = 3x, then (2a) * a", (2.0,), lambda x: (lambda a: (a * 2) * a)(x * 3)),
        ("tanh(w * x + b)", (0.7, -1.2, 0.3), lambda w, x, b: (w * x + b).tanh()),
        ("tanh(x) * tanh(x) + tanh(2 * x)", (0.9,), lambda x: x.tanh() * x.tanh() + (2 * x).tanh()),
        (
            "(tanh(w * x) + -y) * (tanh(w * x) + -y)",
            (0.4, 2.0),
            lambda w, x: ((w * x).tanh() + -0.5) * ((w * x).tanh() + -0.5),
        ),
    ],
)


def _engine_cases(seed: int) -> dict:
    cases = cases_of(__name__, "ENGINE_CASES")
    values = [
        [float(v) for v in np.atleast_1d(_values(seed, 20 + i, list(leaves)))]
        for i, (_, leaves, _) in enumerate(cases)
    ]
    return {"seed": seed, "values": values, "chain": ENGINE_CHAIN}


def _engine_reference(fn, values):
    """(value, [gradients]) of fn at values, by minilucid on float64 tensors."""
    leaves = [Tensor(np.array(v, dtype=np.float64), requires_grad=True) for v in values]
    out = fn(*leaves)
    backward(out)
    return float(out.data), [float(leaf.grad) for leaf in leaves]


def _number_of(value):
    """A learner's number as a float record: ("ok", x) or ("raised", ...)."""
    record = attempt(float, value)
    return list(record) if record[0] == "raised" else ["ok", record[1]]


def _probe_engine(cases, Scalar):
    runs = []
    for (_, _, fn), values in zip(cases_of(__name__, "ENGINE_CASES"), cases["values"], strict=True):
        run = {}
        runs.append(run)
        leaves = attempt(lambda values=values: [Scalar(v) for v in values])
        if leaves[0] == "raised":
            run["raised"] = ["Scalar(...)", *leaves]
            return {"runs": runs, "chain": None}
        leaves = leaves[1]
        out = attempt(fn, *leaves)
        if out[0] == "raised":
            run["raised"] = ["computing it with your Scalar", *out]
            return {"runs": runs, "chain": None}
        out = out[1]
        if not hasattr(out, "backward") or not hasattr(out, "data"):
            run["type"] = type(out).__name__
            continue
        record = attempt(out.backward)
        if record[0] == "raised":
            run["raised"] = ["backward()", *record]
            return {"runs": runs, "chain": None}
        run["value"] = _number_of(out.data)
        run["grads"] = [_number_of(getattr(leaf, "grad", None)) for leaf in leaves]
    x = attempt(Scalar, 1.0)
    chain = None
    if x[0] == "ok":
        record = attempt(lambda x=x[1]: _scalar_chain(x, cases["chain"]))
        chain = list(record) if record[0] == "raised" else _number_of(x[1].grad)
    return {"runs": runs, "chain": chain}


def _scalar_chain(x, depth):
    y = x
    for _ in range(depth):
        y = y * 1.0001
    y.backward()


def _float_record(record, what: str):
    """The float in a ("ok", x) record, or Wrong naming what was raised."""
    if not isinstance(record, list) or len(record) not in (2, 3):
        raise Wrong(f"the results of your answer hold no number for {what}")
    if record[0] == "raised" and len(record) == 3:
        raise Wrong(raised_message(what, [str(r) for r in record]))
    if record[0] != "ok" or type(record[1]) is not float:
        raise Wrong(f"the results of your answer hold no number for {what}")
    return record[1]


def _judge_engine(cases, data) -> str:
    names = "xyzuvw"
    engine = cases_of(__name__, "ENGINE_CASES")
    runs = judged_cases(data, "runs", len(engine))
    for (label, _, fn), values, run in zip(engine, cases["values"], runs, strict=False):
        shown = ", ".join(number(v) for v in values)
        where = f"{label} at ({shown})"
        judged_entry(run, where)
        if "type" in run:
            raise Wrong(
                f"{where} with your Scalar gave a {str(run['type'])[:40]}, not a Scalar: every "
                "op (+, * with numbers on either side, tanh) is to return a new Scalar"
            )
        value, grads = _engine_reference(fn, values)
        got = _float_record(run.get("value"), f"the value of {where}")
        if not np.isclose(got, value, rtol=1e-9, atol=1e-12):
            raise Wrong(
                f"{where}: your Scalar computes {number(got)}, expected {number(value)}: the "
                "forward computation of one of its ops is off"
            )
        mine = run.get("grads")
        if not isinstance(mine, list) or len(mine) != len(grads):
            raise Wrong(f"the results of your answer hold no gradients for {where}")
        for i, (record, expected) in enumerate(zip(mine, grads, strict=True)):
            leaf = f"leaf {i + 1} ({names[i]})"
            got = _float_record(record, f"the gradient of {leaf} of {where}")
            if not np.isclose(got, expected, rtol=1e-7, atol=1e-10):
                raise Wrong(
                    f"{where}: the gradient of {leaf} is {number(got)}, expected {number(expected)}"
                )
    chain = data.get("chain")
    if chain is None:
        raise Wrong("Scalar(1.0) raised, or the results of your answer hold no chain")
    depth = cases["chain"]
    if isinstance(chain, list) and len(chain) == 3 and chain[0] == "raised":
        raise Wrong(
            raised_message(
                f"backward() on a chain of {depth:,} multiplications", [str(r) for r in chain]
            )
        )
    got = _float_record(chain, f"the chain of {depth:,} multiplications")
    expected = 1.0001**depth
    if not np.isclose(got, expected, rtol=1e-9):
        raise Wrong(
            f"on a chain of {depth:,} multiplications by 1.0001 the leaf's gradient is "
            f"{number(got)}, expected {number(expected)}"
        )
    return (
        f"✓ your Scalar engine agrees with minilucid on {len(engine)} expressions (reuse, "
        f"a diamond, tanh) and a {depth:,}-deep chain"
    )


ENGINE = register(
    Exercise(
        check="check_scalar_engine",
        chapter="03",
        title="An engine of your own",
        probe=_probe_engine,
        judge=_judge_engine,
        cases=_engine_cases,
        forbidden=("minilucid", "Tensor", "topological_order"),
    )
)
check_scalar_engine = ENGINE.lab_check


NEURON_DATA = frozen(
    __name__,
    "NEURON_DATA",
    {
        "xs": [-2.0, -1.0, 0.0, 1.0, 2.0],
        "ys": [-0.9, -0.6, -0.2, 0.4, 0.8],
        "w0": 0.1,
        "b0": 0.0,
        "lr": 0.05,
        "steps": 60,
    },
)


def _neuron_cases(seed: int) -> dict:
    d = dict(cases_of(__name__, "NEURON_DATA"))
    d["xs"] = [float(v) for v in d["xs"]]
    ys = _values(seed, 40, list(d["ys"]))
    d["ys"] = [float(v) for v in (ys if seed == LAB_SEED else np.tanh(ys))]
    return d


def _neuron_reference(xs, ys, w0, b0, lr, steps):
    """The same training run with minilucid's tensors: losses before each update, final w, b."""
    w = Tensor(np.array(w0), requires_grad=True)
    b = Tensor(np.array(b0), requires_grad=True)
    losses = []
    for _ in range(steps):
        loss = 0.0
        for x, y in zip(xs, ys, strict=True):
            d = (w * x + b).tanh() - y
            loss = loss + d * d
        w.grad = b.grad = None
        backward(loss)
        w.data = w.data - lr * w.grad
        b.data = b.data - lr * b.grad
        losses.append(float(loss.data))
    return float(w.data), float(b.data), losses


def _probe_neuron(cases, train_neuron):
    record = attempt(train_neuron, **cases)
    if record[0] == "raised":
        return {"raised": list(record)}
    result = record[1]
    if not isinstance(result, tuple | list):
        return {"type": type(result).__name__}
    if len(result) != 3:
        return {"length": len(result)}
    w, b, losses = result
    listed = attempt(list, losses)
    return {
        "w": _number_of(w),
        "b": _number_of(b),
        "losses": [_number_of(v) for v in listed[1]] if listed[0] == "ok" else None,
    }


def _judge_neuron(cases, data) -> str:
    if not isinstance(data, dict):
        raise Wrong("the results of your answer hold no training run")
    if "raised" in data:
        record = data["raised"]
        if not isinstance(record, list) or len(record) != 3:
            raise Wrong("the results of your answer hold no training run")
        raise Wrong(raised_message("train_neuron(...)", [str(r) for r in record]))
    if "type" in data:
        raise Wrong(f"train_neuron returned {str(data['type'])[:40]}, not a tuple (w, b, losses)")
    if "length" in data:
        raise Wrong(
            f"train_neuron returned {data['length']} values, not the three of (w, b, losses)"
        )
    steps = cases["steps"]
    losses = data.get("losses")
    if not isinstance(losses, list):
        raise Wrong("the losses train_neuron returned are not a list of numbers")
    losses = [_float_record(v, "a loss") for v in losses]
    if len(losses) != steps:
        raise Wrong(f"{steps} steps gave {len(losses)} losses, not one per step")
    w_ref, b_ref, losses_ref = _neuron_reference(**cases)
    for step, (got, expected) in enumerate(zip(losses, losses_ref, strict=True), start=1):
        if not np.isclose(got, expected, rtol=1e-7, atol=1e-10):
            if step == 1:
                what = "the first loss, at the starting w and b, before any update"
            else:
                what = (
                    "the first step was right and a later one is not: what do w.grad and "
                    "b.grad hold when a step's backward begins, and which way did w move?"
                )
            raise Wrong(
                f"step {step}: your loss is {number(got)}, minilucid's replay gives "
                f"{number(expected)}; {what}"
            )
    final = (_float_record(data.get("w"), "w"), _float_record(data.get("b"), "b"))
    if not np.allclose(final, (w_ref, b_ref), rtol=1e-7, atol=1e-10):
        raise Wrong(
            f"the losses are right but the final (w, b) = ({number(final[0])}, "
            f"{number(final[1])}) is not the (w, b) after the last update"
        )
    return (
        f"✓ your neuron trains exactly as minilucid's replay: loss {number(losses[0])} -> "
        f"{number(losses[-1])} in {steps} steps, w = {number(final[0])}, b = {number(final[1])}"
    )


NEURON = register(
    Exercise(
        check="check_train_neuron",
        chapter="03",
        title="A neuron trained by your engine",
        probe=_probe_neuron,
        judge=_judge_neuron,
        cases=_neuron_cases,
        forbidden=("minilucid", "Tensor"),
    )
)
check_train_neuron = NEURON.lab_check
