"""Build a static HTML copy of the course (chapters with their stored outputs) into site/.

    python -m minilucid_course.build_site [--out site]

Uses nbconvert's HTML exporter and needs no network, to build or to read:

- every chapter of notebooks/ becomes site/NN_topic.html, with links to the previous chapter,
  the index and the next chapter at its top and bottom; site/index.html lists them all;
- every exercise notebook of exercises/ becomes site/exercises/NN_topic.html, so that a
  chapter's links to its exercises (and theirs back to it) work in the site too;
- a cell whose input is collapsed in JupyterLab (an exercise break's answer) is folded here too;
- MathJax is copied next to the pages from the jupyter-server-mathjax package, and set up to use
  the fonts that package ships (STIX-Web), so that every formula is typeset with real math
  fonts and no font is requested that is not there;
- a widget's stored output (chapter 09's progress bar) becomes plain HTML drawn from the state
  the notebook stored, so no widget script is fetched;
- a local file a page links to (chapter 13's capstone/tiny_gpt.py) is copied next to it.
"""

from __future__ import annotations

import argparse
import functools
import html
import re
import shutil
import sys
from pathlib import Path

import nbformat
from jinja2 import DictLoader
from nbconvert import HTMLExporter

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
EXERCISES = ROOT / "exercises"
SITE = ROOT / "site"

# href="NN_topic.ipynb", "../exercises/NN_topic.ipynb", "../work/NN_topic.ipynb" (a learner's
# working copy), "../notebooks/NN_topic.ipynb#anchor"
NOTEBOOK_LINK = re.compile(
    r'href="(?:\.\./)?(?:(notebooks|exercises|work)/)?([^":/?#]+)\.ipynb(#[^"]*)?"'
)

# The fonts jupyter-server-mathjax ships are STIX-Web only; MathJax's default TeX fonts are not
# there, and without this configuration it asks for them, fails, and falls back to whatever the
# system has (floating dot accents, a plain R for the blackboard-bold one).
MATHJAX_CONFIG = """\
MathJax.Hub.Config({
  "HTML-CSS": {
    availableFonts: [],
    preferredFont: null,
    webFont: "STIX-Web",
    imageFont: null
  },
  SVG: { font: "STIX-Web" },
  menuSettings: { renderer: "HTML-CSS" }
});
MathJax.Ajax.loadComplete("[MathJax]/config/local/minilucid.js");
"""

# JupyterLab's template, with a cell whose input is collapsed folded into <details>
TEMPLATE = """{%- extends 'lab/index.html.j2' -%}
{% block input_group -%}
{%- if cell.metadata.get('jupyter', {}).get('source_hidden', False) -%}
<details class="ml-folded"><summary>the package's code, folded: unfold it once your own version
passes</summary>
{{ super() }}
</details>
{%- else -%}
{{ super() }}
{%- endif -%}
{%- endblock input_group %}
"""

MATHJAX_CONFIGS = "TeX-AMS-MML_HTMLorMML-full,Safe,local/minilucid"
WIDGET = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
# a link in a page to a file beside its notebook: href="capstone/tiny_gpt.py"
LOCAL_LINK = re.compile(r'href="(?![a-z][a-z0-9+.-]*:|#|/)([^"?#]+)[^"]*"')

PAGE_STYLE = """<style>
nav.ml-pager { display: flex; justify-content: space-between; gap: 1rem; max-width: 1200px;
  margin: 0.8rem auto; padding: 0.4rem 1rem; font: 15px system-ui, sans-serif;
  border-top: 1px solid #ddd; border-bottom: 1px solid #ddd; }
nav.ml-pager a { text-decoration: none; }
nav.ml-pager .ml-prev, nav.ml-pager .ml-next { flex: 1; }
nav.ml-pager .ml-next { text-align: right; }
/* MathJax keeps a hidden MathML copy of each formula for screen readers; Chromium styles its
   letters with TeX web fonts that are not shipped. Nobody sees it: it needs no font of its own. */
.MJX_Assistive_MathML, .MJX_Assistive_MathML * { font-family: inherit !important; }
details.ml-folded > summary { cursor: pointer; color: #555; font: 14px system-ui, sans-serif;
  padding: 0.2rem 0 0.2rem 6rem; }
.ml-widget { display: flex; align-items: center; gap: 0.5em; font: 13px monospace; }
.ml-widget progress { width: 16em; }
</style>
"""

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
ol {{ padding-left: 1.5rem; }}
li {{ margin: 0.5rem 0; font-size: 1.1rem; }}
li .ml-exercises {{ font-size: 0.9rem; margin-left: 0.6rem; }}
</style>
</head>
<body>
<h1>{title}</h1>
<p>The chapters of the course, with their outputs and pictures, and the exercise notebooks
that go with them (to work on them, open the course in JupyterLab).</p>
<ol start="0">
{items}
</ol>
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


