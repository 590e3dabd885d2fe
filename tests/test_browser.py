"""The pictures in a real browser: JupyterLab on a fresh (untrusted) clone, and the HTML export.

Headless Chromium from the system, driven by Python playwright. Deselect with `-m "not browser"`;
skips where Chromium, playwright, JupyterLab or git is missing.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook, new_output

import minilucid as ml
from minilucid.viz import draw_backward, step_through

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


def player_notebook() -> nbformat.NotebookNode:
    """A notebook holding a stored step_through output, as an executed chapter would."""
    x = ml.tensor([1.0, 2.0], requires_grad=True, name="x")
    w = ml.tensor([[0.5, -1.0]], requires_grad=True, name="w")
    bundle = step_through((x * w + x).sum())._repr_mimebundle_()
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
# JupyterLab on a fresh clone: stored outputs of an untrusted notebook


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """JupyterLab serving a fresh `git clone` of the repository, with empty Jupyter dirs."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    pytest.importorskip("jupyterlab", reason="JupyterLab is not installed")
    home = tmp_path_factory.mktemp("lab")
    clone = home / "clone"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
    env = dict(os.environ)
    for var in ("JUPYTER_CONFIG_DIR", "JUPYTER_DATA_DIR", "JUPYTER_RUNTIME_DIR", "IPYTHONDIR"):
        env[var] = str(home / var.lower())  # a fresh signature database: nothing is trusted
    _quiet_config(home / "jupyter_config_dir")
    settings = home / "settings" / "@jupyterlab" / "notebook-extension"
    settings.mkdir(parents=True)
    (settings / "tracker.jupyterlab-settings").write_text('{"windowingMode": "none"}')
    port = free_port()
    command = [sys.executable, "-m", "jupyter", "lab", "--no-browser", f"--port={port}"]
    command += [
        "--ServerApp.ip=127.0.0.1",
        "--allow-root",
        f"--ServerApp.token={TOKEN}",
        f"--ServerApp.root_dir={clone}",
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
        yield url, clone
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
        server.wait(timeout=10)


def _quiet_config(config: Path) -> None:
    """Leave out the server and lab extensions these tests do not need: a faster start."""
    off = ["formgrader", "validate_assignment", "assignment_list", "course_list"]
    server = {f"nbgrader.server_extensions.{name}": False for name in off}
    server.update(jupyter_lsp=False, jupyter_server_terminals=False, notebook=False)
    (config / "labconfig").mkdir(parents=True)
    (config / "jupyter_server_config.json").write_text(
        json.dumps({"ServerApp": {"jpserver_extensions": server}})
    )
    lab = ["@jupyter/nbgrader", "@jupyter-notebook/lab-extension"]
    lab.append("@jupyterlab/apputils-extension:announcements")
    (config / "labconfig" / "page_config.json").write_text(
        json.dumps({"disabledExtensions": {name: True for name in lab}})
    )


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


def open_notebook(browser, url: str, path: str):
    """A new page showing only this notebook (each page has a workspace of its own)."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    workspace = Path(path).stem.replace("_", "-")
    page.goto(f"{url}/lab/workspaces/{workspace}/tree/{path}?reset&token={TOKEN}")
    page.locator(".jp-Notebook .jp-Cell").first.wait_for(timeout=20000)
    return page


def test_jupyterlab_shows_the_stored_backward_picture_of_chapter_03(browser, lab):
    url, clone = lab
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
    page = open_notebook(browser, url, CHAPTER)
    cell = page.locator(".jp-Notebook .jp-Cell").nth(calls[0])
    image = cell.locator(".jp-OutputArea-output img").first
    image.wait_for(state="visible", timeout=15000)
    assert image.get_attribute("src").startswith("data:image/png;base64,")
    assert image.evaluate("img => img.complete && img.naturalWidth > 100")
    assert cell.locator(".jp-OutputArea-output svg").count() == 0  # untrusted: SVG is hidden
    page.close()


def test_jupyterlab_untrusted_step_through_falls_back_to_frames(browser, lab):
    """A stored step-through in an untrusted notebook: sanitized, no script, still readable."""
    url, clone = lab
    x = ml.tensor([1.0, 2.0], requires_grad=True, name="x")
    y = (x * x).sum()
    nb = player_notebook()
    nb.cells.append(new_code_cell("draw_backward(y)", execution_count=2))
    nb.cells[-1].outputs = [new_output("display_data", data=draw_backward(y)._repr_mimebundle_())]
    nbformat.write(nb, clone / "viz_check.ipynb")
    page = open_notebook(browser, url, "viz_check.ipynb")
    frames = page.locator(".minilucid-frame")
    frames.last.locator("img").wait_for(state="visible", timeout=15000)
    assert frames.count() == 6
    assert not page.locator(".minilucid-controls").is_visible()  # the script was removed
    frames.first.locator("summary").click()
    assert frames.first.locator("img").is_visible()
    picture = page.locator(".jp-CodeCell").nth(1).locator(".jp-OutputArea-output img")
    assert picture.get_attribute("src").startswith("data:image/png;base64,")
    page.close()


def test_jupyterlab_live_step_through_player_works(browser, lab):
    """Run a step_through cell in JupyterLab: its output is trusted, so the player's script runs."""
    url, clone = lab
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
    page = open_notebook(browser, url, "live/viz_live.ipynb")
    page.get_by_text("| Idle").wait_for(timeout=20000)  # the kernel is ready
    page.locator(".jp-CodeCell .jp-InputArea").first.click()
    page.keyboard.press("Shift+Enter")
    player = page.locator(".minilucid-steps")
    controls = player.locator(".minilucid-controls")
    controls.wait_for(state="visible", timeout=20000)
    assert player.get_attribute("data-frame") == "0"
    controls.get_by_role("button", name="next").click()
    assert player.get_attribute("data-frame") == "1"
    assert "frame 1: step 1" in controls.locator(".minilucid-where").inner_text()
    assert player.locator(".minilucid-frame:visible img").count() == 1
    page.close()
