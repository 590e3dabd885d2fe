"""Reverse-mode automatic differentiation: sort the graph, then sweep it backwards once.

`topological_order` lists the tensors of a graph so that every tensor comes after all the
tensors it was computed from. `backward` walks that list in reverse, seeds the output with the
gradient 1, asks each op for its local derivative times the gradient arriving from above, and
sums what arrives at a tensor that feeds several others (the multivariate chain rule).

Tensors themselves are the keys of `visited` and `grads`: a tensor hashes by identity (see
`Tensor.__hash__`), so two tensors are the same key only when they are the same object.
"""

import numpy as np

from minilucid._arrays import type_name
from minilucid._views import Cast, held_arrays
from minilucid.grad_mode import GRAD_MODE, VERSIONS, enable_grad
from minilucid.ops.alike import plain
from minilucid.ops.broadcast import sum_to, sum_to_shape
from minilucid.ops.inplace import check_saved
from minilucid.tensor import Tensor

ndarray = np.ndarray

FREED = "freed"  # marks an op whose saved arrays were released by a backward pass


def topological_order(root: Tensor, parents_of=None) -> list:
    """Tensors of root's graph, parents before children; iterative post-order depth-first search.

    The walk follows the parents that require grad (those backward sends gradients to), or,
    with `parents_of`, the tensors parents_of(t) lists for each t (the pictures walk this way).
    """
    order = []
    visited = {}  # tensor -> True; a dict keeps the walk deterministic and needs no recursion
    # The stack holds (tensor, expanded) pairs as two lists side by side: a tuple per pair would
    # keep a million objects alive on a million-deep chain, and Python's cyclic collector would
    # rescan them again and again (nearly a third of backward's time there).
    stack, flags = [root], [False]
    while stack:
        node = stack.pop()
        if flags.pop():  # all of node's parents are already in `order`
            order.append(node)
            continue
        if node in visited:
            continue
        visited[node] = True
        if parents_of is not None:
            chosen = parents_of(node)
            if chosen:
                stack.append(node)
                flags.append(True)
                for parent in reversed(chosen):
                    if parent not in visited:
                        stack.append(parent)
                        flags.append(False)
            else:
                order.append(node)
            continue
        ctx = node._ctx
        if ctx is None:  # a leaf has no parents to wait for
            order.append(node)
            continue
        parents = ctx.parents
        if parents is FREED:
            raise RuntimeError(
                f"backward: the graph through {type(ctx).__name__} was already freed by an "
                "earlier backward(). Pass retain_graph=True to the first backward() if you "
                "need to go through the graph twice, or recompute the forward pass."
            )
        stack.append(node)  # again, to be put in `order` once its parents are
        flags.append(True)
        for parent in reversed(parents):
            if isinstance(parent, Tensor) and parent._requires_grad and parent not in visited:
                stack.append(parent)
                flags.append(False)
    return order


def backward(
    root: Tensor,
    gradient=None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    *,
    inputs=None,
    trace=None,
    sort=topological_order,
):
    """Accumulate d(root)/d(leaf) into every leaf's .grad (or return it for `inputs`).

    `sort` is the function that orders the graph (chapter 03 lets you plug in your own).
    `create_graph=True` runs every backward on tensors (chapter 12): the gradients are then
    tensors with a graph of their own, which can be differentiated again; the forward graph is
    kept unless retain_graph=False.
    `trace`, when a list, receives one record per step in the order the sweep takes them:
    (tensor, grad, [(parent, grad sent to it, shape before broadcasting was summed away), ...]),
    one entry per parent; what a constant is sent is recorded as the op returned it.
    """
    if create_graph and not GRAD_MODE.enabled:  # the gradient's graph is recorded in no_grad too
        with enable_grad():
            return backward(
                root, gradient, retain_graph, True, inputs=inputs, trace=trace, sort=sort
            )
    grads = {root: _seed(root, gradient, create_graph)}  # tensor -> sum of gradients sent so far
    keep = retain_graph if retain_graph is not None else create_graph
    wanted = None if inputs is None else {id(t): None for t in inputs}
    now = VERSIONS.clock  # an op recorded before now may have seen values changed in place since
    for node in reversed(sort(root)):
        grad = grads.pop(node, None)
        if grad is None:  # nothing reached it: it feeds the root only through constants
            continue
        if node._hooks is not None:
            grad = _run_hooks(node, grad, create_graph)
        ctx = node._ctx
        if wanted is not None or ctx is None or node._retains_grad:
            _store(node, grad, wanted, create_graph)
        if ctx is None:  # a leaf: nothing further back
            if trace is not None:
                trace.append((node, grad, []))
            continue
        if ctx.version != now:
            check_saved(ctx)
        sent = _on_tensors(ctx, node, grad) if create_graph else ctx.backward(ctx, grad)
        record = _send(ctx, sent, grads, create_graph, trace is not None)
        if trace is not None:
            trace.append((node, grad, record))
        if not keep:  # free what the op saved: the graph can be walked once only
            ctx.parents = FREED
            ctx.saved_tensors = None
            if ctx.cache is not None:
                ctx.cache = None
    return None if wanted is None else tuple(wanted[id(t)] for t in inputs)


