"""The text of a picture: its nodes and edges in order, as plain deterministic lines."""

from minilucid.autograd import FREED
from minilucid.tensor import Tensor
from minilucid.viz._dot import SHOWN, _left_out_note
from minilucid.viz._format import _constant, _meta, _one_line, _roles, _summary, _summed, _values


def _forward_text(graph, show_values=True, checks=None) -> str:
    """Tensors (name, shape, dtype, roles, values, grad), then one line per op: out = Op(inputs)."""
    ops = [t for t in graph.tensors if t._ctx is not None]
    lines = [f"graph of {graph.name(graph.root)}: {len(graph.tensors)} tensors, {len(ops)} ops"]
    lines.append("tensors:")
    width = max(len(n) for n in graph.names)
    for t, name in zip(graph.tensors, graph.names, strict=True):
        words = [f"  {name:<{width}}", _meta(t)]
        words += [", ".join(_roles(t, graph.root))] if _roles(t, graph.root) else []
        words += [_one_line(_values(t.data))] if show_values else []
        words += [f"grad {_summary(t.grad)}"] if t.grad is not None else []
        lines.append("  ".join(words))
    if ops:
        lines.append("ops:")
    for t in ops:
        line = f"  {_equation(graph, t)}"
        check = None if checks is None else checks.get(id(t))
        if check is not None:
            line += "  -- " + " ".join([check.status, *check.lines]).replace("\n", " ")
        lines.append(line)
    lines += _cluster_lines(graph)
    note = _left_out_note(graph)
    return "\n".join(lines + ([note] if note else []))


def _equation(graph, t: Tensor) -> str:
    ctx = t._ctx
    if ctx.parents is FREED:
        return f"{graph.name(t)} = {type(ctx).__name__}(<freed>)"
    args = [
        (graph.name(p) if graph.has(p) else "<not drawn>")
        if isinstance(p, Tensor)
        else _constant(p)
        for p in ctx.parents
    ]
    return f"{graph.name(t)} = {type(ctx).__name__}({', '.join(args)})"


def _cluster_lines(graph) -> list:
    clusters = {}
    for name, label in zip(graph.names, graph.groups, strict=True):
        if label is not None:
            clusters.setdefault(str(label), []).append(name)
    lines = ["clusters:"] if clusters else []
    return lines + [f"  {label}: {', '.join(names)}" for label, names in clusters.items()]


def _backward_text(graph, sweep, upto=None) -> str:
    """One block per backward step: the tensor, the gradient that arrived, what its op sent."""
    n = len(sweep.records)
    upto = n if upto is None else upto
    lines = [f"backward of {graph.name(graph.root)}: {n} steps in reverse topological order"]
    hidden = 0
    for k, (t, grad, sent) in enumerate(sweep.records[:upto], 1):
        if not graph.has(t):
            hidden += 1
            continue
        lines.append(
            f"  step {k}  {_name(graph, t)}  grad {_summary(grad)}{_sources(graph, sweep, t)}"
        )
        for parent, g, before in sent:
            if g is None or not isinstance(parent, Tensor) or not parent.requires_grad:
                continue
            summed = f"  ({_summed(before, parent.shape)})" if before is not None else ""
            lines.append(
                f"          {type(t._ctx).__name__} sends {_name(graph, parent)} "
                f"{_summary(g)}{summed}"
            )
    if hidden:
        lines.append(f"  ({hidden} steps through tensors not drawn are not listed)")
    note = _left_out_note(graph)
    return "\n".join(lines + ([note] if note else []))


def _name(graph, t: Tensor) -> str:
    return graph.name(t) if graph.has(t) else "<not drawn>"


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
    terms = [f"{_summary(g)} (from {_name(graph, c)})" for _, c, g, _ in parts[:SHOWN]]
    if len(parts) > SHOWN:
        terms.append(f"{len(parts) - SHOWN} more")
    return hooked + " = " + " + ".join(terms)
