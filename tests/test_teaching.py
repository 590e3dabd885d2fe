"""The teacher's kit: generated tables up to date, hosting files present and valid, links right."""

from __future__ import annotations

import importlib
import os
import re
import subprocess
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import nbformat
import pytest

from minilucid_course import hosting, teaching

ROOT = Path(__file__).resolve().parents[1]


def test_the_chapter_tables_are_up_to_date():
    wanted = teaching.generate()
    assert teaching.OUT.exists(), "run `make kit`"
    assert teaching.OUT.read_text(encoding="utf-8") == wanted, (
        "docs/teaching-chapters.md is stale: run `make kit`"
    )


def test_every_chapter_with_exercises_has_its_wrong_answers_listed():
    text = teaching.generate()
    for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        assert f"notebooks/{path.name}" in text
        if (ROOT / "solutions" / path.name).exists():
            section = text.split(f"(../notebooks/{path.name})", 1)[1].split("\n## ", 1)[0]
            assert "**Exercises**" in section, path.name
            assert "| wrong answers the check rejects |" in section


def test_the_tables_go_stale_when_a_chapter_changes(tmp_path):
    """The freshness test can fail: a new objective changes the generated text."""
    source = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))[0]
    nb = nbformat.read(str(source), as_version=4)
    before = teaching.generate(tmp_path)  # an empty folder: the header only
    nbformat.write(nb, str(tmp_path / source.name))
    with_one = teaching.generate(tmp_path)
    assert with_one != before and source.name in with_one
    first = next(c for c in nb.cells if c.cell_type == "markdown")
    first.source = "# 00 · A chapter\n\n**Time:** a whole week."
    nbformat.write(nb, str(tmp_path / source.name))
    assert "a whole week" in teaching.generate(tmp_path)


def test_wrong_answers_are_read_from_mutants_alone(tmp_path):
    test_file = tmp_path / "test_exercises_ch99.py"
    test_file.write_text(
        'EXERCISES = {"sort": ("ex99_1_sort_answer", "ex99_1_sort_check")}\n'
        'MUTANTS = {"sort": {"recursive": "...", "no visited mark": []}}\n'
        "def test_ex2_rejects_a_forgotten_square(): pass\n"
        "def test_ex2_solution_passes(): pass\n"
    )
    assert teaching.wrong_answers(test_file) == {"ex99_1_sort": ["recursive", "no visited mark"]}


# Chapters whose mutation tests are not yet in the one style (EXERCISES, MUTANTS): their rows
# cannot name what the tests reject (03: its Exercise 5 has no MUTANTS entry). Empty this list
# as each chapter's file is converted.
NOT_YET_MUTANTS: set[str] = set()
GRADED = [p.name[:2] for p in sorted((ROOT / "solutions").glob("[0-9][0-9]_*.ipynb"))]


def _mutation_module(number: str):
    """tests/test_exercises_chNN.py, imported as pytest imports it."""
    return importlib.import_module(f"test_exercises_ch{number}")


def _parametrized_pairs(module) -> set[tuple]:
    """Every (exercise, wrong answer) pair a test of the module is parametrized with."""
    pairs = set()
    for value in vars(module).values():
        for mark in getattr(value, "pytestmark", []):
            if mark.name == "parametrize" and len(mark.args) > 1:
                pairs.update(
                    tuple(v)
                    for v in mark.args[1]
                    if isinstance(v, (tuple, list)) and all(isinstance(e, str) for e in v)
                )
    return pairs


@pytest.mark.parametrize(
    "number",
    [
        pytest.param(
            n,
            marks=pytest.mark.xfail(
                n in NOT_YET_MUTANTS, reason="mutation tests not in MUTANTS style", strict=True
            ),
        )
        for n in GRADED
    ],
)
def test_every_exercise_row_names_exactly_the_wrong_answers_its_tests_reject(number):
    """A row lists the MUTANTS labels of its exercise, every one of them is fed to a test that
    requires the check to reject it, and no exercise is left without one."""
    module = _mutation_module(number)
    assert hasattr(module, "EXERCISES") and hasattr(module, "MUTANTS"), (
        f"tests/test_exercises_ch{number}.py has no EXERCISES and MUTANTS (tests/nbharness.py)"
    )
    solution = next((ROOT / "solutions").glob(f"{number}_*.ipynb"))
    checks = {
        meta["grade_id"]
        for cell in nbformat.read(str(solution), as_version=4).cells
        if (meta := cell.metadata.get("nbgrader", {})).get("grade")
        and not meta.get("solution")
        and cell.cell_type == "code"
    }
    named = {check for _, check in module.EXERCISES.values()}
    assert checks <= named, f"checks without an entry in EXERCISES: {sorted(checks - named)}"
    assert set(module.MUTANTS) <= set(module.EXERCISES), "MUTANTS names an unknown exercise"
    fed = _parametrized_pairs(module)
    table = teaching.wrong_answers(ROOT / "tests" / f"test_exercises_ch{number}.py")
    for exercise, (_, check) in module.EXERCISES.items():
        labels = list(module.MUTANTS.get(exercise, {}))
        assert labels, f"{check}: no wrong answer in MUTANTS"
        missing = [label for label in labels if (exercise, label) not in fed]
        assert not missing, f"{check}: MUTANTS entries no test feeds the check: {missing}"
        assert table[teaching._exercise_key(check)] == labels
    section = teaching.chapter_section(next((ROOT / "notebooks").glob(f"{number}_*.ipynb")))
    assert "(no mutation test names one)" not in section


