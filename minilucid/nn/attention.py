"""What a transformer adds to nn (chapter 13): scaled dot-product attention, built from the
ops of earlier chapters, and the layers Embedding, GELU and ModuleList (to hold blocks)."""

import math

import numpy as np

from minilucid.creation import randn
from minilucid.nn.dropout import dropout
from minilucid.nn.module import Module
from minilucid.nn.parameter import Parameter
from minilucid.ops.attention import check_broadcasts_to, embedding, gelu
from minilucid.ops.sdpa import ScaledDotProductAttention, weights
from minilucid.tensor import Tensor, float32


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
    keep = mask = None  # keep: which pairs attend (bool); mask: added to the scores (float)
    if is_causal:
        if attn_mask is not None:
            raise ValueError(
                "scaled_dot_product_attention: give attn_mask or is_causal=True, not both"
            )
        keep = np.tri(L, S, dtype=bool)
    if attn_mask is not None:
        array = np.asarray(attn_mask.data if isinstance(attn_mask, Tensor) else attn_mask)
        scores_shape = (*np.broadcast_shapes(query.shape[:-2], key.shape[:-2]), L, S)
        check_broadcasts_to(array.shape, scores_shape, "scaled_dot_product_attention", "attn_mask")
        if array.dtype == bool:
            keep = array
        else:
            mask = attn_mask if isinstance(attn_mask, Tensor) else array
    if dropout_p > 0:  # the weights as ops of their own, so that dropout can act on them
        return dropout(weights(query, key, scale, keep, mask), dropout_p, training=True) @ value
    masks = () if mask is None else (mask,)
    return ScaledDotProductAttention.apply(query, key, value, *masks, scale=scale, keep=keep)


class Embedding(Module):
    """A learned table of num_embeddings vectors of size embedding_dim: index i picks row i.
    The weight starts as standard normal numbers, as in PyTorch."""

    def __init__(self, num_embeddings: int, embedding_dim: int, dtype=None):
        super().__init__()
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.weight = Parameter(randn(num_embeddings, embedding_dim, dtype=dtype or float32))

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
