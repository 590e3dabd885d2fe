"""minilucid.viz: one scene model, the size rule, presentation, groups, and pictures as files."""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

import minilucid as ml
from minilucid import viz
from minilucid.viz import draw_backward, draw_graph, step_through
from minilucid.viz._picture import SCREEN_PX
from minilucid_course.readme_picture import OUT as README_PICTURE
from minilucid_course.readme_picture import expression as readme_graph

needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is missing")
SMALLEST = 11.0  # px, as displayed at natural size
WIDEST = 960  # px, a notebook's output area


def chain(n: int):
    x = ml.tensor([0.5, -1.0], requires_grad=True, name="x")
    y = x
    for _ in range(n):
        y = (y * 1.5).tanh()
    return y.sum()


def wide():
    """Eight inputs of eight values each into one op: too wide for full-size nodes side by side."""
    parts = [ml.tensor(np.arange(8.0) + k, requires_grad=True, name=f"part{k}") for k in range(8)]
    return ml.cat(parts).sum(), parts


def cross_entropy():
    logits = ml.tensor([[2.0, 0.5, -1.0], [0.1, 0.2, 3.0]], requires_grad=True, name="logits")
    targets = np.array([0, 2])
    picked = logits.log_softmax(dim=1)[np.arange(2), targets]
    return -picked.mean()


GRAPHS = {
    "readme": lambda: readme_graph()[2],
    "chain of 12": lambda: chain(12),
    "wide": lambda: wide()[0],
    "cross-entropy": cross_entropy,
}


def svg_size(svg: str) -> tuple:
    """(width in px, smallest type in px) of an SVG that Graphviz wrote, as shown."""
    width = float(re.search(r'<svg width="([\d.]+)pt"', svg).group(1))
    view = float(re.search(r'viewBox="[-\d.]+ [-\d.]+ ([\d.]+)', svg).group(1))
    scale = float(re.search(r"scale\(([\d.]+)", svg).group(1)) * width / view
    fonts = [float(f) for f in re.findall(r'font-size="([\d.]+)"', svg)]
    return width * 4 / 3, min(fonts) * scale * 4 / 3


# --------------------------------------------------------------------------------------------
# One scene: the renderers print facts worked out once


def test_the_renderers_print_the_scene_not_the_tensors():
    x, w, loss = readme_graph()
    picture = draw_backward(loss)
    source, text = picture.source, picture.text
    x.data[:] = 99.0  # the tensors change after the picture was made ...
    x.name = "renamed"
    again = viz._picture._Picture(picture.scene)  # ... a redraw of the scene does not
    assert (again.source, again.text) == (source, text)


def test_listing_and_dot_name_the_same_nodes_in_the_same_order():
    x, w, loss = readme_graph()
    picture = draw_graph(loss)
    listed = [
        line.split()[0]
        for line in picture.text.split("tensors:\n")[1].split("ops:")[0].splitlines()
    ]
    drawn = re.findall(r"\tn\d+ \[label=<<b>(\w+)</b>", picture.source)
    assert listed == drawn == ["w", "x", "t1", "h", "t2", "loss"]
    ops = re.findall(r"= (\w+)\(", picture.text)
    assert ops == re.findall(r"\top\d+ \[label=(\w+) ", picture.source)


def test_a_new_style_is_one_function_over_the_scene():
    from minilucid.viz._dot import _dot, _layout
    from minilucid.viz._graph import _Graph
    from minilucid.viz._listing import _text
    from minilucid.viz._scene import forward_scene

    *_, loss = readme_graph()

    def ops_only(graph):  # a style: the forward scene without its constants
        scene = forward_scene(graph)
        scene.nodes = [n for n in scene.nodes if n.kind != "constant"]
        scene.edges = [e for e in scene.edges if not e.tail.startswith("c")]
        return scene

    scene = ops_only(_Graph(loss))
    assert "plaintext" not in _dot(scene, _layout(scene))
    assert _text(scene).startswith("graph of loss: 6 tensors, 4 ops")


def test_the_listing_holds_whole_values_the_node_a_summary():
    big = ml.tensor(np.arange(10.0), requires_grad=True, name="big")
    picture = draw_graph((big * 2.0).sum())
    assert "[0., 1., 2., 3., 4., 5., 6., 7., 8., 9.]" in picture.text
    node = re.search(r"\tn0 \[label=<<b>big</b>.*?\]\n", picture.source, re.S).group()
    label, tooltip = node.split(" tooltip=")
    assert "min 0, max 9" in label and "[0., 1., 2." not in label
    assert "[0., 1., 2., 3., 4., 5., 6., 7., 8., 9.]" in tooltip


