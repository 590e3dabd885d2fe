"""Bad input gets a clear error: it starts with the op's name, names the shapes or values, and
no NumPy traceback hangs off it."""

from __future__ import annotations

import re
import traceback
from pathlib import Path

import numpy as np
import pytest

import minilucid as ml
import minilucid.nn.functional as F
from minilucid.function import Function
from minilucid.ops.softmax import CrossEntropy

NUMPY_DIR = str(Path(np.__file__).parent)


def x23():
    return ml.randn(2, 3, requires_grad=True)


def freed_graph():
    y = (x23() * 2.0).sum()
    y.backward()
    return y


class TwoGradsForOneInput(Function):
    @staticmethod
    def forward(ctx, a):
        return a * 2

    @staticmethod
    def backward(ctx, grad):
        return grad * 2, grad


class WrongShapeGrad(Function):
    @staticmethod
    def forward(ctx, a):
        return a.sum(axis=0)

    @staticmethod
    def backward(ctx, grad):
        return grad  # shape (3,) for an input of shape (2, 3): forgot to spread it back


def hooked_to_another_shape():
    x = ml.randn(3, requires_grad=True)
    x.register_hook(lambda g: np.zeros((2, 3)))
    (x * 2).sum().backward()


def grad_of_another_shape():
    x = ml.randn(3, requires_grad=True)
    x.grad = np.zeros((2, 3))
    (x * 2).sum().backward()


def in_place_with_a_view_of_itself():
    h = x23() * 2
    h[:, 1:].add_(h[:, :2])  # two overlapping views: the result would depend on the order


def shapes_message(op, *shapes):
    listed = " and ".join(re.escape(str(s)) for s in shapes)
    return rf"^{op}: shapes {listed} cannot be broadcast together.*Reshape or unsqueeze"


