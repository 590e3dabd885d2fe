"""Every graph a chapter draws reads on two screens: the stored pictures, and chapter 13's block.

A picture is shown at most WIDE px wide (a notebook 968 px wide, less its prompt); a wider one is
shown smaller. Shown, it stands at most TALL px high and its smallest type is at least 11 px.
"""

from __future__ import annotations

import base64
import importlib.util
import json
import re
import shutil
import struct
from pathlib import Path

import pytest

import minilucid as ml
from minilucid import nn
from minilucid.viz import draw_graph

ROOT = Path(__file__).resolve().parents[1]
WIDE, TALL, SMALLEST = 940, 2000, 11.0
NOTEBOOKS = sorted([*ROOT.glob("notebooks/*.ipynb"), *ROOT.glob("solutions/*.ipynb")])
# stored before the pictures folded a module's inner results; re-executing the chapter redraws it
STALE: set = set()  # (notebook, cell) pictures known to be out of date
needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is missing")


def svg_size(svg: str) -> tuple:
    """(width px, height px, smallest type px) of an SVG at its own size."""
    width, height = (
        float(v) for v in re.search(r'<svg width="([\d.]+)pt" height="([\d.]+)pt"', svg).groups()
    )
    natural = float(re.search(r'viewBox="[-\d.]+ [-\d.]+ ([\d.]+)', svg).group(1))
    fonts = [float(f) for f in re.findall(r'font-size="([\d.]+)"', svg)]
    smallest = min(fonts) * 4 / 3 * width / natural if fonts else None
    return width * 4 / 3, height * 4 / 3, smallest


def png_size(data: bytes) -> tuple:
    width, height = struct.unpack(">II", data[16:24])
    return float(width), float(height), None


def pictures(notebook: Path) -> list:
    """(cell index, (width, height, smallest type)) of every picture in the stored outputs."""
    found = []
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    for index, cell in enumerate(cells):
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            html = "".join(data.get("text/html", ""))
            svgs = re.findall(r"data:image/svg\+xml;base64,([A-Za-z0-9+/=]+)", html)
            sizes = [svg_size(base64.b64decode(s).decode("utf-8")) for s in svgs]
            if not sizes and "image/svg+xml" in data:
                sizes = [svg_size("".join(data["image/svg+xml"]))]
            if not sizes and "image/png" in data:
                sizes = [png_size(base64.b64decode(data["image/png"]))]
            found += [(index, size) for size in sizes]
    return found


def shown(size: tuple) -> tuple:
    """(height px, smallest type px) as a notebook shows a picture of this size."""
    width, height, smallest = size
    factor = min(1.0, WIDE / width)
    return height * factor, None if smallest is None else smallest * factor


def test_the_notebooks_hold_pictures():
    counts = {nb.relative_to(ROOT).as_posix(): len(pictures(nb)) for nb in NOTEBOOKS}
    assert sum(counts.values()) >= 80 and counts["notebooks/13_attention.ipynb"] >= 4, counts


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_stored_picture_fits_two_screens_with_readable_type(notebook):
    wrong = []
    for index, size in pictures(notebook):
        height, smallest = shown(size)
        if (notebook.relative_to(ROOT).as_posix(), index) in STALE:
            continue
        if height > TALL or (smallest is not None and smallest < SMALLEST):
            wrong.append(
                f"cell {index}: {size[0]:.0f}x{size[1]:.0f} px, shown {height:.0f} px "
                f"tall, type {smallest or 0:.1f} px"
            )
    assert not wrong, f"{notebook.name}: " + "; ".join(wrong)


def test_a_picture_too_tall_or_with_small_type_is_caught():
    assert shown((753, 6035, 14.7))[0] > TALL  # chapter 13's block as it was first stored
    assert shown((1880, 1000, 14.7))[1] < SMALLEST  # twice too wide: type shown at 7.4 px
    assert shown((700, 1900, 14.7)) == (1900, 14.7)


# --------------------------------------------------------------------------------------------
# Chapter 13's picture of one transformer block, drawn as the chapter draws it


