"""step_through: every frame is in the HTML, frame k shows steps 1..k, and no kernel is needed."""

from __future__ import annotations

import base64
import re

import numpy as np

import minilucid as ml
from minilucid.autograd import backward
from minilucid.viz import step_through


def graph():
    x = ml.tensor([1.0, 2.0], requires_grad=True, name="x")
    w = ml.tensor([[0.5, -1.0]], requires_grad=True, name="w")
    return x, w, (x * w + x).sum()


def frames(html: str) -> list:
    found = re.findall(
        r'<details class="minilucid-frame"( open)?><summary>(.*?)</summary>'
        r'<div[^>]*><img src="data:image/svg\+xml;base64,([A-Za-z0-9+/=]+)"',
        html,
    )
    return [
        (bool(is_open), caption, base64.b64decode(svg).decode()) for is_open, caption, svg in found
    ]


def test_html_holds_every_frame_and_frame_k_shows_steps_1_to_k():
    *_, y = graph()
    trace = []
    backward(y, retain_graph=True, trace=trace)
    player = step_through(y)
    shown = frames(player.html())
    assert len(shown) == len(trace) + 1
    assert [is_open for is_open, _, _ in shown] == [False] * len(trace) + [True]
    assert shown[0][1] == "frame 0: before backward, no gradient yet"
    for k, (_, caption, svg) in enumerate(shown):
        assert caption.startswith(f"frame {k}")
        numbers = sorted(int(n) for n in re.findall(r">step (\d+)<", svg))
        assert numbers == list(range(1, k + 1)), caption


def test_controls_are_plain_html_driven_by_an_inline_script():
    *_, y = graph()
    html = step_through(y).html()
    assert '<div class="minilucid-controls" hidden="hidden" ' in html  # shown by the script only
    assert html.count("<button") == 2 and 'type="range"' in html
    script = html[html.index("<script>") :]
    assert "minilucid-frame" in script
    for kernel_thing in ("Jupyter", "IPython", "require(", "comm", "kernel", "http"):
        assert kernel_thing not in html  # nothing needs a kernel or the network


def test_mime_bundle_text_lists_the_frames_and_png_is_the_last_frame():
    *_, y = graph()
    player = step_through(y)
    bundle = player._repr_mimebundle_()
    assert set(bundle) == {"text/html", "image/png", "text/plain"}
    assert base64.b64decode(bundle["image/png"]).startswith(b"\x89PNG")
    assert bundle["text/plain"] == repr(player)
    assert bundle["text/plain"].splitlines()[:3] == [
        "step-through, frames 0..5 (frame k shows steps 1..k)",
        "backward of t3: 5 steps in reverse topological order",
        "  step 1  t3  grad 1. (seed)",
    ]
    assert "0x" not in bundle["text/plain"]


def test_the_html_is_deterministic(tmp_path):
    *_, y = graph()
    first = step_through(y).html()
    assert step_through(y).html() == first
    page = step_through(y).save(tmp_path / "steps.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and first in page


def node_places(svg: str) -> dict:
    """Each node's centre in the SVG, from its shape (its text may change between frames)."""
    places = {}
    for title, body in re.findall(r'class="node">\s*<title>([^<]*)</title>(.*?)</g>', svg, re.S):
        body = re.sub(r"<text.*?</text>", "", body, flags=re.S)
        points = re.findall(r"(-?[\d.]+),(-?[\d.]+)", body)
        points += re.findall(r'cx="(-?[\d.]+)" cy="(-?[\d.]+)"', body)
        xs, ys = [float(x) for x, _ in points], [float(y) for _, y in points]
        if points:  # (the canvas's invisible corners draw nothing)
            places[title] = ((min(xs) + max(xs)) / 2, (min(ys) + max(ys)) / 2)
    return places


def canvas(svg: str) -> tuple:
    return re.search(r'<svg width="([^"]*)" height="([^"]*)"', svg).groups()


def diamond():
    a = ml.tensor(2.0, requires_grad=True, name="a")
    b = ml.tensor([1.0, -3.0], requires_grad=True, name="b")
    c = a * b
    c.name = "c"
    d = c + a
    d.name = "d"
    return (d * d + c).tanh().sum()


def test_every_frame_keeps_the_node_places_sizes_and_canvas_of_one_layout(tmp_path):
    player = step_through(diamond())
    shown = [svg for _, _, svg in frames(player.html())]
    assert len(shown) == len(player.steps) > 5
    assert len({canvas(svg) for svg in shown}) == 1
    first = node_places(shown[0])
    assert len(first) == len(player.scene.nodes)
    for k, svg in enumerate(shown):
        places = node_places(svg)
        assert places.keys() == first.keys()
        moves = [max(abs(x - first[n][0]), abs(y - first[n][1])) for n, (x, y) in places.items()]
        assert max(moves) <= 1.0, f"frame {k}: a node moved {max(moves):.1f} pt"
    assert node_places(player.frame(3).svg()) == node_places(shown[3])
    saved = step_through(diamond()).save(tmp_path / "steps.html").read_text()
    assert {canvas(svg) for _, _, svg in frames(saved)} == {canvas(shown[0])}


def test_a_frame_hides_the_gradient_edges_not_taken_yet_and_marks_its_step():
    player = step_through(diamond())
    first, last = player.frame(0).svg(), player.frame(len(player.steps) - 1).svg()
    assert "#c0392b" not in first  # before backward: no gradient edge, number or highlight
    assert first.count('class="edge"') < last.count('class="edge"')
    assert player.html().count('class="minilucid-here"') == len(player.steps) - 1


def test_every_value_and_gradient_is_listed_in_full_under_the_player():
    x = ml.tensor(np.arange(10.0) / 4, requires_grad=True, name="x")
    html = step_through((x * x).sum()).html()
    listing = re.search(
        r'<details class="minilucid-values"><summary>[^<]*</summary><pre>(.*?)</pre></details>',
        html,
        re.S,
    ).group(1)
    block = listing[listing.index("x  (10,) float64") :]
    assert "values [0.  , 0.25, 0.5 , 0.75, 1.  , 1.25, 1.5 , 1.75, 2.  , 2.25]" in block
    assert "grad   [0. , 0.5, 1. , 1.5, 2. , 2.5, 3. , 3.5, 4. , 4.5]" in block
    assert "min 0, max" not in listing  # whole values, not the node's summary
