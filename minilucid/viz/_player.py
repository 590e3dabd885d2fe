"""The backward pass frame by frame, as HTML with its own controls that need no kernel.

Each frame is a <details> element holding one picture, the last one open: that works as it is
where a notebook's HTML is sanitized (no script, no style - an untrusted notebook in
JupyterLab). Where scripts run (a trusted notebook, a static HTML export) the small script
turns the frames into a player with prev / next buttons and a slider. Every frame is drawn in
the layout of the whole backward picture, at full size: the type never shrinks to fit.
"""

import base64
import re
from html import escape
from pathlib import Path

import graphviz

from minilucid.viz._dot import _dot, _label_variants, _layout
from minilucid.viz._options import _scale
from minilucid.viz._picture import (
    SIZE,
    SMALLEST_PX,
    _Drawing,
    _no_dot_message,
    _Picture,
    _presentation_layout,
    _values_html,
)
from minilucid.viz._pinned import _pin

SCRIPT = """<script>
document.querySelectorAll(".minilucid-steps:not([data-ready])").forEach(function (root) {
  var frames = root.querySelectorAll(".minilucid-frame");
  var controls = root.querySelector(".minilucid-controls");
  var slider = controls.querySelector("input");
  var where = controls.querySelector(".minilucid-where");
  function unclip() {  // the controls stick to the top of the page's scrolling area: no
    // ancestor below it may clip (a notebook's output area scrolls wide outputs sideways)
    for (var a = root.parentElement; a && a !== document.body; a = a.parentElement) {
      var style = getComputedStyle(a);
      if (/auto|scroll/.test(style.overflowY) && a.scrollHeight > a.clientHeight + 1) break;
      if (style.overflowX + style.overflowY !== "visiblevisible") a.style.overflow = "visible";
    }
  }
  function show(k, follow) {
    k = Math.max(0, Math.min(frames.length - 1, k));
    frames.forEach(function (frame, i) {
      frame.open = true;
      frame.style.display = i === k ? "" : "none";
      frame.querySelector("summary").style.display = "none";
    });
    slider.value = k;
    where.textContent = frames[k].querySelector("summary").textContent;
    root.setAttribute("data-frame", k);
    var here = frames[k].querySelector(".minilucid-here");
    if (follow) unclip();
    if (follow && here) here.scrollIntoView({block: "nearest", inline: "nearest"});
  }
  controls.querySelectorAll("button").forEach(function (button) {
    button.onclick = function () { show(Number(slider.value) + Number(button.value), true); };
  });
  slider.oninput = function () { show(Number(slider.value), true); };
  controls.hidden = false;
  root.setAttribute("data-ready", "");
  show(0);
});
</script>"""


