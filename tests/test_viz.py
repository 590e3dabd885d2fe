"""minilucid.viz: exact DOT for small graphs, the engine's step order, budgets, and no `dot`."""

from __future__ import annotations

import base64
import re
import sys

import numpy as np
import pytest

import minilucid as ml
from minilucid.autograd import backward
from minilucid.function import Function
from minilucid.viz import draw_backward, draw_gradcheck, draw_graph, step_through


def head(rankdir: str) -> str:
    return (
        "digraph {\n\tgraph [bgcolor=white fontname=Helvetica fontsize=11 nodesep=0.25 pad=0.1 "
        f"rankdir={rankdir} ranksep=0.35]\n"
        "\tnode [fontname=Helvetica fontsize=11 style=filled]\n"
        "\tedge [arrowsize=0.7 fontname=Helvetica fontsize=10 weight=4]\n"
    )


def small():
    a = ml.tensor([1.0, 2.0], requires_grad=True, name="a")
    b = ml.tensor(3.0, requires_grad=True, name="b")
    return a, b, (a * b).sum()


def test_draw_graph_dot_is_exact():
    *_, y = small()
    leaf = 'fillcolor="#d6efd0" shape=box style="rounded,filled"'
    assert draw_graph(y).source == head("LR") + (
        "\tn0 [label=<<b>a</b><br/>(2,) float32  <i>leaf, requires grad</i><br/>[1., 2.]> "
        f'{leaf} tooltip="a  (2,) float32\n[1., 2.]"]\n'
        "\tn1 [label=<<b>b</b><br/>() float32  <i>leaf, requires grad</i><br/>3.> "
        f'{leaf} tooltip="b  () float32\n3."]\n'
        "\tn2 [label=<<b>t1</b><br/>(2,) float32<br/>[3., 6.]> "
        'fillcolor="#dbe7f6" shape=box style="rounded,filled" '
        'tooltip="t1  (2,) float32\n[3., 6.]"]\n'
        '\top2 [label=Mul fillcolor="#f8dcc6" shape=ellipse]\n'
        "\tn3 [label=<<b>t2</b><br/>() float32  <i>output</i><br/>9.> "
        'fillcolor="#fde7a6" penwidth=2 shape=box style="rounded,filled" '
        'tooltip="t2  () float32\n9."]\n'
        '\top3 [label=Sum fillcolor="#f8dcc6" shape=ellipse]\n'
        "\top2 -> n2\n"
        "\tn0 -> op2\n"
        "\tn1 -> op2\n"
        "\top3 -> n3\n"
        "\tn2 -> op3\n"
        "}\n"
    )


def test_draw_graph_text_lists_nodes_then_ops():
    *_, y = small()
    assert repr(draw_graph(y)) == (
        "graph of t2: 4 tensors, 2 ops\n"
        "tensors:\n"
        "  a   (2,) float32  leaf, requires grad  [1., 2.]\n"
        "  b   () float32  leaf, requires grad  3.\n"
        "  t1  (2,) float32  [3., 6.]\n"
        "  t2  () float32  output  9.\n"
        "ops:\n"
        "  t1 = Mul(a, b)\n"
        "  t2 = Sum(t1)"
    )


def test_draw_graph_shows_constants_grads_and_hides_values_on_request():
    x = ml.tensor([1.0, -1.0], requires_grad=True, name="x")
    y = (x * 2.0).sum()
    y.backward(retain_graph=True)
    picture = draw_graph(y, show_values=False, rankdir="TB")
    assert "rankdir=TB" in picture.source
    assert "c1_1 [label=2.0 shape=plaintext" in picture.source
    assert "grad [2., 2.]" in picture.text
    assert "[1., -1.]" not in picture.text
    assert "t1 = Mul(x, 2.0)" in picture.text


