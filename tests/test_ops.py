"""Every op, driven by one table: forward against NumPy, backward against central differences.

A case's `fn(m, F, *xs)` is written once against a module `m` and its functional module `F`,
so the same line runs on minilucid here and on torch in test_torch_oracle.py. Inputs are whole
float64 tensors; every entry of every input is checked (tests/gradients.py).
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest
from gradients import analytic_grads, assert_grads_match, f64, weights_for

import minilucid as ml
import minilucid.nn.functional as MF
from minilucid.function import Function
from minilucid.gradcheck import GradcheckError
from minilucid.numerical import numerical_grad
from minilucid.ops.elementwise import Mul


@dataclass(frozen=True)
class Case:
    name: str
    fn: Callable  # fn(m, F, *tensors) -> tensor
    ref: Callable  # the same computation on NumPy arrays
    shapes: tuple  # one shape per differentiable input
    domain: str | tuple = "real"  # per input: real, positive or apart (see gradients.f64)
    numpy_operand: bool = False  # mixes in a NumPy array (torch has no such operator)
    torch: bool = True  # False where torch spells the op differently

    def arrays(self) -> list:
        rng = np.random.default_rng(zlib.crc32(self.name.encode()))
        domains = (
            self.domain if isinstance(self.domain, tuple) else (self.domain,) * len(self.shapes)
        )
        return [f64(s, rng, d) for s, d in zip(self.shapes, domains, strict=True)]


def values(result):
    """torch's max(dim)/min(dim) return (values, indices); minilucid returns the values."""
    return getattr(result, "values", result)


def softmax_ref(x, axis):
    e = np.exp(x)
    return e / e.sum(axis=axis, keepdims=True)


def log_softmax_ref(x, axis):
    shifted = x - x.max(axis=axis, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))


def cross_entropy_ref(logits, targets):
    return -log_softmax_ref(logits, 1)[np.arange(len(targets)), targets].mean()


def sigmoid_ref(x):
    """1 / (1 + exp(-x)) without overflow: exp of a number <= 0 only."""
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1, e) / (1 + e)


S, S3 = (2, 3), (2, 3, 4)
TAIL = np.array([[1000.0, -1000.0, 0.0], [-1000.0, 0.0, 1000.0]])  # a shift into the far tails


def tail(m, x):
    """TAIL as a tensor of x's dtype, in minilucid or torch (`m`)."""
    return m.tensor(TAIL, dtype=x.dtype)


C = np.random.default_rng(7).standard_normal(S)  # NumPy operands
CLAMP_LOW, CLAMP_HIGH = np.array([-0.5, -0.5, 0.0, -0.5]), np.array([0.5, 0.5, 0.5, 0.0])
C_POS = np.random.default_rng(8).uniform(0.5, 2.0, S)
C_MAT = np.random.default_rng(9).standard_normal((4, 2))
COND = np.array([[True, False, True], [False, False, True]])
COND_ROW = np.array([False, True, True])
MASK = np.random.default_rng(10).standard_normal(S3) > 0
TARGETS = [0, 3, 3, 1]
MSE_TARGET = np.random.default_rng(11).standard_normal(S)

