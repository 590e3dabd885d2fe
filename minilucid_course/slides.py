"""Slides of a chapter, for a lecture: one slide per section, the chapter's cells and outputs.

    python -m minilucid_course.slides [NN ...]      (make slides CH=03; without NN: every chapter)

Writes site/slides/NN_topic.slides.html with nbconvert's reveal.js exporter. A `#` or `##`
heading starts a slide, a `###` heading a sub-slide (below it); every other cell joins the slide
before it. Nothing in notebooks/ changes. The page loads reveal.js from its CDN when opened.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "site" / "slides"


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
    body, _ = SlidesExporter().from_notebook_node(nb)
    return body


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
    OUT.mkdir(parents=True, exist_ok=True)
    for notebook in chapters:
        out = OUT / f"{notebook.stem}.slides.html"
        out.write_text(as_slides(notebook), encoding="utf-8")
        print(f"slides: wrote {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
