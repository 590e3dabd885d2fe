"""Batch and layer normalisation: shift and scale activations to mean 0 and variance 1, then
let a learned scale (weight) and shift (bias) choose the ones the next layer gets.

Batch norm is a composition of the engine's ops (mean, -, *, /, sqrt): its gradients come from
autodiff, with no backward of its own. Layer norm is the same composition made one op
(minilucid.ops.normalization), with its backward written out: transformers call it often.
"""

import numpy as np

from minilucid.nn.module import Module
from minilucid.nn.parameter import Parameter
from minilucid.ops.normalization import LayerNormOp
from minilucid.tensor import Tensor, float32


def batch_norm(
    x: Tensor,
    running_mean: Tensor | None,
    running_var: Tensor | None,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    training: bool = False,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Tensor:
    """Normalise each channel (axis 1) over the batch and every axis after the channels.

    training: the batch's mean and (biased) variance, and the running statistics move towards
    them by `momentum` (the variance unbiased, n / (n - 1), as in PyTorch); otherwise the running
    statistics are used. Without running statistics the batch's are always used.
    """
    if x.ndim < 2:
        raise ValueError(f"batch_norm: expected an input (N, C, ...), got shape {x.shape}")
    channels = x.shape[1]
    for name, t in (("running_mean", running_mean), ("running_var", running_var),
                    ("weight", weight), ("bias", bias)):  # fmt: skip
        if t is not None and t.shape != (channels,):
            raise ValueError(
                f"batch_norm: the input {x.shape} has {channels} channels (axis 1), but "
                f"{name} has shape {t.shape}; they must agree"
            )
    axes = (0, *range(2, x.ndim))  # every axis but the channels'
    per_channel = (1, channels) + (1,) * (x.ndim - 2)  # (C,) -> broadcasts against x
    if training or running_mean is None:
        count = x.data.size // channels if channels else 0
        if count <= 1:
            raise ValueError(
                f"batch_norm: expected more than 1 value per channel when training, got an "
                f"input of shape {x.shape}. Use a batch of 2 or more, or call model.eval()."
            )
        mean = x.mean(dim=axes, keepdim=True)
        centred = x - mean
        var = (centred * centred).mean(dim=axes, keepdim=True)  # biased: divides by n
        if training and running_mean is not None:
            m = momentum
            running_mean.data[...] = (1 - m) * running_mean.data + m * mean.data.reshape(-1)
            unbiased = var.data.reshape(-1) * (count / (count - 1))
            running_var.data[...] = (1 - m) * running_var.data + m * unbiased
        out = centred / (var + eps).sqrt()
    else:
        mean = running_mean.data.reshape(per_channel).astype(x.dtype)
        std = np.sqrt(running_var.data.reshape(per_channel) + eps).astype(x.dtype)
        out = (x - mean) / std
    if weight is not None:
        out = out * weight.reshape(per_channel)
    if bias is not None:
        out = out + bias.reshape(per_channel)
    return out


def layer_norm(
    x: Tensor,
    normalized_shape: tuple,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
) -> Tensor:
    """Normalise each example over its last len(normalized_shape) axes (no batch statistics)."""
    shape = _shape(normalized_shape)
    if not shape or tuple(x.shape[x.ndim - len(shape) :]) != shape or x.ndim < len(shape):
        raise ValueError(
            f"layer_norm: normalized_shape {shape} must equal the last {len(shape)} "
            f"dimension(s) of the input, but the input has shape {x.shape}"
        )
    affine = tuple(t for t in (weight, bias) if t is not None)
    parts = ("w" if weight is not None else "") + ("b" if bias is not None else "")
    return LayerNormOp.apply(x, *affine, dims=len(shape), eps=eps, parts=parts)


class _BatchNorm(Module):
    """What BatchNorm1d and BatchNorm2d share; they differ only in the inputs they accept."""

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float = 0.1,
                 affine: bool = True, bias: bool = True, track_running_stats: bool = True,
                 dtype=None):  # fmt: skip
        super().__init__()
        if isinstance(momentum, bool) or not isinstance(momentum, int | float):
            raise ValueError(
                f"{type(self).__name__}: momentum must be a number in [0, 1], got {momentum!r} "
                "(PyTorch's momentum=None, a cumulative average, is not offered)"
            )
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        dtype = float32 if dtype is None else dtype
        self.weight = Parameter(np.ones(num_features, dtype=dtype)) if affine else None
        has_bias = affine and bias
        self.bias = Parameter(np.zeros(num_features, dtype=dtype)) if has_bias else None
        if track_running_stats:
            self.register_buffer("running_mean", Tensor(np.zeros(num_features, dtype=dtype)))
            self.register_buffer("running_var", Tensor(np.ones(num_features, dtype=dtype)))
            self.register_buffer("num_batches_tracked", Tensor(np.array(0, dtype=np.int64)))
        else:
            self.running_mean = self.running_var = self.num_batches_tracked = None

    def _check_input(self, x: Tensor) -> None:
        raise NotImplementedError

    def forward(self, x: Tensor) -> Tensor:
        self._check_input(x)
        if x.shape[1] != self.num_features:
            raise ValueError(
                f"{self!r}: got an input of shape {x.shape} with {x.shape[1]} channels (axis "
                f"1), but the layer was built for num_features = {self.num_features}"
            )
        if self.training and x.data.size // max(x.shape[1], 1) <= 1:
            raise ValueError(
                f"{self!r}: expected more than 1 value per channel when training, got an input "
                f"of shape {x.shape}. Use a batch of 2 or more, or call model.eval() first."
            )
        if self.training and self.track_running_stats:
            self.num_batches_tracked.data[...] += 1
        return batch_norm(
            x, self.running_mean, self.running_var, self.weight, self.bias,
            self.training or not self.track_running_stats, self.momentum, self.eps,
        )  # fmt: skip

    def extra_repr(self) -> str:
        return (
            f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
            f"affine={self.affine}, bias={self.bias is not None}, "
            f"track_running_stats={self.track_running_stats}"
        )


