"""Checks for the exercises of chapter 03 (reverse-mode autodiff).

The learner's sort drives minilucid's real backward; the learner's sweep is compared, tensor
by tensor and entry by entry, with the gradients the real backward sends.
"""

import numpy as np

from minilucid.autograd import backward, topological_order
from minilucid.tensor import Tensor
from minilucid_course.checks.common import call, cases_of, frozen, number

CHAIN_DEPTH = 100_000


def _leaf(values, name):
    return Tensor(np.array(values, dtype=np.float64), requires_grad=True, name=name)


def _named(t, name):
    t.name = name
    return t


# --- the graphs every check uses ------------------------------------------------------------


def _reuse():
    """h * h: one op uses the same tensor twice."""
    x = _leaf([1.0, -2.0, 3.0], "x")
    h = _named(x * 3.0, "h")
    return _named(h * h, "y"), [x]


def _diamond():
    """a feeds loss directly and through b: the shortcut that breaks a careless order."""
    x = _leaf([2.0, -1.0], "x")
    a = _named(x * 3.0, "a")
    b = _named(a * 2.0, "b")
    return _named(a * b, "loss"), [x]


def _fan_out():
    """x feeds three ops, w is broadcast over x."""
    x = _leaf([0.5, -1.5, 2.0], "x")
    w = _leaf(1.5, "w")
    p = _named(x * w, "p")
    q = _named(x * x, "q")
    r = _named(p + q, "r")
    return _named(r - x / w, "out"), [x, w]


def _chain():
    """x * c * c * ... CHAIN_DEPTH times: deeper than Python lets a function call itself."""
    x = _leaf(1.0, "x")
    y = x
    for _ in range(CHAIN_DEPTH):
        y = y * 1.00001
    y.name = "end of the chain"
    return y, [x]


def _shared_array():
    """s = (a + b) + a: Add hands one and the same array to both of its inputs."""
    a = _leaf([1.0, 2.0], "a")
    b = _leaf([0.5, -1.0], "b")
    return _named(_named(a + b, "a + b") + a, "s"), [a, b]


GRAPHS = frozen(
    __name__,
    "GRAPHS",
    [
        ("y = h * h (h used twice by one op)", _reuse),
        ("a diamond: loss = a * b with b = a * 2", _diamond),
        ("x used by three ops, w broadcast", _fan_out),
        (f"a {CHAIN_DEPTH:,}-deep chain", _chain),
    ],
)
SWEEP_GRAPHS = frozen(
    __name__,
    "SWEEP_GRAPHS",
    [*GRAPHS[:3], ("s = (a + b) + a, where Add sends one array to both inputs", _shared_array)],
)

TRUTH_OF_A_TENSOR = (
    "`t in some_list` compares tensors with ==, entry by entry, and a tensor of several entries "
    "has no single truth value. Keep the tensors you have visited by identity instead: a dict "
    "or set keyed by id(t)."
)


def _label(t, position=None) -> str:
    if t.name is not None:
        return repr(t.name)
    if position is not None:
        return f"the tensor at position {position} of the real order (a link of the chain)"
    return f"a tensor of shape {t.shape}"


# --- exercise 1: the topological sort -------------------------------------------------------


def _check_order(order, root, label) -> None:
    reference = topological_order(root)
    where = {id(t): i for i, t in enumerate(reference)}
    seen = {}
    for position, t in enumerate(order):
        if not isinstance(t, Tensor):
            raise AssertionError(
                f"on {label}, your order holds {t!r} (a {type(t).__name__}); it must hold "
                "only tensors. Skip parents that are plain numbers."
            )
        if id(t) in seen:
            raise AssertionError(
                f"on {label}, your order lists tensor {_label(t, where.get(id(t)))} twice "
                f"(at positions {seen[id(t)]} and {position}). Each tensor must appear once: "
                "mark a tensor as visited and skip it when you meet it again."
            )
        seen[id(t)] = position
    for t in reference:
        if id(t) not in seen:
            raise AssertionError(
                f"on {label}, your order leaves out tensor {_label(t, where[id(t)])}. Every "
                "tensor that requires grad and that the root was computed from must be listed."
            )
    for t in order:
        ctx = t._ctx
        if ctx is None or id(t) not in where:
            continue
        for parent in ctx.parents:
            if isinstance(parent, Tensor) and id(parent) in seen and seen[id(parent)] > seen[id(t)]:
                raise AssertionError(
                    f"on {label}, your order puts {_label(parent, where.get(id(parent)))} "
                    f"(position {seen[id(parent)]}) after {_label(t, where.get(id(t)))} "
                    f"(position {seen[id(t)]}), but {_label(t)} was computed from it. A tensor "
                    "must come after every tensor it was computed from: append a tensor only "
                    "once all of its parents are in the list (post-order)."
                )