# --------------------------------------------------------------------------------------------
# The size rule: at a 960-px output width nothing is cut off, type at least 11 px


def test_small_graphs_run_left_to_right_long_ones_top_to_bottom():
    a = ml.tensor(1.0, requires_grad=True, name="a")
    assert draw_graph(a * 2.0).layout.rankdir == "LR"
    assert draw_graph(chain(12)).layout.rankdir == "TB"
    assert draw_backward(chain(12)).layout.rankdir == "TB"
    assert draw_graph(chain(12), rankdir="LR").layout.rankdir == "LR"  # asked for


def test_too_wide_either_way_makes_nodes_compact():
    loss, _ = wide()
    picture = draw_backward(loss)  # eight inputs of eight values, with gradients, side by side
    assert picture.layout.compact
    assert "leaf, requires grad" not in picture.source  # roles shown by colour only
    assert 'tooltip="(8,) max|g| 1"' in picture.source  # the gradient on the edge: a tooltip
    assert "Cat sends part7 (8,) max|g| 1" in picture.text
    assert "[0., 1., 2., 3., 4., 5., 6., 7.]" in picture.source  # whole values in the tooltip
    assert not draw_graph(loss).layout.compact  # without gradients it fits as it is


@needs_dot
@pytest.mark.parametrize("name", GRAPHS)
def test_pictures_fit_960_px_with_type_of_11_px(name):
    root = GRAPHS[name]()
    pictures = [draw_graph(root), draw_backward(GRAPHS[name]())]
    player = step_through(GRAPHS[name]())
    pictures += [
        player.frame(0),
        player.frame(len(player.steps) // 2),
        player.frame(-1 % len(player.steps)),
    ]
    for picture in pictures:
        width, smallest = svg_size(picture.svg())
        assert width <= WIDEST, f"{name}: {width:.0f} px wide"
        assert smallest >= SMALLEST, f"{name}: type {smallest:.1f} px"


def two_layers():
    """A two-layer network as a model would build it, and its layers as groups."""
    rng = np.random.default_rng(0)
    x = ml.tensor(rng.normal(size=(2, 4)), name="x")
    w1, b1 = ml.tensor(rng.normal(size=(8, 4)), requires_grad=True), ml.zeros(8, requires_grad=True)
    w2, b2 = ml.tensor(rng.normal(size=(3, 8)), requires_grad=True), ml.zeros(3, requires_grad=True)
    h = (x @ w1.T + b1).relu()
    out = h @ w2.T + b2
    return out.sum(), {"fc1": [w1, b1], "relu": h, "fc2": [w2, b2, out]}


@needs_dot
def test_a_model_drawn_in_groups_fits_960_px_with_type_of_11_px():
    (loss, groups), (again, same) = two_layers(), two_layers()
    for picture in (draw_graph(loss, groups=groups), draw_backward(again, groups=same)):
        assert "subgraph cluster_2" in picture.source
        width, smallest = svg_size(picture.svg())
        assert width <= WIDEST and smallest >= SMALLEST, (width, smallest)
        png = picture.png()  # the same size where SVG is not shown
        assert int.from_bytes(png[16:20], "big") <= WIDEST


@needs_dot
def test_the_readme_picture_reads_at_readme_width():
    svg = draw_backward(readme_graph()[2]).svg()
    width, smallest = svg_size(svg)
    height = float(re.search(r'height="([\d.]+)pt"', svg).group(1)) * 4 / 3
    assert width / height <= 3  # at most 3:1, so it is not shrunk to a strip
    assert width <= 830 and smallest >= SMALLEST  # a code host shows the README about 830 px wide


def test_the_committed_readme_picture_is_the_readable_one():
    png = README_PICTURE.read_bytes()
    width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
    assert width <= 830 and width / height <= 3, (width, height)  # shown at full size
    assert f"docs/{README_PICTURE.name}" in (README_PICTURE.parents[1] / "README.md").read_text()


# --------------------------------------------------------------------------------------------
# Presentation: larger type, the picture fitted to the screen's width and height


def shown(svg: str) -> tuple:
    """(width px, height px, smallest type px) of an SVG as a browser shows it at its size."""
    width, height = (
        float(v) for v in re.search(r'<svg width="([\d.]+)pt" height="([\d.]+)pt"', svg).groups()
    )
    natural = float(re.search(r'viewBox="[-\d.]+ [-\d.]+ ([\d.]+)', svg).group(1))
    smallest = min(float(f) for f in re.findall(r'font-size="([\d.]+)"', svg))
    return width * 4 / 3, height * 4 / 3, smallest * 4 / 3 * width / natural


def test_presentation_setting_enlarges_type_and_fits_the_screen():
    *_, loss = readme_graph()
    normal = draw_backward(loss).source
    with viz.options(presentation=True) as settings:
        assert settings == {"presentation": True}
        big = draw_backward(readme_graph()[2])
    assert viz.get_options() == {"presentation": False}  # restored
    assert "fontsize=11 " in normal and "fontsize=15.95" in big.source
    if shutil.which("dot"):
        width, height, font = shown(big.svg())
        assert width <= SCREEN_PX[0] and height <= SCREEN_PX[1], (width, height)
        assert font >= shown(draw_backward(readme_graph()[2]).svg())[2]
    viz.set_options(presentation=True)
    try:
        assert step_through(readme_graph()[2]).fill
    finally:
        viz.set_options(presentation=False)


@needs_dot
def test_presentation_lays_a_tall_graph_out_again_before_its_type_shrinks():
    x = ml.tensor([0.5, -1.0], requires_grad=True, name="x")
    w = ml.tensor([[0.5, -1.0], [2.0, 1.0]], requires_grad=True, name="w")
    b = ml.tensor([0.1, 0.2], requires_grad=True, name="b")
    y = ((x @ w + b).tanh() @ w).sum()
    normal = draw_backward(y)
    with viz.options(presentation=True):
        big = draw_backward(y)
        frames = step_through(y)
    assert not normal.layout.compact and big.layout.compact  # too tall at full size
    smallest = shown(normal.svg())[2]
    for picture in (big, frames.frame(0), frames.frame(len(frames.steps) - 1)):
        width, height, font = shown(picture.svg())
        assert font >= smallest - 0.01  # fitted, but never smaller than in a notebook
        natural = [
            float(v)
            for v in re.search(r'width="([\d.]+)pt" height="([\d.]+)pt"', picture._svg()).groups()
        ]
        at_notebook_size = picture._factor(*natural) == pytest.approx(1 / picture.layout.scale)
        assert width <= SCREEN_PX[0] and (height <= SCREEN_PX[1] or at_notebook_size)


@needs_dot
def test_pictures_are_light_cards_that_read_on_a_dark_theme():
    svg = draw_backward(readme_graph()[2]).svg()
    background = re.search(r'<g id="graph0" class="graph".*?<polygon fill="(\w+)"', svg, re.S)
    assert background.group(1) == "white"  # an opaque card, not the page's dark background


# --------------------------------------------------------------------------------------------
# Groups: a model clustered by module


def linear_model():
    x = ml.tensor([[1.0, 2.0]], name="x")
    w1 = ml.tensor([[0.5], [-1.0]], requires_grad=True, name="w1")
    b1 = ml.tensor([0.1], requires_grad=True, name="b1")
    h = (x @ w1 + b1).relu()
    h.name = "h"
    w2 = ml.tensor([[2.0]], requires_grad=True, name="w2")
    y = (h @ w2).sum()
    y.name = "y"
    return x, w1, b1, h, w2, y


def test_groups_box_each_module_with_its_inner_results():
    x, w1, b1, h, w2, y = linear_model()
    picture = draw_graph(y, groups={"fc1": [w1, b1, h], "head": [w2, y]})
    assert picture.text.endswith("clusters:\n  fc1: w1, t1, b1, t2, h\n  head: w2, t3, y")
    fc1 = re.search(r"subgraph cluster_0 \{(.*?)\n\t\}", picture.source, re.S).group(1)
    assert "label=fc1" in fc1 and "[label=Relu" in fc1 and "<b>t1</b>" in fc1
    assert "<b>x</b>" not in fc1  # the input is nobody's inner result
    assert "label=head" in picture.source
    backward = draw_backward(y, groups=lambda t: "fc1" if t.name in ("w1", "b1", "h") else None)
    assert "subgraph cluster_0" in backward.source and "clusters:\n  fc1:" in backward.text


def test_groups_accept_one_tensor_or_any_iterable_per_label():
    x, w1, b1, h, w2, y = linear_model()
    picture = draw_graph(y, groups={"fc1": iter([w1, b1, h]), "out": y})
    assert picture.text.endswith("clusters:\n  fc1: w1, t1, b1, t2, h\n  out: t3, y")


def cnn_graph():
    """Chapter 10's CNN on two images, its forward pass grouped by module as the chapter does."""
    from minilucid import nn

    ml.manual_seed(1)
    cnn = nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(64 * 2 * 2, 10),
    )  # fmt: skip
    for name, p in cnn.named_parameters():
        p.name = name
    h = ml.tensor(np.zeros((2, 1, 8, 8), dtype=np.float32), name="images")
    groups = {}
    for name, layer in cnn.named_children():
        h = layer(h)
        groups[f"({name}) {type(layer).__name__}"] = [*layer.parameters(), h]
    h.name = "logits"
    return h, groups


