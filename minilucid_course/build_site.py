"""Build a static HTML copy of the course (chapters with their stored outputs) into site/.

    python -m minilucid_course.build_site [--out site]

Uses nbconvert's HTML exporter; needs no network, to build or to read: MathJax is copied into
site/mathjax from the jupyter-server-mathjax package. Links between chapters point to the HTML
pages.
"""

from __future__ import annotations

import argparse
import html
import re
import shutil
import sys
from pathlib import Path

import nbformat
from nbconvert import HTMLExporter

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
SITE = ROOT / "site"

LOCAL_NOTEBOOK_LINK = re.compile(r'href="([^":/?#]+)\.ipynb(#[^"]*)?"')

INDEX = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>
body {{ font-family: system-ui, sans-serif; max-width: 44rem; margin: 3rem auto;
       padding: 0 1rem; line-height: 1.5; color: #222; }}
h1 {{ margin-bottom: 0.2rem; }}
ul {{ list-style: none; padding-left: 0; }}
li {{ margin: 0.5rem 0; font-size: 1.1rem; }}
</style>
</head>
<body>
<h1>{title}</h1>
<p>The chapters of the course, with their outputs and pictures.</p>
<ul>
{items}
</ul>
</body>
</html>
"""


def title_of(nb, fallback: str) -> str:
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                if line.startswith("# "):
                    return re.sub(r"[*_`]", "", line[2:]).strip()
    return fallback


def build(notebooks_dir: Path = NOTEBOOKS, out: Path = SITE) -> list[Path]:
    paths = sorted(Path(notebooks_dir).glob("*.ipynb"))
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*.html"):  # pages of chapters that were renamed or removed
        old.unlink()
    exporter = HTMLExporter(template_name="lab")
    exporter.embed_images = True  # markdown images go into the page
    exporter.mathjax_url = _local_mathjax(out)
    exporter.require_js_url = "data:text/javascript,"  # no widgets here: nothing to load

    items, written = [], []
    for path in paths:
        nb = nbformat.read(str(path), as_version=4)
        title = title_of(nb, path.stem)
        body, _ = exporter.from_notebook_node(
            nb, resources={"metadata": {"name": title, "path": str(path.parent)}}
        )
        body = LOCAL_NOTEBOOK_LINK.sub(lambda m: f'href="{m[1]}.html{m[2] or ""}"', body)
        target = out / f"{path.stem}.html"
        target.write_text(body, encoding="utf-8")
        written.append(target)
        items.append(f'<li><a href="{html.escape(target.name)}">{html.escape(title)}</a></li>')
    index = out / "index.html"
    index.write_text(
        INDEX.format(title="minilucid: the course", items="\n".join(items)), encoding="utf-8"
    )
    return [index, *written]


def _local_mathjax(out: Path) -> str:
    """Copy MathJax next to the pages, so formulas typeset offline; return its URL."""
    import jupyter_server_mathjax

    static = Path(jupyter_server_mathjax.__file__).parent / "static"
    if not (out / "mathjax" / "MathJax.js").exists():
        shutil.copytree(static, out / "mathjax", dirs_exist_ok=True)
    return "mathjax/MathJax.js?config=TeX-AMS-MML_HTMLorMML-full,Safe"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--notebooks", default=str(NOTEBOOKS))
    parser.add_argument("--out", default=str(SITE))
    args = parser.parse_args(argv)
    written = build(Path(args.notebooks), Path(args.out))
    print(f"html: wrote {len(written) - 1} chapter page(s) and {written[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
