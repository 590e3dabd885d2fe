"""A scene as DOT: tensors as boxes, ops as ovals, gradients as red arrows back.

This module only prints what the scene says. The one choice it makes is the layout: left to
right while the picture fits the width of a notebook's output area at full size, else top to
bottom, and compact nodes (whole values in the tooltips) when even that is too wide.
"""

import re
from dataclasses import dataclass
from html import escape

import graphviz

from minilucid.viz._modules import (
    TALL,
    _folded,
    _folded_label,
    _module_boxes,
    _module_edges,
    _module_node,
)
from minilucid.viz._scene import SHOWN, _owner

FILL = {"output": "#fde7a6", "parameter": "#bfe3b8", "leaf": "#e9e9e9", "grad": "#d6efd0"}
INNER = "#dbe7f6"  # a tensor an op made
OP = "#f8dcc6"
GRAD = "#c0392b"  # gradient arrows and step numbers
SUMMED = "#7d3c98"  # a gradient whose broadcasting was summed away
FORWARD_IN_BACKWARD = "#b8b8b8"
LATER = "#777777"  # a node backward has not reached yet
CUT = {"color": "#555555", "fontcolor": "#555555", "penwidth": "1.5"}  # a detach() edge
CHECK = {"ok": "#c8e6c9", "bad": "#f1948a", "error": "#f8c471"}
FIT = 900  # px: widest picture drawn at full size (a notebook's output area is about 960 px)
FIT_PX = 940  # ... and widest shown at full size; a wider one is shown smaller
SIZE = r'<svg width="([\d.]+)pt" height="([\d.]+)pt"'


@dataclass(frozen=True)
class _Layout:
    rankdir: str = "LR"
    compact: bool = False
    scale: float = 1.0  # type size: 1 in a notebook, larger for a projector
    collapsed: tuple = ()  # groups drawn as one box each (_modules.py)
    folded: tuple = ()  # groups whose inner results are drawn in their ops (_modules.py)

    def size(self, base: float) -> str:
        return f"{base * self.scale:g}"


def _layout(scene, rankdir="auto", scale=1.0, expand=None) -> "_Layout":
    """Left to right if it fits, else top to bottom; compact nodes if neither fits; else the
    narrowest of these. A grouped forward picture more than two screens tall is drawn compact,
    each module's inner results folded into its ops, and then with modules folded into one box
    each (alike modules together, those that save the most height per op hidden first) until
    it fits, but for the groups listed in `expand` (True: every group stays as it is)."""
    if rankdir != "auto":
        layout = _Layout(rankdir, False, scale)
    else:
        options = [_Layout(d, c, scale) for c in (False, True) for d in ("LR", "TB")]
        widths = [_width(scene, layout) for layout in options]
        fitting = [layout for layout, width in zip(options, widths, strict=True) if width <= FIT]
        layout = fitting[0] if fitting else options[widths.index(min(widths))]
    if not scene.groups or scene.style == "backward" or expand is True:
        return layout
    if _shown_height(scene, layout) <= TALL:
        return layout
    kinds = {}  # modules alike (the same ops in the same order) fold together
    for label in scene.groups:
        if label not in (expand or ()):
            ops = tuple(n.title for n in scene.nodes if n.group == label and n.kind == "op")
            kinds.setdefault(ops, []).append(label)
    shut = []

    def drawn(closed) -> "_Layout":
        rest = tuple(label for label in scene.groups if label not in closed)
        return _Layout("TB" if rankdir == "auto" else rankdir, True, scale, tuple(closed), rest)

    layout = drawn(shut)
    height = _shown_height(scene, layout)
    while height > TALL and kinds:  # fold the modules that save the most height per op hidden
        tried = [(ops, _shown_height(scene, drawn(shut + labels))) for ops, labels in kinds.items()]
        best = max(tried, key=lambda pair: (height - pair[1]) / max(len(pair[0]), 1))
        height = best[1]
        shut += kinds.pop(best[0])
        layout = drawn(shut)
    return layout


