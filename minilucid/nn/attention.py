"""What a transformer adds to nn (chapter 13): scaled dot-product attention, built from the
ops of earlier chapters, and the layers Embedding, GELU and ModuleList (to hold blocks)."""

import math

import numpy as np

from minilucid.creation import randn
from minilucid.nn.dropout import dropout
from minilucid.nn.module import Module
from minilucid.nn.parameter import Parameter
from minilucid.ops.attention import check_broadcasts_to, embedding, gelu, masked_fill
from minilucid.tensor import Tensor


def scaled_dot_product_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    attn_mask=None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale: float | None = None,
) -> Tensor:
    """softmax(query @ key^T * scale + mask) @ value on (..., L, E), (..., S, E), (..., S, Ev).

    scale defaults to 1/sqrt(E). A bool attn_mask says which pairs take part (True: attends);
    a float one is added to the scores. is_causal lets position i attend to 0..i only.
    """
    L, S = _check_attention_shapes(query, key, value)
    if scale is None:
        scale = 1 / math.sqrt(query.shape[-1])
    scores = (query @ key.transpose(-2, -1)) * scale  # (..., L, S)
    if is_causal:
        if attn_mask is not None:
            raise ValueError(
                "scaled_dot_product_attention: give attn_mask or is_causal=True, not both"
            )
        attn_mask = np.tri(L, S, dtype=bool)
    if attn_mask is not None:
        mask = np.asarray(attn_mask.data if isinstance(attn_mask, Tensor) else attn_mask)
        check_broadcasts_to(mask.shape, scores.shape, "scaled_dot_product_attention", "attn_mask")
        if mask.dtype == bool:
            scores = masked_fill(scores, ~mask, -math.inf)
        elif isinstance(attn_mask, Tensor) and attn_mask.dtype == scores.dtype:
            scores = scores + attn_mask
        else:
            scores = scores + mask.astype(scores.dtype)
    weights = scores.softmax(dim=-1)
    if dropout_p > 0:
        weights = dropout(weights, dropout_p, training=True)
    return weights @ value


class Embedding(Module):
    """A learned table of num_embeddings vectors of size embedding_dim: index i picks row i.
    The weight starts as standard normal numbers, as in PyTorch."""

    def __init__(self, num_embeddings: int, embedding_dim: int):
        super().__init__()
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.weight = Parameter(randn(num_embeddings, embedding_dim))

    def forward(self, input) -> Tensor:  # noqa: A002  (PyTorch's name)
        return embedding(input, self.weight)

    def extra_repr(self) -> str:
        return f"{self.num_embeddings}, {self.embedding_dim}"


class GELU(Module):
    """x * Phi(x), Phi the standard normal distribution function; approximate='tanh' for
    GPT-2's approximation."""

    def __init__(self, approximate: str = "none"):
        super().__init__()
        if approximate not in ("none", "tanh"):
            raise ValueError(f"GELU: approximate must be 'none' or 'tanh', got {approximate!r}")
        self.approximate = approximate

    def forward(self, x: Tensor) -> Tensor:
        return gelu(x, approximate=self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class ModuleList(Module):
    """A list of modules, each registered (its parameters are the model's), named '0', '1', ...
    Unlike Sequential it has no forward: the model decides how to call them."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def append(self, module: Module) -> "ModuleList":
        if not isinstance(module, Module):
            raise TypeError(
                f"ModuleList: item {len(self)} is a {type(module).__name__}, not a Module"
            )
        setattr(self, str(len(self)), module)
        return self

    def extend(self, modules) -> "ModuleList":
        for module in modules:
            self.append(module)
        return self

    def __getitem__(self, index):
        modules = list(self._modules.values())
        if isinstance(index, slice):
            return ModuleList(modules[index])
        try:
            return modules[index]
        except IndexError:
            raise IndexError(
                f"ModuleList: index {index} is out of range for {len(modules)} modules"
            ) from None

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())


def _check_attention_shapes(query, key, value) -> tuple:
    op = "scaled_dot_product_attention"
    shapes = f"query {query.shape}, key {key.shape}, value {value.shape}"
    if min(query.ndim, key.ndim, value.ndim) < 2:
        raise ValueError(f"{op}: inputs must be (..., length, features), got {shapes}")
    if query.shape[-1] != key.shape[-1]:
        raise ValueError(
            f"{op}: query and key need the same last dimension (E), got {shapes}; "
            "project both to the same width"
        )
    if key.shape[-2] != value.shape[-2]:
        raise ValueError(
            f"{op}: key and value need the same length (S, the second-to-last dimension), "
            f"got {shapes}"
        )
    try:
        np.broadcast_shapes(query.shape[:-2], key.shape[:-2], value.shape[:-2])
    except ValueError:
        raise ValueError(f"{op}: the batch dimensions do not broadcast, got {shapes}") from None
    return query.shape[-2], key.shape[-2]
