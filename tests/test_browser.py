"""The pictures in a real browser: JupyterLab on a fresh (untrusted) clone, and the HTML export.

Headless Chromium from the system, driven by Python playwright. Deselect with `-m "not browser"`;
skips where Chromium, playwright, JupyterLab or git is missing.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook, new_output
from servers import NO_PORT_RETRIES, free_port

import minilucid as ml
from minilucid import viz
from minilucid.viz import draw_backward, draw_graph, step_through

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
CHAPTER = "notebooks/03_reverse_mode.ipynb"
TOKEN = "minilucid-browser-test"
MEASURED = ["01_tensor_as_a_node", "03_reverse_mode", "05_functions_and_numerics"]
# the other chapters with graph pictures, measured as stored (make execute re-runs them)
STORED = [
    "02_local_derivatives",
    "04_shapes",
    "06_graph_hygiene",
    "07_modules_and_parameters",
    "10_convolutions",
    "12_beyond",
]
STEPS = "step_through"  # a notebook of its own, made below
THEMES = ["JupyterLab Light", "JupyterLab Dark"]
SMALLEST = 11.0  # px: the smallest type a picture may show, as displayed
WINDOW = {"width": 1400, "height": 1000}  # the file browser open: an output area of about 960 px
LAPTOP = {"width": 1366, "height": 768}

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
if not Path(CHROMIUM).exists():
    pytest.skip(f"no Chromium at {CHROMIUM}", allow_module_level=True)


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield chromium
        chromium.close()


# --------------------------------------------------------------------------------------------
# The static HTML export: the step-through's controls work with no kernel


def player_notebook_graph():
    x = ml.tensor([1.0, 2.0], requires_grad=True, name="x")
    w = ml.tensor([[0.5, -1.0]], requires_grad=True, name="w")
    return (x * w + x).sum()


def player_notebook() -> nbformat.NotebookNode:
    """A notebook holding a stored step_through output, as an executed chapter would."""
    bundle = step_through(player_notebook_graph())._repr_mimebundle_()
    cell = new_code_cell("step_through(y)", execution_count=1)
    cell.outputs = [new_output("display_data", data=bundle)]
    kernel = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    return new_notebook(cells=[cell], metadata={"kernelspec": kernel})


def test_nbconvert_html_step_through_controls_work(browser, tmp_path):
    from nbconvert import HTMLExporter

    html, _ = HTMLExporter(template_name="lab").from_notebook_node(player_notebook())
    page_path = tmp_path / "steps.html"
    page_path.write_text(html, encoding="utf-8")
    page = browser.new_page()
    page.goto(page_path.as_uri())
    player = page.locator(".minilucid-steps")
    controls = player.locator(".minilucid-controls")
    controls.wait_for(state="visible", timeout=5000)
    visible = player.locator(".minilucid-frame:visible")
    assert player.get_attribute("data-frame") == "0"
    assert visible.count() == 1 and visible.locator("img").is_visible()
    first = visible.locator("img").get_attribute("src")
    controls.get_by_role("button", name="next").click()
    controls.get_by_role("button", name="next").click()
    assert player.get_attribute("data-frame") == "2"
    assert "frame 2: step 2" in controls.locator(".minilucid-where").inner_text()
    assert visible.count() == 1 and visible.locator("img").get_attribute("src") != first
    controls.get_by_role("slider").fill("5")  # the last frame
    assert player.get_attribute("data-frame") == "5"
    controls.get_by_role("button", name="next").click()  # stays on the last frame
    assert player.get_attribute("data-frame") == "5"
    controls.get_by_role("button", name="prev").click()
    assert player.get_attribute("data-frame") == "4"
    page.close()


def test_without_javascript_the_frames_are_details_with_the_last_open(browser, tmp_path):
    from nbconvert import HTMLExporter

    html, _ = HTMLExporter(template_name="lab").from_notebook_node(player_notebook())
    page_path = tmp_path / "steps.html"
    page_path.write_text(html, encoding="utf-8")
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    page.goto(page_path.as_uri())
    assert not page.locator(".minilucid-controls").is_visible()
    frames = page.locator(".minilucid-frame")
    assert frames.count() == 6
    assert frames.nth(5).locator("img").is_visible()
    assert not frames.nth(1).locator("img").is_visible()
    frames.nth(1).locator("summary").click()  # a closed frame opens on a click
    assert frames.nth(1).locator("img").is_visible()
    context.close()


# --------------------------------------------------------------------------------------------
# One layout per step-through: every frame keeps the node places and the canvas

FRAMES = """() => [...document.querySelectorAll(".minilucid-steps")].map((player) =>
  [...player.querySelectorAll(".minilucid-frame img")].map((img) => {
    const src = img.getAttribute("src");
    const body = atob(src.slice(src.indexOf(",") + 1));
    const text = new TextDecoder().decode(Uint8Array.from(body, (c) => c.charCodeAt(0)));
    const svg = new DOMParser().parseFromString(text, "image/svg+xml").documentElement;
    const canvas = ["width", "height", "viewBox"].map((name) => svg.getAttribute(name));
    const holder = document.createElement("div");
    holder.style.cssText = "position:absolute;left:-30000px;top:0";
    const root = holder.appendChild(document.importNode(svg, true));
    document.body.appendChild(holder);
    const view = root.viewBox.baseVal;  // drawn at its natural size: 1 px is 0.75 pt
    root.setAttribute("width", view.width / 0.75); root.setAttribute("height", view.height / 0.75);
    const corner = root.getBoundingClientRect();
    const places = {};
    for (const node of root.querySelectorAll("g.node")) {
      const shape = node.querySelector("polygon, ellipse, path") || node.querySelector("text");
      if (!shape) continue;  // the canvas's invisible corners
      const b = shape.getBoundingClientRect();  // as drawn, after the graph's transform
      places[node.querySelector("title").textContent] = [
        (b.left - corner.left + b.width / 2) * 0.75, (b.top - corner.top + b.height / 2) * 0.75];
    }
    holder.remove();
    return { places, canvas };
  }))"""


def frame_moves(page) -> list[tuple[float, int]]:
    """Per player on the page: (the largest move of a node between frames in pt, canvases)."""
    found = []
    for frames in page.evaluate(FRAMES):
        first = frames[0]["places"]
        moves = [
            max(abs(x - first[key][0]), abs(y - first[key][1]))
            for frame in frames
            for key, (x, y) in frame["places"].items()
        ]
        assert all(frame["places"].keys() == first.keys() for frame in frames)
        found.append((max(moves), len({tuple(frame["canvas"]) for frame in frames})))
    return found


def players_in(path: Path) -> str:
    """The step-through players a notebook stores, as one HTML page."""
    nb = nbformat.read(path, as_version=4)
    html = [
        "".join(out["data"]["text/html"])
        for cell in nb.cells
        for out in cell.get("outputs", [])
        if "minilucid-steps" in "".join(out.get("data", {}).get("text/html", ""))
    ]
    return "<!DOCTYPE html><html><body>" + "\n".join(html) + "</body></html>"


def test_every_frame_of_a_saved_player_keeps_its_node_places_and_canvas(browser, tmp_path):
    from minilucid_course.readme_picture import expression

    page = browser.new_page(viewport=LAPTOP)
    for graph in (expression()[2], player_notebook_graph()):
        page.goto(step_through(graph).save(tmp_path / "steps.html").as_uri())
        [(move, canvases)] = frame_moves(page)
        assert move <= 1.0 and canvases == 1, (move, canvases)
    page.close()


def test_the_stored_chapter_players_keep_their_node_places_and_canvas(browser, tmp_path):
    chapter = ROOT / CHAPTER
    (tmp_path / "stored.html").write_text(players_in(chapter), encoding="utf-8")
    page = browser.new_page()
    page.goto((tmp_path / "stored.html").as_uri())
    found = frame_moves(page)
    assert found, f"{CHAPTER} stores no step-through"
    for move, canvases in found:
        assert move <= 1.0 and canvases == 1, (move, canvases)
    page.close()


def test_on_a_laptop_the_controls_and_the_node_of_each_step_stay_on_screen(browser, tmp_path):
    from minilucid_course.readme_picture import expression

    page = browser.new_page(viewport=LAPTOP)
    player = step_through(expression()[2])
    page.goto(player.save(tmp_path / "steps.html").as_uri())
    controls = page.locator(".minilucid-controls")
    for k in range(1, len(player.steps)):
        controls.get_by_role("button", name="next").click()
        here = page.locator(".minilucid-frame:visible .minilucid-here").bounding_box()
        bar = controls.bounding_box()
        assert 0 <= bar["y"] and bar["y"] + bar["height"] <= LAPTOP["height"], f"frame {k}"
        assert bar["y"] + bar["height"] <= here["y"] + 1, f"frame {k}: the bar hides the node"
        assert here["y"] + here["height"] <= LAPTOP["height"] + 1, f"frame {k}: node below"
    page.close()


# --------------------------------------------------------------------------------------------
# Presentation: a picture fits a 1920x1080 screen's notebook area; a big graph by module

AREA = """([width, height]) => {
  const out = [];
  for (const img of document.querySelectorAll("img")) {
    const box = img.getBoundingClientRect();
    const svg = new DOMParser().parseFromString(
      decodeURIComponent(escape(atob(img.src.slice(img.src.indexOf(",") + 1)))), "image/svg+xml");
    const root = document.importNode(svg.documentElement, true);
    root.setAttribute("width", box.width); root.setAttribute("height", box.height);
    const holder = document.createElement("div");
    holder.style.cssText = "position:absolute;left:-30000px;top:0";
    holder.appendChild(root); document.body.appendChild(holder);
    let font = Infinity;
    for (const t of root.querySelectorAll("text")) {
      const m = t.getScreenCTM();
      font = Math.min(font, parseFloat(getComputedStyle(t).fontSize) * Math.hypot(m.a, m.b));
    }
    holder.remove();
    out.push({ width: box.width, height: box.height, font });
  }
  return out;
}"""


def shown_in(browser, svgs: list[str], width: int, height: int = 900) -> list[dict]:
    """Each SVG as an <img> in an output area `width` px wide (JupyterLab: max-width 100%)."""
    images = "".join(
        f'<img style="max-width:100%" src="data:image/svg+xml;base64,'
        f'{base64.b64encode(svg.encode()).decode()}"><br>'
        for svg in svgs
    )
    page = browser.new_page(viewport={"width": width + 40, "height": height})
    page.set_content(f'<body style="margin:0"><div style="width:{width}px">{images}</div></body>')
    found = page.evaluate(AREA, [width, height])
    page.close()
    return found


def test_presentation_pictures_fit_a_1920x1080_screen_with_type_no_smaller(browser):
    from minilucid_course.readme_picture import expression

    normal = [draw_backward(expression()[2]).svg(), step_through(expression()[2]).frame(3).svg()]
    with viz.options(presentation=True):
        big = [draw_backward(expression()[2]).svg(), step_through(expression()[2]).frame(3).svg()]
    smallest = min(p["font"] for p in shown_in(browser, normal, 960))
    for width in (1800, 1488):  # the notebook area with the file browser closed / open
        for p in shown_in(browser, big, width):
            assert p["width"] <= width and p["height"] <= 900, (width, p)
            assert p["font"] >= smallest, (width, p, smallest)


def test_chapter_10s_cnn_is_at_most_two_screens_tall_at_968_px(browser):
    from test_viz_scene import cnn_graph

    logits, groups = cnn_graph()
    [p] = shown_in(browser, [draw_graph(logits, groups=groups, show_values=False).svg()], 968)
    assert p["height"] <= 2000 and p["font"] >= SMALLEST, p


# --------------------------------------------------------------------------------------------
# JupyterLab on a fresh clone: stored outputs of an untrusted notebook


@pytest.fixture(scope="module")
def served(browser, tmp_path_factory):
    """One JupyterLab for the tests below, on a folder that holds a fresh `git clone` of the
    repository (clone/: stored outputs, untrusted, as a learner's first run shows them) and the
    chapters' trusted copies (work/: the chapters measured by the size rule freshly executed, the
    other chapters with pictures as stored); empty Jupyter dirs of its own. Yields one page of
    it, its file browser open, in which each test opens its notebook, and the clone's folder."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    pytest.importorskip("jupyterlab", reason="JupyterLab is not installed")
    pytest.importorskip("nbclient", reason="nbclient is not installed")
    home = tmp_path_factory.mktemp("lab")
    clone = home / "clone"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
    paths = executed_copies(ROOT / "notebooks", home / "work", ROOT)
    for name in STORED:
        paths.append(Path(shutil.copy(ROOT / "notebooks" / f"{name}.ipynb", home / "work")))
    # a signature is of the notebook's content: the clone's copy of a chapter signed unchanged
    # here would show as trusted too, so the untrusted chapter must not be one of those
    assert Path(CHAPTER).stem not in STORED
    trust(paths, home / "jupyter_data_dir")
    with serve_lab(home, home, ROOT) as url:
        page = lab_page(browser, url)
        yield page, clone
        page.close()