def _shown_height(scene, layout: "_Layout") -> float:
    """The height in px the picture is shown at in a notebook (a picture wider than the output
    area is shown narrower); estimated from the labels where Graphviz is missing."""
    try:
        svg = graphviz.Source(_dot(scene, layout)).pipe(format="svg", quiet=True).decode()
    except graphviz.ExecutableNotFound:
        return _estimated_height(scene, layout)
    width, height = (float(v) * 4 / 3 for v in re.search(SIZE, svg).groups())
    smallest = 10 * layout.scale * 4 / 3  # the smallest type, shown at least 11 px tall
    return height * min(1.0, max(FIT_PX / width, 11 / smallest))


def _estimated_height(scene, layout: "_Layout") -> float:
    """Without Graphviz: rows of the tallest box, ranks apart, every node in full."""
    sizes = {n.key: _box(scene, n, layout) for n in scene.nodes}
    rank = _ranks(scene)
    if layout.rankdir == "LR":
        return max(
            sum(h for k, (_, h) in sizes.items() if rank[k] == r) for r in set(rank.values())
        )
    rows = {}
    for key, (_, height) in sizes.items():
        rows[rank[key]] = max(rows.get(rank[key], 0), height)
    return sum(rows.values()) + 0.35 * 96 * (len(rows) - 1) + 40 * len(scene.groups)


def _dot(scene, layout: "_Layout", upto=None, pins=None) -> str:
    """The DOT source of the scene; with `upto`, a step-through frame showing steps 1..upto.

    With pins (_pinned.py) every node keeps the place and size the one layout gave it: sizes
    only while that layout runs, and then places as well, for neato -n2 to print as they are.
    """
    dot = _digraph(layout)
    placed = pins is not None and pins.placed
    if placed:
        dot.graph_attr.update(layout="neato", **pins.graph)
        for k, corner in enumerate(pins.corners()):  # neato -n2 fits its canvas to what it draws
            dot.node(f"corner{k}", pos=corner, shape="point", style="invis", width="0.01")
    frame = upto is not None  # a frame of the step-through marks its newest step
    upto = _last_step(scene) if upto is None else upto
    clusters = {}
    boxes, owner = _module_boxes(scene, layout.collapsed)
    folded = _folded(scene, layout.folded)
    inside = {*folded.values()}
    for node in scene.nodes:
        if node.key in owner:  # drawn as its module's box, where the module's first node is
            box = owner[node.key]
            if box in boxes:
                dot.node(box, **_module_node(scene, *boxes.pop(box), layout.size(11)))
            continue
        if node.key in folded:  # an inner result: its op says its shape
            continue
        group = None if node.group in layout.collapsed else node.group  # the output, alone
        where = _cluster(dot, clusters, group, pins if placed else None)
        attrs = _node(scene, node, layout, upto, frame)
        if node.kind == "op" and node.key in inside:
            attrs["label"] = _folded_label(scene, node.key, attrs["label"], folded, layout.size(10))
            attrs["margin"] = "0.04,0.02"  # an oval just round its lines
        if pins is not None:
            attrs.update(pins.nodes.get(node.key, {}))
        where.node(node.key, **attrs)
    owner.update(folded)
    if owner:
        for edge, tail, head in _module_edges(scene, owner):
            dot.edge(tail, head, **_edge(scene, edge, upto, layout.compact))
    for i, edge in enumerate([] if owner else scene.edges):
        attrs = _edge(scene, edge, upto, layout.compact)
        if attrs is not None:  # an edge not taken yet is left out; its place stays empty
            if pins is not None:  # the layout finds each edge by its id
                attrs["id"] = f"e{i}"
                attrs.update(pins.edges.get(attrs["id"], {}))
            dot.edge(edge.tail, edge.head, **attrs)
    for sub in clusters.values():
        dot.subgraph(sub)
    note = [scene.note] if scene.note else []
    if layout.collapsed:
        note.append("drawn by module: draw_graph(..., expand=[label]) draws a module in full")
    if note:
        dot.attr(label="\n".join(note), labelloc="b", fontcolor="#555555")
    return dot.source