# (id, the bad call, exception type, a regular expression its message must match from the start)
BAD = [
    (
        "add shapes",
        lambda: x23() + ml.randn(4, 3),
        ValueError,
        shapes_message("add", (2, 3), (4, 3)),
    ),
    (
        "sub shapes",
        lambda: x23() - ml.randn(2, 2),
        ValueError,
        shapes_message("sub", (2, 3), (2, 2)),
    ),
    (
        "mul shapes",
        lambda: x23() * ml.randn(3, 1, 2),
        ValueError,
        shapes_message("mul", (2, 3), (3, 1, 2)),
    ),
    ("div shapes", lambda: x23() / ml.randn(2), ValueError, shapes_message("div", (2, 3), (2,))),
    (
        "pow shapes",
        lambda: x23() ** ml.rand(3, 2),
        ValueError,
        shapes_message("pow", (2, 3), (3, 2)),
    ),
    (
        "radd array shapes",
        lambda: np.ones((4, 3)) + x23(),
        ValueError,
        shapes_message("add", (4, 3), (2, 3)),
    ),
    (
        "where shapes",
        lambda: ml.where(ml.tensor([True, False]), x23(), 0.0),
        ValueError,
        r"^where: shapes \(2,\) and \(2, 3\)",
    ),
    (
        "matmul inner",
        lambda: x23() @ ml.randn(4, 2),
        ValueError,
        r"^matmul: \(2, 3\) @ \(4, 2\) - inner dimensions 3 and 4 differ",
    ),
    (
        "matmul 1-d inner",
        lambda: ml.randn(3) @ ml.randn(2),
        ValueError,
        r"^matmul: \(3,\) @ \(2,\) - inner dimensions 3 and 2",
    ),
    (
        "matmul 0-d",
        lambda: x23() @ ml.tensor(2.0),
        ValueError,
        r"^matmul: \(2, 3\) @ \(\) - both operands need at least one dimension; use \*",
    ),
    (
        "matmul batch",
        lambda: ml.randn(2, 2, 3) @ ml.randn(3, 3, 4),
        ValueError,
        r"^matmul: .* batch dimensions \(2,\) and \(3,\) cannot be broadcast",
    ),
    (
        "ragged list",
        lambda: ml.tensor([[1.0, 2.0], [3.0]]),
        ValueError,
        r"^Tensor: the nested lists are ragged .*row lengths 2, 1",
    ),
    (
        "string data",
        lambda: ml.tensor(["a", "b"]),
        TypeError,
        r"^Tensor: cannot make a tensor from list data of dtype <U1; use numbers",
    ),
    (
        "requires_grad on ints",
        lambda: ml.tensor([1, 2], requires_grad=True),
        TypeError,
        r"^requires_grad: only floating-point tensors .* int64.*float",
    ),
    (
        "negative size",
        lambda: ml.zeros(2, -1),
        ValueError,
        r"^zeros: shape \(2, -1\) - sizes must be non-negative",
    ),
    (
        "sum dim",
        lambda: x23().sum(dim=2),
        IndexError,
        r"^sum: dim 2 is out of range for a tensor with 2 dimensions \(use -2 to 1\)",
    ),
    (
        "sum dim in tuple",
        lambda: x23().sum(dim=(0, -3)),
        IndexError,
        r"^sum: dim -3 is out of range",
    ),
    (
        "sum dim and axis",
        lambda: x23().sum(dim=0, axis=0),
        TypeError,
        r"^sum: give dim or axis, not both",
    ),
    (
        "mean dim",
        lambda: x23().mean(-3),
        IndexError,
        r"^mean: dim -3 is out of range .*2 dimensions",
    ),
    ("max dim", lambda: x23().max(dim=5), IndexError, r"^max: dim 5 is out of range"),
    ("min dim", lambda: x23().min(axis=2), IndexError, r"^min: dim 2 is out of range"),
    (
        "softmax dim",
        lambda: x23().softmax(2),
        IndexError,
        r"^softmax: dim 2 is out of range .*\(use -2 to 1\)",
    ),
    (
        "log_softmax dim",
        lambda: F.log_softmax(x23(), dim=-3),
        IndexError,
        r"^log_softmax: dim -3 is out of range",
    ),
    (
        "unsqueeze dim",
        lambda: x23().unsqueeze(4),
        IndexError,
        r"^unsqueeze: dim 4 is out of range .*\(use -3 to 2\)",
    ),
    ("squeeze dim", lambda: x23().squeeze(2), IndexError, r"^squeeze: dim 2 is out of range"),
    ("flatten dim", lambda: x23().flatten(0, 3), IndexError, r"^flatten: dim 3 is out of range"),
    (
        "transpose dim",
        lambda: x23().transpose(0, 2),
        IndexError,
        r"^transpose: dim 2 is out of range .*2 dimensions",
    ),
    (
        "permute dims",
        lambda: x23().permute(0, 5),
        ValueError,
        r"^permute: dims \(0, 5\) are not a reordering of the 2 dimensions of shape \(2, 3\)",
    ),
    (
        "reshape count",
        lambda: x23().reshape(4, 2),
        ValueError,
        r"^reshape: cannot view shape \(2, 3\) \(6 elements\) as \(4, 2\); the number of elements",
    ),
    (
        "view count",
        lambda: x23().view(5, -1),
        ValueError,
        r"^reshape: cannot view shape \(2, 3\) \(6 elements\) as \(5, -1\)",
    ),
    (
        "cat shapes",
        lambda: ml.cat([x23(), ml.randn(2, 4)]),
        ValueError,
        r"^cat: shapes must match except along dim 0, got \(2, 3\), \(2, 4\)",
    ),
    (
        "cat dim",
        lambda: ml.cat([x23(), x23()], dim=2),
        ValueError,
        r"^cat: dim 2 is out of range for tensors of shape \(2, 3\)",
    ),
    ("cat nothing", lambda: ml.cat([]), ValueError, r"^cat: needs at least one tensor"),
    (
        "cat 0-d",
        lambda: ml.cat([ml.tensor(1.0), ml.tensor(2.0)]),
        ValueError,
        r"^cat: 0-d tensors have no dimension to join along; use stack",
    ),
    ("stack nothing", lambda: ml.stack([]), ValueError, r"^stack: needs at least one tensor"),
    (
        "stack shapes",
        lambda: ml.stack([x23(), ml.randn(3, 2)]),
        ValueError,
        r"^stack: all tensors need the same shape, got \(2, 3\), \(3, 2\)",
    ),
    (
        "stack dim",
        lambda: ml.stack([x23(), x23()], dim=3),
        IndexError,
        r"^stack: dim 3 is out of range .*\(use -3 to 2\)",
    ),
    (
        "index out of range",
        lambda: x23()[2],
        IndexError,
        r"^getitem: index 2 is out of bounds for axis 0 with size 2 \(.* shape \(2, 3\)\)",
    ),
    (
        "index array out of range",
        lambda: x23()[:, [0, 3]],
        IndexError,
        r"^getitem: index 3 is out of bounds .*shape \(2, 3\)",
    ),
    (
        "too many indices",
        lambda: x23()[0, 0, 0],
        IndexError,
        r"^getitem: too many indices .*shape \(2, 3\)",
    ),
    (
        "cross_entropy target range",
        lambda: F.cross_entropy(x23(), [0, 3]),
        ValueError,
        r"^cross_entropy: target 3 at position 1 is not a class index; with 3 classes use 0 to 2",
    ),
    (
        "cross_entropy negative target",
        lambda: F.cross_entropy(x23(), ml.tensor([-1, 0])),
        ValueError,
        r"^cross_entropy: target -1 at position 0",
    ),
    (
        "cross_entropy float targets",
        lambda: F.cross_entropy(x23(), ml.tensor([0.0, 1.0])),
        ValueError,
        r"^cross_entropy: targets must be a 1-D tensor of class indices .* dtype float32",
    ),
    (
        "cross_entropy target length",
        lambda: F.cross_entropy(x23(), [0, 1, 2]),
        ValueError,
        r"^cross_entropy: 2 rows of logits but 3 targets",
    ),
    (
        "cross_entropy 1-d logits",
        lambda: F.cross_entropy(ml.randn(3), [0]),
        ValueError,
        r"^cross_entropy: logits must have shape \(batch, classes\), got \(3,\)",
    ),
    (
        "mse_loss shapes",
        lambda: F.mse_loss(x23(), ml.randn(3)),
        ValueError,
        r"^mse_loss: prediction \(2, 3\) and target \(3,\) differ.*Reshape one",
    ),
    (
        "clamp bounds",
        lambda: x23().clamp(1.0, -1.0),
        ValueError,
        r"^clamp: min 1.0 is greater than max -1.0",
    ),
    (
        "clamp nothing",
        lambda: ml.clamp(x23()),
        ValueError,
        r"^clamp: give at least one of min and max",
    ),
    (
        "backward non-scalar",
        lambda: (x23() * 2.0).backward(),
        RuntimeError,
        r"^backward: the output has shape \(2, 3\), not a single number.*\.sum\(\).*gradient=",
    ),
    (
        "backward gradient shape",
        lambda: (x23() * 2.0).backward(np.ones(3)),
        ValueError,
        r"^backward: gradient has shape \(3,\) but the output has shape \(2, 3\)",
    ),
    (
        "backward freed graph",
        lambda: freed_graph().backward(),
        RuntimeError,
        r"^backward: the graph through Sum was already freed .*retain_graph=True",
    ),
    (
        "backward without graph",
        lambda: ml.randn(2).sum().backward(),
        RuntimeError,
        r"^backward: this tensor does not require grad .*requires_grad=True",
    ),
    (
        "item of many",
        lambda: x23().item(),
        ValueError,
        r"^item: only a one-element tensor has an item; this one has shape \(2, 3\)",
    ),
    (
        "bool of many",
        lambda: bool(x23()),
        RuntimeError,
        r"^bool: the truth value of a tensor of shape \(2, 3\) is ambiguous",
    ),
    ("len of 0-d", lambda: len(ml.tensor(1.0)), TypeError, r"^len: a 0-d tensor has no length"),
    (
        "backward returns too many",
        lambda: TwoGradsForOneInput.apply(x23()).sum().backward(),
        RuntimeError,
        r"^TwoGradsForOneInput\.backward returned 2 gradients for 1 inputs; return one per input",
    ),
    (
        "backward returns wrong shape",
        lambda: WrongShapeGrad.apply(x23()).sum().backward(),
        RuntimeError,
        r"^WrongShapeGrad\.backward: returned a gradient of shape \(3,\) for an input of shape",
    ),
    (
        "gradcheck float32",
        lambda: ml.gradcheck(lambda t: t * 2, [x23()]),
        ValueError,
        r"^gradcheck: input 0 is float32; use float64",
    ),
    (
        "gradcheck no grad",
        lambda: ml.gradcheck(lambda t: t * 2, [ml.randn(2, dtype=ml.float64)]),
        ValueError,
        r"^gradcheck: input 0 must be a tensor with requires_grad=True",
    ),
    (
        "grad input not in graph",
        lambda: ml.grad((x23() * 2).sum(), [x23()]),
        RuntimeError,
        r"^grad: an input of shape \(2, 3\) is not part of the output's graph",
    ),
    (
        "grad input without grad",
        lambda: ml.grad(x23().sum(), [ml.randn(2)]),
        RuntimeError,
        r"^grad: every input must require grad",
    ),
    (
        "retain_grad without grad",
        lambda: ml.randn(2).retain_grad(),
        RuntimeError,
        r"^retain_grad: this tensor does not require grad",
    ),
    (
        "register_hook without grad",
        lambda: ml.randn(2).register_hook(print),
        RuntimeError,
        r"^register_hook: this tensor does not require grad",
    ),
    (
        "requires_grad_(False) on a node",
        lambda: (x23() * 2).requires_grad_(False),
        RuntimeError,
        r"^requires_grad_: this tensor was computed by an op; use \.detach\(\)",
    ),
    (
        "argmax dim out of range",
        lambda: x23().argmax(dim=2),
        IndexError,
        r"^argmax: dim 2 is out of range for a tensor with 2 dimensions \(use -2 to 1\)",
    ),
    (
        "argmax several dims",
        lambda: x23().argmax(dim=(0, 1)),
        TypeError,
        r"^argmax: dim must be one int .*got \(0, 1\); .*flatten them",
    ),
    (
        "argmax of an empty tensor",
        lambda: ml.zeros(0, 3).argmax(),
        ValueError,
        r"^argmax: the tensor of shape \(0, 3\) is empty",
    ),
    (
        "argmax along an empty dim",
        lambda: ml.zeros(0, 3).argmax(dim=0),
        ValueError,
        r"^argmax: dim 0 of the tensor of shape \(0, 3\) is empty",
    ),
    (
        "hook returning another shape",
        hooked_to_another_shape,
        RuntimeError,
        r"^backward: the hook .*<lambda> returned a gradient of shape \(2, 3\) for a gradient "
        r"of shape \(3,\)",
    ),
    (
        ".grad of another shape",
        grad_of_another_shape,
        RuntimeError,
        r"^backward: the tensor's \.grad has shape \(2, 3\) but the tensor has shape \(3,\)",
    ),
    (
        "clamp bound that requires grad",
        lambda: x23().clamp(min=ml.zeros(3, requires_grad=True)),
        TypeError,
        r"^clamp: a min tensor that requires grad is not supported",
    ),
    (
        "clamp tensor bounds crossing",
        lambda: x23().clamp(ml.tensor([0.0, 2.0]), ml.tensor([1.0, 1.0])),
        ValueError,
        r"^clamp: min \[0\. 2\.\] is greater than max \[1\. 1\.\]",
    ),
    (
        "softmax over an empty dim",
        lambda: ml.zeros(2, 0).softmax(dim=1),
        ValueError,
        r"^softmax: dimension 1 of the tensor of shape \(2, 0\) is empty",
    ),
    (
        "log_softmax over an empty dim",
        lambda: ml.zeros(0, 2).log_softmax(dim=0),
        ValueError,
        r"^log_softmax: dimension 0 of the tensor of shape \(0, 2\) is empty",
    ),
    (
        "iterating a 0-d tensor",
        lambda: list(ml.tensor(1.0)),
        TypeError,
        r"^iter: iteration over a 0-d tensor",
    ),
    (
        "in place with a view of itself",
        in_place_with_a_view_of_itself,
        RuntimeError,
        r"^add_: the other operand shares part of its memory with the numbers being changed",
    ),
    (
        "grad of outputs and grad_outputs that differ in number",
        lambda: ml.grad([x23().sum(), x23().sum()], [x23()], grad_outputs=[None]),
        ValueError,
        r"^grad: 2 outputs but 1 grad_outputs",
    ),
]