def test_draw_backward_dot_is_exact():
    *_, y = small()
    red, purple, grey = '"#c0392b"', '"#7d3c98"', '"#b8b8b8"'
    step = f"  <font color={red}><b>step {{}}</b></font>"
    grad = f"<font color={red}><b>grad {{}}</b></font>"
    leaf = 'fillcolor="#d6efd0" shape=box style="rounded,filled"'
    inner = 'fillcolor="#dbe7f6" shape=box style="rounded,filled"'
    assert draw_backward(y, rankdir="LR").source == head("LR") + (
        f"\tn0 [label=<<b>a</b>{step.format(4)}<br/>(2,) float32  <i>leaf, requires grad</i>"
        f"<br/>[1., 2.]<br/>{grad.format('[3., 3.]')}> "
        f'{leaf} tooltip="a  (2,) float32\n[1., 2.]\ngrad [3., 3.]"]\n'
        f"\tn1 [label=<<b>b</b>{step.format(3)}<br/>() float32  <i>leaf, requires grad</i>"
        f'<br/>3.<br/>{grad.format("3.")}> {leaf} tooltip="b  () float32\n3.\ngrad 3."]\n'
        f"\tn2 [label=<<b>t1</b>{step.format(2)}<br/>(2,) float32<br/>[3., 6.]"
        f"<br/>{grad.format('[1., 1.]')}> {inner} "
        'tooltip="t1  (2,) float32\n[3., 6.]\ngrad [1., 1.]"]\n'
        '\top2 [label=Mul fillcolor="#f8dcc6" shape=ellipse]\n'
        f"\tn3 [label=<<b>t2</b>{step.format(1)}<br/>() float32  <i>output</i><br/>9.<br/>"
        f'<font color={red}>grad 1. (seed)</font>> fillcolor="#fde7a6" penwidth=2 shape=box '
        'style="rounded,filled" tooltip="t2  () float32\n9.\ngrad 1."]\n'
        '\top3 [label=Sum fillcolor="#f8dcc6" shape=ellipse]\n'
        f"\top2 -> n2 [color={grey}]\n"
        f"\top2 -> n2 [color={red} dir=back style=dashed]\n"
        f"\tn0 -> op2 [color={grey}]\n"
        f'\tn0 -> op2 [label="[3., 3.]" color={red} dir=back fontcolor={red} style=dashed]\n'
        f"\tn1 -> op2 [color={grey}]\n"
        f'\tn1 -> op2 [label="sum over broadcast (2,) -> ()\n3." color={purple} dir=back '
        f"fontcolor={purple} style=bold]\n"
        f"\top3 -> n3 [color={grey}]\n"
        f"\top3 -> n3 [color={red} dir=back style=dashed]\n"
        f"\tn2 -> op3 [color={grey}]\n"
        f'\tn2 -> op3 [label="[1., 1.]" color={red} dir=back fontcolor={red} style=dashed]\n'
        "}\n"
    )


def test_draw_backward_text_and_leaf_grads_accumulate():
    a, b, y = small()
    picture = draw_backward(y)
    assert picture.text == (
        "backward of t2: 4 steps in reverse topological order\n"
        "  step 1  t2  grad 1. (seed)\n"
        "          Sum sends t1 [1., 1.]\n"
        "  step 2  t1  grad [1., 1.]\n"
        "          Mul sends a [3., 3.]\n"
        "          Mul sends b 3.  (sum over broadcast (2,) -> ())\n"
        "  step 3  b  grad 3.\n"
        "  step 4  a  grad [3., 3.]"
    )
    draw_backward(y)  # like t.backward(retain_graph=True): a second call accumulates
    np.testing.assert_array_equal(a.grad, [6.0, 6.0])
    assert b.grad == 6.0


def diamond():
    x = ml.tensor([1.0, 2.0, 3.0], requires_grad=True, name="x")
    h = x * x
    u, v = h.exp(), h * 3.0
    return x, (u + v + x).sum()


def steps_in(text: str) -> dict:
    return {name: int(k) for k, name in re.findall(r"step (\d+)  (\S+)  grad", text)}


