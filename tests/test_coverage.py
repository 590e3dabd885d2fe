"""Every public object of minilucid is shown in exactly one chapter, and coverage can tell."""

from __future__ import annotations

from conftest import NOTEBOOKS, make_notebook, notebooks_in, skip_if_none

from minilucid_course import sync


def test_every_public_object_is_taught_exactly_once():
    skip_if_none(notebooks_in(NOTEBOOKS), NOTEBOOKS)
    report = sync.coverage("minilucid", NOTEBOOKS)
    lines = [f"untaught: {name}" for name in report.untaught]
    lines += [f"shown twice: {n}: {'; '.join(w)}" for n, w in report.shown_more_than_once.items()]
    lines += [str(p) for p in report.broken_tags]
    assert report.ok, "\n".join(lines)


def test_public_objects_of_minilucid_leave_private_things_out():
    objects = sync.public_objects("minilucid")
    for name in objects:
        parts = name.split(".")
        assert parts[0] == "minilucid"
        for part in parts[:-1]:
            assert not part.startswith("_"), name  # no private module or class
        last = parts[-1]
        assert not last.startswith("_") or (last.startswith("__") and last.endswith("__")), name
    assert not any(name.startswith("minilucid._checks") for name in objects)


# --------------------------------------------------------------------------------------------
# The machinery, on a fake package (always runs)


def test_public_objects_of_a_fake_package(fake_package):
    objects = sync.public_objects("fakeml")
    assert sorted(objects) == [
        "fakeml.core.Mul",
        "fakeml.core.Mul.backward",
        "fakeml.core.Mul.forward",
        "fakeml.core.Node",
        "fakeml.core.Node.__add__",  # operator dunders count; the alias __radd__ does not
        "fakeml.core.Node.__init__",
        "fakeml.core.Node.doubled",
        "fakeml.core.Node.zero",
        "fakeml.core.taught_fn",
        "fakeml.core.untaught_fn",
        "fakeml.ops.square",  # re-exported Mul and Node belong to fakeml.core only
    ]
    assert objects["fakeml.core.Node"].kind == "class"
    assert objects["fakeml.core.Node.zero"].kind == "method"


def test_an_untaught_function_is_listed(tmp_path, fake_package):
    nbs = tmp_path / "notebooks"
    make_notebook(
        nbs / "01_a.ipynb",
        [
            ("x", ["source:fakeml.core.taught_fn", "source:fakeml.ops.square"]),
            ("x", ["source:fakeml.core.Mul"]),  # a whole class covers its methods
        ],
    )
    make_notebook(
        nbs / "02_b.ipynb",
        [
            ("x", ["source:fakeml.core.Node.__init__", "source:fakeml.core.Node.__add__"]),
            ("x", ["source:fakeml.core.Node.doubled"]),
        ],
    )
    sync.write(nbs)
    report = sync.coverage("fakeml", nbs)
    assert report.untaught == [
        "fakeml.core.Node",
        "fakeml.core.Node.zero",
        "fakeml.core.untaught_fn",
    ]
    assert report.shown_more_than_once == {} and report.broken_tags == []
    assert sync.main(["--coverage", "--package", "fakeml", "--notebooks", str(nbs)]) == 1


def test_a_class_shown_method_by_method_counts_as_taught(tmp_path, fake_package):
    nbs = tmp_path / "notebooks"
    make_notebook(
        nbs / "01_a.ipynb",
        [
            ("x", ["source:fakeml.core.taught_fn", "source:fakeml.core.untaught_fn"]),
            ("x", ["source:fakeml.ops.square", "source:fakeml.core.Mul"]),
            ("x", ["source:fakeml.core.Node.__init__", "source:fakeml.core.Node.__add__"]),
        ],
    )
    make_notebook(
        nbs / "02_b.ipynb", [("x", ["source:fakeml.core.Node.doubled", "source:fakeml.Node.zero"])]
    )
    report = sync.coverage("fakeml", nbs)
    assert report.ok, report
    assert sync.main(["--coverage", "--package", "fakeml", "--notebooks", str(nbs)]) == 0


def test_an_object_shown_in_two_chapters_is_listed(tmp_path, fake_package):
    nbs = tmp_path / "notebooks"
    make_notebook(nbs / "01_a.ipynb", [("x", ["source:fakeml.core.Node"])])
    make_notebook(
        nbs / "02_b.ipynb",
        [("x", ["source:fakeml.core.Node.zero"]), ("x", ["source:fakeml.Node.zero"])],
    )
    report = sync.coverage("fakeml", nbs)
    assert list(report.shown_more_than_once) == ["fakeml.core.Node.zero"]
    places = report.shown_more_than_once["fakeml.core.Node.zero"]
    assert [p.split(" cell")[0] for p in places] == ["01_a", "02_b", "02_b"]


def test_find_untaught_on_an_injected_list():
    objects = {
        "pkg.m.f": sync.PublicObject("pkg.m.f", "function"),
        "pkg.m.C": sync.PublicObject("pkg.m.C", "class", ("pkg.m.C.a", "pkg.m.C.b")),
        "pkg.m.C.a": sync.PublicObject("pkg.m.C.a", "method"),
        "pkg.m.C.b": sync.PublicObject("pkg.m.C.b", "method"),
        "pkg.m.Empty": sync.PublicObject("pkg.m.Empty", "class"),
    }
    assert sync.find_untaught(objects, {}) == sorted(objects)
    places = {"pkg.m.C.a": ["01 cell 1"], "pkg.m.C.b": ["02 cell 3"]}
    assert sync.find_untaught(objects, places) == ["pkg.m.Empty", "pkg.m.f"]