def _send(ctx, sent, grads: dict, create_graph: bool, tracing: bool):
    """Add each gradient the op returned to what its parent has received so far (summed back
    to the parent's shape and cast to its dtype); the step's record when tracing."""
    if type(sent) is not tuple:
        sent = (sent,)
    parents = ctx.parents
    if len(sent) != len(parents):
        raise _count_error(ctx, sent)
    record = [] if tracing else None
    for parent, g in zip(parents, sent, strict=False):  # lengths compared above
        # only tensors that require grad take part; constants and None gradients drop out
        if g is None or not isinstance(parent, Tensor) or not parent._requires_grad:
            if tracing:
                record.append((parent, g, None))
            continue
        data = parent.data
        summed_from = None  # the op's gradient shape, if broadcasting had to be summed away
        if create_graph:
            g = _graph_gradient(g, data, ctx)
        # most gradients fit already; `is` spares the slower dtype comparison
        elif type(g) is not ndarray or g.shape != data.shape or g.dtype is not data.dtype:
            summed_from = g.shape if g.shape != data.shape else None
            g = _conform(g, data, type(ctx).__name__)
        previous = grads.get(parent)
        if previous is None:
            grads[parent] = g
        else:
            total = previous + g
            if type(total) is not ndarray and not isinstance(total, Tensor):
                total = np.asarray(total)  # two 0-d arrays add up to a NumPy scalar
            grads[parent] = total
        if tracing:
            record.append((parent, g, summed_from))
    return record


def _store(node: Tensor, grad, wanted, create_graph: bool) -> None:
    """The gradient reaching a leaf (or a tensor that retains it) goes into its .grad; with
    `wanted` (ml.grad), into `wanted` instead, and no .grad changes."""
    if wanted is not None:
        if id(node) in wanted:
            wanted[id(node)] = grad
        return
    # a fresh array: the one arriving may also have been sent to another tensor
    g = grad.data if create_graph else grad  # .grad stays an array; ml.grad gives tensors
    node.grad = g.copy() if node.grad is None else _accumulated(node, g)


def _run_hooks(node: Tensor, grad, create_graph: bool):
    for hook in node._hooks:
        new = hook(grad)
        if new is not None:
            grad = _hooked(new, hook, grad, create_graph)
    return grad


def _seed(root: Tensor, gradient, create_graph: bool):
    """The gradient backward starts from: 1 for a scalar root, else the one given."""
    if not root._requires_grad:
        raise RuntimeError(
            "backward: this tensor does not require grad and has no graph behind it. "
            "Create its inputs with requires_grad=True."
        )
    if create_graph:
        if isinstance(gradient, Tensor):
            return gradient
        return Tensor(_seed(root, gradient, False))
    if gradient is None:
        if root.data.size != 1:
            raise RuntimeError(
                f"backward: the output has shape {root.shape}, not a single number. Reduce it "
                "to a scalar first (e.g. .sum()), or pass gradient= an array of that shape."
            )
        seed = np.array(1, dtype=root.data.dtype)  # d root / d root = 1
        return seed if root.data.ndim == 0 else seed.reshape(root.data.shape)
    seed = np.asarray(plain(gradient), dtype=root.data.dtype)
    if seed.shape != root.shape:
        raise ValueError(
            f"backward: gradient has shape {seed.shape} but the output has shape {root.shape}"
        )
    return seed


def _count_error(ctx, sent: tuple) -> RuntimeError:
    return RuntimeError(
        f"{type(ctx).__name__}.backward returned {len(sent)} gradients for "
        f"{len(ctx.parents)} inputs; return one per input (None for an input without one)"
    )