@pytest.mark.parametrize(("bad", "kind", "pattern"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_input_gets_a_clear_error(bad, kind, pattern):
    with pytest.raises(kind) as info:
        bad()
    error = info.value
    assert type(error) is kind, f"{type(error).__name__}: {error}"
    assert_plain(error, pattern)


def assert_plain(error: BaseException, pattern: str) -> None:
    """The message matches; no NumPy exception is chained to it, no NumPy frame raised it."""
    message = str(error)
    assert re.match(pattern, message, flags=re.DOTALL), f"message was: {message}"
    assert error.__cause__ is None
    assert error.__context__ is None or error.__suppress_context__, "chained to " + repr(
        error.__context__
    )
    frames = traceback.extract_tb(error.__traceback__)
    assert not any(f.filename.startswith(NUMPY_DIR) for f in frames), "raised inside NumPy"


def test_there_are_at_least_fifteen_bad_inputs():
    assert len(BAD) >= 15
    assert len({b[0] for b in BAD}) == len(BAD)


def test_op_error_with_a_snake_case_name_reaches_the_caller_unchanged():
    with pytest.raises(ValueError) as info:
        CrossEntropy.apply(x23(), np.array([0, 3]))
    assert_plain(info.value, r"^cross_entropy: target 3 at position 1 is not a class index")