class _Player(_Drawing):
    """Frames 0..n of one backward pass; frame k shows steps 1..k.

    `source`, `render`, `view`, `pipe` and `save` work on the last frame (the whole backward
    pass); `frame(k)` is frame k as a picture of its own; `save("steps.html")` writes the player.
    """

    pinned = True

    def __init__(self, scene):
        self.scene = scene
        self.steps = [0, *scene.frames()]
        self.layout = _layout(scene, "auto", _scale())
        if _scale() > 1:  # a projector: the layout that fits its screen
            self.layout = _presentation_layout(scene, self.layout)
        try:
            self.pins = _pin(
                scene,
                self.layout,
                lambda pins: _dot(scene, self.layout, None, pins),
                lambda: _label_variants(scene, self.layout, self.steps),
            )
        except graphviz.ExecutableNotFound:  # no layout without dot; the DOT is still there
            self.pins, self.pinned = None, False
        self.fill = _scale() > 1
        whole = self.whole = _Picture(scene, layout=self.layout, pins=self.pins, fill=self.fill)
        self.source = whole.source  # the last frame: every step, in the one layout
        self.captions = ["frame 0: before backward, no gradient yet"]
        for frame, k in enumerate(self.steps[1:], 1):
            step = scene.steps[k - 1]
            where = f"step {k}" if k == frame else f"steps 1..{k}"
            self.captions.append(f"frame {frame}: {where}, {step.name} has grad {step.grad}")
        head = f"step-through, frames 0..{len(self.steps) - 1} (frame k shows steps 1..k)"
        self.text = head + "\n" + whole.text

    def frame(self, k: int) -> _Picture:
        """Frame k (0 before backward, the last one after it) as a picture of its own."""
        if not 0 <= k < len(self.steps):
            last = len(self.steps) - 1
            raise IndexError(f"step_through: there is no frame {k}; the frames are 0..{last}")
        return _Picture(
            self.scene, upto=self.steps[k], layout=self.layout, pins=self.pins, fill=self.fill
        )

    def html(self) -> str:
        """The player: every frame as an SVG image, the controls and the script that drives them.

        The controls stay at the top of the screen while the frames scroll under them, a step
        scrolls its node into view, and a frame taller than the screen is shown smaller as far
        as its type stays 11 px tall.
        """
        n = len(self.steps) - 1
        rows = ['<div class="minilucid-steps">', _controls(n)]
        for k, caption in enumerate(self.captions):
            svg = self.frame(k).svg()
            data = base64.b64encode(svg.encode("utf-8")).decode("ascii")
            rows.append(
                f'<details class="minilucid-frame"{" open" if k == n else ""}>'
                f"<summary>{escape(caption)}</summary>"
                '<div style="position:relative;display:inline-block;max-width:100%">'
                f'<img src="data:image/svg+xml;base64,{data}" alt="{escape(caption)}" '
                f'style="{self._size(svg)}">{self._here(k)}</div></details>'
            )
        rows.append(_values_html(self.scene))
        rows.append("</div>")
        return "\n".join(rows) + "\n" + SCRIPT

    def _size(self, svg: str) -> str:
        """The CSS size of a frame: its own, less if the screen is lower, with type >= 11 px."""
        if self.fill:  # already fitted to the screen
            return "max-width:100%"
        width, height = (float(v) for v in re.search(SIZE, svg).groups())
        natural = float(re.search(r'viewBox="[\d.]+ [\d.]+ ([\d.]+)', svg).group(1))
        smallest = 10 * self.layout.scale * 4 / 3 * width / natural  # edge labels, in px
        lowest = height * 4 / 3 * min(1.0, SMALLEST_PX / smallest)
        return f"max-width:100%;max-height:max(calc(100vh - 4em), {lowest:.0f}px)"

    def _here(self, k: int) -> str:
        """An empty box over the node frame k takes, for the script to scroll into view."""
        step = self.steps[k]
        keys = [n.key for n in self.scene.nodes if n.kind == "tensor" and n.step == step]
        if self.pins is None or not keys or keys[0] not in self.pins.nodes:
            return ""
        node = self.pins.nodes[keys[0]]
        _, _, w, h = (float(v) for v in self.pins.graph["bb"].split(","))
        x, y = (float(v) for v in node["pos"].rstrip("!").split(","))
        pad = 7.2  # the picture's margin: pad=0.1 inch
        box = (float(node["width"]) * 72, float(node["height"]) * 72)
        left = (x - box[0] / 2 + pad) / (w + 2 * pad)
        top = (h - y - box[1] / 2 + pad) / (h + 2 * pad)
        return (
            f'<span class="minilucid-here" style="position:absolute;left:{100 * left:.2f}%;'
            f"top:{100 * top:.2f}%;width:{100 * box[0] / (w + 2 * pad):.2f}%;"
            f'height:{100 * box[1] / (h + 2 * pad):.2f}%;scroll-margin:3em 1em"></span>'
        )

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        try:
            html = self.html()
            png = base64.b64encode(self.whole.png()).decode("ascii")
        except graphviz.ExecutableNotFound:
            return {"text/plain": self.text + "\n\n" + _no_dot_message(listing=True)}
        return {"text/html": html, "image/png": png, "text/plain": self.text}

    def save(self, path) -> Path:
        """Write the player as a stand-alone .html page, or the last frame as .svg .png .pdf .gv.

        Without Graphviz's `dot`, writes the DOT source of the last frame (as .gv) and says how
        to install Graphviz.
        """
        path = Path(path)
        if path.suffix.lower() not in (".html", ".htm"):
            return super().save(path)
        try:
            body = self.html()
        except graphviz.ExecutableNotFound:
            return super().save(path.with_suffix(".svg"))  # writes the .gv and says why
        page = f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"></head><body>\n{body}'
        path.write_text(page + "\n</body></html>\n", encoding="utf-8")
        return path


def _controls(n: int) -> str:
    return (
        '<div class="minilucid-controls" hidden="hidden" style="position:sticky;top:0;'
        'z-index:1;padding:4px 0;background:var(--jp-layout-color0, white)">'
        '<button type="button" value="-1">&#9664; prev</button> '
        f'<input type="range" min="0" max="{n}" step="1" value="0" aria-label="frame"> '
        '<button type="button" value="1">next &#9654;</button> '
        '<span class="minilucid-where"></span></div>'
    )
