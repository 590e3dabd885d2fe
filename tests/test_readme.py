"""Every Python block in README.md runs, as a reader would run it.

A fenced block counts as Python when its info string is `python`, `py` or `python3`; each such
block runs, in order, in one namespace (a reader pastes them into one session), in a temporary
folder so that nothing lands in the repository. Nothing is skipped silently: a block in another
language is not run only because its fence names that language, and an untagged block that
parses as Python fails the test (tag it `python` so that it runs, or `text` if it is not code).
"""

from __future__ import annotations

import ast
import re
import textwrap
from pathlib import Path

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"
PYTHON = {"python", "py", "python3"}
# What a README fence may name besides Python; anything else fails, so a new language is a choice.
OTHER = {"bash", "sh", "shell", "console", "text", "yaml", "toml", "ini", ""}

FENCE = re.compile(
    r"^(?P<indent>[ \t]*)```(?P<info>[^`\n]*)\n(?P<body>.*?)^(?P=indent)```[ \t]*$",
    re.DOTALL | re.MULTILINE,
)


def _blocks() -> list[tuple[int, str, str]]:
    """(line number, language, dedented body) for every fenced block of the README."""
    text = README.read_text(encoding="utf-8")
    found = []
    for match in FENCE.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        language = match["info"].strip().split(" ")[0].lower()
        found.append((line, language, textwrap.dedent(match["body"])))
    return found


def _run(source: str, namespace: dict, where: str):
    """Execute `source` like a notebook cell; return the value of a final bare expression."""
    tree = ast.parse(source, filename=where)
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
    exec(compile(tree, where, "exec"), namespace)
    return None if last is None else eval(compile(last, where, "eval"), namespace)


def test_the_readme_has_fenced_blocks_and_the_parser_finds_them():
    text = README.read_text(encoding="utf-8")
    opening_fences = sum(1 for line in text.splitlines() if line.strip().startswith("```")) // 2
    assert len(_blocks()) == opening_fences, "a fence the test does not understand"
    assert any(language in PYTHON for _, language, _ in _blocks())


@pytest.mark.parametrize("line, language, body", _blocks(), ids=lambda v: str(v)[:12])
def test_no_block_is_skipped_silently(line, language, body):
    assert language in PYTHON | OTHER, (
        f"README.md line {line}: a ```{language} block; say whether it is Python (it then runs) "
        "or add the language to OTHER in this test"
    )
    if language == "":
        try:
            ast.parse(body)
        except SyntaxError:
            return
        pytest.fail(f"README.md line {line}: an untagged block that is Python; tag it ```python")


def test_every_python_block_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "__main__"}
    shown = []
    for line, language, body in _blocks():
        if language in PYTHON:
            shown.append(_run(body, namespace, f"README.md line {line}"))
    assert shown, "README.md has no Python block"


def test_the_quick_start_shows_the_backward_picture(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    line, _, body = next(b for b in _blocks() if b[1] in PYTHON)
    namespace: dict = {"__name__": "__main__"}
    picture = _run(body, namespace, f"README.md line {line}")
    assert picture is not None, "the quick start should end with the picture, as Jupyter shows it"
    assert repr(picture).startswith("backward of"), repr(picture)[:200]
    assert namespace["x"].grad is not None and namespace["w"].grad is not None
    bundle = picture._repr_mimebundle_() if hasattr(picture, "_repr_mimebundle_") else {}
    if bundle:  # with Graphviz installed the picture itself renders
        assert "image/svg+xml" in bundle or "image/png" in bundle or "text/plain" in bundle


def _conda_block() -> str:
    text = README.read_text(encoding="utf-8")
    after = text.split("**With conda**", 1)[1]
    return next(body for line, language, body in _blocks() if body in after)


def test_the_conda_route_prepares_what_make_lab_prepares():
    """The conda commands do what `make lab` does before JupyterLab opens (and postBuild too):
    nbgrader's teacher tools off, the working copy in work/, the notebooks trusted."""
    commands = [line.split("#")[0].strip() for line in _conda_block().splitlines()]
    makefile = (README.parent / "Makefile").read_text(encoding="utf-8")
    setup = (README.parent / "minilucid_course" / "setup.sh").read_text(encoding="utf-8")
    postbuild = (README.parent / "postBuild").read_text(encoding="utf-8")
    for step, in_make_lab in (
        ("python -m minilucid_course.jupyter_setup", "minilucid_course.jupyter_setup" in setup),
        ("python -m minilucid_course.workspace prepare", "workspace prepare" in makefile),
        ("jupyter trust notebooks/*.ipynb", '/bin/jupyter" trust' in setup),
    ):
        assert in_make_lab, f"{step}: no longer what make lab does; update the README"
        assert step.split("/*")[0] in postbuild, f"{step}: postBuild no longer does it"
        assert step in commands, f"the conda commands miss: {step}"


def test_the_conda_preparation_runs_in_a_plain_shell():
    """The preparation steps run as written (here with the course's .venv standing in for the
    conda environment: the same packages), from the repository's folder."""
    import os
    import subprocess
    import sys

    bin_dir = os.path.dirname(sys.executable)
    steps = [
        line.split("#")[0].strip()
        for line in _conda_block().splitlines()
        if line.startswith(("python -m", "jupyter trust"))
    ]
    assert len(steps) == 3
    for step in steps:
        done = subprocess.run(
            ["bash", "-c", step],
            cwd=README.parent,
            env={**os.environ, "PATH": bin_dir + os.pathsep + os.environ["PATH"]},
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, f"{step}:\n{done.stderr[-2000:]}"
    assert any((README.parent / "work").glob("*.ipynb"))
