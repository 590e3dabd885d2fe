"""The facts of a picture, worked out once: nodes, edges, labels, roles, steps, contributions.

A scene is what every renderer prints: the DOT/SVG/PNG renderer and the text listing read the
same nodes and edges and never look at the tensors themselves. A picture style is one function
that turns the walked graph (and, for backward, the sweep) into a scene.
"""

import inspect
from dataclasses import dataclass, field

import numpy as np

from minilucid.autograd import FREED
from minilucid.tensor import Tensor, _NoGradCut
from minilucid.viz._format import _constant, _heat, _meta, _roles, _short, _summary, _summed

SHOWN = 4  # contributions listed at a tensor that many children feed


@dataclass
class _Node:
    """A box or oval: a tensor (n3), the op that made it (op3), a constant (c3_1), a cut (cut3)."""

    key: str
    kind: str  # "tensor", "op", "constant" or "cut"
    title: str  # a tensor's name, an op's class, a constant's value, a cut's words
    group: str | None = None
    meta: str = ""  # shape and dtype
    roles: tuple = ()
    values: str = ""  # every value (a long array summarised), for listings and tooltips
    grad_values: str = ""  # ... and every entry of its gradient, once known
    brief: str = ""  # the values when few enough for a node, else their range
    grad: str | None = None  # a forward picture: .grad, when known
    heat: list | None = None  # that gradient (or `arrived`) as a small grid, when it is large
    step: int | None = None  # a backward picture: the step that took this node
    arrived: str | None = None  # ... and the gradient it passed on at that step
    seed: bool = False  # the root: its gradient is the seed
    hooked: str | None = None  # what arrived, when hooks changed it into `arrived`
    parts: list = field(default_factory=list)  # (step, child's name, gradient) sent to it
    args: list = field(default_factory=list)  # an op: its inputs, by name or value
    output: str = ""  # an op: the tensor it made
    check: object = None  # draw_gradcheck's verdict on an op
    freed: bool = False  # an op whose graph backward() freed


@dataclass
class _Edge:
    tail: str
    head: str
    kind: str  # "data" (along the forward pass), "grad" (backward, against it) or "detach"
    step: int | None = None  # a gradient edge appears at this step
    label: str = ""  # the gradient it carries
    summed: str = ""  # how broadcasting was summed away on the way
    cut: bool = False  # from a "not drawn" note
    slot: int | None = None  # a tensor into an op: which of the op's inputs it is


@dataclass
class _Step:
    """One step of the backward sweep, as the listing and the step-through's captions say it."""

    number: int
    name: str | None  # None: a tensor not drawn
    grad: str
    sources: str  # " (seed)", " = a (from y) + b (from z)", what hooks did
    sends: list  # (op, parent's name, gradient, how broadcasting was summed) per parent


@dataclass
class _Scene:
    style: str  # "forward", "backward" or "gradcheck"
    root: str
    nodes: list
    edges: list
    groups: dict  # label -> names of the tensors boxed under it, in forward order
    note: str  # what was left out or freed
    show_values: bool = True
    steps: list = field(default_factory=list)  # backward only

    def frames(self) -> list:
        """The steps a step-through stops at: those of drawn tensors."""
        return [s.number for s in self.steps if s.name is not None]


# --------------------------------------------------------------------------------------------
# Picture styles: each is one function from the walked graph to a scene


def forward_scene(graph, groups=None, show_values=True, checks=None) -> "_Scene":
    """draw_graph and draw_gradcheck: tensors, ops, data edges; grads and verdicts when known."""
    scene = _base(graph, groups, show_values, "forward" if checks is None else "gradcheck")
    for node in scene.nodes:
        if node.kind == "tensor":
            t = graph.tensors[int(node.key[1:])]
            node.grad = None if t.grad is None else _summary(t.grad)
            node.grad_values = "" if t.grad is None else _whole(t.grad)
            node.heat = None if t.grad is None else _heat(t.grad)
        elif node.kind == "op" and checks is not None:
            node.check = checks.get(id(graph.tensors[int(node.key[2:])]))
    return scene