@contextlib.contextmanager
def serve_lab(home: Path, root_dir: Path, pythonpath: Path | None = None):
    """Run JupyterLab on root_dir with Jupyter dirs of its own under home; yield its URL."""
    env = dict(os.environ)
    for var in ("JUPYTER_CONFIG_DIR", "JUPYTER_DATA_DIR", "JUPYTER_RUNTIME_DIR", "IPYTHONDIR"):
        env[var] = str(home / var.lower())  # a fresh signature database: nothing is trusted
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)  # the kernels import this minilucid
    _quiet_config(home / "jupyter_config_dir")
    settings = home / "settings" / "@jupyterlab" / "notebook-extension"
    settings.mkdir(parents=True, exist_ok=True)
    (settings / "tracker.jupyterlab-settings").write_text('{"windowingMode": "none"}')
    port = free_port()
    command = [sys.executable, "-m", "jupyter", "lab", "--no-browser", f"--port={port}"]
    command += [
        NO_PORT_RETRIES,
        "--ServerApp.ip=127.0.0.1",
        "--allow-root",
        f"--ServerApp.token={TOKEN}",
        f"--ServerApp.root_dir={root_dir}",
        f"--LabApp.user_settings_dir={home / 'settings'}",
        f"--LabApp.workspaces_dir={home / 'workspaces'}",
        "--LabApp.news_url=",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
    ]
    log = open(home / "lab.log", "wb")  # noqa: SIM115  (closed below)
    server = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_for(f"{url}/api/status?token={TOKEN}", server, home / "lab.log")
        yield url
    finally:
        _shut_down(url, server)
        log.close()


