"""Slides of a chapter, for a lecture: one slide per section, the chapter's cells and outputs.

    python -m minilucid_course.slides [NN ...]      (make slides CH=03; without NN: every chapter)

Writes site/slides/NN_topic.slides.html with nbconvert's reveal.js exporter. A `#` or `##`
heading starts a slide, a `###` heading a sub-slide (below it); every other cell joins the slide
before it; a slide taller than the screen scrolls. Nothing in notebooks/ changes.

The slides work offline: reveal.js is copied next to them from the sphinx-revealjs package (the
`slides` extra), MathJax from jupyter-server-mathjax, as the site does; a widget's output is
drawn from its stored state. The page loads no script from anywhere else.
"""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

import nbformat
from jinja2 import DictLoader

from minilucid_course.build_site import MATHJAX_CONFIGS, local_mathjax, static_widgets

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "site" / "slides"
REVEAL = "reveal.js"  # the folder next to the slides that holds reveal.js

# nbconvert's reveal.js template without the scripts it fetches (jQuery, require.js, mermaid):
# reveal.js and its notes plugin load from the folder next to the page, as plain scripts.
TEMPLATE = """{%- extends 'reveal/index.html.j2' -%}
{% block html_head_js_jquery %}{% endblock html_head_js_jquery %}
{% block html_head_js_requirejs %}{% endblock html_head_js_requirejs %}
{% block html_head_js_mermaidjs %}{% endblock html_head_js_mermaidjs %}
{% block footer_js %}
<script src="REVEAL/dist/reveal.js"></script>
<script src="REVEAL/plugin/notes/notes.js"></script>
<script>
Reveal.initialize({
  controls: true, progress: true, history: true, transition: "slide",
  plugins: [RevealNotes], width: 960, height: 700
});
function scrollTall() {  // a slide taller than the screen scrolls inside it
  var room = document.querySelector(".reveal").clientHeight * 0.95;
  document.querySelectorAll(".reveal .slides section:not(.stack)").forEach(function (s) {
    if (s.scrollHeight > room) {
      s.style.height = "95vh"; s.style.overflowY = "auto"; s.style.marginTop = "20px";
    }
  });
}
function typeset() {
  if (!window.MathJax || !MathJax.Hub) return;
  MathJax.Hub.Queue(["Rerender", MathJax.Hub, Reveal.getCurrentSlide()]);
}
Reveal.on("ready", scrollTall);
Reveal.on("slidechanged", function () { scrollTall(); typeset(); });
</script>
{% endblock footer_js %}
""".replace("REVEAL", REVEAL)


def slide_type(cell) -> str:
    """reveal.js's kind of slide for a cell: a new slide at each section, else the same slide."""
    if cell.cell_type == "markdown":
        first = cell.source.lstrip().split("\n", 1)[0]
        if first.startswith(("# ", "## ")):
            return "slide"
        if first.startswith("### "):
            return "subslide"
    return "-"


def as_slides(notebook: Path) -> str:
    from nbconvert import SlidesExporter

    nb = nbformat.read(str(notebook), as_version=4)
    for cell in nb.cells:
        cell.metadata["slideshow"] = {"slide_type": slide_type(cell)}
    static_widgets(nb)
    exporter = SlidesExporter(
        extra_loaders=[DictLoader({"minilucid_slides.html.j2": TEMPLATE})],
        template_file="minilucid_slides.html.j2",
    )
    exporter.reveal_url_prefix = REVEAL
    exporter.reveal_theme = "white"  # its fonts ship with it; "simple" fetches web fonts
    exporter.mathjax_url = f"mathjax/MathJax.js?config={MATHJAX_CONFIGS}"
    exporter.embed_images = True
    body, _ = exporter.from_notebook_node(nb)
    return body


def reveal_source() -> Path:
    """reveal.js as the sphinx-revealjs package ships it (its dist/ and plugin/ folders)."""
    spec = importlib.util.find_spec("sphinx_revealjs")  # found, not imported: no Sphinx needed
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(
            "slides: reveal.js comes from the sphinx-revealjs package, which is not installed;"
            " `make slides` installs it (the `slides` extra), or: pip install sphinx-revealjs"
        )
    return Path(spec.submodule_search_locations[0]) / "_static" / "revealjs"


def copy_reveal(out: Path) -> None:
    """reveal.js's script, style sheets and notes plugin next to the slides."""
    source = reveal_source()
    for part in ("dist", "plugin/notes"):
        shutil.copytree(source / part, out / REVEAL / part, dirs_exist_ok=True)


def build(chapters: list, out: Path = OUT) -> list:
    """Write the slides of `chapters` (notebook paths) into `out`, with what they load."""
    out.mkdir(parents=True, exist_ok=True)
    copy_reveal(out)
    local_mathjax(out)
    written = []
    for notebook in chapters:
        target = out / f"{notebook.stem}.slides.html"
        target.write_text(as_slides(notebook), encoding="utf-8")
        written.append(target)
    return written


def main(argv: list[str] | None = None) -> int:
    wanted = {f"{int(n):02d}" for n in (sys.argv[1:] if argv is None else argv)}
    chapters = [
        p
        for p in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
        if not wanted or p.name[:2] in wanted
    ]
    if not chapters:
        print(f"slides: no chapter {' '.join(sorted(wanted))} in notebooks/")
        return 1
    for target in build(chapters):
        print(f"slides: wrote {target.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
