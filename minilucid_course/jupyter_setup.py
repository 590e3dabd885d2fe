"""JupyterLab as learners get it: nbgrader's teacher tools off (`make teacher` turns them on).

    python -m minilucid_course.jupyter_setup      (run by `make setup`; idempotent)

nbgrader comes with the test tools (exercise generation uses its preprocessors) and registers
its server extensions and its JupyterLab extension in the environment. This writes the
environment's settings to switch them off; `make teacher` switches them back on for its own
JupyterLab (the server extensions on its command line, the JupyterLab extension through
JUPYTER_CONFIG_PATH=minilucid_course/teacher).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

SERVER_EXTENSIONS = (
    "nbgrader.server_extensions.formgrader",
    "nbgrader.server_extensions.validate_assignment",
    "nbgrader.server_extensions.assignment_list",
    "nbgrader.server_extensions.course_list",
)
LAB_EXTENSION = "@jupyter/nbgrader"
TEACHER = Path(__file__).resolve().parent / "teacher"


def _update(path: Path, change) -> bool:
    data = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    before = json.dumps(data, sort_keys=True)
    change(data)
    if json.dumps(data, sort_keys=True) == before:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return True


def learner_settings(prefix: Path | str = sys.prefix) -> list[Path]:
    """Switch nbgrader's extensions off in this environment; return the files changed."""
    etc = Path(prefix) / "etc" / "jupyter"
    changed = []

    def server_off(data):
        extensions = data.setdefault("ServerApp", {}).setdefault("jpserver_extensions", {})
        for name in SERVER_EXTENSIONS:
            extensions[name] = False

    def lab_off(data):
        data.setdefault("disabledExtensions", {})[LAB_EXTENSION] = True

    for path, change in (
        (etc / "jupyter_server_config.d" / "nbgrader.json", server_off),
        (etc / "labconfig" / "page_config.json", lab_off),
    ):
        if _update(path, change):
            changed.append(path)
    return changed


if __name__ == "__main__":
    for path in learner_settings():
        print(f"setup: nbgrader's teacher tools switched off for learners in {path}")