class BatchNorm1d(_BatchNorm):
    """Batch norm of (N, C) or (N, C, L) inputs: each of the C features over the batch."""

    def _check_input(self, x: Tensor) -> None:
        if x.ndim not in (2, 3):
            raise ValueError(
                f"{self!r}: expected a 2-D (N, C) or 3-D (N, C, L) input, got shape {x.shape}"
            )


class BatchNorm2d(_BatchNorm):
    """Batch norm of (N, C, H, W) images: each of the C channels over the batch and all pixels."""

    def _check_input(self, x: Tensor) -> None:
        if x.ndim != 4:
            raise ValueError(f"{self!r}: expected a 4-D (N, C, H, W) input, got shape {x.shape}")


class LayerNorm(Module):
    """Normalises each example over its last dims (normalized_shape), then scales and shifts."""

    def __init__(self, normalized_shape, eps: float = 1e-5, elementwise_affine: bool = True,
                 bias: bool = True, dtype=None):  # fmt: skip
        super().__init__()
        self.normalized_shape = _shape(normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        dtype = float32 if dtype is None else dtype
        affine = elementwise_affine
        self.weight = Parameter(np.ones(self.normalized_shape, dtype=dtype)) if affine else None
        has_bias = affine and bias
        self.bias = Parameter(np.zeros(self.normalized_shape, dtype=dtype)) if has_bias else None

    def forward(self, x: Tensor) -> Tensor:
        k = len(self.normalized_shape)
        if x.ndim < k or tuple(x.shape[x.ndim - k :]) != self.normalized_shape:
            raise ValueError(
                f"{self!r}: got an input of shape {x.shape}, whose last {k} dimension(s) should "
                f"be normalized_shape = {self.normalized_shape}. Build the layer with the "
                f"input's trailing shape, e.g. LayerNorm({x.shape[-1] if x.ndim else 1})."
            )
        return layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (
            f"{self.normalized_shape}, eps={self.eps}, "
            f"elementwise_affine={self.elementwise_affine}, bias={self.bias is not None}"
        )


def _shape(normalized_shape) -> tuple:
    """An int or a sequence of ints -> a tuple, as LayerNorm takes it."""
    if isinstance(normalized_shape, int | np.integer):
        return (int(normalized_shape),)
    return tuple(int(n) for n in normalized_shape)
