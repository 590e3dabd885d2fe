"""minilucid: a small reverse-mode autodiff engine with a PyTorch-shaped API.

Each public name below is built, and explained, in one chapter of the course.
"""

from minilucid.tensor import Tensor, float32, float64, int64, long  # isort: split

from minilucid._memory import keep_freed_memory as _keep_freed_memory  # isort: split

from minilucid import data, datasets, nn, optim, utils
from minilucid.autograd import grad
from minilucid.creation import (
    arange,
    as_tensor,
    from_numpy,
    manual_seed,
    ones,
    ones_like,
    rand,
    randn,
    tensor,
    zeros,
    zeros_like,
)
from minilucid.grad_mode import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from minilucid.gradcheck import gradcheck
from minilucid.ops.attention import tril, triu
from minilucid.ops.sampling import multinomial, topk
from minilucid.ops.shape import cat, stack, where
from minilucid.ops.unary import abs, clamp, exp, log, relu, sigmoid, sqrt, tanh
from minilucid.serialization import load, save

__version__ = "0.1.0"

_keep_freed_memory()  # a training step's temporaries reuse freed memory (minilucid/_memory.py)

__all__ = [
    "Tensor",
    "abs",
    "arange",
    "as_tensor",
    "cat",
    "clamp",
    "data",
    "datasets",
    "enable_grad",
    "exp",
    "float32",
    "float64",
    "from_numpy",
    "grad",
    "gradcheck",
    "int64",
    "is_grad_enabled",
    "load",
    "log",
    "long",
    "nn",
    "manual_seed",
    "multinomial",
    "no_grad",
    "optim",
    "ones",
    "ones_like",
    "rand",
    "randn",
    "relu",
    "save",
    "set_grad_enabled",
    "sigmoid",
    "sqrt",
    "stack",
    "tanh",
    "tensor",
    "topk",
    "tril",
    "triu",
    "utils",
    "where",
    "zeros",
    "zeros_like",
]