def _expected_leaf_grads(build) -> list:
    """The leaves' gradients as minilucid's own backward computes them."""
    if build is _chain:  # the same products in the same order, without a second chain
        grad = np.array(1.0)
        for _ in range(CHAIN_DEPTH):
            grad = grad * 1.00001
        return [grad]
    root, leaves = build()
    backward(root, gradient=np.ones_like(root.data))
    return [leaf.grad for leaf in leaves]


def check_topological_order(sort) -> None:
    """Check `sort(root)` on four graphs, then let it drive minilucid's real backward."""
    graphs = cases_of(__name__, "GRAPHS")
    for label, build in graphs:
        root, leaves = build()
        try:
            order = list(sort(root))
        except RecursionError:
            raise AssertionError(
                f"on {label}, your sort raised RecursionError: Python allows about 1,000 "
                "nested calls, and a recursive walk needs one per tensor along the chain. "
                "Keep the tensors still to visit in a list used as a stack instead."
            ) from None
        except NotImplementedError:
            raise
        except RuntimeError as error:
            if "truth value" not in str(error):
                raise AssertionError(
                    f"on {label}, your sort raised RuntimeError: {error}"
                ) from None
            raise AssertionError(
                f"on {label}, your sort asked a tensor for its truth value. {TRUTH_OF_A_TENSOR}"
            ) from None
        except (AttributeError, TypeError) as error:
            raise AssertionError(
                f"on {label}, your sort raised {type(error).__name__}: {error}. Some parents are "
                "plain numbers (the 3.0 in x * 3.0): skip anything that is not a Tensor with "
                "requires_grad."
            ) from None
        _check_order(order, root, label)
        # the real backward, driven by their sort, against the real backward driven by ours
        # the order your sort gave (checked above) drives the real sweep
        backward(root, gradient=np.ones_like(root.data), sort=lambda r, order=order: order)
        for mine, expected in zip(leaves, _expected_leaf_grads(build), strict=True):
            if mine.grad is None or not np.allclose(mine.grad, expected, rtol=1e-9, atol=1e-12):
                got = np.full_like(expected, np.nan) if mine.grad is None else mine.grad
                index = tuple(int(i) for i in np.argwhere(~np.isclose(got, expected))[0])
                raise AssertionError(
                    f"on {label}, backward driven by your sort gave {mine.name}.grad "
                    f"{number(got[index])} at entry {index}, expected {number(expected[index])}."
                )
    print(
        f"✓ your topological_order drives minilucid's backward correctly on {len(graphs)} "
        f"graphs, including the {CHAIN_DEPTH:,}-deep chain"
    )
    root, _ = _diamond()
    steps = []
    backward(root, gradient=np.ones_like(root.data), sort=sort, trace=steps)
    print("  the diamond's backward, in the order your sort gave:")
    for step, (t, grad, _) in enumerate(steps, start=1):
        print(f"  step {step}: {t.name:<5} receives {np.array2string(grad, precision=4)}")


# --- exercise 2: the reverse sweep ----------------------------------------------------------