def test_step_numbers_are_the_engines_order():
    x, y = diamond()
    picture = draw_backward(y)
    trace = []
    backward(y, retain_graph=True, trace=trace)
    graph_names = steps_in(picture.text)
    assert sorted(graph_names.values()) == list(range(1, len(trace) + 1))
    by_step = {k: name for name, k in graph_names.items()}
    from minilucid.viz._graph import _Graph

    names = _Graph(y)
    assert [by_step[k] for k in range(1, len(trace) + 1)] == [names.name(t) for t, _, _ in trace]
    for name, k in graph_names.items():  # the DOT carries the same numbers
        assert re.search(rf"<b>{name}</b>  <font color=\"#c0392b\"><b>step {k}</b>", picture.source)


def test_a_node_fed_by_several_children_shows_contributions_and_sum():
    x, y = diamond()
    picture = draw_backward(y)
    x_line = next(line for line in picture.text.splitlines() if "  x  grad" in line)
    assert x_line.count("(from ") == 3  # from the add, and twice from x * x
    node = next(line for line in picture.source.splitlines() if "<b>x</b>" in line)
    assert node.count("+ ") == 3 and "<b>sum " in node


def test_draw_backward_on_a_freed_graph_says_what_to_do():
    *_, y = small()
    y.backward()
    with pytest.raises(RuntimeError, match=r"draw_backward\(t\) instead of t.backward\(\)"):
        draw_backward(y)
    assert "freed" in draw_graph(y).text  # drawing the forward graph still works


def test_budget_and_depth_leave_a_summary():
    x = ml.tensor(1.0, requires_grad=True, name="x")
    y = x
    for _ in range(30):
        y = y * 1.5 + x
    picture = draw_graph(y, max_nodes=10)
    assert picture.text.count("\n  t") + picture.text.count("\n  x ") <= 10
    assert "not drawn: " in picture.text and "max_nodes=10" in picture.text
    assert "shape=note" in picture.source  # the op whose input was cut says so
    shallow = draw_graph(y, max_depth=1)
    assert shallow.text.startswith("graph of t2: 3 tensors, 2 ops")  # t2 = Add(t1, x)
    assert "max_depth=1" in shallow.text


def test_a_100000_node_chain_neither_recurses_nor_hangs():
    x = ml.tensor(1.0, requires_grad=True, name="x")
    y = x
    for _ in range(50_000):
        y = y * 1.0 + x  # 100,000 ops
    picture = draw_graph(y)
    assert "of 200001 nodes" in picture.text
    assert draw_backward(y, max_nodes=8).text.count("\n  step ") <= 4


def test_group_clusters_nodes_by_label():
    a = ml.tensor([1.0], requires_grad=True, name="w1")
    b = ml.tensor([2.0], requires_grad=True, name="w2")
    y = (a * 2.0 + b).sum()
    label = {"w1": "layer1", "w2": "layer2"}
    picture = draw_graph(y, groups=lambda t: label.get(t.name))
    assert "subgraph cluster_0 {" in picture.source and "label=layer1" in picture.source
    # the op that uses a group's leaf joins it
    assert picture.text.endswith("clusters:\n  layer1: w1, t1\n  layer2: w2, t2")


def test_mime_bundle_has_html_svg_png_and_text():
    *_, y = small()
    picture = draw_graph(y)
    bundle = picture._repr_mimebundle_()
    assert set(bundle) == {"text/html", "image/svg+xml", "image/png", "text/plain"}
    assert bundle["image/svg+xml"].lstrip().startswith("<?xml")
    assert base64.b64decode(bundle["image/png"]).startswith(b"\x89PNG")
    assert bundle["text/plain"] == picture.text and "0x" not in bundle["text/plain"]
    src = re.search(r'<img src="data:image/svg\+xml;base64,([^"]+)"', bundle["text/html"])
    assert base64.b64decode(src.group(1)).decode() == bundle["image/svg+xml"]  # the same size