CASES = [
    # --- elementwise arithmetic ---------------------------------------------------------------
    Case("add", lambda m, F, a, b: a + b, np.add, (S, S)),
    Case("add broadcast row", lambda m, F, a, b: a + b, np.add, (S, (3,))),
    Case("add broadcast both", lambda m, F, a, b: a + b, np.add, ((4, 1, 3), (2, 1))),
    Case("sub", lambda m, F, a, b: a - b, np.subtract, (S, S)),
    Case("sub broadcast column", lambda m, F, a, b: a - b, np.subtract, (S, (2, 1))),
    Case("mul", lambda m, F, a, b: a * b, np.multiply, (S, S)),
    Case("mul broadcast", lambda m, F, a, b: a * b, np.multiply, ((3,), S)),
    Case("mul 0-d", lambda m, F, a, b: a * b, np.multiply, ((), S)),
    Case("div", lambda m, F, a, b: a / b, np.divide, (S, S), ("real", "positive")),
    Case("div broadcast", lambda m, F, a, b: a / b, np.divide, (S, (2, 1)), ("real", "positive")),
    Case("neg", lambda m, F, x: -x, np.negative, (S,)),
    Case("pow tensor exponent", lambda m, F, a, b: a**b, np.power, (S, S), ("positive", "real")),
    Case(
        "pow tensor exponent broadcast",
        lambda m, F, a, b: a**b,
        np.power,
        (S, (3,)),
        ("positive", "real"),
    ),
    Case("pow scalar 2", lambda m, F, x: x**2, lambda x: x**2, (S,)),
    Case("pow scalar 3", lambda m, F, x: x**3, lambda x: x**3, (S,)),
    Case("pow scalar 0.5", lambda m, F, x: x**0.5, np.sqrt, (S,), "positive"),
    Case("pow scalar -1.5", lambda m, F, x: x**-1.5, lambda x: x**-1.5, (S,), "positive"),
    Case("rpow scalar", lambda m, F, x: 2.0**x, lambda x: 2.0**x, (S,)),
    Case("radd scalar", lambda m, F, x: 1.5 + x, lambda x: 1.5 + x, (S,)),
    Case("rsub scalar", lambda m, F, x: 1.5 - x, lambda x: 1.5 - x, (S,)),
    Case("rmul scalar", lambda m, F, x: 1.5 * x, lambda x: 1.5 * x, (S,)),
    Case("rtruediv scalar", lambda m, F, x: 1.5 / x, lambda x: 1.5 / x, (S,), "positive"),
    Case("add int scalar", lambda m, F, x: x + 2, lambda x: x + 2, (S,)),
    Case("sub scalar", lambda m, F, x: x - 2.5, lambda x: x - 2.5, (S,)),
    Case("mul scalar", lambda m, F, x: x * -3, lambda x: x * -3, (S,)),
    Case("div scalar", lambda m, F, x: x / 4.0, lambda x: x / 4.0, (S,)),
    Case("add array", lambda m, F, x: x + C, lambda x: x + C, (S,), numpy_operand=True),
    Case("radd array", lambda m, F, x: C + x, lambda x: C + x, (S,), numpy_operand=True),
    Case("rsub array", lambda m, F, x: C - x, lambda x: C - x, (S,), numpy_operand=True),
    Case("rmul array", lambda m, F, x: C * x, lambda x: C * x, (S,), numpy_operand=True),
    Case(
        "rtruediv array",
        lambda m, F, x: C / x,
        lambda x: C / x,
        (S,),
        "positive",
        numpy_operand=True,
    ),
    Case("rpow array", lambda m, F, x: C_POS**x, lambda x: C_POS**x, (S,), numpy_operand=True),
    Case(
        "pow array exponent",
        lambda m, F, x: x**C,
        lambda x: x**C,
        (S,),
        "positive",
        numpy_operand=True,
    ),
    Case("rmatmul array", lambda m, F, x: C_MAT @ x, lambda x: C_MAT @ x, (S,), numpy_operand=True),
    Case(
        "rsub array broadcast", lambda m, F, x: C - x, lambda x: C - x, ((3,),), numpy_operand=True
    ),
    # --- reductions ---------------------------------------------------------------------------
    Case("sum", lambda m, F, x: x.sum(), np.sum, (S3,)),
    Case("sum dim 1", lambda m, F, x: x.sum(dim=1), lambda x: x.sum(1), (S3,)),
    Case("sum dim -1", lambda m, F, x: x.sum(-1), lambda x: x.sum(-1), (S3,)),
    Case("sum dim tuple", lambda m, F, x: x.sum(dim=(0, 2)), lambda x: x.sum((0, 2)), (S3,)),
    Case(
        "sum dim 1 keepdim",
        lambda m, F, x: x.sum(dim=1, keepdim=True),
        lambda x: x.sum(1, keepdims=True),
        (S3,),
    ),
    Case(
        "sum dim tuple keepdim",
        lambda m, F, x: x.sum(dim=(-1, 0), keepdim=True),
        lambda x: x.sum((0, 2), keepdims=True),
        (S3,),
    ),
    Case("sum axis alias", lambda m, F, x: x.sum(axis=2), lambda x: x.sum(2), (S3,)),
    Case("sum 0-d", lambda m, F, x: x.sum(), np.sum, ((),)),
    Case("sum 0-d dim -1", lambda m, F, x: x.sum(dim=-1), lambda x: x, ((),)),
    Case("mean", lambda m, F, x: x.mean(), np.mean, (S3,)),
    Case("mean dim 0", lambda m, F, x: x.mean(dim=0), lambda x: x.mean(0), (S3,)),
    Case(
        "mean dim -2 keepdim",
        lambda m, F, x: x.mean(-2, keepdim=True),
        lambda x: x.mean(-2, keepdims=True),
        (S3,),
    ),
    Case("mean dim tuple", lambda m, F, x: x.mean(dim=(0, 2)), lambda x: x.mean((0, 2)), (S3,)),
    Case(
        "mean axis alias keepdim",
        lambda m, F, x: x.mean(axis=1, keepdim=True),
        lambda x: x.mean(1, keepdims=True),
        (S3,),
    ),
    Case("max", lambda m, F, x: x.max(), np.max, (S3,)),
    Case("max dim 1", lambda m, F, x: values(x.max(dim=1)), lambda x: x.max(1), (S3,)),
    Case(
        "max dim -1 keepdim",
        lambda m, F, x: values(x.max(-1, keepdim=True)),
        lambda x: x.max(-1, keepdims=True),
        (S3,),
    ),
    Case(
        "max dim tuple",
        lambda m, F, x: x.max(dim=(0, 2)),
        lambda x: x.max((0, 2)),
        (S3,),
        torch=False,  # torch spells it amax
    ),
    Case("max axis alias", lambda m, F, x: values(x.max(axis=0)), lambda x: x.max(0), (S3,)),
    Case("min", lambda m, F, x: x.min(), np.min, (S3,)),
    Case("min dim 0", lambda m, F, x: values(x.min(dim=0)), lambda x: x.min(0), (S3,)),
    Case(
        "min dim -2 keepdim",
        lambda m, F, x: values(x.min(-2, keepdim=True)),
        lambda x: x.min(-2, keepdims=True),
        (S3,),
    ),
    Case(
        "min axis alias keepdim",
        lambda m, F, x: values(x.min(axis=-1, keepdim=True)),
        lambda x: x.min(-1, keepdims=True),
        (S3,),
    ),
    Case(
        "min dim tuple",
        lambda m, F, x: x.min(dim=(1, 2)),
        lambda x: x.min((1, 2)),
        (S3,),
        torch=False,
    ),
    # --- moving numbers: reshape, view, transpose, permute, T, flatten, (un)squeeze ------------
    Case("reshape", lambda m, F, x: x.reshape(6, 4), lambda x: x.reshape(6, 4), (S3,)),
    Case("reshape -1", lambda m, F, x: x.reshape(-1), lambda x: x.reshape(-1), (S3,)),
    Case("reshape tuple", lambda m, F, x: x.reshape((4, 6)), lambda x: x.reshape(4, 6), (S3,)),
    Case("view", lambda m, F, x: x.view(4, -1), lambda x: x.reshape(4, -1), (S3,)),
    Case("view 1-d", lambda m, F, x: x.view(24), lambda x: x.reshape(24), (S3,)),
    Case("transpose", lambda m, F, x: x.transpose(0, 2), lambda x: np.swapaxes(x, 0, 2), (S3,)),
    Case(
        "transpose negative",
        lambda m, F, x: x.transpose(-1, -2),
        lambda x: np.swapaxes(x, -1, -2),
        (S3,),
    ),
    Case("permute", lambda m, F, x: x.permute(2, 0, 1), lambda x: x.transpose(2, 0, 1), (S3,)),
    Case(
        "permute negative",
        lambda m, F, x: x.permute(-1, 0, 1),
        lambda x: x.transpose(2, 0, 1),
        (S3,),
    ),
    Case("T", lambda m, F, x: x.T, lambda x: x.T, (S,)),
    Case("T 3-d", lambda m, F, x: x.T, lambda x: x.T, (S3,), torch=False),  # deprecated there
    Case("flatten", lambda m, F, x: x.flatten(), lambda x: x.reshape(-1), (S3,)),
    Case("flatten 1", lambda m, F, x: x.flatten(1), lambda x: x.reshape(2, 12), (S3,)),
    Case("flatten 0 1", lambda m, F, x: x.flatten(0, 1), lambda x: x.reshape(6, 4), (S3,)),
    Case("flatten -2 -1", lambda m, F, x: x.flatten(-2, -1), lambda x: x.reshape(2, 12), (S3,)),
    Case("unsqueeze 0", lambda m, F, x: x.unsqueeze(0), lambda x: x[None], (S,)),
    Case("unsqueeze 1", lambda m, F, x: x.unsqueeze(1), lambda x: x[:, None], (S,)),
    Case("unsqueeze -1", lambda m, F, x: x.unsqueeze(-1), lambda x: x[..., None], (S,)),
    Case("squeeze", lambda m, F, x: x.squeeze(), np.squeeze, ((2, 1, 3, 1),)),
    Case("squeeze 1", lambda m, F, x: x.squeeze(1), lambda x: x[:, 0], ((2, 1, 3, 1),)),
    Case("squeeze -1", lambda m, F, x: x.squeeze(-1), lambda x: x[..., 0], ((2, 1, 3, 1),)),
    Case("squeeze not 1", lambda m, F, x: x.squeeze(0), lambda x: x, ((2, 1, 3, 1),)),
    Case("squeeze 0-d", lambda m, F, x: x.squeeze(0), lambda x: x, ((),)),
    # --- indexing -----------------------------------------------------------------------------
    Case("getitem int", lambda m, F, x: x[1], lambda x: x[1], (S3,)),
    Case("getitem slice", lambda m, F, x: x[:, 1:3], lambda x: x[:, 1:3], (S3,)),
    Case("getitem negative", lambda m, F, x: x[-1], lambda x: x[-1], (S3,)),
    Case("getitem step", lambda m, F, x: x[1, ::2, -1], lambda x: x[1, ::2, -1], (S3,)),
    Case("getitem ellipsis", lambda m, F, x: x[..., -2], lambda x: x[..., -2], (S3,)),
    Case("getitem None", lambda m, F, x: x[None, 0], lambda x: x[None, 0], (S3,)),
    Case(
        "getitem ellipsis None", lambda m, F, x: x[..., None, 1], lambda x: x[..., None, 1], (S3,)
    ),
    Case("getitem list repeated", lambda m, F, x: x[[0, 0, 1]], lambda x: x[[0, 0, 1]], (S3,)),
    Case(
        "getitem two lists repeated",
        lambda m, F, x: x[[0, 1, 1, 1], [2, 2, 0, 2]],
        lambda x: x[[0, 1, 1, 1], [2, 2, 0, 2]],
        (S3,),
    ),
    Case(
        "getitem slice and list",
        lambda m, F, x: x[:, [2, 0, 2]],
        lambda x: x[:, [2, 0, 2]],
        (S3,),
    ),
    Case(
        "getitem int array repeated",
        lambda m, F, x: x[np.array([1, 1, 0, 1])],
        lambda x: x[np.array([1, 1, 0, 1])],
        (S,),
    ),
    Case(
        "getitem tensor index",
        lambda m, F, x: x[m.tensor([2, 2, 0])],
        lambda x: x[[2, 2, 0]],
        ((4, 2),),
    ),
    Case("getitem bool mask", lambda m, F, x: x[m.tensor(MASK)], lambda x: x[MASK], (S3,)),
    Case(
        "getitem bool rows",
        lambda m, F, x: x[m.tensor([True, False, True])],
        lambda x: x[[True, False, True]],
        ((3, 2),),
    ),
    # --- joining and choosing -----------------------------------------------------------------
    Case(
        "cat dim 0",
        lambda m, F, a, b: m.cat([a, b]),
        lambda a, b: np.concatenate([a, b]),
        (S, (4, 3)),
    ),
    Case(
        "cat dim 1",
        lambda m, F, a, b: m.cat([a, b], dim=1),
        lambda a, b: np.concatenate([a, b], 1),
        (S, (2, 1)),
    ),
    Case(
        "cat dim -1 three",
        lambda m, F, a, b, c: m.cat([a, b, c], dim=-1),
        lambda a, b, c: np.concatenate([a, b, c], -1),
        (S, (2, 2), (2, 1)),
    ),
    Case(
        "cat reused",
        lambda m, F, a: m.cat([a, a * 2, a], dim=0),
        lambda a: np.concatenate([a, a * 2, a]),
        (S,),
    ),
    Case(
        "stack dim 0",
        lambda m, F, a, b: m.stack([a, b]),
        lambda a, b: np.stack([a, b]),
        (S, S),
    ),
    Case(
        "stack dim 1 three",
        lambda m, F, a, b, c: m.stack([a, b, c], dim=1),
        lambda a, b, c: np.stack([a, b, c], 1),
        (S, S, S),
    ),
    Case(
        "stack dim -1",
        lambda m, F, a, b: m.stack([a, b], dim=-1),
        lambda a, b: np.stack([a, b], -1),
        (S, S),
    ),
    Case(
        "where",
        lambda m, F, a, b: m.where(m.tensor(COND), a, b),
        lambda a, b: np.where(COND, a, b),
        (S, S),
    ),
    Case(
        "where broadcast",
        lambda m, F, a, b: m.where(m.tensor(COND_ROW), a, b),
        lambda a, b: np.where(COND_ROW, a, b),
        ((2, 1), (4, 2, 3)),
    ),
    Case(
        "where scalar other",
        lambda m, F, x: m.where(m.tensor(COND), x, 0.0),
        lambda x: np.where(COND, x, 0.0),
        (S,),
    ),
    Case(
        "where scalar input",
        lambda m, F, x: m.where(m.tensor(COND), 1.5, x),
        lambda x: np.where(COND, 1.5, x),
        (S,),
    ),
    Case(
        "where comparison",
        lambda m, F, x: m.where(x > 0, x, x * 0.1),
        lambda x: np.where(x > 0, x, x * 0.1),
        (S,),
        "apart",
    ),
    # --- matmul -------------------------------------------------------------------------------
    Case("matmul 2-d", lambda m, F, a, b: a @ b, np.matmul, (S, (3, 4))),
    Case("matmul method", lambda m, F, a, b: a.matmul(b), np.matmul, (S, (3, 4))),
    Case("matmul batched", lambda m, F, a, b: a @ b, np.matmul, ((3, 2, 3), (3, 3, 2))),
    Case(
        "matmul broadcast batch right 2-d", lambda m, F, a, b: a @ b, np.matmul, ((4, 2, 3), (3, 2))
    ),
    Case("matmul broadcast batch left 2-d", lambda m, F, a, b: a @ b, np.matmul, (S, (4, 3, 2))),
    Case(
        "matmul broadcast batch both",
        lambda m, F, a, b: a @ b,
        np.matmul,
        ((3, 1, 2, 3), (2, 3, 2)),
    ),
    Case("matmul 1-d left", lambda m, F, a, b: a @ b, np.matmul, ((3,), (3, 4))),
    Case("matmul 1-d left batched", lambda m, F, a, b: a @ b, np.matmul, ((3,), (4, 3, 2))),
    Case("matmul 1-d right", lambda m, F, a, b: a @ b, np.matmul, (S, (3,))),
    Case("matmul 1-d right batched", lambda m, F, a, b: a @ b, np.matmul, ((4, 2, 3), (3,))),
    Case("matmul 1-d both", lambda m, F, a, b: a @ b, np.matmul, ((3,), (3,))),
    # --- linear: one Affine node, x @ w.T + b ------------------------------------------------
    Case(
        "linear",
        lambda m, F, x, w, b: F.linear(x, w, b),
        lambda x, w, b: x @ w.T + b,
        ((4, 3), (2, 3), (2,)),
    ),
    Case(
        "linear no bias", lambda m, F, x, w: F.linear(x, w), lambda x, w: x @ w.T, ((4, 3), (2, 3))
    ),
    Case(
        "linear 1-d input",
        lambda m, F, x, w, b: F.linear(x, w, b),
        lambda x, w, b: x @ w.T + b,
        ((3,), (2, 3), (2,)),
    ),
    Case(
        "linear 3-d input",
        lambda m, F, x, w, b: F.linear(x, w, b),
        lambda x, w, b: x @ w.T + b,
        ((2, 4, 3), (5, 3), (5,)),
    ),
    # --- elementwise functions ----------------------------------------------------------------
    Case("exp", lambda m, F, x: x.exp(), np.exp, (S,)),
    Case("exp function", lambda m, F, x: m.exp(x), np.exp, (S,)),
    Case("log", lambda m, F, x: x.log(), np.log, (S,), "positive"),
    Case("log function", lambda m, F, x: m.log(x), np.log, (S,), "positive"),
    Case("sqrt", lambda m, F, x: x.sqrt(), np.sqrt, (S,), "positive"),
    Case("sqrt function", lambda m, F, x: m.sqrt(x), np.sqrt, (S,), "positive"),
    Case("abs", lambda m, F, x: x.abs(), np.abs, (S,), "apart"),
    Case("abs builtin", lambda m, F, x: abs(x), np.abs, (S,), "apart"),
    Case("abs function", lambda m, F, x: m.abs(x), np.abs, (S,), "apart"),
    Case(
        "clamp",
        lambda m, F, x: x.clamp(-0.5, 0.5),
        lambda x: np.clip(x, -0.5, 0.5),
        (S3,),
        "apart",
    ),
    Case("clamp min", lambda m, F, x: x.clamp(min=0.0), lambda x: np.maximum(x, 0), (S3,), "apart"),
    Case(
        "clamp max", lambda m, F, x: x.clamp(max=0.5), lambda x: np.minimum(x, 0.5), (S3,), "apart"
    ),
    Case(  # bounds as tensors (that do not require grad), broadcast along the last dimension
        "clamp tensor bounds",
        lambda m, F, x: x.clamp(
            m.tensor(CLAMP_LOW, dtype=x.dtype), m.tensor(CLAMP_HIGH, dtype=x.dtype)
        ),
        lambda x: np.clip(x, CLAMP_LOW, CLAMP_HIGH),
        (S3,),
        "apart",
    ),
    Case(
        "clamp function",
        lambda m, F, x: m.clamp(x, min=-0.5, max=0.5),
        lambda x: np.clip(x, -0.5, 0.5),
        (S3,),
        "apart",
    ),
    Case("tanh", lambda m, F, x: x.tanh(), np.tanh, (S,)),
    Case("tanh function", lambda m, F, x: m.tanh(x), np.tanh, (S,)),
    Case("sigmoid", lambda m, F, x: x.sigmoid(), lambda x: 1 / (1 + np.exp(-x)), (S,)),
    Case("sigmoid function", lambda m, F, x: m.sigmoid(x), lambda x: 1 / (1 + np.exp(-x)), (S,)),
    Case("relu", lambda m, F, x: x.relu(), lambda x: np.maximum(x, 0), (S3,), "apart"),
    Case("relu function", lambda m, F, x: m.relu(x), lambda x: np.maximum(x, 0), (S3,), "apart"),
    Case("F.relu", lambda m, F, x: F.relu(x), lambda x: np.maximum(x, 0), (S3,), "apart"),
    Case("F.sigmoid", lambda m, F, x: F.sigmoid(x), lambda x: 1 / (1 + np.exp(-x)), (S,)),
    Case("F.tanh", lambda m, F, x: F.tanh(x), np.tanh, (S,)),
    # --- softmax and losses -------------------------------------------------------------------
    Case("softmax -1", lambda m, F, x: x.softmax(-1), lambda x: softmax_ref(x, -1), (S3,)),
    Case("softmax 0", lambda m, F, x: x.softmax(0), lambda x: softmax_ref(x, 0), (S3,)),
    Case("softmax 1", lambda m, F, x: x.softmax(dim=1), lambda x: softmax_ref(x, 1), (S3,)),
    Case("F.softmax", lambda m, F, x: F.softmax(x, dim=-2), lambda x: softmax_ref(x, -2), (S3,)),
    Case(
        "log_softmax -1", lambda m, F, x: x.log_softmax(-1), lambda x: log_softmax_ref(x, -1), (S3,)
    ),
    Case("log_softmax 0", lambda m, F, x: x.log_softmax(0), lambda x: log_softmax_ref(x, 0), (S3,)),
    Case(
        "log_softmax 1",
        lambda m, F, x: x.log_softmax(dim=1),
        lambda x: log_softmax_ref(x, 1),
        (S3,),
    ),
    Case(
        "F.log_softmax",
        lambda m, F, x: F.log_softmax(x, dim=0),
        lambda x: log_softmax_ref(x, 0),
        (S,),
    ),
    Case(
        "cross_entropy",
        lambda m, F, x: F.cross_entropy(x, m.tensor(TARGETS)),
        lambda x: cross_entropy_ref(x, TARGETS),
        ((4, 5),),
    ),
    Case(
        "cross_entropy large logits",  # exp(300 * x) overflows unless shifted
        lambda m, F, x: F.cross_entropy(x * 300.0, m.tensor(TARGETS)),
        lambda x: cross_entropy_ref(x * 300.0, TARGETS),
        ((4, 5),),
    ),
    Case(
        "mse_loss", lambda m, F, a, b: F.mse_loss(a, b), lambda a, b: ((a - b) ** 2).mean(), (S, S)
    ),
    Case(
        "mse_loss constant target",
        lambda m, F, x: F.mse_loss(x, m.tensor(MSE_TARGET, dtype=x.dtype)),
        lambda x: ((x - MSE_TARGET) ** 2).mean(),
        (S,),
    ),
    # --- far tails: inputs near +-1000, where a naive exp overflows ---------------------------
    *[
        Case(f"{name} far tail", fn, ref, (S,))
        for name, fn, ref in [
            (
                "sigmoid",
                lambda m, F, x: (x + tail(m, x)).sigmoid(),
                lambda x: sigmoid_ref(x + TAIL),
            ),
            ("tanh", lambda m, F, x: (x + tail(m, x)).tanh(), lambda x: np.tanh(x + TAIL)),
            (
                "softmax",
                lambda m, F, x: (x + tail(m, x)).softmax(-1),
                lambda x: softmax_ref(x + TAIL - (x + TAIL).max(-1, keepdims=True), -1),
            ),
            (
                "log_softmax",
                lambda m, F, x: (x + tail(m, x)).log_softmax(0),
                lambda x: log_softmax_ref(x + TAIL, 0),
            ),
            (
                "cross_entropy",
                lambda m, F, x: F.cross_entropy(x + tail(m, x), m.tensor([2, 0])),
                lambda x: cross_entropy_ref(x + TAIL, [2, 0]),
            ),
        ]
    ],
    # --- a small composite: the ops together --------------------------------------------------
    Case(
        "mlp layer",
        lambda m, F, x, w, b: F.cross_entropy((x @ w + b).tanh() @ w.T, m.tensor([0, 1, 1])),
        lambda x, w, b: cross_entropy_ref(np.tanh(x @ w + b) @ w.T, [0, 1, 1]),
        ((3, 4), (4, 4), (4,)),
    ),
]
IDS = [case.name for case in CASES]
assert len(set(IDS)) == len(IDS), "case names must be unique"