def _digraph(layout: "_Layout") -> graphviz.Digraph:
    return graphviz.Digraph(
        graph_attr={
            "rankdir": layout.rankdir,
            "fontname": "Helvetica",
            "fontsize": layout.size(11),
            "bgcolor": "white",
            "pad": "0.1",
            "nodesep": "0.25",
            "ranksep": "0.2" if layout.folded else "0.35",  # folded: many small ranks
        },
        node_attr={"fontname": "Helvetica", "fontsize": layout.size(11), "style": "filled"},
        edge_attr={
            "fontname": "Helvetica",
            "fontsize": layout.size(10),
            "arrowsize": "0.7",
            "weight": "4",
        },
    )


def _label_variants(scene, layout: "_Layout", uptos: list) -> list:
    """(key, attributes) of each different look a node takes in the frames that show steps
    1..k for k in uptos, and in the whole picture."""
    seen, variants = set(), []
    for node in scene.nodes:
        looks = [(upto, True) for upto in uptos] + [(_last_step(scene), False)]
        for upto, frame in looks:
            attrs = _node(scene, node, layout, upto, frame)
            look = (node.key, attrs["label"], attrs.get("penwidth"), attrs.get("shape"))
            if look not in seen:
                seen.add(look)
                variants.append((node.key, attrs))
    return variants


def _last_step(scene) -> int:
    return len(scene.steps)


def _cluster(dot, clusters: dict, label, pins=None):
    if label is None:
        return dot
    if label not in clusters:
        name = f"cluster_{len(clusters)}"
        sub = graphviz.Digraph(name=name)
        sub.attr(label=label, style="rounded,dashed", color="#888888", fontcolor="#333333")
        if pins is not None:
            sub.attr(**pins.clusters.get(name, {}))
        clusters[label] = sub
    return clusters[label]


def _node(scene, node, layout, upto: int, frame: bool) -> dict:
    if node.kind == "tensor":
        return _tensor(scene, node, layout, upto, frame)
    if node.kind == "op":
        return _op(scene, node, upto)
    if node.kind == "constant":
        return {"label": node.title, "shape": "plaintext", "style": ""}
    return {"label": node.title.replace(" not", "\nnot"), "shape": "note", "fillcolor": "#f4f4f4"}


def _tensor(scene, node, layout, upto: int, frame: bool) -> dict:
    done = node.step is not None and node.step <= upto
    lines = "<br/>".join(markup for _, markup in _lines(scene, node, layout, upto))
    shown = node.grad is not None if scene.style != "backward" else done
    if node.heat is not None and shown:  # a large gradient: a heat map under its summary
        heat = _heat_map(node.heat)
        lines = f'<table border="0" cellspacing="0"><tr><td>{lines}</td></tr>{heat}</table>'
    attrs = {"label": "<" + lines + ">", "shape": "box", "style": "rounded,filled"}
    attrs["fillcolor"] = _fill(node.roles)
    attrs["tooltip"] = _tooltip(node)
    if "output" in node.roles or "parameter" in node.roles:
        attrs["penwidth"] = "2"
    if scene.style == "backward" and not done:
        attrs["fontcolor"] = LATER
    if frame and node.step == upto:
        attrs.update(color=GRAD, penwidth="3")
    return attrs


def _lines(scene, node, layout, upto: int) -> list:
    """A tensor's label, line by line: (plain text, HTML-like markup)."""
    done = node.step is not None and node.step <= upto
    first = (node.title, f"<b>{escape(node.title)}</b>")
    if done:
        step = f"  step {node.step}"
        first = (first[0] + step, first[1] + f'  <font color="{GRAD}"><b>{step[2:]}</b></font>')
    roles = ", ".join(node.roles) if not layout.compact else ""
    lines = [first, (node.meta + "  " + roles, escape(node.meta))]
    if roles:
        lines[1] = (lines[1][0], lines[1][1] + f"  <i>{escape(roles)}</i>")
    brief = node.brief if not layout.compact or len(node.brief) <= 20 else ""
    if scene.show_values and brief:
        lines.append((brief, escape(brief)))
    return lines + _grad_lines(scene, node, upto, layout.compact)


