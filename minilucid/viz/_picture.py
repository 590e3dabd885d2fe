"""A drawn graph: HTML, SVG, PNG and a listing in Jupyter; files, a viewer and DOT outside it.

The methods outside Jupyter carry graphviz's own names (`source`, `render`, `view`, `pipe`,
`save`). Without Graphviz's `dot` each of them says how to install it and still writes the DOT.
"""

import base64
import dataclasses
import re
from html import escape
from pathlib import Path

import graphviz

from minilucid.graphviz_install import graphviz_install_hint
from minilucid.viz._dot import _dot, _layout
from minilucid.viz._listing import _text, _values_text
from minilucid.viz._options import _scale


class _Drawing:
    """What every picture object can do with its DOT source (`source`) and its listing (`text`)."""

    source: str
    text: str
    pinned = False  # True: the DOT holds its layout, and neato -n2 prints it as it is

    def __repr__(self) -> str:
        return self.text

    def pipe(self, format: str = "svg") -> bytes:
        """The picture as bytes in `format` (svg, png, pdf, ...), as graphviz's pipe gives it."""
        try:
            return _render(self.source, format, self.pinned)
        except graphviz.ExecutableNotFound:
            raise RuntimeError(_no_dot_message(full=True)) from None

    def render(self, filename="graph", directory=None, format="svg", view=False, cleanup=False):
        """Write the DOT source to `filename` and the picture beside it (filename.svg, ...).

        As graphviz's render: returns the picture's path; view=True opens it; cleanup=True
        removes the DOT file. Without `dot`: writes the DOT file, says how to install Graphviz,
        and returns the DOT file's path.
        """
        engine = "neato" if self.pinned else "dot"
        source = graphviz.Source(self.source, filename=filename, directory=directory, engine=engine)
        try:
            return source.render(
                format=format, view=view, cleanup=cleanup, quiet=True, neato_no_op=self._no_op()
            )
        except graphviz.ExecutableNotFound:
            written = source.save()
            print(f"{_no_dot_message()}\nWrote the DOT source to {written}.")
            return written

    def view(self, filename="graph", directory=None, format="svg", cleanup=False):
        """Render the picture (SVG: tooltips hold the whole values) and open it in a viewer."""
        return self.render(filename, directory, format=format, view=True, cleanup=cleanup)

    def save(self, path) -> Path:
        """Write the picture as .svg, .png or .pdf, or its DOT source as .gv; returns the path.

        Without Graphviz's `dot`, writes the DOT source next to it (as .gv) and says how to
        install Graphviz.
        """
        path = Path(path)
        kind = path.suffix.lstrip(".").lower()
        if kind in ("dot", "gv"):
            path.write_text(self.source, encoding="utf-8")
            return path
        if kind not in ("svg", "png", "pdf"):
            raise ValueError(f"save: cannot write a .{kind} file; use .svg, .png, .pdf or .gv")
        try:
            path.write_bytes(_render(self.source, kind, self.pinned))
        except graphviz.ExecutableNotFound:
            path = path.with_suffix(".gv")
            path.write_text(self.source, encoding="utf-8")
            print(f"{_no_dot_message()}\nWrote the DOT source to {path} instead.")
        return path

    def _no_op(self):
        return 2 if self.pinned else None


