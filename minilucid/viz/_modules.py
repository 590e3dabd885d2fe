"""A big grouped graph drawn smaller: a module's inner results folded into their ops, and
modules folded into one box each.

Used by the DOT renderer when a forward picture with groups would stand more than two screens
tall at full size. First each module's frame keeps only its ops (an inner result is named by its
op's shape line), then modules become one box naming their parameters, ops and output, tallest
first, until the picture fits; `draw_graph(..., expand=[label])` keeps the listed groups open.
"""

from html import escape

TALL = 1800  # px: a picture taller than this at full size is drawn by module
MODULE = "#eef2f8"  # a module's box


def _module_boxes(scene, collapsed) -> tuple:
    """({box key: (label, members)}, {member key: box key}) for the groups in `collapsed`."""
    boxes, owner = {}, {}
    for i, label in enumerate(scene.groups):
        if label not in collapsed:
            continue
        members = [n for n in scene.nodes if n.group == label and n.title != scene.root]
        boxes[f"module{i}"] = (label, members)
        for n in members:
            owner[n.key] = f"module{i}"
    return boxes, owner


def _module_node(scene, label: str, members: list, font: str) -> dict:
    """A module's box: its label, its parameters, its ops counted, the tensor it hands on."""
    tensors = [n for n in members if n.kind == "tensor"]
    inputs = [n for n in tensors if "leaf" in n.roles or "parameter" in n.roles]
    made = [n for n in tensors if n not in inputs]
    lines = [f"<b>{escape(label)}</b>"]
    lines += [f"{escape(n.title)} {escape(n.meta.rsplit(' ', 1)[0])}" for n in inputs]
    counts = {}
    for n in members:
        if n.kind == "op":
            counts[n.title] = counts.get(n.title, 0) + 1
    if counts:
        ops = ", ".join(k if c == 1 else f"{k} \u00d7{c}" for k, c in counts.items())
        lines.append(f"<i>{escape(ops)}</i>")
    if made:
        lines.append(f"\u2192 {escape(made[-1].title)} {escape(made[-1].meta)}")
    tooltip = "\n".join(f"{n.title}  {n.meta}" for n in tensors)
    return {
        "label": "<" + "<br/>".join(lines) + ">",
        "shape": "box",
        "style": "rounded,filled,dashed",
        "fillcolor": MODULE,
        "color": "#666666",
        "fontsize": font,
        "tooltip": tooltip,
    }


def _folded(scene, groups) -> dict:
    """{tensor key: the op it is drawn in} for `groups`: an inner result (made by an op, consumed
    by its own group's ops only) in the op that made it, a parameter consumed by one op in that
    op. A module's output, the root and the ends of a detach() cut stay boxes."""
    group = {n.key: n.group for n in scene.nodes}
    leaving = {n.key for n in scene.nodes if n.title == scene.root and n.kind == "tensor"}
    made, consumers = set(), {}
    for edge in scene.edges:
        if edge.kind == "data" and edge.tail.startswith("op"):
            made.add(edge.head)
        elif edge.kind == "data" and edge.tail.startswith("n"):
            consumers.setdefault(edge.tail, []).append(edge.head)
            if group[edge.head] != group[edge.tail]:
                leaving.add(edge.tail)
        elif edge.kind == "detach":
            leaving.update((edge.tail, edge.head))
    into = {}
    for n in scene.nodes:
        if n.kind != "tensor" or n.group not in groups or n.key in leaving:
            continue
        if n.key in made:
            into[n.key] = "op" + n.key[1:]
        elif "parameter" in n.roles and len(consumers.get(n.key, [])) == 1:
            into[n.key] = consumers[n.key][0]
    return into


def _folded_label(scene, op, label: str, folded: dict, size: str) -> str:
    """An op's label with what is folded into it: the parameters it uses, the shape it makes."""
    lines = [escape(label)]
    lines += [
        escape(n.title)
        for n in scene.nodes
        if folded.get(n.key) == op and n.kind == "tensor" and n.key != "n" + op[2:]
    ]
    made = next((n for n in scene.nodes if n.key == "n" + op[2:] and n.key in folded), None)
    small = [f'<font point-size="{size}">{line}</font>' for line in lines[1:]]
    if made is not None:
        small.append(f'<font point-size="{size}">{escape(made.meta.rsplit(" ", 1)[0])}</font>')
    return "<" + "<br/>".join([lines[0], *small]) + ">"


def _module_edges(scene, owner: dict) -> list:
    """The edges between what is drawn: members replaced by their box (or a folded result by its
    op), each pair once."""
    seen, edges = set(), []
    for edge in scene.edges:
        if edge.kind == "grad":
            continue
        tail, head = owner.get(edge.tail, edge.tail), owner.get(edge.head, edge.head)
        if tail != head and (tail, head) not in seen:
            seen.add((tail, head))
            edges.append((edge, tail, head))
    return edges