def _heat_map(grid: list) -> str:
    """One table row: the gradient's grid, red where positive, blue where negative."""
    rows = []
    for row in grid:
        cells = "".join(
            f'<td width="7" height="7" fixedsize="true" bgcolor="{_shade(v)}"></td>' for v in row
        )
        rows.append(f"<tr>{cells}</tr>")
    size = f'width="{8 * len(grid[0]) + 1}" height="{8 * len(grid) + 1}" fixedsize="true"'
    table = f'<table border="0" cellborder="0" cellspacing="1" cellpadding="0" {size}>'
    return f"<tr><td>{table}{''.join(rows)}</table></td></tr>"


def _shade(v: float) -> str:
    """White at 0, the gradient red at +1, blue at -1."""
    end = (192, 57, 43) if v > 0 else (41, 98, 178)
    mix = [round(255 + (c - 255) * min(abs(v), 1.0)) for c in end]
    return "#{:02x}{:02x}{:02x}".format(*mix)


def _tooltip(node) -> str:
    words = [f"{node.title}  {node.meta}", node.values]
    if node.grad is not None:
        words.append(f"grad {node.grad}")
    if node.arrived is not None:
        words.append(f"grad {node.arrived}")
    return "\n".join(words)


def _fill(roles) -> str:
    for role in ("output", "parameter"):
        if role in roles:
            return FILL[role]
    if "leaf" in roles:
        return FILL["grad"] if "requires grad" in roles else FILL["leaf"]
    return INNER


def _grad_lines(scene, node, upto: int, compact: bool) -> list:
    """The gradient: .grad in a forward picture; in a backward one, what arrived up to `upto`."""
    if scene.style != "backward":
        return [] if node.grad is None else [_red("grad " + node.grad)]
    done = node.step is not None and node.step <= upto
    if node.seed and done:
        return [_red(f"grad {node.arrived} (seed)")]
    parts = [p for p in node.parts if p[0] <= upto]
    if not parts:
        return []
    lines = []
    shown = 0 if compact else SHOWN
    if len(parts) > 1 or not done:
        for k, child, g in parts[:shown]:
            lines.append(_red(f"+ {g} from {child} (step {k})"))
        if len(parts) > shown:
            more = len(parts) - shown
            lines.append(_red(f"+ {more} {'more ' if shown else ''}contributions"))
    if done:
        word = "sum " if len(parts) > 1 else "grad "
        if node.hooked is not None:  # the hooks turned what arrived into the gradient passed on
            lines.append(_red(word + node.hooked))
            word = "after hooks "
        lines.append(_red(word + node.arrived, bold=True))
    return lines


def _red(text: str, bold: bool = False) -> tuple:
    markup = f"<b>{escape(text)}</b>" if bold else escape(text)
    return text, f'<font color="{GRAD}">{markup}</font>'


def _op(scene, node, upto: int) -> dict:
    attrs = {"label": node.title, "shape": "ellipse", "fillcolor": OP}
    if node.freed:
        attrs["label"] += "\n(graph freed)"
    if scene.style == "backward" and (node.step is None or node.step > upto):
        attrs["fontcolor"] = LATER
    check = node.check
    if check is not None:
        attrs["fillcolor"] = CHECK[check.status]
        attrs["label"] += "".join("\n" + line for line in check.lines)
        if check.status != "ok":
            attrs.update(color=GRAD, penwidth="2", shape="box", style="rounded,filled")
    return attrs


def _edge(scene, edge, upto: int, compact: bool):
    if edge.kind == "detach":  # the graph was cut here: no gradient flows back along it
        return {"label": edge.label, "style": "dotted", "arrowhead": "tee", **CUT}
    if edge.kind == "grad":
        if edge.step > upto:
            return None
        attrs = {"dir": "back", "color": GRAD, "style": "dashed"}
        if edge.label:
            attrs.update(label=edge.label, fontcolor=GRAD)
        if edge.summed:
            attrs.update(color=SUMMED, fontcolor=SUMMED, style="bold")
            attrs["label"] = edge.summed + "\n" + edge.label
        if compact and edge.label:  # the gradient is in the node it reaches, and in a tooltip
            attrs["tooltip"] = attrs.pop("label")
        return attrs
    attrs = {"color": FORWARD_IN_BACKWARD} if scene.style == "backward" else {}
    if edge.cut:
        attrs["style"] = "dotted"
    if edge.tail.startswith("c"):  # tensors and ops line up (weight 4); constants hang beside
        attrs["weight"] = "1"
    return attrs