def test_the_html_picture_lists_every_value_and_gradient_in_full():
    x = ml.tensor(np.arange(10.0) / 4, requires_grad=True, name="x")
    y = (x * x).sum()
    y.name = "y"
    before = draw_graph(y).html()
    y.backward(retain_graph=True)
    html = draw_graph(y).html()
    listing = re.search(
        r'<details class="minilucid-values"><summary>[^<]*</summary><pre>(.*?)</pre></details>',
        html,
        re.S,
    ).group(1)
    assert "values [0.  , 0.25, 0.5 , 0.75, 1.  , 1.25, 1.5 , 1.75, 2.  , 2.25]" in listing
    assert "grad   [0. , 0.5, 1. , 1.5, 2. , 2.5, 3. , 3.5, 4. , 4.5]" in listing
    assert "grad " not in before  # no gradient before backward
    assert "<script" not in html and "<style" not in html  # survives a sanitizer as it is


def test_save_writes_each_format(tmp_path):
    *_, y = small()
    picture = draw_graph(y)
    assert picture.save(tmp_path / "g.svg").read_text().count("<svg") == 1
    assert picture.save(tmp_path / "g.png").read_bytes().startswith(b"\x89PNG")
    assert picture.save(tmp_path / "g.gv").read_text() == picture.source


def test_without_dot_a_clear_message_and_no_traceback(tmp_path, monkeypatch, capsys):
    from IPython.core.formatters import DisplayFormatter

    monkeypatch.setenv("PATH", str(tmp_path))  # no `dot` anywhere
    monkeypatch.setitem(
        sys.modules["minilucid.viz._picture"]._HINTED, "once", False
    )  # a new session
    *_, y = small()
    for k, picture in enumerate((draw_graph(y), draw_backward(y), step_through(y))):
        data, _ = DisplayFormatter().format(picture)
        assert set(data) == {"text/plain"}
        for command in ("apt-get install", "brew install", "conda install", "winget install"):
            assert (command in data["text/plain"]) == (k == 0)  # the commands once a session
        assert data["text/plain"].startswith(picture.text)
        assert "the listing above says the same" in data["text/plain"]
        assert "`dot` program is not on PATH" in data["text/plain"]
    assert draw_graph(y).source.startswith("digraph {")
    capsys.readouterr()
    written = draw_graph(y).save(tmp_path / "g.png")
    assert written.suffix == ".gv" and written.read_text().startswith("digraph")
    said = capsys.readouterr()
    assert "listing above" not in said.out and len(said.out.splitlines()) == 2  # no listing here
    assert "Traceback" not in said.err


class WrongMul(Function):
    """z = a * b, with a wrong gradient for b"""

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a * b

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        return grad * b, grad * b  # should be grad * a


class Unwritten(Function):
    @staticmethod
    def forward(ctx, a):
        return a * 1.0


def test_draw_gradcheck_lights_up_the_wrong_op():
    x = ml.tensor([1.0, 2.0], dtype=ml.float64, requires_grad=True, name="x")
    w = ml.tensor([[0.5], [-1.0]], dtype=ml.float64, requires_grad=True, name="w")
    picture = draw_gradcheck(lambda x, w: (WrongMul.apply(x, w) + x).sum(dim=0).tanh(), [x, w])
    ops = picture.text.split("ops:\n")[1].splitlines()
    assert ops[0].startswith("  t1 = WrongMul(x, w)  -- bad input 1 entry (0, 0): backward ")
    assert all(line.endswith("-- ok") for line in ops[1:])
    assert "Sum(t2)  -- ok" in picture.text  # Sum's dim=0 was replayed
    bad = re.search(r"op2 \[label=\"WrongMul.*?\]", picture.source, re.S).group()
    assert 'fillcolor="#f1948a"' in bad and "numerical" in bad
    assert x.grad is None and w.grad is None  # no backward pass touched the leaves
    assert WrongMul.__dict__["forward"].__func__.__name__ == "forward"  # restored


def test_draw_gradcheck_passes_a_right_op_on_a_transposed_input():
    # a.T is Fortran-ordered: nudging a flattened copy of it once marked MatMul as wrong here
    rng = np.random.default_rng(0)
    a = ml.tensor(rng.standard_normal((3, 4)), requires_grad=True)
    b = ml.tensor(rng.standard_normal((3, 2)), requires_grad=True)
    picture = draw_gradcheck(lambda a, b: (a.T @ b).sum(), [a, b])
    ops = picture.text.split("ops:\n")[1].splitlines()
    assert [line.split("  -- ")[1] for line in ops] == ["ok", "ok", "ok"], ops


