"""The DOT source of a picture: tensors as boxes, ops as ovals, gradients as red arrows back."""

from html import escape

import graphviz

from minilucid.autograd import FREED
from minilucid.tensor import Tensor
from minilucid.viz._format import _constant, _meta, _roles, _summary, _summed, _values

FILL = {"output": "#fde7a6", "parameter": "#bfe3b8", "leaf": "#e9e9e9", "grad": "#d6efd0"}
INNER = "#dbe7f6"  # a tensor an op made
OP = "#f8dcc6"
GRAD = "#c0392b"  # gradient arrows and step numbers
SUMMED = "#7d3c98"  # a gradient whose broadcasting was summed away
FORWARD_IN_BACKWARD = "#b8b8b8"
CHECK = {"ok": "#c8e6c9", "bad": "#f1948a", "error": "#f8c471"}
SHOWN = 4  # contributions listed at a tensor that many children feed


def _dot(graph, *, rankdir="LR", show_values=True, sweep=None, upto=None, checks=None):
    """A graphviz.Digraph of `graph`; with a sweep, the backward steps 1..upto on top of it."""
    dot = graphviz.Digraph(
        graph_attr={"rankdir": rankdir, "fontname": "Helvetica", "fontsize": "11"},
        node_attr={"fontname": "Helvetica", "fontsize": "10", "style": "filled"},
        edge_attr={"fontname": "Helvetica", "fontsize": "9", "arrowsize": "0.7"},
    )
    frame = upto is not None  # a frame of the step-through marks its newest step
    upto = len(sweep.records) if sweep is not None and upto is None else upto
    clusters = {}
    for i, t in enumerate(graph.tensors):
        where = _cluster(dot, clusters, graph.groups[i])
        attrs = _tensor_node(graph, t, show_values, sweep, upto, frame)
        where.node(f"n{i}", **attrs)
        if t._ctx is not None:
            where.node(f"op{i}", **_op_node(t, sweep, upto, checks))
            _inputs(dot, where, graph, i, t, sweep, upto)
    for sub in clusters.values():
        dot.subgraph(sub)
    note = _left_out_note(graph)
    if note:
        dot.attr(label=note, labelloc="b", fontcolor="#555555")
    return dot


def _cluster(dot, clusters: dict, label):
    if label is None:
        return dot
    if label not in clusters:
        sub = graphviz.Digraph(name=f"cluster_{len(clusters)}")
        sub.attr(label=str(label), style="rounded,dashed", color="#888888")
        clusters[label] = sub
    return clusters[label]


def _tensor_node(graph, t: Tensor, show_values: bool, sweep, upto, frame) -> dict:
    roles = _roles(t, graph.root)
    lines = [f"<b>{escape(graph.name(t))}</b>"]
    step = None if sweep is None else sweep.step.get(id(t))
    if step is not None and step <= upto:
        lines[0] += f'  <font color="{GRAD}"><b>step {step}</b></font>'
    lines.append(escape(_meta(t)) + (f"  <i>{escape(', '.join(roles))}</i>" if roles else ""))
    if show_values:
        lines += [escape(row) for row in _values(t.data).splitlines()]
    lines += _grad_lines(graph, t, sweep, upto)
    attrs = {"label": "<" + "<br/>".join(lines) + ">", "shape": "box"}
    attrs["style"] = "rounded,filled"
    attrs["fillcolor"] = _fill(roles, t)
    if "output" in roles or "parameter" in roles:
        attrs["penwidth"] = "2"
    if sweep is not None and (step is None or step > upto):
        attrs["fontcolor"] = "#777777"
    if frame and step == upto:
        attrs.update(color=GRAD, penwidth="3")
    return attrs


def _fill(roles: list, t: Tensor) -> str:
    for role in ("output", "parameter"):
        if role in roles:
            return FILL[role]
    if "leaf" in roles:
        return FILL["grad"] if t.requires_grad else FILL["leaf"]
    return INNER