def capstone_block():
    """The capstone's pre-norm Block on (1, 3, 8), grouped by its modules' parameters."""
    path = ROOT / "notebooks" / "capstone" / "tiny_gpt.py"
    spec = importlib.util.spec_from_file_location("tiny_gpt_for_viz", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    ml.manual_seed(0)
    block = module.Block(8, 2)
    for name, p in block.named_parameters():
        p.name = name
    x = ml.randn(1, 3, 8, requires_grad=True)
    x.name = "x"
    h = x + block.attention(block.norm1(x))
    out = h + block.mlp(block.norm2(h))
    out.name = "out"
    groups = {
        "norm1 · LayerNorm": [*block.norm1.parameters()],
        "attention · SelfAttention": [*block.attention.parameters()],
        "norm2 · LayerNorm": [*block.norm2.parameters()],
        "mlp · Sequential": [*block.mlp.parameters()],
    }
    return out, groups


def fits(picture) -> tuple:
    width, height, smallest = svg_size(picture.svg())  # the size the picture asks to be shown at
    factor = min(1.0, WIDE / width)
    assert height * factor <= TALL and smallest * factor >= SMALLEST, (width, height, smallest)
    return width, height


@needs_dot
def test_the_transformer_block_fits_two_screens_with_its_modules_framed():
    """As the chapter draws it (whatever ops the package fuses): every op of the modules kept
    open is in its frame, the residual additions stand outside, the rest are boxes."""
    out, groups = capstone_block()
    full = draw_graph(out, groups=groups, show_values=False, max_nodes=200, expand=True)
    assert not full.layout.collapsed and not full.layout.folded
    opened = ["attention · SelfAttention", "mlp · Sequential"]
    for expand in (None, opened):
        picture = draw_graph(out, groups=groups, show_values=False, max_nodes=200, expand=expand)
        fits(picture)
        assert picture.text == full.text  # the listing still has every tensor and op
        clusters = dict(
            re.findall(r'label="([^"]+)" style="rounded,dashed"\n(.*?)\n\t\}', picture.source, re.S)
        )
        boxes = re.findall(r"label=<<b>([^<]+)</b>", picture.source)
        assert sorted([*clusters, *[b for b in boxes if b in groups]]) == sorted(groups)
        for label, body in clusters.items():  # a frame holds every op of its module
            ops = {n.title for n in picture.scene.nodes if n.group == label and n.kind == "op"}
            assert ops and all(f"label=<{op}<br/>" in body or f"label={op} " in body for op in ops)
        outside = picture.source
        for body in clusters.values():
            outside = outside.replace(body, "")
        assert len(re.findall(r"label=Add ", outside)) == 2  # the two residual additions
    assert set(opened) <= set(clusters)  # expand= keeps them open


def test_a_module_listed_by_its_parameters_frames_its_ops():
    ml.manual_seed(0)
    norm, fc = nn.LayerNorm(4), nn.Linear(4, 2)
    x = ml.randn(3, 4, requires_grad=True)
    x.name = "x"
    y = fc(norm(x).relu())
    picture = draw_graph(y, groups={"norm": [*norm.parameters()], "fc": [*fc.parameters()]})
    lines = picture.text.split("clusters:\n")[1].splitlines()
    assert lines[0].startswith("  norm: t1, ") and lines[1].startswith("  fc: ")
    assert "x" not in lines[0].split(": ")[1].split(", ")  # the input belongs to no module
    relu = [line for line in picture.text.splitlines() if "= Relu(" in line][0].split(" = ")[0]
    assert relu.strip() in lines[1]  # consumed by fc's op only: fc's inner result


@needs_dot
def test_repeated_blocks_fold_together_and_expand_opens_one():
    ml.manual_seed(0)
    blocks = [nn.Sequential(nn.Linear(6, 12), nn.GELU(), nn.Linear(12, 6)) for _ in range(6)]
    x = ml.randn(2, 6, requires_grad=True)
    x.name = "x"
    h, groups = x, {}
    for k, block in enumerate(blocks):
        for name, p in block.named_parameters():
            p.name = f"{k}.{name}"
        h = h + block(h)
        groups[f"block {k}"] = [*block.parameters()]
    h.name = "out"
    folded = draw_graph(h, groups=groups, show_values=False, max_nodes=200)
    assert set(folded.layout.collapsed) == set(groups)  # alike: folded together
    fits(folded)
    one = draw_graph(h, groups=groups, show_values=False, max_nodes=200, expand=["block 2"])
    assert set(one.layout.collapsed) == set(groups) - {"block 2"}
    assert ">2.0.weight</font>" in one.source and "1.0.weight" not in one.source.split("\n\t}")[-1]
    fits(one)