def check_backward_sweep(sweep) -> None:
    """`sweep(root, order)` returns {tensor: d(root)/d(tensor)}; compare with the real one."""
    graphs = cases_of(__name__, "SWEEP_GRAPHS")
    for label, build in graphs:
        root, _ = build()
        order = topological_order(root)
        try:
            grads = sweep(root, order)
        except NotImplementedError:
            raise
        except KeyError:
            raise AssertionError(
                f"on {label}, your backward_sweep looked up a tensor that had no gradient in "
                "the dict yet (KeyError). Seed the root first, grads = {root: "
                "np.ones_like(root.data)}, and walk the order from its end (reversed), so that "
                "a tensor's gradient is there before you need it."
            ) from None
        except (TypeError, ValueError, AttributeError) as error:
            raise AssertionError(
                f"on {label}, your backward_sweep raised {type(error).__name__}: {error}"
            ) from None
        if not isinstance(grads, dict):
            raise AssertionError(
                f"on {label}, backward_sweep returned a {type(grads).__name__}; return the "
                "dict {tensor: gradient array}"
            )
        steps = []
        backward(
            root,
            gradient=np.ones_like(root.data),
            retain_graph=True,
            trace=steps,
            sort=lambda r, order=order: order,
        )
        for t, expected, _ in steps:
            got = grads.get(t)
            name = t.name
            if got is None:
                hint = (
                    " Start by seeding the root: grads = {root: np.ones_like(root.data)}."
                    if t is root
                    else ""
                )
                raise AssertionError(
                    f"on {label}, your dict has no gradient for {name!r} "
                    f"(expected {np.array2string(expected, precision=4)}).{hint}"
                )
            got = np.asarray(got)
            if got.shape != expected.shape:
                raise AssertionError(
                    f"on {label}, the gradient for {name!r} has shape {got.shape}, "
                    f"expected {expected.shape}"
                )
            bad = ~np.isclose(got, expected, rtol=1e-9, atol=1e-12)
            if bad.any():
                index = tuple(int(i) for i in np.argwhere(bad)[0])
                message = (
                    f"on {label}, d({root.name})/d({name}) is wrong at entry {index}: "
                    f"expected {number(expected[index])}, got {number(got[index])}."
                )
                if _shares_an_array(grads, t):
                    message += (
                        f" Your dict holds the same array for {name!r} and another tensor: an op "
                        "may send one array to two inputs (Add does), so adding into it in place "
                        "(+=) changes both. Make a new array for each sum: g_old + g_new."
                    )
                elif t is root:
                    message += " The root's own gradient is the seed: all ones."
                elif sum(p is t for _, _, sent in steps for p, _, _ in sent) > 1:
                    message += (
                        f" {name!r} is used more than once: add up (accumulate) what arrives "
                        "from each use, do not overwrite it."
                    )
                raise AssertionError(message)
    print(f"✓ your backward_sweep matches minilucid's backward on {len(graphs)} graphs")
    root, _ = _reuse()
    grads = sweep(root, topological_order(root))
    print("  for y = h * h with h = 3 * x, your sweep gives:")
    for t in reversed(topological_order(root)):
        print(f"  d(y)/d({t.name}) = {np.array2string(np.asarray(grads[t]), precision=4)}")


def _shares_an_array(grads: dict, t) -> bool:
    """Whether t's gradient in the learner's dict is (part of) another tensor's array too."""
    mine = grads.get(t)
    return isinstance(mine, np.ndarray) and any(
        other is not t and isinstance(g, np.ndarray) and np.shares_memory(g, mine)
        for other, g in grads.items()
    )


# --- exercises 3 and 4: the small graph, by hand ----------------------------------------------


def small_graph() -> dict:
    """x = 2, w = 3;  h = x * w;  g = h + x;  loss = h * g. Returns {name: tensor}."""
    x = Tensor(2.0, dtype=np.float64, requires_grad=True, name="x")
    w = Tensor(3.0, dtype=np.float64, requires_grad=True, name="w")
    h = _named(x * w, "h")
    g = _named(h + x, "g")
    loss = _named(h * g, "loss")
    return {"x": x, "w": w, "h": h, "g": g, "loss": loss}