def _conform(g, data: np.ndarray, op: str) -> np.ndarray:
    """An op's gradient `g`, summed to the shape of its input `data` and cast to its dtype."""
    if g.shape != data.shape:
        g = sum_to_shape(g, data.shape, op)
    if g.dtype != data.dtype:
        g = g.astype(data.dtype)
    if type(g) is not ndarray:
        g = np.asarray(g)
    return g


def grad(
    outputs,
    inputs,
    grad_outputs=None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    *,
    allow_unused: bool = False,
) -> tuple:
    """d(outputs)/d(inputs) returned as a tuple (one per input); no .grad is touched.

    The gradients are arrays; with create_graph=True they are tensors with a graph of their
    own (chapter 12), so grad can be applied to them again: second, third ... derivatives.
    An input that the output does not depend on is an error, or gets None with allow_unused.
    """
    single = isinstance(inputs, Tensor)
    inputs = (inputs,) if single else tuple(inputs)
    for t in inputs:
        if not isinstance(t, Tensor) or not t.requires_grad:
            raise RuntimeError(
                f"grad: every input must require grad; got a {type_name(t)} that does not"
            )
    if isinstance(outputs, Tensor):
        found = backward(outputs, grad_outputs, retain_graph, create_graph, inputs=inputs)
    else:
        found = _summed(outputs, grad_outputs, retain_graph, create_graph, inputs)
    for t, g in zip(inputs, found, strict=True):
        if g is None and not allow_unused:
            raise RuntimeError(
                f"grad: an input of shape {t.shape} is not part of the output's graph: the "
                "output does not depend on it (pass allow_unused=True to get None for it)"
            )
    return found


def _summed(outputs, grad_outputs, retain_graph, create_graph: bool, inputs: tuple) -> tuple:
    """grad of a sequence of outputs, as PyTorch: the sum of each output's gradients."""
    outputs = list(outputs)
    seeds = [None] * len(outputs) if grad_outputs is None else list(grad_outputs)
    if not outputs or len(seeds) != len(outputs):
        raise ValueError(
            f"grad: {len(outputs)} outputs but {len(seeds)} grad_outputs; give one gradient "
            "(or None) per output"
        )
    total = [None] * len(inputs)
    for i, (y, seed) in enumerate(zip(outputs, seeds, strict=True)):
        if not isinstance(y, Tensor):
            raise TypeError(f"grad: output {i} is a {type_name(y)}, not a tensor")
        # the outputs may share a graph: keep it until the last one has gone through it
        keep = retain_graph if i == len(outputs) - 1 else True
        found = backward(y, seed, keep, create_graph, inputs=inputs)
        total = [
            f if t is None else t if f is None else t + f for t, f in zip(total, found, strict=True)
        ]
    return tuple(total)


# --- gradients of gradients (chapter 12) ----------------------------------------------------


def _on_tensors(ctx, node: Tensor, grad: Tensor):
    """ctx.backward run on tensors, recording a graph: `grad` is a tensor, and every saved array
    that is an input's array or the output's is handed over as that tensor (a constant input's
    stays an array).

    Saved arrays of booleans or integers (masks such as relu's `a > 0`, indices) stay constants:
    their derivative is zero wherever it exists. A saved array of floats computed in forward is
    refused: as a constant it would silently give a wrong higher derivative.
    """
    for name, array in held_arrays(ctx):
        if array.dtype.kind in "fc":
            raise _held_error(ctx, name, array)
    saved = getattr(ctx, "saved_tensors", None)
    if saved:
        ctx.saved_tensors = _as_tensors(ctx, node, saved)
    cache = getattr(ctx, "cache", None)
    if cache is not None:  # forward's values are constants: backward recomputes them on tensors
        ctx.cache = None
    replaying, GRAD_MODE.replaying = GRAD_MODE.replaying, type(ctx).__name__
    try:
        with enable_grad():
            return ctx.backward(ctx, grad)
    except TypeError as error:  # typically a NumPy function handed a tensor
        name = type(ctx).__name__
        raise TypeError(
            f"create_graph: {name}.backward failed on tensors ({error}). Under create_graph its "
            "gradient and saved inputs are tensors; write its backward with operations that work "
            "on tensors as well as arrays (operators, methods, minilucid.ops.alike), or "
            "differentiate it once only (create_graph=False)."
        ) from error
    finally:
        GRAD_MODE.replaying = replaying
        if saved:
            ctx.saved_tensors = saved
        if cache is not None:
            ctx.cache = cache