def build(
    notebooks_dir: Path = NOTEBOOKS, out: Path = SITE, exercises_dir: Path | None = None
) -> list[Path]:
    """Write the site; return [index, chapter pages..., exercise pages...]."""
    notebooks_dir, out = Path(notebooks_dir), Path(out)
    if exercises_dir is None:
        exercises_dir = notebooks_dir.parent / "exercises"
    chapters = sorted(notebooks_dir.glob("[0-9][0-9]*_*.ipynb"))  # 06b_...: an appendix
    exercises = sorted(Path(exercises_dir).glob("[0-9][0-9]_*.ipynb"))
    (out / "exercises").mkdir(parents=True, exist_ok=True)
    for old in [*out.glob("*.html"), *(out / "exercises").glob("*.html")]:
        old.unlink()  # pages of notebooks that were renamed or removed
    local_mathjax(out)
    pages = {"notebooks": {p.stem for p in chapters}, "exercises": {p.stem for p in exercises}}

    titles = {p.stem: title_of(nbformat.read(str(p), as_version=4), p.stem) for p in chapters}
    written = []
    for k, path in enumerate(chapters):
        prev = chapters[k - 1].stem if k > 0 else None
        nxt = chapters[k + 1].stem if k + 1 < len(chapters) else None
        pager = _pager(prev, nxt, titles)
        target = out / f"{path.stem}.html"
        _export(path, target, "", "notebooks", pages, pager)
        written.append(target)
    for path in exercises:
        chapter = path.stem if path.stem in titles else None
        pager = _exercise_pager(chapter, titles)
        target = out / "exercises" / f"{path.stem}.html"
        _export(path, target, "../", "exercises", pages, pager)
        written.append(target)

    items = []
    for stem, title in titles.items():
        item = f'<li><a href="{html.escape(stem)}.html">{html.escape(_plain(title))}</a>'
        if stem in pages["exercises"]:
            item += (
                f' <a class="ml-exercises" href="exercises/{html.escape(stem)}.html">exercises</a>'
            )
        items.append(item + "</li>")
    index = out / "index.html"
    index.write_text(
        INDEX.format(title="minilucid: the course", items="\n".join(items)), encoding="utf-8"
    )
    return [index, *written]


def _plain(title: str) -> str:
    """'04 · Shapes' -> 'Shapes' for a numbered list; other titles stay as they are."""
    return re.sub(r"^\d\d\s*·\s*", "", title)


def _pager(prev, nxt, titles) -> str:
    left = (
        f'<a class="ml-prev" rel="prev" href="{prev}.html">← {html.escape(titles[prev])}</a>'
        if prev
        else '<span class="ml-prev"></span>'
    )
    right = (
        f'<a class="ml-next" rel="next" href="{nxt}.html">{html.escape(titles[nxt])} →</a>'
        if nxt
        else '<span class="ml-next"></span>'
    )
    return (
        f'<nav class="ml-pager">{left}<a class="ml-index" href="index.html">all chapters</a>'
        f"{right}</nav>"
    )


def _exercise_pager(chapter, titles) -> str:
    back = (
        f'<a class="ml-prev" href="../{chapter}.html">← {html.escape(titles[chapter])}</a>'
        if chapter
        else '<span class="ml-prev"></span>'
    )
    return (
        f'<nav class="ml-pager">{back}<a class="ml-index" href="../index.html">all chapters</a>'
        '<span class="ml-next"></span></nav>'
    )


@functools.cache
def _exporter(up: str) -> HTMLExporter:
    """The exporter of the pages `up` below the site's root: one for all of them, so that its
    templates are compiled once, not once a page."""
    exporter = HTMLExporter(
        extra_loaders=[DictLoader({"minilucid_site.html.j2": TEMPLATE})],
        template_file="minilucid_site.html.j2",
    )
    exporter.embed_images = True  # markdown images go into the page
    exporter.mathjax_url = f"{up}mathjax/MathJax.js?config={MATHJAX_CONFIGS}"
    exporter.require_js_url = "data:text/javascript,"  # no widgets here: nothing to load
    return exporter