def check_step_numbers(steps) -> None:
    """`steps` maps each name of small_graph to the step backward handles it at (1 = loss)."""
    nodes = small_graph()
    names = list(nodes)
    if not isinstance(steps, dict):
        raise AssertionError(f"return a dict {{name: step number}}, not a {type(steps).__name__}")
    missing = [n for n in names if n not in steps]
    if missing:
        raise AssertionError(f"your dict has no step number for {', '.join(map(repr, missing))}")
    extra = [n for n in steps if n not in nodes]
    if extra:
        raise AssertionError(f"the graph has no tensor called {', '.join(map(repr, extra))}")
    numbers = sorted(steps.values())
    if numbers != list(range(1, len(names) + 1)):
        raise AssertionError(
            f"the step numbers must be 1 to {len(names)}, each used once; you gave {numbers}"
        )
    if steps["loss"] != 1:
        raise AssertionError(
            f"loss got step {steps['loss']}; backward starts at the output, so loss is step 1"
        )
    for name, t in nodes.items():
        if t._ctx is None:
            continue
        for parent in t._ctx.parents:
            if isinstance(parent, Tensor) and steps[parent.name] < steps[name]:
                raise AssertionError(
                    f"{parent.name!r} gets step {steps[parent.name]}, before {name!r} "
                    f"(step {steps[name]}); but {name!r} uses {parent.name!r}, so {name!r} must "
                    f"send its gradient to {parent.name!r} first. A tensor's step comes after "
                    "the steps of every tensor that uses it."
                )
    real = list(reversed(topological_order(nodes["loss"])))
    listing = ", ".join(f"{t.name} {i}" for i, t in enumerate(real, start=1))
    print(f"✓ a valid order for backward; minilucid's own numbering is: {listing}")


def check_hand_gradients(grads) -> None:
    """`grads` maps each name of small_graph to d(loss)/d(name) computed by hand."""
    nodes = small_graph()
    nodes["h"].retain_grad()
    nodes["g"].retain_grad()
    nodes["loss"].retain_grad()
    nodes["loss"].backward()
    if not isinstance(grads, dict):
        raise AssertionError(f"return a dict {{name: number}}, not a {type(grads).__name__}")
    order = ["loss", "g", "h", "w", "x"]
    why = {
        "loss": "d(loss)/d(loss) is the seed, 1.",
        "g": "loss = h * g, so d(loss)/d(g) = h.",
        "h": "h is used twice, by g = h + x and by loss = h * g; add both contributions.",
        "w": "h = x * w, so d(loss)/d(w) = d(loss)/d(h) * x.",
        "x": "x is used twice, by h = x * w and by g = h + x; add both contributions.",
    }
    for name in order:
        if name not in grads:
            raise AssertionError(f"your dict has no gradient for {name!r}")
        expected = float(nodes[name].grad)
        try:
            got = float(grads[name])
        except (TypeError, ValueError):
            raise AssertionError(f"the gradient for {name!r} must be a number") from None
        if not np.isclose(got, expected):
            raise AssertionError(
                f"d(loss)/d({name}) should be {number(expected)}, you wrote {number(got)}. "
                + why[name]
            )
    listing = ", ".join(f"{n} {number(nodes[n].grad)}" for n in order)
    print(f"✓ all five gradients agree with minilucid's backward: {listing}")


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


def _engine_reference(fn, values):
    """(value, [gradients]) of fn at values, by minilucid on float64 tensors."""
    leaves = [Tensor(np.array(v, dtype=np.float64), requires_grad=True) for v in values]
    out = fn(*leaves)
    backward(out)
    return float(out.data), [float(leaf.grad) for leaf in leaves]


def _engine_run(Scalar, label, fn, values):
    leaves = call(f"Scalar(...) for {label}", lambda: [Scalar(v) for v in values])
    out = call(f"computing {label} with your Scalar", fn, *leaves)
    if not hasattr(out, "backward") or not hasattr(out, "data"):
        raise AssertionError(
            f"{label} with your Scalar gave a {type(out).__name__}, not a Scalar: every op "
            "(+, * with numbers on either side, tanh) must return a new Scalar"
        )
    call(f"backward() on {label}", out.backward)
    return leaves, out


