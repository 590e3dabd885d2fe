"""Presentation pictures in JupyterLab as a projector shows them: 1920x1080 and 1488x900 screens.

JupyterLab serves a trusted notebook that draws a picture and a step-through for a projector
(`viz.options(presentation=True)`). In each screen size, in JupyterLab's own presentation mode
(View → Appearance → Presentation Mode) with the file browser open, the test measures the
notebook's area (what the menus, tabs and toolbar leave) and checks that every presentation
picture, and every frame of the player below its controls, fits it, with type at least 1.4 times
as large as in a notebook where the graph is small enough for that, and never smaller.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook
from test_browser import ROOT, SETTLED, SIZES, TOKEN, player_notebook, serve_lab, trust

pytestmark = pytest.mark.browser

CHROMIUM = "/usr/bin/chromium"
SCREENS = [(1920, 1080), (1488, 900)]
CELLS = [
    "import minilucid as ml\nfrom minilucid import viz",
    'x = ml.tensor([1.0, 2.0, 3.0], requires_grad=True, name="x")\n'
    'w = ml.tensor(0.5, requires_grad=True, name="w")\n'
    'h = (w * x).tanh()\nh.name = "h"\nloss = (h * h).sum()\nloss.name = "loss"\n'
    "normal = viz.draw_backward(loss)\nnormal",
    "with viz.options(presentation=True):\n"
    "    projected = viz.draw_backward((w * x).sum())\n"
    "projected",
    "with viz.options(presentation=True):\n"
    "    player = viz.step_through(((w * x).tanh() ** 2).sum())\n"
    "player",
]

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
if not Path(CHROMIUM).exists():
    pytest.skip(f"no Chromium at {CHROMIUM}", allow_module_level=True)

# The notebook's area: the scrolling notebook's box, the output area's width, the player's controls
AREA = """() => {
  const panel = document.querySelector(".jp-NotebookPanel:not(.lm-mod-hidden)");
  const scroller = panel.querySelector(".jp-WindowedPanel-outer")
    || panel.querySelector(".jp-Notebook");
  const box = scroller.getBoundingClientRect();
  const output = panel.querySelector(".jp-OutputArea-output");
  const controls = panel.querySelector(".minilucid-controls");
  return {
    width: output.getBoundingClientRect().width, height: box.height, top: box.top,
    controls: controls ? controls.getBoundingClientRect().height : 0,
  };
}"""


@pytest.fixture(scope="module")
def presented(tmp_path_factory):
    """JupyterLab serving the trusted, executed notebook; yields (url, browser)."""
    pytest.importorskip("jupyterlab", reason="JupyterLab is not installed")
    from nbclient import NotebookClient

    home = tmp_path_factory.mktemp("presentation")
    work = home / "work"
    work.mkdir()
    nb = new_notebook(cells=[new_code_cell(c) for c in CELLS])
    nb.metadata["kernelspec"] = player_notebook().metadata["kernelspec"]
    saved = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = str(ROOT)
    try:
        NotebookClient(nb, timeout=300, kernel_name="python3").execute(cwd=str(work))
    finally:
        os.environ.pop("PYTHONPATH") if saved is None else os.environ.update(PYTHONPATH=saved)
    path = work / "projected.ipynb"
    nbformat.write(nb, path)
    trust([path], home / "jupyter_data_dir")
    with serve_lab(home, work, ROOT) as url, sync_api.sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu", "--no-first-run"]
        )
        yield url, browser
        browser.close()


@pytest.fixture(scope="module")
def screens(presented):
    """One JupyterLab page per screen size, the notebook open and the file browser beside it,
    loaded the first time a test asks for that size."""
    url, browser = presented
    pages = {}

    def page_for(screen):
        if screen not in pages:
            width, height = screen
            page = browser.new_page(viewport={"width": width, "height": height})
            page.goto(f"{url}/lab/workspaces/p{width}/tree/projected.ipynb?reset&token={TOKEN}")
            page.locator(".jp-NotebookPanel .jp-OutputArea-output img").first.wait_for(
                timeout=30000
            )
            page.evaluate("() => window.jupyterapp.commands.execute('filebrowser:activate')")
            pages[screen] = page
        return pages[screen]

    yield page_for
    for page in pages.values():
        page.close()


def measure(page) -> dict:
    """The notebook's area and every picture as displayed (its box and smallest type)."""
    page.evaluate(SETTLED)  # the panels laid out again
    page.evaluate(SETTLED)
    measured = page.evaluate(AREA)
    pictures = page.evaluate(SIZES)
    measured["pictures"] = [p for p in pictures if p["kind"] == "image/svg+xml"]
    return measured