def _shut_down(url: str, server) -> None:
    """Ask the server to stop its kernels and exit; terminate it if it does not."""
    request = urllib.request.Request(
        f"{url}/api/shutdown", method="POST", headers={"Authorization": f"token {TOKEN}"}
    )
    try:
        urllib.request.urlopen(request, timeout=5).close()
        server.wait(timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        server.terminate()
        try:
            server.wait(timeout=30)  # a loaded machine may take longer to stop the kernels
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def _quiet_config(config: Path) -> None:
    """Leave out the server and lab extensions these tests do not need: a faster start."""
    off = ["formgrader", "validate_assignment", "assignment_list", "course_list"]
    server = {f"nbgrader.server_extensions.{name}": False for name in off}
    server.update(jupyter_lsp=False, jupyter_server_terminals=False, notebook=False)
    (config / "labconfig").mkdir(parents=True, exist_ok=True)
    (config / "jupyter_server_config.json").write_text(
        json.dumps({"ServerApp": {"jpserver_extensions": server}})
    )
    lab = ["@jupyter/nbgrader", "@jupyter-notebook/lab-extension"]
    lab.append("@jupyterlab/apputils-extension:announcements")
    page = {"disabledExtensions": {name: True for name in lab}, "exposeAppInBrowser": True}
    (config / "labconfig" / "page_config.json").write_text(json.dumps(page))


def _wait_for(url: str, server, log: Path, timeout: float = 30) -> None:
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if server.poll() is not None:
            pytest.fail("JupyterLab exited:\n" + log.read_text(errors="replace")[-2000:])
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            time.sleep(0.2)
    pytest.fail("JupyterLab did not start within 30 s")


def open_notebook(page, path: str, viewport=WINDOW):
    """The notebook at path (from the server's root) alone in the page; returns its panel."""
    page.set_viewport_size(viewport)
    page.evaluate(
        """async path => {
            for (const widget of window.jupyterapp.shell.widgets("main")) {
              // closed unsaved: a test's clicks (running a cell, opening a <details>) change it
              if (widget.context) widget.context.model.dirty = false;
            }
            await window.jupyterapp.commands.execute('application:close-all');
            await window.jupyterapp.commands.execute('docmanager:open', {path});
        }""",
        path,
    )
    panel = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden)")
    panel.locator(".jp-Notebook .jp-Cell").first.wait_for(timeout=20000)
    return panel


