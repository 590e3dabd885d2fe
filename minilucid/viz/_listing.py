"""The text of a picture: its nodes and edges in order, as plain deterministic lines.

Like the DOT renderer, this only prints what the scene says.
"""


def _text(scene, upto=None) -> str:
    """The listing of a scene in its own style (a backward one up to step `upto`)."""
    return _backward_text(scene, upto) if scene.style == "backward" else _forward_text(scene)


def _forward_text(scene) -> str:
    """Tensors (name, shape, dtype, roles, values, grad), then one line per op: out = Op(inputs)."""
    tensors = [n for n in scene.nodes if n.kind == "tensor"]
    ops = [n for n in scene.nodes if n.kind == "op"]
    lines = [f"graph of {scene.root}: {len(tensors)} tensors, {len(ops)} ops", "tensors:"]
    width = max(len(n.title) for n in tensors)
    for n in tensors:
        words = [f"  {n.title:<{width}}", n.meta]
        words += [", ".join(n.roles)] if n.roles else []
        words += [n.values] if scene.show_values else []
        words += [f"grad {n.grad}"] if n.grad is not None else []
        lines.append("  ".join(words))
    if ops:
        lines.append("ops:")
    for n in ops:
        line = f"  {n.output} = {n.title}({', '.join(n.args)})"
        if n.check is not None:
            line += "  -- " + " ".join([n.check.status, *n.check.lines]).replace("\n", " ")
        lines.append(line)
    lines += _group_lines(scene)
    return "\n".join(lines + ([scene.note] if scene.note else []))


def _group_lines(scene) -> list:
    """Where detach() cut the graph, then the clusters: the lines every listing ends with."""
    names = {n.key: n.title for n in scene.nodes}
    cuts = [e for e in scene.edges if e.kind == "detach"]
    lines = ["cuts (no gradient flows back):"] if cuts else []
    for e in cuts:
        if e.label == "no_grad":
            lines.append(f"  {names[e.head]} computed from {names[e.tail]} under no_grad")
            continue
        how = "=" if e.label == "detach()" else "computed from"
        lines.append(f"  {names[e.head]} {how} {names[e.tail]}.detach()")
    lines += ["clusters:"] if scene.groups else []
    return lines + [f"  {label}: {', '.join(names)}" for label, names in scene.groups.items()]


def _backward_text(scene, upto=None) -> str:
    """One block per backward step: the tensor, the gradient that arrived, what its op sent."""
    n = len(scene.steps)
    upto = n if upto is None else upto
    lines = [f"backward of {scene.root}: {n} steps in reverse topological order"]
    hidden = 0
    for step in scene.steps[:upto]:
        if step.name is None:
            hidden += 1
            continue
        lines.append(f"  step {step.number}  {step.name}  grad {step.grad}{step.sources}")
        for op, parent, g, summed in step.sends:
            summed = f"  ({summed})" if summed else ""
            lines.append(f"          {op} sends {parent} {g}{summed}")
    if hidden:
        lines.append(f"  ({hidden} steps through tensors not drawn are not listed)")
    lines += _group_lines(scene)
    return "\n".join(lines + ([scene.note] if scene.note else []))


def _values_text(scene) -> str:
    """Every tensor's whole values and gradient, for the listing shown under a picture."""
    lines = []
    for n in scene.nodes:
        if n.kind == "tensor":
            lines.append(f"{n.title}  {n.meta}  {', '.join(n.roles)}".rstrip())
            lines.append(f"  values {n.values}")
            if n.grad_values:
                lines.append(f"  grad   {n.grad_values}")
    return "\n".join(lines)