def test_the_menu_paths_in_the_teachers_guide_are_jupyterlabs(screens):
    page = screens(SCREENS[1])
    page.locator(".lm-MenuBar-itemLabel", has_text="View").click()
    page.locator(".lm-Menu-itemLabel", has_text="Appearance").first.hover()
    page.wait_for_timeout(500)
    labels = page.locator(".lm-Menu .lm-Menu-itemLabel").all_inner_texts()
    page.keyboard.press("Escape")
    page.keyboard.press("Escape")
    assert "Presentation Mode" in labels and "Simple Interface" in labels, labels
    guide = (ROOT / "docs" / "teaching.md").read_text(encoding="utf-8")
    for label in ("Presentation Mode", "Simple Interface"):
        assert f"View → Appearance → {label}" in guide
        assert f"View → {label}" not in guide


@pytest.mark.parametrize("screen", SCREENS, ids=lambda s: f"{s[0]}x{s[1]}")
def test_presentation_pictures_fit_the_notebook_area_with_larger_type(screens, screen):
    page = screens(screen)
    assert not page.evaluate("() => window.jupyterapp.shell.presentationMode")
    normal = measure(page)
    page.evaluate(
        "() => window.jupyterapp.commands.execute('application:toggle-presentation-mode')"
    )
    page.wait_for_function("() => window.jupyterapp.shell.presentationMode === true")
    measured = measure(page)
    print(  # the figures the report quotes: pytest -s shows them
        f"\n{screen[0]}x{screen[1]}: notebook area {measured['width']:.0f}x{measured['height']:.0f}"
        f" px in presentation mode ({normal['width']:.0f}x{normal['height']:.0f} without),"
        f" player controls {measured['controls']:.0f} px"
    )
    pictures = {p["cell"]: p for p in measured["pictures"]}
    before = {p["cell"]: p for p in normal["pictures"]}
    ordinary, projected, frame = pictures[1], pictures[2], pictures[3]
    room = measured["height"] - measured["controls"]
    for p in (projected, frame):
        assert p["width"] <= measured["width"] + 1 and p["height"] <= room + 1, (p, measured)
    # a small graph: type 1.4 times a notebook's; the player's taller graph: no smaller
    assert projected["font"] >= 1.4 * before[1]["font"] - 0.05, (projected, before[1])
    assert frame["font"] >= before[1]["font"] - 0.05, (frame, before[1])
    assert ordinary["font"] == pytest.approx(before[1]["font"], abs=0.05)
    # frame 0 of the player scrolled to the bottom of the area: its top is below the controls
    page.evaluate(
        """() => document.querySelector(".minilucid-frame:not([style*='none']) img")
            .scrollIntoView({block: "end"})"""
    )
    page.wait_for_timeout(300)
    tops = page.evaluate(
        """() => [document.querySelector(".minilucid-controls").getBoundingClientRect().bottom,
                  document.querySelector(".minilucid-frame:not([style*='none']) img")
                      .getBoundingClientRect().top]"""
    )
    assert tops[1] >= tops[0] - 1, tops


def test_the_measured_areas_are_what_the_pictures_fit():
    from minilucid.viz._picture import SCREEN_PX

    text = Path(__file__).read_text(encoding="utf-8")
    assert re.search(r"SCREENS = \[\(1920, 1080\), \(1488, 900\)\]", text)
    assert SCREEN_PX[0] <= 1168 and SCREEN_PX[1] <= 787  # 1488x900, presentation mode