# the open notebook's kernel has started and waits for code
KERNEL_IDLE = """() => {
  const context = window.jupyterapp.shell.currentWidget?.sessionContext;
  return context?.session?.kernel?.status === "idle";
}"""


def test_jupyterlab_shows_the_stored_backward_picture_of_chapter_03(served):
    page, clone = served
    if not (clone / CHAPTER).exists():
        pytest.skip(f"{CHAPTER} is not committed yet, so a fresh clone does not have it")
    nb = nbformat.read(clone / CHAPTER, as_version=4)
    calls = [
        i
        for i, cell in enumerate(nb.cells)
        if cell.cell_type == "code"
        and "draw_backward(" in cell.source
        and "def draw_backward" not in cell.source
    ]
    assert calls, f"{CHAPTER} has no cell that calls draw_backward"
    stored = {key for out in nb.cells[calls[0]].outputs for key in out.get("data", {})}
    panel = open_notebook(page, f"clone/{CHAPTER}")
    cell = panel.locator(".jp-Notebook .jp-Cell").nth(calls[0])
    image = cell.locator(".jp-OutputArea-output img").first
    image.wait_for(state="visible", timeout=15000)
    assert image.evaluate("img => img.complete && img.naturalWidth > 100")
    assert cell.locator(".jp-OutputArea-output svg").count() == 0  # untrusted: no inline SVG
    if "text/html" in stored:  # the sanitized HTML: the SVG as an image, the values under it
        assert image.get_attribute("src").startswith("data:image/svg+xml;base64,")
        values = cell.locator("details.minilucid-values")
        values.locator("summary").click()
        assert "grad" in values.locator("pre").inner_text()
    else:  # an output stored before the HTML was added: the PNG
        assert image.get_attribute("src").startswith("data:image/png;base64,")


