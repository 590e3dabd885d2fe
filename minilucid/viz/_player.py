"""The backward pass frame by frame, as HTML with its own controls that need no kernel.

Each frame is a <details> element holding one picture, the last one open: that works as it is
where a notebook's HTML is sanitized (no script, no style - an untrusted notebook in
JupyterLab). Where scripts run (a trusted notebook, a static HTML export) the small script
turns the frames into a player with prev / next buttons and a slider.
"""

import base64
from html import escape
from pathlib import Path

import graphviz

from minilucid.viz._dot import _dot
from minilucid.viz._format import _summary
from minilucid.viz._listing import _backward_text
from minilucid.viz._picture import _no_dot_message, _render

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


class _Player:
    """Frames 0..n of one backward pass; frame k shows steps 1..k."""

    def __init__(self, graph, sweep):
        steps = [k for k, (t, _, _) in enumerate(sweep.records, 1) if graph.has(t)]
        self.sources = [_dot(graph, sweep=sweep, upto=k).source for k in [0, *steps]]
        self.captions = ["frame 0: before backward, no gradient yet"]
        for frame, k in enumerate(steps, 1):
            t, grad, _ = sweep.records[k - 1]
            where = f"step {k}" if k == frame else f"steps 1..{k}"
            self.captions.append(
                f"frame {frame}: {where}, {graph.name(t)} has grad {_summary(grad)}"
            )
        head = f"step-through, frames 0..{len(steps)} (frame k shows steps 1..k)"
        self.text = head + "\n" + _backward_text(graph, sweep)

    def __repr__(self) -> str:
        return self.text

    def html(self) -> str:
        """The player: every frame as an SVG image, the controls and the script that drives them."""
        n = len(self.sources) - 1
        rows = ['<div class="minilucid-steps">', _controls(n)]
        for k, (source, caption) in enumerate(zip(self.sources, self.captions, strict=True)):
            svg = base64.b64encode(_render(source, "svg")).decode("ascii")
            rows.append(
                f'<details class="minilucid-frame"{" open" if k == n else ""}>'
                f"<summary>{escape(caption)}</summary>"
                f'<img src="data:image/svg+xml;base64,{svg}" alt="{escape(caption)}"></details>'
            )
        rows.append("</div>")
        return "\n".join(rows) + "\n" + SCRIPT

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        try:
            html = self.html()
            png = base64.b64encode(_render(self.sources[-1], "png")).decode("ascii")
        except graphviz.ExecutableNotFound:
            return {"text/plain": self.text + "\n\n" + _no_dot_message()}
        return {"text/html": html, "image/png": png, "text/plain": self.text}

    def save(self, path) -> Path:
        """Write the player as a stand-alone .html page."""
        path = Path(path)
        page = f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"></head><body>\n{self.html()}'
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
