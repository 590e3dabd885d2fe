"""The JupyterHub configuration for a class (minilucid_course/jupyterhub_config.py) works.

A hub starts with it on loopback (the dummy authenticator and the simple spawner, for a trial),
with a class whose chapter 01 has been released. Through the hub's REST API a student is made
and her server spawned; an nbgitpuller pull brings the course into her home, as the link a
teacher hands out does; her server then opens chapter 00 and lists the released assignment from
the class's shared exchange. `make hub-test` installs what it needs (the `hub` extra and
configurable-http-proxy from npm); without them the test skips and says which is missing.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import urlencode

import pytest
from servers import free_port, stop_group

from minilucid_course import classroom

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "minilucid_course" / "jupyterhub_config.py"
BIN = Path(sys.executable).parent
TOKEN = "minilucid-hub-test-token-0123456789abcdef"


def _needs():
    for module in ("jupyterhub", "nbgitpuller", "nbgrader"):
        pytest.importorskip(module, reason=f"{module} is not installed (make hub-test)")
    if not (BIN / "jupyterhub").exists():
        pytest.skip("no jupyterhub command in the course's environment (make hub-test)")
    if not shutil.which("configurable-http-proxy"):
        pytest.skip("configurable-http-proxy is not installed (npm install -g ...; make hub-test)")
    if not shutil.which("git"):
        pytest.skip("git is missing: nbgitpuller needs it")


def api(base: str, method: str, path: str, body: dict | None = None):
    request = urllib.request.Request(
        base + path,
        method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": f"token {TOKEN}"},
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        text = response.read().decode()
        return response.status, text


def wait_for(what: str, attempt, seconds: float = 120):
    deadline = time.monotonic() + seconds
    last = None
    while time.monotonic() < deadline:
        try:
            found = attempt()
            if found:
                return found
        except (urllib.error.URLError, OSError, ValueError) as error:
            last = error
        time.sleep(1)
    raise AssertionError(f"{what}: not within {seconds} s (last: {last})")


@pytest.fixture
def released_class(tmp_path):
    course = tmp_path / "class"
    notebook = classroom.select(["01"])
    classroom.init_course(course, notebook)
    for step in ("generate_assignment", "release_assignment"):
        done = subprocess.run(
            [str(course / "nbgrader"), step, "ch01"], cwd=course, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr[-2000:]
    return course


def test_a_student_gets_a_server_with_the_course_through_the_hub(tmp_path, released_class):
    _needs()
    started = time.monotonic()
    hub_dir = tmp_path / "hub"
    hub_dir.mkdir()
    port, hub_port, proxy_port = free_port(), free_port(), free_port()
    (hub_dir / "trial_config.py").write_text(
        f"""
c = get_config()
load_subconfig({str(CONFIG)!r})
c.JupyterHub.hub_port = {hub_port}
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{proxy_port}"
c.JupyterHub.services = [{{"name": "trial", "api_token": {TOKEN!r}}}]
c.JupyterHub.load_roles = [{{
    "name": "trial",
    "scopes": ["admin:users", "admin:servers", "access:servers", "read:users"],
    "services": ["trial"],
}}]
""",
        encoding="utf-8",
    )
    env = {
        **os.environ,
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "MINILUCID_CLASS": str(released_class),
        "MINILUCID_HUB_PORT": str(port),
        "MINILUCID_HUB_DIR": str(hub_dir),
        "MINILUCID_HUB_AUTH": "dummy",
        "MINILUCID_HUB_SPAWNER": "simple",
    }
    log = open(hub_dir / "hub.log", "w")
    hub = subprocess.Popen(
        [str(BIN / "jupyterhub"), "-f", str(hub_dir / "trial_config.py")],
        cwd=hub_dir,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its own process group: the proxy and servers end with it
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for("the hub's API", lambda: api(base, "GET", "/hub/api/")[0] == 200)
        api(base, "POST", "/hub/api/users/alice")
        status, _ = api(base, "POST", "/hub/api/users/alice/server")
        assert status in (201, 202)

        def ready():
            user = json.loads(api(base, "GET", "/hub/api/users/alice")[1])
            return user.get("servers", {}).get("", {}).get("ready")

        wait_for("alice's server", ready)

        # the nbgitpuller link's first click: clone the course into alice's home
        branch = subprocess.run(
            ["git", "rev-parse", "--abbrev-ref", "HEAD"],
            cwd=ROOT,
            capture_output=True,
            text=True,
        ).stdout.strip()
        query = urlencode({"repo": f"file://{ROOT}", "branch": branch, "targetpath": "minilucid"})
        status, events = api(base, "GET", f"/user/alice/git-pull/api?{query}")
        assert status == 200 and '"phase": "finished"' in events, events[-2000:]

        status, text = api(
            base, "GET", "/user/alice/api/contents/minilucid/notebooks/00_welcome.ipynb"
        )
        chapter = json.loads(text)
        assert chapter["type"] == "notebook"
        assert chapter["content"]["cells"][0]["source"].startswith("# 00 · Welcome")
        status, page = api(base, "GET", "/user/alice/lab/tree/minilucid/notebooks/00_welcome.ipynb")
        assert status == 200 and "JupyterLab" in page

        # the class's exchange, shared: her Assignments tab lists the released chapter
        status, text = api(base, "GET", "/user/alice/assignments?course_id=minilucid")
        listed = json.loads(text)
        assert listed["success"], listed
        assert {(a["assignment_id"], a["status"]) for a in listed["value"]} == {
            ("ch01", "released")
        }
        api(base, "DELETE", "/hub/api/users/alice/server")
    except BaseException:
        log.flush()
        print((hub_dir / "hub.log").read_text(encoding="utf-8")[-4000:])
        raise
    finally:
        stop_group(hub)
        log.close()
    print(f"the hub test took {time.monotonic() - started:.0f} s")