def test_jupyterlab_untrusted_step_through_falls_back_to_frames(served):
    """A stored step-through in an untrusted notebook: sanitized, no script, still readable."""
    page, clone = served
    x = ml.tensor([1.0, 2.0], requires_grad=True, name="x")
    y = (x * x).sum()
    nb = player_notebook()
    nb.cells.append(new_code_cell("draw_backward(y)", execution_count=2))
    nb.cells[-1].outputs = [new_output("display_data", data=draw_backward(y)._repr_mimebundle_())]
    nbformat.write(nb, clone / "viz_check.ipynb")
    panel = open_notebook(page, "clone/viz_check.ipynb")
    frames = panel.locator(".minilucid-frame")
    frames.last.locator("img").wait_for(state="visible", timeout=15000)
    assert frames.count() == 6
    assert not panel.locator(".minilucid-controls").is_visible()  # the script was removed
    frames.first.locator("summary").click()
    assert frames.first.locator("img").is_visible()
    picture = panel.locator(".jp-CodeCell").nth(1).locator(".jp-OutputArea-output")
    assert picture.locator("img").get_attribute("src").startswith("data:image/svg+xml;base64,")
    values = picture.locator("details.minilucid-values")
    assert not values.locator("pre").is_visible()  # folded until asked for
    values.locator("summary").click()
    assert "values [1., 2.]" in values.locator("pre").inner_text()


def test_jupyterlab_live_step_through_player_works(served):
    """Run a step_through cell in JupyterLab: its output is trusted, so the player's script runs."""
    page, clone = served
    source = (
        "import minilucid as ml\n"
        "from minilucid.viz import step_through\n"
        'x = ml.tensor([1.0, 2.0], requires_grad=True, name="x")\n'
        "step_through((x * x).sum())"
    )
    nb = player_notebook()
    nb.cells = [new_code_cell(source)]
    (clone / "live").mkdir(exist_ok=True)  # not the clone's root, whose minilucid may be older
    nbformat.write(nb, clone / "live" / "viz_live.ipynb")
    panel = open_notebook(page, "clone/live/viz_live.ipynb")
    page.wait_for_function(KERNEL_IDLE, timeout=20000)
    panel.locator(".jp-CodeCell .jp-InputArea").first.click()
    page.keyboard.press("Shift+Enter")
    player = panel.locator(".minilucid-steps")
    controls = player.locator(".minilucid-controls")
    controls.wait_for(state="visible", timeout=20000)
    assert player.get_attribute("data-frame") == "0"
    controls.get_by_role("button", name="next").click()
    assert player.get_attribute("data-frame") == "1"
    assert "frame 1: step 1" in controls.locator(".minilucid-where").inner_text()
    assert player.locator(".minilucid-frame:visible img").count() == 1


