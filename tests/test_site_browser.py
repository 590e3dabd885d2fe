"""The static site (`make html`) in a real browser: math typeset with its own fonts, offline.

Builds the site of every chapter and exercise notebook once, serves it on localhost, and opens it
in headless Chromium (the system's, driven by Python playwright): chapter 03 has blackboard-bold
R and dot accents, 05 folded answer cells. No request may fail, above all no font request:
MathJax must use the fonts that were copied next to the pages.
"""

from __future__ import annotations

import functools
import http.server
import threading
from pathlib import Path

import pytest

from minilucid_course import build_site

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
CHAPTERS = ("03_reverse_mode", "05_functions_and_numerics")

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
if not Path(CHROMIUM).exists():
    pytest.skip(f"no Chromium at {CHROMIUM}", allow_module_level=True)


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # no access log on the test's output
        pass


@pytest.fixture(scope="module")
def whole_site(tmp_path_factory):
    """The site of every chapter and exercise notebook, as `make html` builds it."""
    out = tmp_path_factory.mktemp("whole") / "site"
    build_site.build(ROOT / "notebooks", out, ROOT / "exercises")
    return out


@pytest.fixture(scope="module")
def site(whole_site):
    """The whole site served on localhost; yields its base URL."""
    handler = functools.partial(_Quiet, directory=str(whole_site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as p:
        chromium = p.chromium.launch(
            executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu", "--no-first-run"]
        )
        yield chromium
        chromium.close()


def _open(browser, url: str):
    """A page at url, with every failed request (network error or HTTP >= 400) recorded."""
    page = browser.new_page(viewport={"width": 1200, "height": 900})
    failed, fonts = [], []

    def request_failed(r):
        # MathJax declares a font "MathJax_Blank" at about:blank on purpose, to measure with
        if r.url != "about:blank":
            failed.append(f"{r.url} ({r.failure})")

    def response(r):
        if r.status >= 400:
            failed.append(f"{r.url} (HTTP {r.status})")
        if r.request.resource_type == "font":
            fonts.append((r.url, r.status))

    page.on("requestfailed", request_failed)

    page.on("response", response)
    page.goto(url, wait_until="load")
    return page, failed, fonts


TYPESET = """() => window.MathJax && MathJax.Hub && MathJax.Hub.queue
    && MathJax.Hub.queue.pending === 0 && !MathJax.Hub.queue.running
    && document.querySelectorAll('.MathJax, .MathJax_Display').length > 0"""


def _settled(page) -> None:
    page.wait_for_function(TYPESET, timeout=30_000)
    page.wait_for_load_state("networkidle")


def test_math_is_typeset_with_the_fonts_next_to_the_pages(browser, site):
    page, failed, fonts = _open(browser, f"{site}/03_reverse_mode.html")
    _settled(page)
    state = page.evaluate(
        """() => ({
        formulas: document.querySelectorAll('.MathJax, .MathJax_Display').length,
        errors: document.querySelectorAll('.MathJax_Error, merror, .merror').length,
        raw: document.body.innerText.includes('\\\\mathbb'),
        faces: [...document.fonts].map(f => [f.family.replace(/"/g, ''), f.status]),
        doubleStruck: [...document.querySelectorAll('.MathJax span')]
            .filter(s => s.children.length === 0 && s.textContent.includes('\\u211D'))
            .map(s => getComputedStyle(s).fontFamily),
    })"""
    )
    page.close()
    assert not failed, "requests failed:\n" + "\n".join(failed)
    assert state["formulas"] > 10, state
    assert state["errors"] == 0, state
    assert not state["raw"], "some TeX was left untypeset"
    assert fonts and all(status == 200 for _, status in fonts), fonts
    assert all("STIX" in url for url, _ in fonts), fonts
    loaded = {family for family, status in state["faces"] if status == "loaded"}
    assert any(family.startswith("STIXMathJax") for family in loaded), state["faces"]
    broken = [f for f, status in state["faces"] if status == "error" and f != "MathJax_Blank"]
    assert not broken, state["faces"]
    # the blackboard-bold R of "f: R^n -> R" is drawn by a math font, not the page's text font
    assert state["doubleStruck"], "no ℝ typeset in chapter 03"
    assert all("STIX" in family for family in state["doubleStruck"]), state["doubleStruck"]


def test_index_lists_the_chapters_and_pages_link_in_order(browser, site):
    stems = [p.stem for p in sorted((ROOT / "notebooks").glob("[0-9][0-9]*_*.ipynb"))]
    here = stems.index(CHAPTERS[0])
    page, failed, _ = _open(browser, f"{site}/index.html")
    chapters = page.eval_on_selector_all("ol > li > a:first-child", "as => as.map(a => a.href)")
    assert [c.rsplit("/", 1)[1] for c in chapters] == [f"{s}.html" for s in stems]
    assert page.locator("nav.ml-pager a[rel=prev]").count() == 0  # the index has no pager

    page.click(f"ol > li > a:first-child[href$='{CHAPTERS[0]}.html']")
    page.wait_for_url(f"**/{CHAPTERS[0]}.html")
    _settled(page)  # leaving a page while MathJax still loads would abort its requests
    before = page.locator("nav.ml-pager a[rel=prev]").first.get_attribute("href")
    assert before.endswith(f"{stems[here - 1]}.html"), before
    page.locator("nav.ml-pager a[rel=next]").first.click()
    page.wait_for_url(f"**/{stems[here + 1]}.html")
    _settled(page)
    back = page.locator("nav.ml-pager a[rel=prev]").first.get_attribute("href")
    assert back.endswith(f"{CHAPTERS[0]}.html"), back
    page.locator("nav.ml-pager a.ml-index").first.click()
    page.wait_for_url("**/index.html")
    page.close()
    assert not failed, failed


def test_a_chapter_links_to_its_exercises_and_folds_its_answers(browser, site):
    page, failed, _ = _open(browser, f"{site}/05_functions_and_numerics.html")
    _settled(page)
    folded = page.locator("details.ml-folded")
    assert folded.count() >= 4  # one per revealed package cell after an exercise break
    assert not folded.first.evaluate("d => d.open")
    page.locator('a[href="exercises/05_functions_and_numerics.html"]').first.click()
    page.wait_for_url("**/exercises/05_functions_and_numerics.html")
    _settled(page)
    assert page.locator("h1").first.inner_text().startswith("05 · Functions and numerics")
    page.locator('a[href="../05_functions_and_numerics.html"]').first.click()
    page.wait_for_url("**/05_functions_and_numerics.html")
    page.close()
    assert not failed, failed


def test_the_step_through_plays_in_one_layout_on_the_site(browser, site):
    from test_browser import frame_moves

    page, failed, _ = _open(browser, f"{site}/03_reverse_mode.html")
    _settled(page)
    player = page.locator(".minilucid-steps").first
    controls = player.locator(".minilucid-controls")
    controls.wait_for(state="visible", timeout=5000)
    controls.get_by_role("button", name="next").click()
    assert player.get_attribute("data-frame") == "1"
    for move, canvases in frame_moves(page):
        assert move <= 1.0 and canvases == 1, (move, canvases)
    page.close()
    assert not failed, failed


# --------------------------------------------------------------------------------------------
# The whole site: every local link resolves, and no page asks for anything but its own files


def _pages(out: Path) -> list:
    return sorted(out.glob("*.html")) + sorted((out / "exercises").glob("*.html"))


def _broken_links(out: Path) -> list:
    """(page, link) for every href or src of every page that names a missing local file, or an
    anchor that the page it points into does not have."""
    import html
    import re
    from urllib.parse import unquote

    anchors = {}

    def ids(page: Path) -> set:
        if page not in anchors:
            text = page.read_text(encoding="utf-8")
            found = re.findall(r'\b(?:id|name)="([^"]+)"', text)
            anchors[page] = {html.unescape(i) for i in found}
        return anchors[page]

    broken = []
    for page in _pages(out):
        for link in re.findall(r'\b(?:href|src)="([^"]*)"', page.read_text(encoding="utf-8")):
            link = html.unescape(link)
            if re.match(r"[a-zA-Z][a-zA-Z0-9+.-]*:|//", link):
                continue  # another scheme: data:, https: (a link, not a request), mailto:
            path, _, anchor = link.partition("#")
            target = (page.parent / unquote(path.split("?")[0])).resolve() if path else page
            if not target.is_file():
                broken.append((page.relative_to(out).as_posix(), link))
            elif (
                anchor and target.suffix == ".html" and not {anchor, unquote(anchor)} & ids(target)
            ):
                broken.append((page.relative_to(out).as_posix(), link))
    return broken


def test_a_missing_file_or_anchor_is_a_broken_link(tmp_path):
    (tmp_path / "a.html").write_text(
        '<a href="b.html#there">b</a> <a href="gone.py">x</a> <a id="here" href="#here">h</a>'
        ' <a href="b.html#nowhere">n</a> <img src="data:image/png;base64,AA"> '
        '<a href="https://example.org/">away</a>'
    )
    (tmp_path / "b.html").write_text('<h1 id="there">b</h1>')
    assert _broken_links(tmp_path) == [("a.html", "gone.py"), ("a.html", "b.html#nowhere")]


def test_every_local_link_of_every_page_resolves(whole_site):
    pages = _pages(whole_site)
    assert len(pages) >= 28  # every chapter, appendix and exercise notebook, and the index
    assert (whole_site / "capstone" / "tiny_gpt.py").is_file()  # chapter 13 links the program
    assert _broken_links(whole_site) == []


def test_no_page_requests_anything_but_its_own_files(browser, whole_site):
    """Opened from disk with every other request refused: nothing is refused, the progress bar
    of chapter 09 is drawn from its stored state, and the math is typeset."""
    asked = []

    def route(r):
        url = r.request.url
        if url.startswith(("file:", "data:", "about:")):
            r.continue_()
        else:
            asked.append(url)
            r.abort()

    context = browser.new_context(viewport={"width": 1200, "height": 900})
    context.route("**/*", route)
    paths = _pages(whole_site)
    # eight pages load and typeset at once: MathJax spends most of a page's time waiting on its
    # own timers, not computing (all 32 pages: 23 s four at a time, 18 s eight at a time)
    for start in range(0, len(paths), 8):
        opened = []
        for path in paths[start : start + 8]:
            page = context.new_page()
            page.goto(path.as_uri(), wait_until="commit")
            opened.append((path, page))
        for path, page in opened:
            page.wait_for_load_state("load")
            if page.evaluate("() => !!window.MathJax"):
                page.wait_for_function(TYPESET.replace(" > 0", " >= 0"), timeout=60_000)
            if path.name == "09_data_and_training.html" and path.parent == whole_site:
                bar = page.locator(".ml-widget progress").first
                assert bar.get_attribute("value") == bar.get_attribute("max") == "30.0"
                assert "training:\u2007100%" in page.locator(".ml-widget").first.inner_text()
            page.close()
    context.close()
    assert len(paths) >= 28 and asked == [], asked
