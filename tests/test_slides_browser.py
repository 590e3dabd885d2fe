"""`make slides` offline, in a real browser: every request that is not a file is refused.

Builds chapter 03's slides (formulas, graphs, a step-through) and opens them from disk in
headless Chromium: reveal.js runs (the arrow keys move between slides), MathJax typesets the
formulas with no raw TeX left, the pictures show, and nothing is asked of the network.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from minilucid_course import slides

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
if not Path(CHROMIUM).exists():
    pytest.skip(f"no Chromium at {CHROMIUM}", allow_module_level=True)
pytest.importorskip("sphinx_revealjs", reason="reveal.js (the sphinx-revealjs package) is missing")

TYPESET = """() => window.MathJax && MathJax.Hub && MathJax.Hub.queue
    && MathJax.Hub.queue.pending === 0 && !MathJax.Hub.queue.running"""


@pytest.fixture(scope="module")
def deck(tmp_path_factory):
    out = tmp_path_factory.mktemp("slides")
    (page,) = slides.build([ROOT / "notebooks" / "03_reverse_mode.ipynb"], out)
    return page


@pytest.fixture(scope="module")
def offline_page(deck):
    """The slides opened from disk, every request that is not a file refused and recorded."""
    asked = []

    def route(r):
        if r.request.url.startswith(("file:", "data:", "about:")):
            r.continue_()
        else:
            asked.append(r.request.url)
            r.abort()

    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu", "--no-first-run"]
        )
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        page.route("**/*", route)
        page.goto(deck.as_uri(), wait_until="load")
        page.wait_for_function("() => window.Reveal && Reveal.isReady()", timeout=30_000)
        page.wait_for_function(TYPESET, timeout=60_000)
        yield page, asked
        browser.close()


def test_the_slides_ask_nothing_of_the_network(offline_page):
    page, asked = offline_page
    assert asked == [], asked
    scripts = page.eval_on_selector_all("script[src]", "ss => ss.map(s => s.src)")
    assert scripts and all(s.startswith("file:") for s in scripts), scripts


def test_arrow_keys_move_between_slides(offline_page):
    page, _ = offline_page
    total = page.evaluate("() => Reveal.getTotalSlides()")
    assert total >= 8, total  # one slide per section of the chapter
    page.evaluate("() => Reveal.slide(0, 0)")
    page.locator(".reveal").click(position={"x": 5, "y": 5})
    page.keyboard.press("ArrowRight")
    assert page.evaluate("() => Reveal.getIndices().h") == 1
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowLeft")
    assert page.evaluate("() => Reveal.getIndices().h") == 1
    # one screen, not the whole chapter as one long page
    assert page.evaluate("() => document.documentElement.scrollHeight") <= 800


def test_the_math_is_typeset(offline_page):
    page, _ = offline_page
    state = page.evaluate(
        """() => ({
        formulas: document.querySelectorAll('.MathJax, .MathJax_Display').length,
        errors: document.querySelectorAll('.MathJax_Error, merror, .merror').length,
        raw: [...document.querySelectorAll('.reveal .slides p, .reveal .slides li')]
            .filter(p => {  // the text left once the typeset formulas are taken out
                const text = p.cloneNode(true);
                text.querySelectorAll('.MathJax, .MathJax_Display, .MathJax_Preview, script')
                    .forEach(e => e.remove());
                return /\\$[^$]+\\$|\\\\frac|\\\\partial/.test(text.textContent);
            }).length,
    })"""
    )
    assert state["formulas"] > 10 and state["errors"] == 0 and state["raw"] == 0, state


def test_the_pictures_show(offline_page):
    page, _ = offline_page
    images = page.evaluate(
        """() => [...document.querySelectorAll('.reveal img')].map(
            i => [i.complete, i.naturalWidth, i.src.slice(0, 22)])"""
    )
    assert len(images) >= 5, images  # the chapter's graphs and step-through frames
    assert all(done and width > 0 for done, width, _ in images), images
    # a slide with a graph on it: its picture is drawn on the screen, not clipped away
    index = page.evaluate(
        """() => Reveal.getSlides().findIndex(s => s.querySelector('.minilucid-picture img'))"""
    )
    assert index >= 0
    page.evaluate(f"() => Reveal.slide(Reveal.getIndices(Reveal.getSlides()[{index}]).h, 0)")
    page.wait_for_timeout(1200)  # the slide's transition
    box = page.locator(".reveal section.present .minilucid-picture img").first.bounding_box()
    assert box and box["width"] > 100 and box["height"] > 50, box
