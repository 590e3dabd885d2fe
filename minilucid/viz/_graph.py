"""What a picture shows: the tensors behind a root (one walk, no recursion), backward's steps."""

import gc
from collections import deque

from minilucid.autograd import FREED, backward, topological_order
from minilucid.tensor import Tensor


class _Graph:
    """The drawn part of the graph behind `root`: tensors in forward order, and what was left out.

    One breadth-first walk from the root visits every tensor once: it keeps tensors until
    `max_nodes` (tensors plus ops) is spent or they lie more than `max_depth` ops away, and only
    counts the rest. The forward order is then read from what the walk kept, not from the graph.
    """

    def __init__(self, root: Tensor, max_nodes: int = 60, max_depth=None):
        if not isinstance(root, Tensor):
            raise TypeError(f"viz: expected a Tensor to draw, got {type(root).__name__}")
        kept, self.total, self.freed = _walk(root, max_nodes, max_depth)
        self.root = root
        self.max_nodes, self.max_depth = max_nodes, max_depth
        self.tensors = _forward_order(root, kept)
        self.index = {id(t): i for i, t in enumerate(self.tensors)}
        self.names = _names(self.tensors)

    def name(self, t: Tensor) -> str:
        return self.names[self.index[id(t)]]

    def has(self, t) -> bool:
        return isinstance(t, Tensor) and id(t) in self.index

    def left_out(self) -> tuple:
        """(tensors, ops) of the whole graph that are not drawn."""
        ops = sum(t._ctx is not None for t in self.tensors)
        return self.total[0] - len(self.tensors), self.total[1] - ops


def _parents(t: Tensor) -> list:
    """The tensors t's op consumed (none for a leaf or a freed op)."""
    ctx = t._ctx
    if ctx is None or ctx.parents is FREED:
        return []
    return [p for p in ctx.parents if isinstance(p, Tensor)]


def _walk(root: Tensor, max_nodes: int, max_depth) -> tuple:
    """Breadth-first from the root: {id: (tensor, its parents)} kept, (tensors, ops), any freed?"""
    kept = {}
    seen = {id(root): True}
    queue = deque([(root, 0)])
    budget, full = max_nodes, False
    tensors = ops = 0
    freed = False
    while queue:
        t, depth = queue.popleft()
        tensors += 1
        ops += t._ctx is not None
        freed = freed or (t._ctx is not None and t._ctx.parents is FREED)
        cost = 1 + (t._ctx is not None)
        deep = max_depth is not None and depth > max_depth
        parents = _parents(t)
        if not kept or (not full and not deep and cost <= budget):
            kept[id(t)] = (t, parents)
            budget -= cost
        elif not deep:
            full = True  # a prefix of the breadth-first order keeps the picture connected
        for p in parents:
            if id(p) not in seen:
                seen[id(p)] = True
                queue.append((p, depth + 1))
    return kept, (tensors, ops), freed


def _forward_order(root: Tensor, kept: dict) -> list:
    """The kept tensors, parents before children, in the order the engine's sort visits them."""
    return topological_order(root, lambda t: [p for p in kept[id(t)][1] if id(p) in kept])


def _names(tensors: list) -> list:
    """A tensor's own name, else t1, t2, ... in forward order."""
    names, count = [], 0
    for t in tensors:
        if t.name is None:
            count += 1
        names.append(t.name if t.name is not None else f"t{count}")
    return names


class _Sweep:
    """What one backward pass did, read from the engine's trace: the steps in the order taken."""

    def __init__(self, trace: list):
        self.records = trace  # (tensor, grad arriving, [(parent, grad sent, shape before sum)])
        self.step = {id(t): k for k, (t, _, _) in enumerate(trace, 1)}
        self.arrived = {id(t): g for t, g, _ in trace}
        self.received = {}  # id(parent) -> [(step, child, grad, shape before sum)]
        for k, (child, _, sent) in enumerate(trace, 1):
            for parent, g, before in sent:
                if g is not None and isinstance(parent, Tensor) and parent.requires_grad:
                    self.received.setdefault(id(parent), []).append((k, child, g, before))


def _run_backward(graph: _Graph, gradient, caller: str) -> _Sweep:
    """Run the engine's backward from the root, keeping the graph, and read off its steps."""
    if graph.freed:
        raise RuntimeError(
            f"{caller}: the graph behind this tensor was already freed by an earlier "
            f"backward(). Recompute the forward pass and call {caller}(t) instead of "
            "t.backward(): it runs the backward pass itself, keeps the graph, and draws it."
        )
    trace = []
    collecting = gc.isenabled()
    gc.disable()  # the trace keeps every gradient alive; collections would only slow it down
    try:
        backward(graph.root, gradient, retain_graph=True, trace=trace)
        return _Sweep(trace)
    finally:
        if collecting:
            gc.enable()