def backward_scene(graph, sweep, groups=None) -> "_Scene":
    """draw_backward and step_through: the forward scene plus steps, gradients and their sums."""
    scene = _base(graph, groups, True, "backward")
    nodes = {node.key: node for node in scene.nodes}
    for i, t in enumerate(graph.tensors):
        node = nodes[f"n{i}"]
        node.step = sweep.step.get(id(t))
        received = sweep.received.get(id(t), [])
        node.parts = [  # what a node shows of them: the first few, and how many
            (k, _child(graph, c), _summary(g)) if n < SHOWN else (k, "", "")
            for n, (k, c, g, _) in enumerate(received)
        ]
        if node.step is not None:
            node.arrived = _summary(sweep.arrived[id(t)])
            node.grad_values = _whole(sweep.arrived[id(t)])
            node.heat = _heat(sweep.arrived[id(t)])
            node.seed = t is graph.root
            if t._hooks is not None and received:  # hooks turned the sum into what is passed on
                node.hooked = _summary(sum(g for _, _, g, _ in received))
        if t._ctx is not None:
            nodes[f"op{i}"].step = node.step
    edges, scene.edges = scene.edges, []
    for edge in edges:  # each gradient edge right after the data edge it runs against
        scene.edges.append(edge)
        if edge.slot is not None:
            scene.edges += _gradient_edge(graph, sweep, edge)
        elif edge.tail.startswith("op") and nodes[edge.head].step is not None:
            scene.edges.append(_Edge(edge.tail, edge.head, "grad", nodes[edge.head].step))
    scene.steps = [_step(graph, sweep, k, record) for k, record in enumerate(sweep.records, 1)]
    return scene


# --------------------------------------------------------------------------------------------
# The facts every style shares


def _base(graph, groups, show_values: bool, style: str) -> "_Scene":
    nodes, edges = [], []
    for i, t in enumerate(graph.tensors):
        nodes.append(
            _Node(
                f"n{i}",
                "tensor",
                graph.names[i],
                meta=_meta(t),
                roles=tuple(_roles(t, graph.root)),
                values=_whole(t.data),
                brief=_short(t.data),
            )
        )
        if t._ctx is not None:
            _op(graph, i, t, nodes, edges)
    edges += _cuts(graph)
    scene = _Scene(style, graph.name(graph.root), nodes, edges, {}, _left_out_note(graph))
    scene.show_values = show_values
    _group(scene, graph, groups)
    return scene


def _op(graph, i: int, t: Tensor, nodes: list, edges: list) -> None:
    ctx = t._ctx
    op = _Node(f"op{i}", "op", type(ctx).__name__, output=graph.names[i])
    nodes.append(op)
    edges.append(_Edge(op.key, f"n{i}", "data"))
    if ctx.parents is FREED:
        op.freed = True
        op.args = ["<freed>"]
        return
    missing = 0
    names = _input_names(type(ctx))
    for j, p in enumerate(ctx.parents):
        if not isinstance(p, Tensor):
            words = _constant(p, names[j] if j < len(names) else "")
            op.args.append(words)
            nodes.append(_Node(f"c{i}_{j}", "constant", words))
            edges.append(_Edge(f"c{i}_{j}", op.key, "data"))
        elif not graph.has(p):
            op.args.append("<not drawn>")
            missing += 1
        else:
            op.args.append(graph.name(p))
            edges.append(_Edge(f"n{graph.index[id(p)]}", op.key, "data", slot=j))
    if missing:
        words = f"{missing} input{'s' if missing > 1 else ''} not drawn"
        nodes.append(_Node(f"cut{i}", "cut", words))
        edges.append(_Edge(f"cut{i}", op.key, "data", cut=True))


def _cuts(graph) -> list:
    """Where detach() or no_grad cut the graph: a drawn tensor detached from a drawn tensor,
    computed from such a detached tensor without recording a graph (`h.detach().max()`), or
    computed from it under no_grad, gets a "detach" edge from it."""
    edges = []
    for i, t in enumerate(graph.tensors):
        source = None if t._cut is None else t._cut()
        if graph.has(source):
            words = "detach()" if t.data is source.data else "from detach()"
            words = "no_grad" if isinstance(t._cut, _NoGradCut) else words
            edges.append(_Edge(f"n{graph.index[id(source)]}", f"n{i}", "detach", label=words))
    return edges


def _input_names(op) -> list:
    """The names an op's forward gives its inputs (forward(ctx, logits, targets) -> targets)."""
    try:
        parameters = list(inspect.signature(op.forward).parameters.values())[1:]
    except (TypeError, ValueError):
        return []
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return [p.name for p in parameters if p.kind in kinds]


