"""Pictures of the graph: the forward pass, the backward pass step by step, and gradcheck's verdict.

Each function returns a picture object. Jupyter displays it as an SVG image with every value
and gradient listed, folded, under it (SVG or PNG alone where HTML is not shown); its text
form lists the nodes and edges in order. Outside Jupyter it works like a graphviz graph:
`.source` (DOT), `.save("g.svg" | "g.png" | "g.pdf" | "g.gv")`, `.render(filename,
format=...)`, `.view()`, `.pipe(format)`. Without Graphviz's `dot` each says how to install
it and still writes the DOT. `set_options(presentation=True)` (or `with
options(presentation=True):`) draws larger type fitted to the screen's width and height, for
a projector.
"""

from minilucid.viz._check import _checked_ops
from minilucid.viz._graph import _Graph, _run_backward
from minilucid.viz._options import get_options, options, set_options
from minilucid.viz._picture import _Picture
from minilucid.viz._player import _Player
from minilucid.viz._scene import backward_scene, forward_scene


def draw_graph(
    t, *, max_nodes=60, max_depth=None, groups=None, show_values=True, rankdir="auto", expand=None
):
    """The forward graph that produced `t`: tensors as boxes, ops as ovals, arrows along the data.

    groups draws a labelled frame around each group of tensors (a model clustered by module): a
    dict {label: tensors}, e.g. {"fc1": [*fc1.parameters(), h1], "fc2": [*fc2.parameters(), y]}
    or just {"fc1": [*fc1.parameters()], ...}, or a function tensor -> label or None. Each
    tensor's op goes in its frame, and so do the ops that use a group's parameters and the
    tensors nobody listed whose consumers are all in one frame (a module's inner results).
    rankdir "auto" draws left to right while that fits a notebook's width, else top to bottom.
    A grouped graph more than two screens tall is drawn compact: each frame keeps its ops (an
    inner result is the shape under its op, a parameter one op uses is named in it), then
    modules are folded into one box each naming their parameters, ops and output (alike
    modules together) until it fits; expand=[label, ...] keeps those groups open (True: every
    group drawn in full).
    """
    graph = _Graph(t, max_nodes, max_depth)
    return _Picture(forward_scene(graph, groups, show_values), rankdir, expand=expand)


def draw_backward(t, gradient=None, *, max_nodes=60, max_depth=None, groups=None, rankdir="auto"):
    """Run backward from `t` and draw it: each node numbered by the step the engine took it in.

    Behaves like `t.backward(gradient, retain_graph=True)`: leaf .grad accumulates as usual.
    """
    graph = _Graph(t, max_nodes, max_depth)
    sweep = _run_backward(graph, gradient, "draw_backward")
    return _Picture(backward_scene(graph, sweep, groups), rankdir)


def step_through(t, gradient=None, *, max_nodes=60, max_depth=None, groups=None):
    """The backward pass as frames 0..n, frame k showing steps 1..k, with its own controls.

    Runs backward like draw_backward does. The controls work in a static HTML export too;
    `.frame(k)` is one frame as a picture, `.save("steps.html")` writes the player.
    """
    graph = _Graph(t, max_nodes, max_depth)
    sweep = _run_backward(graph, gradient, "step_through")
    return _Player(backward_scene(graph, sweep, groups))


def draw_gradcheck(fn, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3):
    """The graph of fn(*inputs), each op coloured by whether its backward is right.

    Each op's backward is checked on that op's own inputs (as float64), so a wrong op lights up.
    """
    graph, checks = _checked_ops(fn, inputs, eps, atol, rtol)
    return _Picture(forward_scene(graph, checks=checks))


__all__ = [
    "draw_backward",
    "draw_gradcheck",
    "draw_graph",
    "get_options",
    "options",
    "set_options",
    "step_through",
]
