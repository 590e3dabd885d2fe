"""`make lab` as a learner meets it: the URL it prints opens chapter 00; no teacher tools, no
solutions in the file browser; the first run makes the working copy in work/. And `make teacher
CLASS=...` as a teacher meets it: Formgrader on that class, releasing through its exchange."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from servers import NO_PORT_RETRIES, free_port, stop_group

ROOT = Path(__file__).resolve().parents[1]


def _serve(*make_args: str):
    """Run `make <make_args>` with a JupyterLab on a free port; yield its URL and port."""
    if not (ROOT / ".venv" / "bin" / "jupyter").exists():
        pytest.skip("no .venv (make setup)")
    port = free_port()
    args = f"--no-browser --port={port} {NO_PORT_RETRIES} --ip=127.0.0.1"
    process = subprocess.Popen(
        ["make", "-s", *make_args, f"LAB_ARGS={args}"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own process group, ended below
    )
    lines, url = [], None
    deadline = time.time() + 300
    try:
        while time.time() < deadline and url is None:
            line = process.stdout.readline()
            if not line and process.poll() is not None:
                break
            lines.append(line)
            found = re.search(rf"(http://127\.0\.0\.1:{port}/\S*token=\S+)", line)
            url = found.group(1) if found else None
        assert url, f"make {make_args[0]} printed no URL:\n" + "".join(lines[-30:])
        yield url, port
    finally:
        stop_group(process)


@pytest.fixture
def lab():
    yield from _serve("lab")


def _get(url: str, opener=None):
    opener = opener or urllib.request.build_opener()
    for _ in range(60):
        try:
            return opener.open(url, timeout=30)
        except urllib.error.HTTPError:
            raise
        except OSError:
            time.sleep(1)
    raise AssertionError(f"no answer from {url}")


def test_lab_url_opens_chapter_00_without_teacher_tools_or_solutions(lab):
    url, port = lab
    token = url.split("token=", 1)[1]
    response = _get(url)
    assert response.geturl().split("?")[0].endswith("/lab/tree/notebooks/00_welcome.ipynb")
    base = f"http://127.0.0.1:{port}"
    with pytest.raises(urllib.error.HTTPError) as info:  # nbgrader's formgrader is off
        _get(f"{base}/formgrader?token={token}")
    assert info.value.code == 404
    listing = json.load(_get(f"{base}/api/contents?token={token}"))
    names = {item["name"] for item in listing["content"]}
    assert {"notebooks", "work"} <= names
    assert not {"solutions", "exercises"} & names
    assert any((ROOT / "work").glob("*.ipynb"))


def test_nbgrader_lab_extension_is_off_for_learners_and_on_for_teachers():
    jupyter = ROOT / ".venv" / "bin" / "jupyter"
    if not jupyter.exists():
        pytest.skip("no .venv (make setup)")

    def status(extra_env: dict) -> str:
        out = subprocess.run(
            [str(jupyter), "labextension", "list"],
            capture_output=True,
            text=True,
            timeout=300,
            env={**os.environ, **extra_env},
        )
        lines = [line for line in (out.stdout + out.stderr).splitlines() if "nbgrader v" in line]
        if not lines:
            pytest.skip("nbgrader's JupyterLab extension is not installed")
        return lines[0]

    assert "disabled" in status({})
    teacher = {"JUPYTER_CONFIG_PATH": str(ROOT / "minilucid_course" / "teacher")}
    assert "enabled" in status(teacher)


@pytest.fixture
def teacher(tmp_path):
    pytest.importorskip("nbgrader")
    from minilucid_course import classroom

    course = tmp_path / "class"
    classroom.init_course(course, classroom.select(["01"]))
    done = subprocess.run(
        [str(course / "nbgrader"), "generate_assignment", "ch01"],
        cwd=course,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    for url, port in _serve("teacher", f"CLASS={course}"):
        yield url, port, course


def _call(url: str, token: str, method: str = "GET"):
    request = urllib.request.Request(
        url,
        method=method,
        headers={"Authorization": f"token {token}"},
        data=b"" if method == "POST" else None,
    )
    with urllib.request.urlopen(request, timeout=120) as response:
        return json.load(response)


def test_make_teacher_opens_formgrader_on_the_class_and_releases_through_its_exchange(teacher):
    url, port, course = teacher
    token = url.split("token=", 1)[1]
    base = f"http://127.0.0.1:{port}"
    browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor())  # keeps the login
    assert _get(url, browser).geturl().endswith("/formgrader/manage_assignments")
    assignments = _call(f"{base}/formgrader/api/assignments", token)
    assert [a["name"] for a in assignments] == ["ch01"], assignments
    released = _call(f"{base}/formgrader/api/assignment/ch01/release", token, "POST")
    assert released["success"], released
    assert (course / "exchange" / "minilucid" / "outbound" / "ch01").is_dir()

    def default(plugin: str, setting: str):
        """The setting's default as this JupyterLab serves it (overrides applied)."""
        schema = _call(f"{base}/lab/api/settings/{plugin}", token)["schema"]
        return schema["properties"][setting]["default"]

    assert default("@jupyter/nbgrader:formgrader", "local_config") is True  # Formgrader (local)
    viewers = default("@jupyterlab/docmanager-extension:plugin", "defaultViewers")
    assert viewers["markdown"] == "Markdown Preview"  # the teacher's guide opens rendered