def test_draw_gradcheck_shows_an_unwritten_backward():
    x = ml.tensor([1.0], dtype=ml.float64, requires_grad=True)
    picture = draw_gradcheck(lambda x: Unwritten.apply(x).sum(), [x])
    assert "-- error backward raised NotImplementedError" in picture.text
    assert Unwritten.__dict__["forward"].__func__.__name__ == "forward"
    assert (
        "forward" not in ml.ops.reduce.Sum.__dict__
        or ml.ops.reduce.Sum.forward.__name__ == "forward"
    )


def test_inputs_without_grad_get_no_gradient_edge_and_gradient_is_passed_on():
    c = ml.tensor([1.0, 1.0], name="c")  # a constant tensor: no grad
    x = ml.tensor([2.0, 3.0], requires_grad=True, name="x")
    y = x * c + x
    picture = draw_backward(y, np.array([1.0, 0.5], dtype=np.float32))
    assert "Mul sends c" not in picture.text and "Mul sends x [1. , 0.5]" in picture.text
    assert "step 1  t2  grad [1. , 0.5] (seed)" in picture.text
    c_node = re.search(r"(n\d+) \[label=<<b>c</b>", picture.source).group(1)
    assert not re.search(rf"{c_node} -> op\d \[label", picture.source)  # no gradient edge
    assert (
        draw_graph(c).text
        == "graph of c: 1 tensors, 0 ops\ntensors:\n  c  (2,) float32  output, leaf  [1., 1.]"
    )


def test_a_constant_before_the_input_does_not_shift_the_gradient_edges():
    c = ml.tensor([1.0, 1.0], name="c")  # first parent, no grad: x's gradient is the second
    x = ml.tensor([2.0, 3.0], requires_grad=True, name="x")
    picture = draw_backward(c * x, np.array([1.0, 0.5], dtype=np.float32))
    x_node = re.search(r"(n\d+) \[label=<<b>x</b>", picture.source).group(1)
    c_node = re.search(r"(n\d+) \[label=<<b>c</b>", picture.source).group(1)
    assert re.search(rf'{x_node} -> op\d+ \[label="\[1\. , 0\.5\]"', picture.source)
    assert not re.search(rf"{c_node} -> op\d+ \[label", picture.source)
    assert "Mul sends x [1. , 0.5]" in picture.text


def test_draw_graph_needs_a_tensor():
    with pytest.raises(TypeError, match="viz: expected a Tensor"):
        draw_graph([1.0, 2.0])


def test_a_hook_that_changes_the_gradient_is_shown_not_hidden_in_the_sum():
    w = ml.tensor([1.0, 2.0], requires_grad=True, name="w")
    h = w * 10.0
    h.name = "h"
    h.register_hook(lambda g: g / np.linalg.norm(g))
    picture = draw_backward((h * h).sum())
    line = next(line for line in picture.text.splitlines() if "step 3" in line)
    assert "made by its hooks from [20., 40.]" in line
    assert "grad [0.4472, 0.8944]" in line
    assert "after hooks [0.4472, 0.8944]" in picture.source


def test_a_target_array_is_shown_as_what_it_is():
    import minilucid.nn.functional as F

    logits = ml.tensor(np.zeros((32, 3)), requires_grad=True, name="logits")
    targets = ml.tensor(np.arange(32) % 3)
    picture = draw_graph(F.cross_entropy(logits, targets))
    assert "CrossEntropy(logits, int64 (32,) targets)" in picture.text
    assert 'label="int64 (32,) targets"' in picture.source and "min 0, max 2" not in picture.source
    assert "Mul(logits, float64 (32, 3) array)" in draw_graph(logits * np.ones((32, 3))).text
    assert (
        "Mul(t1, [1., 2.])" in draw_graph(logits[:, :2] * np.array([1.0, 2.0])).text
    )  # few: values


