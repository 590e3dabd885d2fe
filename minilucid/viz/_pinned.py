"""One layout for every frame of a step-through: Graphviz lays the graph out once, frames reuse it.

Two runs of `dot` make the layout: the first measures every label a tensor node shows in any
frame (its box is then as large as its largest label), the second lays out the whole backward
picture with those fixed boxes. Each frame is then drawn by `neato -n2`, which keeps every node,
edge, label and cluster where the layout put them and only prints the frame's colours and labels.
"""

import json
import re
from dataclasses import dataclass, field

import graphviz


@dataclass
class _Pins:
    """Where the one layout put everything: attributes to add to a frame's DOT, by key."""

    graph: dict = field(default_factory=dict)  # bb (the canvas)
    nodes: dict = field(default_factory=dict)  # node key -> pos, width, height, fixedsize
    edges: dict = field(default_factory=dict)  # edge id -> pos, lp
    clusters: dict = field(default_factory=dict)  # cluster name -> bb, lp

    def corners(self) -> list:
        """Two points at opposite corners of the canvas, as pos values."""
        x0, y0, x1, y1 = self.graph["bb"].split(",")
        return [f"{x0},{y0}!", f"{x1},{y1}!"]

    @property
    def placed(self) -> bool:
        """True once the layout has run (before it, only the node sizes are known)."""
        return "bb" in self.graph


def _pin(scene, layout, dot_source, label_variants) -> "_Pins":
    """Lay the scene out once. dot_source(pins) is the DOT of the whole picture with the given
    pins; label_variants() lists (node key, node attributes) for every label any frame shows."""
    pins = _Pins(nodes=_sizes(label_variants(), layout))
    drawn = json.loads(_json(dot_source(pins)))
    pins = _Pins(graph={"bb": drawn["bb"]})
    for obj in drawn.get("objects", []):
        name = obj["name"]
        if name.startswith("cluster_"):
            pins.clusters[name] = {k: obj[k] for k in ("bb", "lp") if k in obj}
        elif "pos" in obj:
            x, y = obj["pos"].split(",")
            pins.nodes[name] = {
                "pos": f"{x},{y}!",
                "width": obj["width"],
                "height": obj["height"],
                "fixedsize": "true",
            }
    for edge in drawn.get("edges", []):
        if "id" in edge:
            pins.edges[edge["id"]] = {k: edge[k] for k in ("pos", "lp") if k in edge}
    pins.graph["bb"] = _canvas(dot_source(pins))
    return pins


def _canvas(source: str) -> str:
    """The canvas every frame shares: the whole picture as neato -n2 prints it (dot's bounding
    box can leave out part of an edge label), with room for a frame's thicker outline."""
    svg = graphviz.Source(source, engine="neato").pipe(format="svg", neato_no_op=2, quiet=True)
    back = re.search(rb'<polygon fill="white" stroke="transparent" points="([^"]*)"', svg)
    points = [tuple(float(v) for v in p.split(b",")) for p in back.group(1).split()]
    xs, ys = [x for x, _ in points], [-y for _, y in points]  # SVG's y runs down
    pad = 7.2  # pad=0.1 inch
    return (
        f"{min(xs) + pad - 2:g},{min(ys) + pad - 2:g},{max(xs) - pad + 2:g},{max(ys) - pad + 2:g}"
    )


def _sizes(variants: list, layout) -> dict:
    """Each node's box in inches, as large as the largest of its labels: {key: attrs}."""
    dot = graphviz.Digraph(
        graph_attr={"fontname": "Helvetica", "fontsize": layout.size(11)},
        node_attr={"fontname": "Helvetica", "fontsize": layout.size(11), "style": "filled"},
    )
    for i, (_, attrs) in enumerate(variants):
        dot.node(f"v{i}", **attrs)
    sizes = {}
    for obj in json.loads(_json(dot.source)).get("objects", []):
        key = variants[int(obj["name"][1:])][0]
        width, height = float(obj["width"]), float(obj["height"])
        old = sizes.get(key, (0.0, 0.0))
        sizes[key] = (max(old[0], width), max(old[1], height))
    return {
        key: {"width": f"{w:.4f}", "height": f"{h:.4f}", "fixedsize": "true"}
        for key, (w, h) in sizes.items()
    }


def _json(source: str) -> str:
    return graphviz.Source(source).pipe(format="json", quiet=True).decode("utf-8")
