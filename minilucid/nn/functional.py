"""Functions of neural networks, PyTorch's `torch.nn.functional` in miniature."""

import numpy as np

from minilucid.nn.attention import scaled_dot_product_attention
from minilucid.nn.dropout import dropout
from minilucid.nn.normalization import batch_norm, layer_norm
from minilucid.ops.attention import embedding, gelu
from minilucid.ops.conv import avg_pool2d, conv2d, max_pool2d
from minilucid.ops.linalg import Affine
from minilucid.ops.softmax import CrossEntropy, LogSoftmax, Softmax
from minilucid.ops.unary import relu, sigmoid, tanh
from minilucid.tensor import Tensor

__all__ = [
    "avg_pool2d",
    "batch_norm",
    "conv2d",
    "cross_entropy",
    "dropout",
    "embedding",
    "gelu",
    "layer_norm",
    "linear",
    "log_softmax",
    "max_pool2d",
    "mse_loss",
    "relu",
    "scaled_dot_product_attention",
    "sigmoid",
    "softmax",
    "tanh",
]


def softmax(x: Tensor, dim: int = -1) -> Tensor:
    return Softmax.apply(x, dim=dim)


def log_softmax(x: Tensor, dim: int = -1) -> Tensor:
    return LogSoftmax.apply(x, dim=dim)


def cross_entropy(logits: Tensor, targets) -> Tensor:
    """Mean of -log softmax(logits)[target] over the batch; targets are class indices."""
    targets = np.asarray(targets.data if isinstance(targets, Tensor) else targets)
    if logits.ndim == 1 and targets.ndim == 0:  # one sample: (classes,) and its class
        return CrossEntropy.apply(logits.unsqueeze(0), targets.reshape(1))
    return CrossEntropy.apply(logits, targets)


def mse_loss(prediction: Tensor, target) -> Tensor:
    """Mean of the squared differences; the two shapes must be equal."""
    target_shape = np.shape(target.data if isinstance(target, Tensor) else target)
    if tuple(prediction.shape) != tuple(target_shape):
        raise ValueError(
            f"mse_loss: prediction {prediction.shape} and target {target_shape} differ; "
            "broadcasting them would compare every pair. Reshape one to match the other."
        )
    diff = prediction - target
    return (diff * diff).mean()


def linear(x: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """x @ weight.T + bias: weight has shape (out_features, in_features), as in PyTorch."""
    if bias is None:
        return Affine.apply(x, weight)
    return Affine.apply(x, weight, bias)