class _Picture(_Drawing):
    """One scene drawn in one layout; Jupyter shows it as HTML: the SVG and the whole values.

    The bundle also holds the SVG and a PNG, for front ends that show no HTML, and the listing
    as text/plain.
    """

    def __init__(
        self, scene, rankdir="auto", upto=None, layout=None, pins=None, fill=None, expand=None
    ):
        self.scene = scene
        self.fill = _scale() > 1 if fill is None else fill  # a projector: fit it to the screen
        if layout is None:  # chosen here: for a notebook, or to fit the screen for a projector
            layout = _layout(scene, rankdir, _scale(), expand)
            if self.fill and rankdir == "auto":
                layout = _presentation_layout(scene, layout, upto)
        self.layout = layout
        self._drawn = None  # the SVG, once drawn
        self.pinned = pins is not None  # a step-through's frame: drawn in the one layout
        self.source = _dot(scene, self.layout, upto, pins)  # the DOT source, always available
        self.text = _text(scene, upto)  # nodes and edges in order, no addresses

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        try:
            svg = self.svg()
            png = self.png()
        except graphviz.ExecutableNotFound:
            return {"text/plain": self.text + "\n\n" + _no_dot_message(listing=True)}
        return {
            "text/html": self.html(svg),
            "image/svg+xml": svg,
            "image/png": base64.b64encode(png).decode("ascii"),
            "text/plain": self.text,
        }

    def html(self, svg: str | None = None) -> str:
        """The picture as an SVG image, and under it every value and gradient, in full.

        JupyterLab shows SVG as an image, so its tooltips never appear: the listing under the
        picture is where the whole values are. Plain <img> and <details>, no script or style
        sheet: it shows the same where a notebook's HTML is sanitized.
        """
        svg = self.svg() if svg is None else svg
        data = base64.b64encode(svg.encode("utf-8")).decode("ascii")
        alt = escape(self.text.splitlines()[0])
        return (
            '<div class="minilucid-picture">'
            f'<img src="data:image/svg+xml;base64,{data}" alt="{alt}" '
            'style="max-width:100%;height:auto">'
            f"</div>\n{_values_html(self.scene)}"
        )

    def svg(self) -> str:
        """The SVG at the size it is shown: natural, or fitted to a screen in presentation mode.

        The layouts aim at full size; should one still come out wider than a notebook's output
        area, it is shown a little smaller, but only as far as its type stays 11 px tall. In
        presentation mode the picture fits the notebook area JupyterLab's presentation mode
        leaves on a 1488x900 screen (and so on a 1920x1080 one), width and height, in the
        layout that shows its type largest.
        """
        svg = self._svg()
        width, height = (float(v) for v in re.search(SIZE, svg).groups())
        factor = self._factor(width, height)
        if factor == 1:
            return svg
        size = f'<svg width="{width * factor:.0f}pt" height="{height * factor:.0f}pt"'
        return re.sub(SIZE, size, svg, count=1)

    def png(self) -> bytes:
        """The PNG as shown where SVG is not: the size the SVG is shown at."""
        width, height = (float(v) for v in re.search(SIZE, self._svg()).groups())
        factor = self._factor(width, height)
        if factor == 1:
            return _render(self.source, "png", self.pinned)
        dpi = f"{96 * factor:.1f}"  # Graphviz draws PNG at 96 dots per inch
        source = self.source.replace("{\n", f"{{\n\tgraph [dpi={dpi}]\n", 1)
        return _render(source, "png", self.pinned)

    def _svg(self) -> str:
        if self._drawn is None:
            self._drawn = _render(self.source, "svg", self.pinned).decode("utf-8")
        return self._drawn

    def _factor(self, width_pt: float, height_pt: float) -> float:
        """How much larger than its natural size the picture is shown (below 1: smaller)."""
        if self.fill:  # fitted to the screen, but its type never smaller than in a notebook
            return max(_screen_factor(width_pt, height_pt), 1 / self.layout.scale)
        return self._shrink(width_pt)

    def _shrink(self, width_pt: float) -> float:
        """1, or the factor that brings the picture into the output area with type >= 11 px."""
        width_px = width_pt * 4 / 3
        smallest = 10 * self.layout.scale * 4 / 3  # edge labels: the smallest type drawn
        if width_px <= FIT_PX:
            return 1.0
        return max(FIT_PX / width_px, SMALLEST_PX / smallest)


SIZE = r'<svg width="([\d.]+)pt" height="([\d.]+)pt"'
FIT_PX = 940  # a notebook's output area is about 960 px wide
SMALLEST_PX = 11  # the smallest type a picture may show
# presentation: what JupyterLab's presentation mode leaves of a 1488x900 screen, the file browser
# open (an output area 1010 px wide, a notebook 779 px high; 1442x959 on a 1920x1080 screen),
# less a step-through's controls (35 px) and a cell's margins: a picture fits both screens
SCREEN_PX = (1000, 700)
GROW = 1.6  # ... where a small picture is shown at most this much larger
LARGER = 1.4  # presentation type, as displayed, at least this much larger than a notebook's


def _screen_factor(width_pt: float, height_pt: float) -> float:
    """The factor that fits a picture to the screen's notebook area, width and height."""
    return min(SCREEN_PX[0] / (width_pt * 4 / 3), SCREEN_PX[1] / (height_pt * 4 / 3), GROW)


def _presentation_layout(scene, first, upto=None):
    """A projector's layout: of left to right and top to bottom, the one shown largest on the
    screen; compact nodes only when neither shows the type LARGER times as large as in a
    notebook. Without Graphviz: `first`."""
    best = (0.0, first)
    for compact in (False, True):
        for rankdir in ("LR", "TB"):
            layout = dataclasses.replace(first, rankdir=rankdir, compact=compact)
            try:
                svg = _render(_dot(scene, layout, upto), "svg").decode("utf-8")
            except graphviz.ExecutableNotFound:
                return first
            factor = _screen_factor(*(float(v) for v in re.search(SIZE, svg).groups()))
            best = max(best, (factor, layout), key=lambda pair: pair[0])
        if best[0] * first.scale >= LARGER:
            break
    return best[1]


def _values_html(scene) -> str:
    """Every tensor's whole values and gradient, folded under a picture until asked for."""
    return (
        '<details class="minilucid-values"><summary>every value and gradient, in full'
        f"</summary><pre>{escape(_values_text(scene))}</pre></details>"
    )


def _render(source: str, kind: str, pinned: bool = False) -> bytes:
    if pinned:  # the layout is in the DOT: neato -n2 keeps every place and spline as given
        return graphviz.Source(source, engine="neato").pipe(format=kind, neato_no_op=2, quiet=True)
    return graphviz.Source(source).pipe(format=kind, quiet=True)


_HINTED = {"once": False}  # the install commands are printed once a session, then one line


def _no_dot_message(listing: bool = False, full: bool = False) -> str:
    """Why there is no picture: how to install Graphviz the first time, one line after that.

    listing: the message stands under the picture's text listing; full: always the commands.
    """
    where = "the listing above says the same in text, and " if listing else ""
    tail = (
        f"The picture needs it; {where}the DOT source is in .source (.save('graph.gv') writes it)."
    )
    if _HINTED["once"] and not full:
        return (
            "Graphviz's `dot` program is not on PATH (how to install it was shown earlier). " + tail
        )
    _HINTED["once"] = True
    return graphviz_install_hint() + "\n" + tail
