"""The backward pass frame by frame, as HTML with its own controls that need no kernel.

Each frame is a <details> element holding one picture, the last one open: that works as it is
where a notebook's HTML is sanitized (no script, no style - an untrusted notebook in
JupyterLab). Where scripts run (a trusted notebook, a static HTML export) the small script
turns the frames into a player with prev / next buttons and a slider. Every frame is drawn in
the layout of the whole backward picture, at full size: the type never shrinks to fit.
"""

import base64
from html import escape
from pathlib import Path

import graphviz

from minilucid.viz._dot import _dot, _label_variants, _layout
from minilucid.viz._options import _scale
from minilucid.viz._picture import _Drawing, _no_dot_message, _Picture
from minilucid.viz._pinned import _pin

SCRIPT = """<script>
document.querySelectorAll(".minilucid-steps:not([data-ready])").forEach(function (root) {
  var frames = root.querySelectorAll(".minilucid-frame");
  var controls = root.querySelector(".minilucid-controls");
  var slider = controls.querySelector("input");
  var where = controls.querySelector(".minilucid-where");
  function show(k) {
    k = Math.max(0, Math.min(frames.length - 1, k));
    frames.forEach(function (frame, i) {
      frame.open = true;
      frame.style.display = i === k ? "" : "none";
      frame.querySelector("summary").style.display = "none";
    });
    slider.value = k;
    where.textContent = frames[k].querySelector("summary").textContent;
    root.setAttribute("data-frame", k);
  }
  controls.querySelectorAll("button").forEach(function (button) {
    button.onclick = function () { show(Number(slider.value) + Number(button.value)); };
  });
  slider.oninput = function () { show(Number(slider.value)); };
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
        try:
            self.pins = _pin(
                scene,
                self.layout,
                lambda pins: _dot(scene, self.layout, None, pins),
                lambda: _label_variants(scene, self.layout, self.steps),
            )
        except graphviz.ExecutableNotFound:  # no layout without dot; the DOT is still there
            self.pins, self.pinned = None, False
        whole = self.whole = _Picture(scene, layout=self.layout, pins=self.pins)
        self.fill = whole.fill
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
        return _Picture(self.scene, upto=self.steps[k], layout=self.layout, pins=self.pins)

    def html(self) -> str:
        """The player: every frame as an SVG image, the controls and the script that drives them."""
        n = len(self.steps) - 1
        size = "width:100%" if self.fill else "max-width:100%"
        rows = ['<div class="minilucid-steps">', _controls(n)]
        for k, caption in enumerate(self.captions):
            svg = base64.b64encode(self.frame(k).svg().encode("utf-8")).decode("ascii")
            rows.append(
                f'<details class="minilucid-frame"{" open" if k == n else ""}>'
                f"<summary>{escape(caption)}</summary>"
                f'<img src="data:image/svg+xml;base64,{svg}" alt="{escape(caption)}" '
                f'style="{size}"></details>'
            )
        rows.append("</div>")
        return "\n".join(rows) + "\n" + SCRIPT

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        try:
            html = self.html()
            png = base64.b64encode(self.whole.png()).decode("ascii")
        except graphviz.ExecutableNotFound:
            return {"text/plain": self.text + "\n\n" + _no_dot_message()}
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
        '<div class="minilucid-controls" hidden="hidden">'
        '<button type="button" value="-1">&#9664; prev</button> '
        f'<input type="range" min="0" max="{n}" step="1" value="0" aria-label="frame"> '
        '<button type="button" value="1">next &#9654;</button> '
        '<span class="minilucid-where"></span></div>'
    )