def run(case: Case, xs):
    return case.fn(ml, MF, *xs)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_forward_matches_numpy(case):
    arrays = case.arrays()
    out = run(case, [ml.tensor(a) for a in arrays])
    expected = np.asarray(case.ref(*arrays))
    assert isinstance(out, ml.Tensor)
    assert isinstance(out.data, np.ndarray)
    assert out.shape == expected.shape
    assert out.dtype == np.float64
    np.testing.assert_allclose(out.data, expected, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_backward_matches_central_differences(case):
    assert_grads_match(lambda *xs: run(case, xs), case.arrays(), label=case.name)


@pytest.mark.parametrize(
    "case", [c for c in CASES if not c.numpy_operand], ids=lambda case: case.name
)
def test_float32_stays_float32(case):
    xs = [ml.tensor(a.astype(np.float32), requires_grad=True) for a in case.arrays()]
    out = run(case, xs)
    assert out.dtype == np.float32
    out.backward(weights_for(out.shape))
    for x in xs:
        assert x.grad.dtype == np.float32


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_no_grad_builds_no_graph(case):
    xs = [ml.tensor(a, requires_grad=True) for a in case.arrays()]
    with ml.no_grad():
        out = run(case, xs)
    assert out.grad_fn is None and not out.requires_grad and out.is_leaf


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_output_is_a_node(case):
    xs = [ml.tensor(a, requires_grad=True) for a in case.arrays()]
    out = run(case, xs)
    assert out.requires_grad and not out.is_leaf and out.grad_fn is not None
    assert all(x.is_leaf and x.grad is None for x in xs)


# --------------------------------------------------------------------------------------------
# gradcheck and numerical_grad: they pass correct ops and name what is wrong


GRADCHECKED = {"mul broadcast", "div", "pow tensor exponent", "sum dim tuple keepdim", "max dim 1",
    "getitem two lists repeated", "cat dim -1 three", "where broadcast", "matmul 1-d both",
    "matmul broadcast batch both", "softmax 0", "cross_entropy", "mlp layer"}  # fmt: skip
assert GRADCHECKED <= set(IDS)


@pytest.mark.parametrize(
    "case", [c for c in CASES if c.name in GRADCHECKED], ids=lambda case: case.name
)
def test_gradcheck_passes_correct_ops(case):
    xs = [ml.tensor(a, requires_grad=True) for a in case.arrays()]
    assert ml.gradcheck(lambda *t: run(case, t), xs) is True


class MulWrongAtOneEntry(Mul):
    """z = a * b, with the gradient of b deliberately wrong at entry (1, 2)."""

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        grad_b = grad * a
        grad_b[1, 2] += 0.5
        return grad * b, grad_b


class MulSwapped(Mul):
    """z = a * b with the classic slip dz/da = a."""

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        return grad * a, grad * b


def test_gradcheck_names_the_input_and_entry_of_a_wrong_gradient():
    a, b = (ml.tensor(x, requires_grad=True) for x in Case("g", None, None, (S, S)).arrays())
    with pytest.raises(GradcheckError, match=r"^gradcheck: input 1 \(shape \(2, 3\)\)") as info:
        ml.gradcheck(MulWrongAtOneEntry.apply, [a, b])
    message = str(info.value)
    assert "entry (1, 2)" in message and "1 of 6 entries differ" in message
    assert isinstance(info.value, AssertionError)
    with pytest.raises(GradcheckError, match=r"^gradcheck: input 0 .* entry \(0, 0\)"):
        ml.gradcheck(MulSwapped.apply, [a, b])


def test_gradcheck_without_raising_returns_false():
    a, b = (ml.tensor(x, requires_grad=True) for x in Case("g", None, None, (S, S)).arrays())
    assert ml.gradcheck(MulWrongAtOneEntry.apply, [a, b], raise_exception=False) is False
    assert ml.gradcheck(lambda x, y: x * y, [a, b], raise_exception=False) is True


def test_gradcheck_catches_an_error_in_one_output_entry_only():
    """The output is weighted, so an op wrong only where its outputs cancel is still caught."""

    class SumOfPairs(Function):
        """z = [a0 + a1, a0 - a1]; backward wrongly sends the same to both entries."""

        @staticmethod
        def forward(ctx, a):
            return np.stack([a[0] + a[1], a[0] - a[1]])

        @staticmethod
        def backward(ctx, grad):
            return np.stack([grad[0] + grad[1], grad[0] + grad[1]])

    x = ml.tensor([1.0, 2.0], dtype=ml.float64, requires_grad=True)
    with pytest.raises(GradcheckError, match=r"input 0 .*entry \(1,\)"):
        ml.gradcheck(SumOfPairs.apply, [x])


def test_gradcheck_leaves_inputs_and_grads_untouched():
    x = ml.tensor(np.arange(6.0).reshape(2, 3).T, requires_grad=True)  # not contiguous
    before = x.data.copy()
    assert ml.gradcheck(lambda t: (t * t).sum(), [x])
    assert x.grad is None
    np.testing.assert_array_equal(x.data, before)


def test_numerical_grad_central_differences():
    a = ml.tensor([1.0, -2.0, 3.0], dtype=ml.float64)
    b = ml.tensor([0.5, 4.0, -1.0], dtype=ml.float64)
    ga, gb = numerical_grad(lambda x, y: (x * y * y).sum(), [a, b])
    np.testing.assert_allclose(ga, b.data**2, rtol=1e-7)
    np.testing.assert_allclose(gb, 2 * a.data * b.data, rtol=1e-7)
    (gw,) = numerical_grad(lambda x: x * 3.0, [a], grad_output=np.array([1.0, 2.0, -1.0]))
    np.testing.assert_allclose(gw, [3.0, 6.0, -3.0], rtol=1e-7)


def test_numerical_grad_on_transposed_and_python_inputs():
    t = ml.tensor(np.arange(6.0).reshape(3, 2).T)  # a non-contiguous view
    (g,) = numerical_grad(lambda x: (x * x).sum(), [t])
    np.testing.assert_allclose(g, 2 * t.data, rtol=1e-7)
    (g,) = numerical_grad(lambda x: (x * x).sum(), [[1.0, 2.0]])  # Python lists too
    np.testing.assert_allclose(g, [2.0, 4.0], rtol=1e-7)


def test_the_oracle_itself_on_a_known_gradient():
    """tests/gradients.py against a closed form, so that a broken oracle cannot pass ops."""
    x = np.array([[0.5, -1.0], [2.0, 3.0]])
    (g,), out = analytic_grads(lambda t: t * t * t, [x])
    np.testing.assert_allclose(g, 3 * x * x * weights_for(out.shape), rtol=1e-12)
    assert_grads_match(lambda t: t * t * t, [x], label="cube")