def _extras() -> dict:
    """pyproject.toml's extras: name -> its requirements."""
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return project["optional-dependencies"]


def test_learners_get_what_learning_needs_and_the_tests_bring_their_tools():
    extras = _extras()
    names = {
        key: {r.split(">")[0].split("=")[0].strip() for r in reqs} for key, reqs in extras.items()
    }
    assert not {"pytest", "playwright", "nbval", "ruff", "nbgrader"} & names["course"]
    assert {"pytest", "playwright", "nbval", "nbgrader"} <= names["test"]
    assert "nbgrader" in names["teacher"] and "jupyterhub" in names["hub"]
    # setup.sh counts the teacher's tools in once the test tools are
    assert set(extras["teacher"]) <= set(extras["test"])

    def extras_of(target: str) -> str:
        shown = subprocess.run(
            ["make", "-n", target], cwd=ROOT, capture_output=True, text=True, timeout=60
        ).stdout
        return re.search(r'EXTRAS="([^"]*)" bash minilucid_course/setup.sh', shown).group(1)

    assert extras_of("lab") == "course"
    assert extras_of("progress") == "course"
    assert extras_of("test") == "course,test"
    assert extras_of("teacher") == "course,teacher"
    assert "test" in extras_of("hub-test").split(",")  # it runs pytest, after `make lab` too


def test_no_jupyter_process_builds_an_iri_grammar_at_start():
    """jsonschema 4.25 and later bring rfc3987-syntax into Jupyter's format checks; it builds a
    grammar when imported, a second in every process that reads a notebook (JupyterLab, every
    nbgrader command, make progress). The course holds jsonschema below 4.25 and setup removes
    the package from an older venv."""
    import importlib.metadata
    import importlib.util

    assert "jsonschema>=4.18,<4.25" in _extras()["course"]
    version = tuple(int(p) for p in importlib.metadata.version("jsonschema").split(".")[:2])
    assert version < (4, 25), version
    assert importlib.util.find_spec("rfc3987_syntax") is None


def test_setup_installs_nothing_when_the_extras_asked_for_are_in():
    if not (ROOT / ".venv" / ".installed").exists():
        pytest.skip("no .venv (make setup)")
    installed = (ROOT / ".venv" / ".installed").read_text(encoding="utf-8").split()
    assert "course" in installed
    done = subprocess.run(
        ["bash", "minilucid_course/setup.sh"],
        cwd=ROOT,
        env={**os.environ, "EXTRAS": "course"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "installing minilucid" not in done.stdout and "setup: ready" in done.stdout
    assert (ROOT / ".venv" / ".installed").read_text(encoding="utf-8").split() == installed


@pytest.fixture
def teacher_guide():
    yield from _serve("teacher")


@pytest.mark.browser
def test_make_teacher_opens_the_teachers_guide_rendered(teacher_guide):
    sync_api = pytest.importorskip("playwright.sync_api")
    if not Path("/usr/bin/chromium").exists():
        pytest.skip("no Chromium at /usr/bin/chromium")
    url, _ = teacher_guide
    _get(url)  # the server answers
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path="/usr/bin/chromium")
        try:
            page = browser.new_page()
            page.goto(url)
            page.wait_for_selector(".jp-RenderedMarkdown h1", timeout=120_000)
            assert page.inner_text(".jp-RenderedMarkdown h1") == "Teaching with minilucid"
            assert page.locator(".jp-FileEditor").count() == 0  # not the Markdown source
        finally:
            browser.close()
