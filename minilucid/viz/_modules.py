"""A big grouped graph drawn by module: each group one box naming its parameters, ops and output.

Used by the DOT renderer when a forward picture with groups would stand more than two screens
tall at full size; `draw_graph(..., expand=[label])` draws the listed groups in full again.
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


def _module_edges(scene, owner: dict) -> list:
    """The data edges between what is drawn: members replaced by their box, each pair once."""
    seen, edges = set(), []
    for edge in scene.edges:
        if edge.kind != "data":
            continue
        tail, head = owner.get(edge.tail, edge.tail), owner.get(edge.head, edge.head)
        if tail != head and (tail, head) not in seen:
            seen.add((tail, head))
            edges.append((edge, tail, head))
    return edges


def _module_height(scene, sizes: dict, rank: dict) -> float:
    """Estimated height in px of the picture drawn top to bottom, every node in full."""
    rows = {}
    for key, (_, height) in sizes.items():
        rows[rank[key]] = max(rows.get(rank[key], 0), height)
    return sum(rows.values()) + 0.35 * 96 * (len(rows) - 1) + 40 * len(scene.groups)