def test_jupyterlab_player_keeps_its_controls_and_step_on_a_laptop_screen(served):
    """A tall step-through on a 1366x768 screen: the controls follow, each step's node shows."""
    page, clone = served
    source = (
        "from minilucid import viz\n"
        "from minilucid_course.readme_picture import expression\n"
        "viz.step_through(expression()[2])"
    )
    nb = player_notebook()
    nb.cells = [new_code_cell(source)]
    (clone / "live").mkdir(exist_ok=True)
    nbformat.write(nb, clone / "live" / "viz_laptop.ipynb")
    panel = open_notebook(page, "clone/live/viz_laptop.ipynb", LAPTOP)
    page.wait_for_function(KERNEL_IDLE, timeout=20000)
    panel.locator(".jp-CodeCell .jp-InputArea").first.click()
    page.keyboard.press("Shift+Enter")
    controls = panel.locator(".minilucid-controls")
    controls.wait_for(state="visible", timeout=20000)
    tall = panel.locator(".minilucid-frame:visible img").bounding_box()["height"]
    assert tall > 0.6 * LAPTOP["height"]  # a frame nearly a screen tall, or taller
    for k in range(1, 7):
        controls.get_by_role("button", name="next").click()
        page.wait_for_timeout(100)
        bar = controls.bounding_box()
        here = panel.locator(".minilucid-frame:visible .minilucid-here").bounding_box()
        assert 0 <= bar["y"] and bar["y"] + bar["height"] <= LAPTOP["height"], f"frame {k}"
        assert 0 <= here["y"] and here["y"] + here["height"] <= LAPTOP["height"], f"frame {k}"


# --------------------------------------------------------------------------------------------
# The size rule: at a 960-px output width no picture is cut off and its type is >= 11 px tall.
# Copies of the chapters are executed with this checkout's minilucid and trusted, so JupyterLab
# shows their SVG; every picture is measured as displayed, in the light and the dark theme.

SIZES = """async () => {
  const decode = (src) => {
    const body = src.slice(src.indexOf(",") + 1);
    if (!src.slice(0, src.indexOf(",")).endsWith(";base64")) return decodeURIComponent(body);
    return new TextDecoder().decode(Uint8Array.from(atob(body), (c) => c.charCodeAt(0)));
  };
  const clip = (el, box) => {
    let left = Math.max(box.left, 0), right = Math.min(box.right, window.innerWidth);
    for (let a = el.parentElement; a && a !== document.body; a = a.parentElement) {
      const style = getComputedStyle(a);
      if (style.overflowX !== "visible") {
        const r = a.getBoundingClientRect();
        left = Math.max(left, r.left); right = Math.min(right, r.right);
      }
    }
    return Math.max(0, right - left);
  };
  const panel = document.querySelector(".jp-NotebookPanel:not(.lm-mod-hidden)");
  const cells = [...panel.querySelectorAll(".jp-Notebook .jp-Cell")];
  const found = [];
  for (const [index, cell] of cells.entries()) {
    for (const img of cell.querySelectorAll(".jp-OutputArea-output img")) {
      if (!img.complete) await new Promise((r) => { img.onload = r; img.onerror = r; });
      const box = img.getBoundingClientRect();
      if (box.width === 0) continue;  // a closed frame of a step-through
      const area = img.closest(".jp-OutputArea-output").getBoundingClientRect();
      const src = img.getAttribute("src") || "";
      const item = { cell: index, kind: src.slice(5, src.indexOf(";")).split(",")[0],
        width: box.width, height: box.height, visible: clip(img, box), area: area.width,
        font: null, background: null };
      if (src.startsWith("data:image/svg+xml")) {
        const doc = new DOMParser().parseFromString(decode(src), "image/svg+xml");
        const svg = document.importNode(doc.documentElement, true);
        svg.setAttribute("width", box.width); svg.setAttribute("height", box.height);
        const holder = document.createElement("div");
        holder.style.cssText = "position:absolute;left:-30000px;top:0";
        holder.appendChild(svg); document.body.appendChild(holder);
        for (const t of svg.querySelectorAll("text")) {
          const m = t.getScreenCTM();
          const px = parseFloat(getComputedStyle(t).fontSize) * Math.hypot(m.a, m.b);
          if (item.font === null || px < item.font) item.font = px;
        }
        const back = svg.querySelector("g.graph > polygon");
        item.background = back ? back.getAttribute("fill") : null;
        holder.remove();
      }
      found.push(item);
    }
  }
  return found;
}"""