# --------------------------------------------------------------------------------------------
# How wide a layout comes out, estimated from the labels (Helvetica: about 0.5 em a letter)


def _width(scene, layout: "_Layout") -> float:
    """Estimated width in px of the picture at full size."""
    sizes = {n.key: _box(scene, n, layout) for n in scene.nodes}
    rank = _ranks(scene)
    ranks = {}
    for key, r in rank.items():
        ranks.setdefault(r, []).append(sizes[key])
    labels = {}  # the gap after a rank -> widths of the edge labels crossing it
    for e in scene.edges:
        if e.label and not layout.compact:
            text = max([e.label, e.summed], key=len)
            labels.setdefault(rank[e.tail], []).append(_text(text, 10 * layout.scale))
    gap = 0.35 * 96
    if layout.rankdir == "LR":
        columns = sum(max(w for w, _ in boxes) for boxes in ranks.values())
        return columns + gap * (len(ranks) - 1) + sum(max(w) for w in labels.values()) + 20
    if scene.groups:
        return _boxed_width(scene, sizes, rank, layout) + 20
    rows = max(sum(w for w, _ in boxes) + 24 * (len(boxes) - 1) for boxes in ranks.values())
    beside = max((sum(w) + 40 * len(w) for w in labels.values()), default=0)
    return max(rows, beside) + 20


def _boxed_width(scene, sizes: dict, rank: dict, layout: "_Layout") -> float:
    """Top to bottom with groups: a group's box takes the width of its widest row, and boxes
    whose ranks overlap stand side by side."""
    units = {}  # a group's label, or a node of no group -> {rank: width of its row there}
    for n in scene.nodes:
        rows = units.setdefault(n.group if n.group is not None else n.key, {})
        rows[rank[n.key]] = rows.get(rank[n.key], -24) + sizes[n.key][0] + 24
    for e in scene.edges:
        if e.label and not layout.compact:  # a label stands beside its edge
            tail = next(n for n in scene.nodes if n.key == e.tail)
            rows = units[tail.group if tail.group is not None else tail.key]
            text = max([e.label, e.summed], key=len)
            rows[rank[e.tail]] = rows.get(rank[e.tail], 0) + _text(text, 10 * layout.scale) + 16
    spans = [(min(rows), max(rows), max(rows.values()) + 32) for rows in units.values()]
    return max(sum(w + 24 for lo, hi, w in spans if lo <= r <= hi) for r in set(rank.values()))


def _ranks(scene) -> dict:
    """Each node's rank: the longest path of edges that lead to it."""
    rank = {n.key: 0 for n in scene.nodes}
    into, out = {}, {}
    for e in scene.edges:
        if e.kind == "data":
            into.setdefault(e.head, []).append(e.tail)
            out.setdefault(e.tail, []).append(e.head)
    before = {"constant": 0, "cut": 0, "op": 1, "tensor": 2}  # in each tensor's own group
    for n in sorted(scene.nodes, key=lambda n: (_owner(n), before[n.kind])):
        for tail in into.get(n.key, []):
            rank[n.key] = max(rank[n.key], rank[tail] + 1)
    for n in scene.nodes:  # Graphviz pulls an input next to the first op that consumes it
        if n.key not in into:
            heads = [rank[head] for head in out.get(n.key, [])]
            rank[n.key] = max(min(heads, default=1) - 1, 0)
    return rank


def _box(scene, node, layout) -> tuple:
    """(width, height) in px of a node's box."""
    font = 11 * layout.scale
    if node.kind != "tensor":
        lines = [node.title, *("\n".join(node.check.lines).splitlines() if node.check else [])]
        return max(_text(line, font) for line in lines) + 30, font * 1.3 * len(lines) + 14
    lines = [plain for plain, _ in _lines(scene, node, layout, len(scene.steps))]
    return max(_text(line, font) for line in lines) + 20, font * 1.3 * len(lines) + 12


def _text(text: str, font_pt: float) -> float:
    return len(text) * font_pt * 4 / 3 * 0.5