def test_a_detach_shows_where_the_graph_was_cut():
    x = ml.tensor([1.0, 2.0, 4.0], name="x")
    w = ml.tensor(2.0, requires_grad=True, name="w")
    h = x * w
    h.name = "h"
    target = h.detach()
    target.name = "target"
    loss = ((h - target) ** 2 * w).sum()
    picture = draw_graph(loss)
    cuts = [e for e in picture.scene.edges if e.kind == "detach"]
    names = {n.key: n.title for n in picture.scene.nodes}
    assert [(names[e.tail], names[e.head]) for e in cuts] == [("h", "target")]
    assert re.search(r'n\d+ -> n\d+ \[label="detach\(\)" arrowhead=tee', picture.source)
    assert picture.text.endswith("cuts (no gradient flows back):\n  target = h.detach()")
    assert "detach" in draw_backward(loss).source
    copy = ml.tensor(h.data.copy(), name="copy")  # equal values, its own array: no cut
    assert not [e for e in draw_graph((h * copy).sum()).scene.edges if e.kind == "detach"]
    shared = ml.Tensor(h.data, name="shared")  # the same array, but no detach(): no cut
    assert not [e for e in draw_graph((h * shared).sum()).scene.edges if e.kind == "detach"]


def cuts_in(picture) -> list:
    """(from, to, words) of each cut a picture draws."""
    names = {n.key: n.title for n in picture.scene.nodes}
    edges = picture.scene.edges
    return [(names[e.tail], names[e.head], e.label) for e in edges if e.kind == "detach"]


def test_the_cut_shows_when_the_detached_tensor_is_used_through_more_ops():
    x = ml.tensor([1.0, 2.0, 4.0], name="x")
    w = ml.tensor(2.0, requires_grad=True, name="w")
    h = x * w
    h.name = "h"
    target = h.detach().max()  # a leaf made from the detached tensor, which is not drawn
    target.name = "target"
    loss = ((h - target) ** 2).sum()
    picture = draw_graph(loss)
    assert cuts_in(picture) == [("h", "target", "from detach()")]
    assert 'label="from detach()" arrowhead=tee' in picture.source
    assert picture.text.endswith(
        "cuts (no gradient flows back):\n  target computed from h.detach()"
    )
    assert "target computed from h.detach()" in draw_backward(loss).text
    assert target.is_leaf and not target.requires_grad  # the record is no part of the graph
    assert not [e for e in draw_graph((h * h).sum()).scene.edges if e.kind == "detach"]


def test_a_value_made_under_no_grad_shows_where_the_graph_stopped():
    w = ml.tensor(2.0, requires_grad=True, name="w")
    h = ml.tensor([1.0, 2.0, 4.0], name="x") * w
    h.name = "h"
    with ml.no_grad():
        scale = h.abs().max()  # a value of h, computed without a graph
    scale.name = "scale"
    loss = (h / scale).sum()
    picture = draw_graph(loss)
    assert cuts_in(picture) == [("h", "scale", "no_grad")]
    assert "label=no_grad arrowhead=tee" in picture.source
    assert picture.text.endswith(
        "cuts (no gradient flows back):\n  scale computed from h under no_grad"
    )
    assert scale.is_leaf and not scale.requires_grad
    with ml.no_grad():
        plain = ml.tensor([1.0, 2.0]) * 3.0  # nothing needed grad: nothing was cut
    assert plain._cut is None
    with ml.no_grad():
        w -= 0.1  # an update in place keeps no note: w is not cut from itself
    assert w._cut is None


def test_detach_keeps_its_source_only_weakly():
    import gc

    x = ml.tensor(np.ones(1000), requires_grad=True)
    h = (x * 2).exp()
    d = h.detach()
    kept = d.max()
    assert d._cut() is h and kept._cut() is h
    del h
    gc.collect()
    assert d._cut() is None and kept._cut() is None  # the graph behind h is gone
    assert draw_graph(kept * x).text.count("detach") == 0
