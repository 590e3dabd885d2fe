"""The chapters' tagged cells equal the package source (minilucid_course.sync); it can fail."""

from __future__ import annotations

import shutil

import nbformat
import pytest
from conftest import NOTEBOOKS, make_notebook, notebooks_in, skip_if_none

from minilucid_course import sync

# --------------------------------------------------------------------------------------------
# The real chapters


def test_chapters_are_in_sync_with_the_package():
    paths = notebooks_in(NOTEBOOKS)
    skip_if_none(paths, NOTEBOOKS)
    assert sync.notebook_paths(NOTEBOOKS) == paths
    problems = sync.check(NOTEBOOKS)
    assert not problems, "run `make sync`:\n" + "\n".join(map(str, problems))


def _first_tagged(folder):
    for path in notebooks_in(folder):
        nb = sync.read_notebook(path)
        for index, _cell, names in sync.tagged_cells(nb):
            return path, index, names
    return None


def test_check_fails_on_an_edited_chapter_cell(tmp_path):
    found = _first_tagged(NOTEBOOKS)
    if found is None:
        pytest.skip("no chapter has a tagged cell yet")
    copy = tmp_path / "notebooks"
    shutil.copytree(NOTEBOOKS, copy, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    sync.write(copy)  # start from a synced copy, whatever the state of the real chapters
    clean = {p.name: p.read_bytes() for p in notebooks_in(copy)}
    before = {(p.notebook.name, p.cell) for p in sync.check(copy)}  # only broken tags remain

    path, index, names = found
    target = copy / path.name
    nb = sync.read_notebook(target)
    nb.cells[index].source = nb.cells[index].source.replace("return", "return  -", 1) + "\n# edit"
    sync.write_notebook(nb, target)

    problems = [p for p in sync.check(copy) if (p.notebook.name, p.cell) not in before]
    assert [(p.notebook.name, p.cell, p.objects, p.kind) for p in problems] == [
        (path.name, index, names, "differs")
    ]
    assert sync.main(["--check", "--notebooks", str(copy)]) == 1

    changed, _ = sync.write(copy)
    assert changed == {target: [index]}
    assert {p.name: p.read_bytes() for p in notebooks_in(copy)} == clean  # restored exactly


def test_write_touches_nothing_but_tagged_cell_sources(tmp_path):
    """`make sync` on the chapters: unchanged notebooks stay byte-identical, and in the others
    only the source of rewritten tagged cells differs."""
    paths = notebooks_in(NOTEBOOKS)
    skip_if_none(paths, NOTEBOOKS)
    copy = tmp_path / "notebooks"
    shutil.copytree(NOTEBOOKS, copy, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    changed, _ = sync.write(copy)
    for path in paths:
        target = copy / path.name
        if target not in changed:
            assert target.read_bytes() == path.read_bytes(), path.name
            continue
        before, after = sync.read_notebook(path), sync.read_notebook(target)
        assert len(before.cells) == len(after.cells)
        for index, (old, new) in enumerate(zip(before.cells, after.cells, strict=True)):
            if index in changed[target]:
                old = dict(old, source=new.source)
            assert old == new, f"{path.name} cell {index}"


def test_chapter_notebooks_are_stored_as_jupyter_writes_them():
    """1-space indent, sorted keys, trailing newline: `make sync` must not reformat anything."""
    paths = notebooks_in(NOTEBOOKS)
    skip_if_none(paths, NOTEBOOKS)
    for path in paths:
        text = path.read_text(encoding="utf-8")
        assert text == nbformat.writes(nbformat.reads(text, as_version=4)) + "\n", path.name


# --------------------------------------------------------------------------------------------
# The machinery, on a fake package (always runs)


def test_write_then_check_on_a_fake_package(tmp_path, fake_package):
    nbs = tmp_path / "notebooks"
    make_notebook(
        nbs / "01_a.ipynb",
        [
            ("import fakeml", []),
            ("stale", ["source:fakeml.core.taught_fn"]),
            (
                "stale",
                [
                    "source:fakeml.core.Node.__init__",
                    "source:fakeml.Node.doubled",  # through the package's re-export
                    "source:fakeml.core.Node.zero",
                ],
            ),
            ("stale", ["source:fakeml.core.Mul"]),
        ],
    )
    problems = sync.check(nbs)
    assert [(p.cell, p.kind) for p in problems] == [(2, "differs"), (3, "differs"), (4, "differs")]

    changed, broken = sync.write(nbs)
    assert changed == {nbs / "01_a.ipynb": [2, 3, 4]} and broken == []
    assert sync.check(nbs) == []
    assert sync.main(["--check", "--notebooks", str(nbs)]) == 0

    cells = sync.read_notebook(nbs / "01_a.ipynb").cells
    assert cells[2].source == 'def taught_fn(x):\n    """y = x + 1"""\n    return x + 1'
    # methods are dedented, a property brings its setter, pieces are two blank lines apart
    assert cells[3].source == (
        "def __init__(self, value):\n    self.value = value\n\n\n"
        "@property\ndef doubled(self):\n    return 2 * self.value\n\n\n"
        "@doubled.setter\ndef doubled(self, v):\n    self.value = v / 2\n\n\n"
        "@staticmethod\ndef zero():\n    return Node(0)"
    )
    assert cells[4].source.startswith('class Mul:\n    """z = a * b;')
    assert cells[4].source.endswith("return grad, grad")

    before = (nbs / "01_a.ipynb").read_bytes()
    assert sync.write(nbs) == ({}, [])
    assert (nbs / "01_a.ipynb").read_bytes() == before  # a clean tree stays byte-identical


def test_check_lists_every_edited_cell_and_missing_object(tmp_path, fake_package):
    nbs = tmp_path / "notebooks"
    make_notebook(nbs / "01_a.ipynb", [("x", ["source:fakeml.core.taught_fn"])])
    make_notebook(
        nbs / "02_b.ipynb",
        [
            ("x", ["source:fakeml.core.Node.__add__"]),
            ("x", ["source:fakeml.core.gone"]),
            ("x", ["source:fakeml.nomodule.Thing"]),
            ("x", ["source:fakeml.core.Node.nothing"]),
        ],
    )
    sync.write(nbs)
    nb = sync.read_notebook(nbs / "02_b.ipynb")
    nb.cells[1].source += "\n"  # even a trailing newline counts
    sync.write_notebook(nb, nbs / "02_b.ipynb")

    problems = sync.check(nbs)
    got = [(p.notebook.name, p.cell, p.objects[0], p.kind) for p in problems]
    assert got == [
        ("02_b.ipynb", 1, "fakeml.core.Node.__add__", "differs"),
        ("02_b.ipynb", 2, "fakeml.core.gone", "missing"),
        ("02_b.ipynb", 3, "fakeml.nomodule.Thing", "missing"),
        ("02_b.ipynb", 4, "fakeml.core.Node.nothing", "missing"),
    ]
    assert sync.main(["--check", "--notebooks", str(nbs)]) == 1
    # --write fixes what it can and reports (and keeps) the broken tags
    changed, broken = sync.write(nbs)
    assert list(changed.values()) == [[1]] and len(broken) == 3
    assert sync.main(["--write", "--notebooks", str(nbs)]) == 1


def test_resolve_refuses_what_is_not_code(fake_package):
    with pytest.raises(sync.TagError):
        sync.resolve("fakeml.core")  # a module
    with pytest.raises(sync.TagError):
        sync.resolve("fakeml.core.__doc__")
    with pytest.raises(sync.TagError):
        sync.resolve("fakeml.core.Node.zero.extra")
    assert sync.resolve("fakeml.Node.__add__").canonical == "fakeml.core.Node.__add__"