STEP_CELLS = [
    "import numpy as np\nimport minilucid as ml\nfrom minilucid import viz",
    'x = ml.tensor([1.0, 2.0, 3.0], requires_grad=True, name="x")\n'
    'w = ml.tensor(0.5, requires_grad=True, name="w")\n'
    'h = (w * x).tanh()\nh.name = "h"\nloss = (h * h).sum()\nloss.name = "loss"\n'
    "viz.step_through(loss)",
    "with viz.options(presentation=True):  # for a projector: larger type, the whole width\n"
    "    projected = viz.draw_backward((x * x).sum())\n"
    "projected",
]


def executed_copies(source: Path, dest: Path, pythonpath: Path) -> list[Path]:
    """Execute copies of the measured chapters (and a step-through) into dest, trusted there."""
    from nbclient import NotebookClient

    dest.mkdir(parents=True, exist_ok=True)
    notebooks = {name: nbformat.read(source / f"{name}.ipynb", as_version=4) for name in MEASURED}
    notebooks[STEPS] = new_notebook(cells=[new_code_cell(c) for c in STEP_CELLS])
    notebooks[STEPS].metadata["kernelspec"] = player_notebook().metadata["kernelspec"]
    saved = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = str(pythonpath)  # the kernel imports this minilucid

    def run(name: str) -> Path:
        nb = notebooks[name]
        NotebookClient(nb, timeout=300, kernel_name="python3").execute(cwd=str(dest))
        nbformat.write(nb, dest / f"{name}.ipynb")
        return dest / f"{name}.ipynb"

    try:
        with ThreadPoolExecutor(2) as pool:  # two kernels at a time: one per core
            return list(pool.map(run, notebooks))
    finally:
        if saved is None:
            os.environ.pop("PYTHONPATH")
        else:
            os.environ["PYTHONPATH"] = saved


def trust(paths: list[Path], data_dir: Path) -> None:
    """Sign the notebooks in the signature database of a server whose data dir is data_dir."""
    from nbformat.sign import NotebookNotary

    data_dir.mkdir(parents=True, exist_ok=True)
    notary = NotebookNotary(data_dir=str(data_dir))
    for path in paths:
        notary.sign(nbformat.read(path, as_version=4))


def lab_page(browser, url: str):
    """One JupyterLab page, its file browser open, where the notebooks are opened in turn."""
    page = browser.new_page(viewport=WINDOW)
    page.goto(f"{url}/lab/workspaces/measure?reset&token={TOKEN}")
    page.wait_for_function("window.jupyterapp !== undefined", timeout=30000)
    page.evaluate("() => window.jupyterapp.restored")
    return page


# two animation frames: whatever the last change of style asked for has been laid out and drawn
SETTLED = "() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))"


def measure(page, path: str, themes=THEMES) -> dict:
    """Every picture the notebook shows, per theme: its width, the part visible, its smallest
    type in px (as displayed), its background."""
    panel = open_notebook(page, path)
    panel.locator(".jp-OutputArea-output img").first.wait_for(timeout=30000)
    measured = {}
    for theme in themes:
        page.evaluate(
            "theme => window.jupyterapp.commands.execute('apputils:change-theme', {theme})",
            theme,
        )
        page.wait_for_function(
            "theme => document.body.dataset.jpThemeName === theme", arg=theme, timeout=20000
        )
        page.evaluate(SETTLED)  # the theme's style sheet applied and laid out
        measured[theme] = page.evaluate(SIZES)
    return measured