def _group(scene: "_Scene", graph, groups) -> None:
    """Label each tensor (its op, constants and cuts go with it); unlisted inner tensors join in.

    A tensor nobody listed joins a group when its op consumes that group's listed leaves (a
    module's parameters) and no other group's, or when every drawn tensor that consumes it is in
    that group: a module's ops and intermediate results are boxed with the module, even when
    only its parameters were listed.
    """
    if groups is None:
        return
    if not callable(groups):  # {label: tensors} -> {id(tensor): label}, read once
        listed = {}
        for label, members in groups.items():
            for m in [members] if isinstance(members, Tensor) else members:
                listed.setdefault(id(m), str(label))
        labels = [listed.get(id(t)) for t in graph.tensors]
    else:
        labels = [None if groups(t) is None else str(groups(t)) for t in graph.tensors]
    consumers, inputs = {}, {}  # tensor index -> indices of the tensors its op made / consumed
    for e in scene.edges:
        if e.kind == "data" and e.tail.startswith("n") and e.head.startswith("op"):
            consumers.setdefault(int(e.tail[1:]), []).append(int(e.head[2:]))
            inputs.setdefault(int(e.head[2:]), []).append(int(e.tail[1:]))
    for i, t in enumerate(graph.tensors):  # an op that uses one group's parameters is its op
        if labels[i] is None and t._ctx is not None:
            owners = {labels[j] for j in inputs.get(i, []) if graph.tensors[j]._ctx is None}
            owners.discard(None)
            if len(owners) == 1:
                labels[i] = owners.pop()
    for i in reversed(range(len(graph.tensors))):
        if labels[i] is None and graph.tensors[i]._ctx is not None and consumers.get(i):
            around = {labels[j] for j in consumers[i]}
            if len(around) == 1:
                labels[i] = around.pop()
    for node in scene.nodes:
        node.group = labels[_owner(node)]
    for i, label in enumerate(labels):
        if label is not None:
            scene.groups.setdefault(label, []).append(graph.names[i])


def _owner(node: "_Node") -> int:
    """The index of the tensor a node belongs with: n3, op3, c3_1 and cut3 all belong to 3."""
    digits = node.key.lstrip("nopcut").split("_")[0]
    return int(digits)


def _gradient_edge(graph, sweep, data: "_Edge") -> list:
    """The gradient the op at data.head sent back along input slot data.slot, if any."""
    child, parent = graph.tensors[int(data.head[2:])], graph.tensors[int(data.tail[1:])]
    step = sweep.step.get(id(child))
    if step is None or not parent.requires_grad:
        return []
    _, g, before = sweep.records[step - 1][2][data.slot]
    if g is None:
        return []
    summed = "" if before is None else _summed(before, parent.shape)
    return [_Edge(data.tail, data.head, "grad", step, _summary(g), summed)]


def _step(graph, sweep, k: int, record) -> "_Step":
    t, grad, sent = record
    if not graph.has(t):  # counted, not described: a huge graph stays quick to draw
        return _Step(k, None, "", "", [])
    name = graph.name(t)
    sends = []
    for parent, g, before in sent:
        if g is None or not isinstance(parent, Tensor) or not parent.requires_grad:
            continue
        summed = "" if before is None else _summed(before, parent.shape)
        op, to = type(t._ctx).__name__, _child(graph, parent, "<not drawn>")
        sends.append((op, to, _summary(g), summed))
    return _Step(k, name, _summary(grad), _sources(graph, sweep, t), sends)


def _sources(graph, sweep, t: Tensor) -> str:
    """For a tensor several children fed: ' = a (from y) + b (from z)'."""
    parts = sweep.received.get(id(t), [])
    if t is graph.root:
        return " (seed)"
    hooked = ""
    if t._hooks is not None and parts:  # the hooks changed the sum into the gradient shown
        hooked = f", made by its hooks from {_summary(sum(g for _, _, g, _ in parts))}"
    if len(parts) < 2:
        return hooked
    terms = [
        f"{_summary(g)} (from {_child(graph, c, '<not drawn>')})" for _, c, g, _ in parts[:SHOWN]
    ]
    if len(parts) > SHOWN:
        terms.append(f"{len(parts) - SHOWN} more")
    return hooked + " = " + " + ".join(terms)


def _child(graph, t: Tensor, missing: str = "a tensor not drawn") -> str:
    return graph.name(t) if graph.has(t) else missing


def _whole(data) -> str:
    """Every value on one line (up to a hundred entries; beyond that NumPy's own summary)."""
    text = np.array2string(
        np.asarray(data), precision=4, separator=", ", suppress_small=True, threshold=100
    )
    return " ".join(part.strip() for part in text.splitlines())


def _left_out_note(graph) -> str:
    tensors, ops = graph.left_out()
    lines = []
    if tensors or ops:
        limits = [f"max_nodes={graph.max_nodes}"]
        if graph.max_depth is not None:
            limits.append(f"max_depth={graph.max_depth}")
        lines.append(
            f"not drawn: {tensors} tensors and {ops} ops of {sum(graph.total)} nodes "
            f"({', '.join(limits)}); raise the limits to see more"
        )
    if graph.freed:
        lines.append("part of this graph was freed by backward(); its inputs are gone")
    return "\n".join(lines)