def _held_error(ctx, name: str, array) -> RuntimeError:
    op = type(ctx).__name__
    return RuntimeError(
        f"create_graph: {op} keeps an array of floats of shape {np.shape(array)} as ctx.{name}, "
        f"outside its saved tensors, so under create_graph it would be a constant and the "
        f"higher derivatives through {op} silently wrong. Save only inputs and the output "
        f"(ctx.save_for_backward) and recompute such a value in {op}.backward from them, or "
        "differentiate it once only (create_graph=False)."
    )


def _as_tensors(ctx, node: Tensor, saved: tuple) -> tuple:
    """The saved values with each input's or the output's array replaced by its tensor.

    Arrays are matched to the tensors that were handed to forward, by the identity of the array
    object: `Function.apply` gives two different inputs sharing one array (x and x.detach())
    an array object each, and keeps the arrays forward saw when they are not the inputs' own.
    """
    parents = ctx.parents
    arrays = getattr(ctx, "arrays", None)
    if arrays is None:
        arrays = [p.data if isinstance(p, Tensor) else p for p in parents]
    own = {id(node.data): node}
    for p, a in zip(parents, arrays, strict=True):
        own[id(a)] = p if isinstance(p, Tensor) else a
    out = []
    for s in saved:
        if isinstance(s, ndarray | np.floating):
            match = own.get(id(s))
            if match is not None:
                s = match
            elif s.dtype.kind in "fc":
                raise _intermediate_error(ctx, s)
        out.append(s)
    return tuple(out)


def _intermediate_error(ctx, array) -> RuntimeError:
    name = type(ctx).__name__
    return RuntimeError(
        f"create_graph: {name} saved an array of shape {np.shape(array)} that is neither one "
        f"of its inputs nor its output, so under create_graph it would be a constant and the "
        f"higher derivatives through {name} silently wrong. Save only inputs and the output "
        f"(ctx.save_for_backward), and recompute such a value in {name}.backward from the "
        "saved tensors with operations that work on tensors (as CrossEntropy does), or "
        "differentiate it once only (create_graph=False)."
    )


def _graph_gradient(g, data: np.ndarray, ctx) -> Tensor:
    """An op's gradient under create_graph: it must be a tensor, summed to its input's shape."""
    if not isinstance(g, Tensor):
        name = type(ctx).__name__
        raise RuntimeError(
            f"create_graph: {name}.backward returned a {type_name(g)}, not a tensor, so the "
            f"gradient through {name} would have no graph and its second derivative would be "
            "silently wrong. Write its backward with operations that work on tensors as well as "
            "arrays (operators, methods, or the ops of minilucid.ops), or differentiate it once "
            "only (create_graph=False)."
        )
    if g.shape != data.shape:
        g = sum_to(g, data.shape, type(ctx).__name__)
    if g.dtype != data.dtype:  # a float32 input that met a float64 constant: float32 gradient
        g = Cast.apply(g, dtype=data.dtype)
    return g


def _accumulated(node: Tensor, g: np.ndarray) -> np.ndarray:
    """node.grad + g, refusing a .grad (assigned by hand) of another shape than the tensor's."""
    if node.grad.shape != g.shape:
        raise RuntimeError(
            f"backward: the tensor's .grad has shape {np.shape(node.grad)} but the tensor has "
            f"shape {node.shape}; a gradient must have its tensor's shape (as in PyTorch). "
            "Set .grad = None (or an array of the tensor's shape) before backward."
        )
    total = node.grad + g
    # two 0-d arrays add up to a NumPy scalar; .grad stays an array that can be changed in place
    return total if type(total) is ndarray else np.asarray(total)


def _hooked(new, hook, grad, create_graph: bool):
    """What a hook returned: the gradient's shape, and under create_graph a tensor, or the graph
    of the gradient would be cut there and every higher derivative through it silently wrong."""
    name = getattr(hook, "__qualname__", type(hook).__name__)
    if np.shape(plain(new)) != grad.shape:
        raise RuntimeError(
            f"backward: the hook {name} returned a gradient of shape {np.shape(plain(new))} "
            f"for a gradient of shape {grad.shape}; a hook must keep the gradient's shape "
            "(as in PyTorch)."
        )
    if not create_graph:
        return plain(new)
    if isinstance(new, Tensor):
        return new
    raise TypeError(
        f"create_graph: the hook {name} returned a {type_name(new)}, not a tensor. Under "
        "create_graph a hook receives the gradient as a tensor with a graph; return a tensor "
        "computed from it with tensor operations (e.g. grad * 2, grad.clamp(-1, 1)), or None "
        "to leave it unchanged."
    )