def problems(pictures: list[dict]) -> list[str]:
    """What breaks the size rule, one line per picture."""
    found = []
    for p in pictures:
        where = f"cell {p['cell']} ({p['kind']}, {p['width']:.0f} px wide)"
        if p["visible"] < p["width"] - 1 or p["width"] > p["area"] + 1:
            found.append(f"{where}: cut off, {p['visible']:.0f} px visible of {p['area']:.0f}")
        if p["font"] is not None and p["font"] < SMALLEST:
            found.append(f"{where}: type {p['font']:.1f} px tall, less than {SMALLEST} px")
    return found


# Measured in both themes: a chapter with players and many pictures, and the step-through with
# the presentation picture. The theme changes no picture's size or type (the test checks that
# here), so the other chapters are measured in the light theme only.
BOTH_THEMES = ("03_reverse_mode", STEPS)
SIZE_KEYS = ("cell", "kind", "width", "height", "visible", "area", "font")


@pytest.mark.parametrize("name", [*MEASURED, *STORED, STEPS])
def test_pictures_are_readable_as_displayed(served, name):
    page, _ = served
    measured = measure(page, f"work/{name}.ipynb", THEMES if name in BOTH_THEMES else THEMES[:1])
    if name in BOTH_THEMES:
        light, dark = ([[p[k] for k in SIZE_KEYS] for p in measured[t]] for t in THEMES)
        assert len(light) == len(dark) and all(
            a == b or (isinstance(a, float) and abs(a - b) <= 0.5)
            for one, other in zip(light, dark, strict=True)
            for a, b in zip(one, other, strict=True)
        ), f"{name}: the pictures' sizes differ between the themes:\n{light}\n{dark}"
    if name in ("03_reverse_mode", STEPS):  # freshly executed players: one layout per player
        found = frame_moves(page)
        assert found and all(move <= 1.0 and canvases == 1 for move, canvases in found), found
    for theme, pictures in measured.items():
        svgs = [p for p in pictures if p["kind"] == "image/svg+xml"]
        assert svgs, f"{name}: no SVG picture shown (is the copy trusted?)"
        assert all(p["area"] > 900 for p in pictures), "the output area should be ~960 px wide"
        assert not problems(pictures), f"{name} in {theme}:\n" + "\n".join(problems(pictures))
        for p in svgs:  # a light card that reads on the dark theme too
            assert p["background"] in ("white", "#ffffff"), f"cell {p['cell']}: {p['background']}"
        if name == STEPS:  # the presentation picture fits the screen, its type no smaller
            projected = svgs[-1]
            assert projected["cell"] == len(STEP_CELLS) - 1
            assert projected["height"] <= 900
            assert projected["font"] >= min(p["font"] for p in svgs[:-1])
        if name == "10_convolutions":  # the CNN drawn by module: two screens at most
            assert max(p["height"] for p in svgs) <= 2000


def main(argv: list[str]) -> None:
    """Print the smallest type and the widest picture per chapter, for the code in a checkout.

    python tests/test_browser.py [CHECKOUT]   (default: this one)
    """
    import tempfile

    from playwright.sync_api import sync_playwright

    root = Path(argv[0]).resolve() if argv else ROOT
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        home = Path(tmp)
        paths = executed_copies(root / "notebooks", home / "work", root)
        trust(paths, home / "jupyter_data_dir")
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        with serve_lab(home, home / "work", root) as url:
            page = lab_page(chromium, url)
            for path in paths:
                for theme, pictures in measure(page, path.name).items():
                    fonts = [q["font"] for q in pictures if q["font"] is not None]
                    print(
                        f"{theme:17} {path.stem:26} pictures {len(pictures):2}  "
                        f"smallest type {min(fonts, default=float('nan')):5.1f} px  "
                        f"widest {max((q['width'] for q in pictures), default=0):5.0f} px  "
                        f"tallest {max((q['height'] for q in pictures), default=0):5.0f} px  "
                        f"output area {max((q['area'] for q in pictures), default=0):4.0f} px  "
                        f"problems {len(problems(pictures))}",
                        flush=True,
                    )
                    for line in problems(pictures):
                        print("    " + line)
        chromium.close()


if __name__ == "__main__":
    main(sys.argv[1:])
