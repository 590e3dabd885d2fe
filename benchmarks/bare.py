"""minilucid's engine stripped to the bone: a yardstick for the tiny and deep benchmarks.

A node per op, holding its array, its parents and what backward needs; backward sorts the graph
(iterative post-order depth-first search) and sweeps it once, summing gradients in a dict - the
same shape as minilucid's engine, with everything else taken out: no op objects or contexts
(an op is a small integer), no broadcasting or dtype handling, no hooks, no grad mode, no
checks and no error messages, four ops only. What minilucid costs above this engine is the
price of being a library; what this engine costs above NumPy by hand is the price of recording
a graph this way in Python.
"""

from __future__ import annotations

import numpy as np

MUL, ADD, TANH, EXP = range(4)


class Node:
    __slots__ = ("data", "grad", "op", "parents", "saved", "requires_grad")

    def __init__(self, data, op=None, parents=(), saved=None, requires_grad=False):
        self.data = data
        self.grad = None
        self.op = op
        self.parents = parents
        self.saved = saved
        self.requires_grad = requires_grad

    def __mul__(self, other):
        return Node(self.data * other.data, MUL, (self, other), None, True)

    def __add__(self, other):
        return Node(self.data + other.data, ADD, (self, other), None, True)

    def tanh(self):
        out = np.tanh(self.data)
        return Node(out, TANH, (self,), out, True)

    def exp(self):
        out = np.exp(self.data)
        return Node(out, EXP, (self,), out, True)

    def backward(self):
        grads = {self: np.ones_like(self.data)}
        for node in reversed(_order(self)):
            grad = grads.pop(node)
            if node.op is None:
                node.grad = grad.copy() if node.grad is None else node.grad + grad
                continue
            for parent, g in zip(node.parents, _local(node, grad), strict=True):
                if parent.requires_grad:
                    previous = grads.get(parent)
                    grads[parent] = g if previous is None else previous + g


def _local(node: Node, grad):
    """The gradients node's op sends to its parents."""
    op, parents = node.op, node.parents
    if op == MUL:
        return grad * parents[1].data, grad * parents[0].data
    if op == ADD:
        return grad, grad
    if op == TANH:
        return (grad * (1 - node.saved * node.saved),)
    return (grad * node.saved,)


def _order(root: Node) -> list:
    order, visited = [], set()
    stack, flags = [root], [False]
    while stack:
        node = stack.pop()
        if flags.pop():
            order.append(node)
            continue
        if node in visited:
            continue
        visited.add(node)
        stack.append(node)
        flags.append(True)
        for parent in node.parents:
            if parent.requires_grad and parent not in visited:
                stack.append(parent)
                flags.append(False)
    return order


def tensor(array, requires_grad: bool = False) -> Node:
    return Node(np.asarray(array), requires_grad=requires_grad)