def test_a_graph_two_screens_tall_folds_results_then_alike_modules_and_expand_opens_one():
    logits, groups = cnn_graph()
    full = draw_graph(logits, groups=groups, show_values=False, expand=True)
    folded = draw_graph(logits, groups=groups, show_values=False)
    assert folded.text == full.text  # the listing still names every tensor and op
    assert not full.layout.collapsed and "module" not in full.source
    # alike modules fold together: both ReLUs, both max-pools; the convolutions stay open
    assert set(folded.layout.collapsed) == {
        "(1) ReLU",
        "(4) ReLU",
        "(2) MaxPool2d",
        "(5) MaxPool2d",
    }
    assert "(3) Conv2d" in folded.layout.folded
    modules = re.findall(r"\t(module\d+) \[label=<<b>([^<]*)</b>", folded.source)
    assert sorted(label for _, label in modules) == sorted(folded.layout.collapsed)
    pool = re.search(r"module\d+ \[label=<<b>\(5\) MaxPool2d</b>(.*?)> ", folded.source).group(1)
    assert "Im2Col, Reshape, Max" in pool and "\u2192 t20 (2, 64, 2, 2) float32" in pool
    conv = re.search(
        r"subgraph cluster_\d+ \{\n[^\n]*label=\"\(3\) Conv2d\"(.*?)\n\t\}", folded.source, re.S
    )
    # a frame of ops; a parameter one op uses is named in that op, an inner result by its shape
    assert 'label=<Reshape<br/><font point-size="10">3.weight</font>' in conv.group(1)
    assert "MatMul<br/>" in conv.group(1) and "<b>3.weight</b>" not in folded.source
    assert "<b>t14</b>" not in folded.source  # an inner result: its op's line gives its shape
    one = draw_graph(logits, groups=groups, show_values=False, expand=["(5) MaxPool2d"])
    assert "(5) MaxPool2d" in one.layout.folded and "(5) MaxPool2d" not in one.layout.collapsed
    x, w1, b1, h, w2, y = linear_model()  # a small model keeps its boxes open, nothing folded
    small = draw_graph(y, groups={"fc1": [w1, b1, h], "head": [w2, y]}).layout
    assert not small.collapsed and not small.folded