def check_scalar_engine(Scalar) -> None:
    """Values and gradients of the learner's Scalar against minilucid's, on small graphs."""
    names = "xyzuvw"
    engine_cases = cases_of(__name__, "ENGINE_CASES")
    for label, values, fn in engine_cases:
        leaves, out = _engine_run(Scalar, label, fn, values)
        value, grads = _engine_reference(fn, values)
        if not np.isclose(float(out.data), value, rtol=1e-9, atol=1e-12):
            raise AssertionError(
                f"{label} at {values}: your Scalar computes {number(out.data)}, "
                f"expected {number(value)}. Check the forward computation of its ops."
            )
        for i, (leaf, expected) in enumerate(zip(leaves, grads, strict=True)):
            got = getattr(leaf, "grad", None)
            if got is None or not np.isclose(float(got), expected, rtol=1e-7, atol=1e-10):
                why = (
                    "check each op's local derivative, times the gradient arriving from above; "
                    "where a value is used more than once, add up what each use sends (+=, not "
                    "=); and handle a value only once every value computed from it has sent "
                    "its share (a topological order, walked in reverse)"
                )
                raise AssertionError(
                    f"{label} at {values}: the gradient of leaf {i + 1} ({names[i]}) is "
                    f"{got if got is None else number(got)}, expected {number(expected)}: {why}."
                )
    # a chain deeper than Python's recursion limit
    x = Scalar(1.0)
    y = x
    for _ in range(ENGINE_CHAIN):
        y = y * 1.0001
    call(f"backward() on a chain of {ENGINE_CHAIN:,} multiplications", y.backward)
    expected = 1.0001**ENGINE_CHAIN
    if not np.isclose(float(x.grad), expected, rtol=1e-9):
        raise AssertionError(
            f"on a chain of {ENGINE_CHAIN:,} multiplications by 1.0001 the leaf's gradient is "
            f"{number(x.grad)}, expected {number(expected)}"
        )
    print(
        f"✓ your Scalar engine agrees with minilucid on {len(engine_cases)} expressions (reuse, "
        f"a diamond, tanh) and a {ENGINE_CHAIN:,}-deep chain"
    )


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


def check_train_neuron(train_neuron) -> None:
    """Replay the learner's training run with minilucid, step by step."""
    d = cases_of(__name__, "NEURON_DATA")
    result = call("train_neuron(...)", train_neuron, **d, returns=(tuple, list))
    if len(result) != 3:
        raise AssertionError(
            f"train_neuron returned {len(result)} values; return (w, b, losses): the final "
            "weight and bias as floats and the list of losses, one per step"
        )
    w, b, losses = result
    w_ref, b_ref, losses_ref = _neuron_reference(**d)
    try:
        losses = [float(v) for v in losses]
    except (TypeError, ValueError):
        raise AssertionError("losses must be a list of numbers, one per step") from None
    if len(losses) != d["steps"]:
        raise AssertionError(
            f"{d['steps']} steps should give {d['steps']} losses, got {len(losses)}"
        )
    for step, (got, expected) in enumerate(zip(losses, losses_ref, strict=True), start=1):
        if not np.isclose(got, expected, rtol=1e-7, atol=1e-10):
            if step == 1:
                what = (
                    "the first loss is the sum over the examples of (tanh(w*x + b) - y)**2 "
                    "at the starting w and b, computed before any update"
                )
            else:
                what = (
                    "the first step was right, so look at the update: zero w.grad and b.grad "
                    "before each backward (they add up otherwise), then step against the "
                    "gradient, w.data -= lr * w.grad"
                )
            raise AssertionError(
                f"step {step}: your loss is {number(got)}, minilucid's replay gives "
                f"{number(expected)}; {what}"
            )
    try:
        final = float(w), float(b)
    except (TypeError, ValueError):
        raise AssertionError("return w and b as numbers (w.data, b.data), not Scalars") from None
    if not np.allclose(final, (w_ref, b_ref), rtol=1e-7, atol=1e-10):
        raise AssertionError(
            f"the losses are right but the final (w, b) = ({number(final[0])}, "
            f"{number(final[1])}) is not ({number(w_ref)}, {number(b_ref)}); return them after "
            "the last update"
        )
    print(
        f"✓ your neuron trains exactly as minilucid's replay: loss {number(losses[0])} -> "
        f"{number(losses[-1])} in {d['steps']} steps, w = {number(final[0])}, "
        f"b = {number(final[1])}"
    )