# --------------------------------------------------------------------------------------------
# Hosting: repo2docker / Binder read environment.yml and postBuild


def test_environment_yml_installs_the_engine_and_the_course():
    yaml = pytest.importorskip("yaml")
    env = yaml.safe_load((ROOT / "environment.yml").read_text(encoding="utf-8"))
    assert env["name"] == "minilucid" and "conda-forge" in env["channels"]
    plain = [d for d in env["dependencies"] if isinstance(d, str)]
    names = {re.split(r"[<>=!~\s]", d, maxsplit=1)[0] for d in plain}
    # Graphviz's dot program and its Python package, so no apt.txt is needed
    assert {"python", "numpy", "jupyterlab", "graphviz", "python-graphviz", "pip"} <= names
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    assert "-e ." in pip and "-e ./minilucid_course" in pip
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    conda_name = {"graphviz": "python-graphviz"}
    for requirement in project["project"]["optional-dependencies"]["course"]:
        name = re.split(r"[<>=!~\[\s]", requirement, maxsplit=1)[0]
        name = conda_name.get(name, name)
        assert name in names or any(name in str(p) for p in pip), f"{name} missing"


def test_postbuild_is_a_valid_executable_script():
    post = ROOT / "postBuild"
    assert post.exists() and os.access(post, os.X_OK), "postBuild must be executable"
    assert subprocess.run(["bash", "-n", str(post)]).returncode == 0
    text = post.read_text(encoding="utf-8")
    for needed in ("minilucid_course.jupyter_setup", "minilucid_course.workspace prepare"):
        assert needed in text
    assert not (ROOT / "binder").exists() and not (ROOT / ".binder").exists(), (
        "a binder/ folder makes repo2docker ignore environment.yml and postBuild at the top"
    )


def test_nbgitpuller_and_binder_links_open_each_chapter():
    names = hosting.chapters()
    assert names and names[0].startswith("00_")
    link = hosting.nbgitpuller_link(
        "https://hub.example.org/", "https://github.com/u/minilucid", f"notebooks/{names[0]}"
    )
    url = urlparse(link)
    assert url.path == "/hub/user-redirect/git-pull"
    query = parse_qs(url.query)
    assert query["repo"] == ["https://github.com/u/minilucid"]
    assert query["urlpath"] == [f"lab/tree/minilucid/notebooks/{names[0]}"]
    binder = urlparse(
        hosting.binder_link("https://github.com/u/minilucid.git", "notebooks/x.ipynb")
    )
    assert binder.path == "/v2/gh/u/minilucid/main"
    assert parse_qs(binder.query)["urlpath"] == ["lab/tree/notebooks/x.ipynb"]


# --------------------------------------------------------------------------------------------
# The teacher's commands run in a plain shell: nothing to activate


PLAIN = ("make ", ".venv/bin/", "./nbgrader ", "cd ", "npm install ", "MINILUCID_CLASS=")


def _teacher_commands() -> list[tuple[str, str]]:
    """(where, command) for each shell command the teacher's guide and the README's teaching
    section give (continued lines joined, comments dropped)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    teaching_section = readme.split("## Teaching with it", 1)[1].split("\n## ", 1)[0]
    found = []
    for where, text in (
        ("README.md", teaching_section),
        ("docs/teaching.md", (ROOT / "docs" / "teaching.md").read_text(encoding="utf-8")),
    ):
        for block in re.findall(r"```bash\n(.*?)```", text, re.S):
            for line in block.replace("\\\n", " ").splitlines():
                command = line.split("#", 1)[0].strip()
                if command:
                    found.append((where, command))
    return found


def test_every_teacher_command_runs_without_activating_anything():
    commands = _teacher_commands()
    assert len(commands) >= 10, commands
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    for where, command in commands:
        for part in re.split(r"\s*&&\s*", command):
            assert part.startswith(PLAIN), (
                f"{where}: `{part}` needs an activated environment; write it as a make target, "
                "with .venv/bin/, or with the class folder's ./nbgrader"
            )
            if part.startswith("make "):
                target = part.split()[1]
                assert re.search(rf"^{target}:", makefile, re.M), f"{where}: no `make {target}`"