@needs_dot
def test_the_cnn_folded_is_under_two_screens_at_full_size():
    logits, groups = cnn_graph()
    width, height, font = shown(draw_graph(logits, groups=groups, show_values=False).svg())
    assert width <= 940 and height <= 2000 and font >= 11, (width, height, font)


# --------------------------------------------------------------------------------------------
# Pictures as files: graphviz's names, and every one of them without `dot`


@needs_dot
def test_render_pipe_view_and_save_use_graphviz_names(tmp_path, monkeypatch):
    import graphviz

    opened = []
    monkeypatch.setattr(graphviz.Source, "_view", lambda self, path, **kw: opened.append(path))
    *_, loss = readme_graph()
    for picture in (
        draw_graph(loss),
        draw_backward(readme_graph()[2]),
        step_through(readme_graph()[2]),
    ):
        assert picture.source.startswith("digraph {")
        assert picture.pipe("svg").lstrip().startswith(b"<?xml")
        path = Path(picture.render(tmp_path / "g", format="png"))
        assert path.name == "g.png" and path.read_bytes().startswith(b"\x89PNG")
        assert (tmp_path / "g").read_text() == picture.source  # the DOT beside it
        viewed = picture.view(tmp_path / "v")
        assert Path(viewed).suffix == ".svg" and opened[-1] == viewed
        for suffix, start in (
            (".svg", b"<?xml"),
            (".png", b"\x89PNG"),
            (".pdf", b"%PDF"),
            (".gv", b"digraph"),
        ):
            assert picture.save(tmp_path / f"p{suffix}").read_bytes().startswith(start)
    page = step_through(readme_graph()[2]).save(tmp_path / "steps.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and page.count('class="minilucid-frame"') == 7


def test_every_picture_without_dot_says_how_to_install_it_and_writes_the_dot(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))  # no `dot` anywhere
    monkeypatch.setitem(
        sys.modules["minilucid.viz._picture"]._HINTED, "once", False
    )  # a new session
    *_, loss = readme_graph()
    hinted = False
    pictures = [draw_graph(loss), draw_backward(readme_graph()[2]), step_through(readme_graph()[2])]
    for k, picture in enumerate(pictures):
        writes = [
            ("save svg", picture.save, tmp_path / f"s{k}.svg"),
            ("save png", picture.save, tmp_path / f"p{k}.png"),
            ("save pdf", picture.save, tmp_path / f"d{k}.pdf"),
            ("render", picture.render, tmp_path / f"r{k}"),
            ("view", picture.view, tmp_path / f"v{k}"),
        ]
        if k == 2:  # the step-through also writes a page
            writes.append(("save html", picture.save, tmp_path / "h.html"))
        for name, write, path in writes:
            written = Path(write(path))
            assert written.read_text().startswith("digraph {"), name
            out = capsys.readouterr().out
            assert ("apt-get install" in out and "brew install" in out) != hinted, name
            assert "`dot` program is not on PATH" in out and "listing above" not in out, name
            hinted = True  # the commands once a session, one line after that
        with pytest.raises(RuntimeError, match="apt-get install"):
            picture.pipe("png")
        assert set(picture._repr_mimebundle_()) == {"text/plain"}


