"""Pictures of the graph: the forward pass, the backward pass step by step, and gradcheck's verdict.

Each function returns an object that Jupyter displays as SVG (PNG where SVG is not trusted) and
whose text form lists the nodes and edges in order.
"""

from minilucid.viz._check import _checked_ops
from minilucid.viz._graph import _Graph, _run_backward
from minilucid.viz._picture import _backward_picture, _forward_picture
from minilucid.viz._player import _Player


def draw_graph(t, *, max_nodes=60, max_depth=None, group=None, show_values=True, rankdir="LR"):
    """The forward graph that produced `t`: tensors as boxes, ops as ovals, arrows along the data.

    `group(tensor)` may return a cluster label (or None); tensors with one label are boxed together.
    """
    graph = _Graph(t, max_nodes, max_depth, group)
    return _forward_picture(graph, show_values=show_values, rankdir=rankdir)


def draw_backward(t, gradient=None, *, max_nodes=60, max_depth=None, group=None):
    """Run backward from `t` and draw it: each node numbered by the step the engine took it in.

    Behaves like `t.backward(gradient, retain_graph=True)`: leaf .grad accumulates as usual.
    """
    graph = _Graph(t, max_nodes, max_depth, group)
    sweep = _run_backward(graph, gradient, "draw_backward")
    return _backward_picture(graph, sweep)


def step_through(t, gradient=None, *, max_nodes=60, max_depth=None, group=None):
    """The backward pass as frames 0..n, frame k showing steps 1..k, with its own controls.

    Runs backward like draw_backward does. The controls work in a static HTML export too.
    """
    graph = _Graph(t, max_nodes, max_depth, group)
    sweep = _run_backward(graph, gradient, "step_through")
    return _Player(graph, sweep)


def draw_gradcheck(fn, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3):
    """The graph of fn(*inputs), each op coloured by whether its backward is right.

    Each op's backward is checked on that op's own inputs (as float64), so a wrong op lights up.
    """
    out, checks = _checked_ops(fn, inputs, eps, atol, rtol)
    return _forward_picture(_Graph(out), checks=checks)


__all__ = ["draw_backward", "draw_gradcheck", "draw_graph", "step_through"]