def _grad_lines(graph, t: Tensor, sweep, upto) -> list:
    """The gradient: .grad in a forward picture; in a backward one, what arrived up to `upto`."""
    red = f'<font color="{GRAD}">{{}}</font>'
    if sweep is None:
        return [] if t.grad is None else [red.format(escape("grad " + _summary(t.grad)))]
    step = sweep.step.get(id(t))
    if t is graph.root and step is not None and step <= upto:
        return [red.format(escape("grad " + _summary(sweep.arrived[id(t)]) + " (seed)"))]
    parts = [r for r in sweep.received.get(id(t), []) if r[0] <= upto]
    if not parts:
        return []
    lines = []
    if len(parts) > 1 or step is None or step > upto:
        for k, child, g, _ in parts[:SHOWN]:
            lines.append(escape(f"+ {_summary(g)} from {_child_name(graph, child)} (step {k})"))
        if len(parts) > SHOWN:
            lines.append(escape(f"+ {len(parts) - SHOWN} more contributions"))
    if step is not None and step <= upto:
        word = "sum " if len(parts) > 1 else "grad "
        if t._hooks is not None:  # the hooks turned what arrived into the gradient passed on
            lines.append(escape(word + _summary(sum(g for _, _, g, _ in parts))))
            word = "after hooks "
        lines.append(f"<b>{escape(word + _summary(sweep.arrived[id(t)]))}</b>")
    return [red.format(line) for line in lines]


def _child_name(graph, child: Tensor) -> str:
    return graph.name(child) if graph.has(child) else "a tensor not drawn"


def _op_node(t: Tensor, sweep, upto, checks) -> dict:
    ctx = t._ctx
    attrs = {"label": type(ctx).__name__, "shape": "ellipse", "fillcolor": OP}
    if ctx.parents is FREED:
        attrs["label"] += "\n(graph freed)"
    step = None if sweep is None else sweep.step.get(id(t))
    if sweep is not None and (step is None or step > upto):
        attrs["fontcolor"] = "#777777"
    check = None if checks is None else checks.get(id(t))
    if check is not None:
        attrs["fillcolor"] = CHECK[check.status]
        attrs["label"] += "".join("\n" + line for line in check.lines)
        if check.status != "ok":
            attrs.update(color=GRAD, penwidth="2", shape="box", style="rounded,filled")
    return attrs


def _inputs(dot, where, graph, i: int, t: Tensor, sweep, upto) -> None:
    """Edges into op i (data), out of it (result), and back along them (gradients)."""
    ctx = t._ctx
    step = None if sweep is None else sweep.step.get(id(t))
    done = step is not None and step <= upto
    data = {"color": FORWARD_IN_BACKWARD} if sweep is not None else {}
    dot.edge(f"op{i}", f"n{i}", **data)
    if done:
        dot.edge(f"op{i}", f"n{i}", dir="back", color=GRAD, style="dashed")
    if ctx.parents is FREED:
        return
    sent = {j: (g, before) for j, (_, g, before) in enumerate(_sent(sweep, step))} if done else {}
    missing = 0
    for j, p in enumerate(ctx.parents):
        if not isinstance(p, Tensor):
            where.node(f"c{i}_{j}", label=_constant(p), shape="plaintext", style="")
            dot.edge(f"c{i}_{j}", f"op{i}", **data)
        elif not graph.has(p):
            missing += 1
        else:
            dot.edge(f"n{graph.index[id(p)]}", f"op{i}", **data)
            if j in sent and sent[j][0] is not None and p.requires_grad:
                dot.edge(f"n{graph.index[id(p)]}", f"op{i}", **_grad_edge(p, *sent[j]))
    if missing:
        label = f"{missing} input{'s' if missing > 1 else ''}\nnot drawn"
        where.node(f"cut{i}", label=label, shape="note", fillcolor="#f4f4f4", fontcolor="#555555")
        dot.edge(f"cut{i}", f"op{i}", style="dotted", **data)


def _sent(sweep, step) -> list:
    return sweep.records[step - 1][2]


def _grad_edge(parent: Tensor, g, before) -> dict:
    attrs = {"dir": "back", "color": GRAD, "fontcolor": GRAD, "style": "dashed"}
    attrs["label"] = _summary(g)
    if before is not None:
        attrs.update(color=SUMMED, fontcolor=SUMMED, style="bold")
        attrs["label"] = _summed(before, parent.shape) + "\n" + attrs["label"]
    return attrs


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