def test_step_through_frames_are_pictures_of_their_own():
    player = step_through(readme_graph()[2])
    assert len(player.steps) == 7
    first, last = player.frame(0), player.frame(6)
    assert ">step " not in first.source and first.text.splitlines() == [
        "backward of loss: 6 steps in reverse topological order"
    ]
    assert last.text == player.text.split("\n", 1)[1]
    assert sorted(map(int, re.findall(r">step (\d+)<", last.source))) == [1, 2, 3, 4, 5, 6]
    assert sorted(map(int, re.findall(r">step (\d+)<", player.frame(3).source))) == [1, 2, 3]
    with pytest.raises(IndexError, match="frames are 0..6"):
        player.frame(7)


@needs_dot
def test_a_picture_a_little_too_wide_shrinks_only_as_far_as_11_px_type():
    slightly = draw_backward(wide()[0], rankdir="LR")  # about 1060 px at full size
    natural, _ = svg_size(viz._picture._render(slightly.source, "svg").decode())
    width, smallest = svg_size(slightly.svg())
    assert natural > WIDEST and width <= WIDEST and smallest >= SMALLEST, (natural, width)
    assert int.from_bytes(slightly.png()[16:20], "big") <= WIDEST
    far = draw_graph(chain(12), rankdir="LR")  # thousands of px: shrinking would not do
    width, smallest = svg_size(far.svg())
    assert width > WIDEST and smallest >= SMALLEST


# --------------------------------------------------------------------------------------------
# A large gradient as a small heat map


def test_a_matrix_gradient_is_drawn_as_a_small_heat_map():
    rng = np.random.default_rng(0)
    x = ml.tensor(rng.normal(size=(4, 3)), requires_grad=True, name="x")
    w = ml.tensor(rng.normal(size=(3, 50)), requires_grad=True, name="w")
    loss = (x @ w).tanh().sum()
    picture = draw_backward(loss)
    nodes = {n.title: n for n in picture.scene.nodes if n.kind == "tensor"}
    grid = nodes["x"].heat
    assert len(grid) == 4 and {len(row) for row in grid} == {3}
    assert max(abs(v) for row in grid for v in row) == 1.0
    signs = np.sign(x.grad) == np.sign(np.array(grid))
    assert signs.all()  # each cell keeps its entry's sign
    assert len(nodes["w"].heat) == 3 and len(nodes["w"].heat[0]) == 12  # 50 columns in 12 blocks
    assert nodes[picture.scene.root].heat is None  # a scalar: its value says it all
    assert picture.source.count('bgcolor="#') == 4 * 3 + 3 * 12 + 2 * 4 * 12
    assert "bgcolor" not in picture.text and "max|g|" in picture.text  # the listing keeps words
    forward = draw_graph(loss)
    assert "bgcolor" in forward.source  # .grad is known now: drawn in the forward picture too
    first = step_through(loss).frame(0)
    assert 'bgcolor="#' not in first.source  # before backward: no gradient, no map