def _export(path: Path, target: Path, up: str, kind: str, pages: dict, pager: str) -> None:
    nb = nbformat.read(str(path), as_version=4)
    exporter = _exporter(up)
    static_widgets(nb)
    title = title_of(nb, path.stem)
    body, _ = exporter.from_notebook_node(
        nb, resources={"metadata": {"name": title, "path": str(path.parent)}}
    )

    def link(match: re.Match) -> str:
        folder, stem, anchor = match[1], match[2], match[3] or ""
        folder = folder or kind  # a bare "X.ipynb" lives next to the page's notebook
        folder = "exercises" if folder == "work" else folder  # a learner's copy of an exercise
        if stem not in pages.get(folder, ()):
            return match[0]  # not part of the site: leave it as it is
        page = f"{stem}.html" if folder == "notebooks" else f"exercises/{stem}.html"
        return f'href="{up}{page}{anchor}"'

    body = NOTEBOOK_LINK.sub(link, body)
    for match in LOCAL_LINK.finditer(body):
        _copy_linked(path.parent, target.parent, html.unescape(match[1]))
    body = body.replace("</head>", PAGE_STYLE + "</head>", 1)
    body = re.sub(r"(<body[^>]*>)", lambda m: m[1] + "\n" + pager, body, count=1)
    body = body.replace("</body>", pager + "\n</body>", 1)
    target.write_text(body, encoding="utf-8")


def static_widgets(nb) -> None:
    """Each widget output as plain HTML from the stored widget state; the state then goes, so
    the page loads no widget manager. A box shows its children; a progress bar, an HTML or a
    label widget shows its value; any other widget its text form."""
    state = nb.metadata.pop("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if WIDGET in data:
                shown = _widget_html(state, data[WIDGET].get("model_id", ""))
                if shown is None:
                    shown = f"<pre>{html.escape(str(data.get('text/plain', '')))}</pre>"
                output["data"] = {"text/html": shown, "text/plain": data.get("text/plain", "")}


def _widget_html(state: dict, model: str):
    """One widget as HTML from its stored state, or None where nothing is stored for it."""
    entry = state.get(model.removeprefix("IPY_MODEL_"))
    if entry is None:
        return None
    name, values = entry.get("model_name", ""), entry.get("state", {})
    if "children" in values:
        parts = [_widget_html(state, child) or "" for child in values["children"]]
        return '<div class="ml-widget">' + "".join(parts) + "</div>"
    if "Progress" in name:
        value, top = values.get("value", 0), values.get("max", 100)
        return f'<progress value="{value}" max="{top}"></progress>'
    if name in ("HTMLModel", "LabelModel"):
        text = values.get("value", "")
        return f"<span>{text if name == 'HTMLModel' else html.escape(text)}</span>"
    return None


def _copy_linked(source: Path, out: Path, link: str) -> None:
    """Copy a file a page links to, from beside its notebook to beside the page."""
    relative = Path(link)
    if relative.is_absolute() or ".." in relative.parts or relative.suffix in (".html", ""):
        return
    found = source / relative
    if found.is_file():
        (out / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(found, out / relative)


def local_mathjax(out: Path) -> None:
    """Copy MathJax next to the pages (once), and its configuration for the fonts it has."""
    import jupyter_server_mathjax

    static = Path(jupyter_server_mathjax.__file__).parent / "static"
    if not (out / "mathjax" / "MathJax.js").exists():
        shutil.copytree(static, out / "mathjax", dirs_exist_ok=True)
    local = out / "mathjax" / "config" / "local"
    local.mkdir(parents=True, exist_ok=True)
    (local / "minilucid.js").write_text(MATHJAX_CONFIG, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--notebooks", default=str(NOTEBOOKS))
    parser.add_argument("--exercises", default=None, help="default: exercises/ beside notebooks/")
    parser.add_argument("--out", default=str(SITE))
    args = parser.parse_args(argv)
    exercises = Path(args.exercises) if args.exercises else None
    written = build(Path(args.notebooks), Path(args.out), exercises)
    print(f"html: wrote {len(written) - 1} page(s) and {written[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
