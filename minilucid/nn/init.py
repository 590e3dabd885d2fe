"""Initialisation: fill a parameter in place with numbers of the right scale.

PyTorch's `torch.nn.init`. Each function writes into `tensor.data` (no graph is recorded) and
returns the tensor. The random ones draw from `minilucid.rand`/`randn`, so `manual_seed`
repeats them.
"""

import math

from minilucid.creation import rand, randn
from minilucid.tensor import Tensor, float64

__all__ = [
    "calculate_gain",
    "constant_",
    "kaiming_normal_",
    "kaiming_uniform_",
    "normal_",
    "ones_",
    "uniform_",
    "xavier_normal_",
    "xavier_uniform_",
    "zeros_",
]


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """The factor that keeps the variance of activations steady through `nonlinearity`."""
    if nonlinearity in ("linear", "identity", "sigmoid") or nonlinearity.startswith("conv"):
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else param
        return math.sqrt(2.0 / (1 + slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(
        f"calculate_gain: unknown nonlinearity {nonlinearity!r}; use 'linear', 'sigmoid', "
        "'tanh', 'relu', 'leaky_relu', 'selu' or 'conv1d'/'conv2d'/'conv3d'"
    )


def constant_(tensor: Tensor, val: float) -> Tensor:
    tensor.data[...] = val
    return tensor


def zeros_(tensor: Tensor) -> Tensor:
    return constant_(tensor, 0.0)


def ones_(tensor: Tensor) -> Tensor:
    return constant_(tensor, 1.0)


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0) -> Tensor:
    """Numbers drawn evenly from [a, b)."""
    tensor.data[...] = a + (b - a) * rand(tensor.shape, dtype=float64).data
    return tensor


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0) -> Tensor:
    """Numbers from the normal distribution with this mean and standard deviation."""
    tensor.data[...] = mean + std * randn(tensor.shape, dtype=float64).data
    return tensor


def xavier_uniform_(tensor: Tensor, gain: float = 1.0) -> Tensor:
    """Glorot & Bengio (2010): std = gain * sqrt(2 / (fan_in + fan_out)), drawn uniformly."""
    fan_in, fan_out = _fans(tensor, "xavier_uniform_")
    bound = math.sqrt(3.0) * gain * math.sqrt(2.0 / (fan_in + fan_out))  # U(-b, b) has std b/√3
    return uniform_(tensor, -bound, bound)


def xavier_normal_(tensor: Tensor, gain: float = 1.0) -> Tensor:
    fan_in, fan_out = _fans(tensor, "xavier_normal_")
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)))


def kaiming_uniform_(
    tensor: Tensor, a: float = 0.0, mode: str = "fan_in", nonlinearity: str = "leaky_relu"
) -> Tensor:
    """He et al. (2015): std = gain / sqrt(fan), drawn uniformly; `a` is leaky_relu's slope."""
    std = calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode, "kaiming_uniform_"))
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound)


def kaiming_normal_(
    tensor: Tensor, a: float = 0.0, mode: str = "fan_in", nonlinearity: str = "leaky_relu"
) -> Tensor:
    std = calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode, "kaiming_normal_"))
    return normal_(tensor, 0.0, std)


def _fans(tensor: Tensor, where: str) -> tuple[int, int]:
    """(fan_in, fan_out) of a weight of shape (out, in, *kernel): in * kernel, out * kernel."""
    if tensor.ndim < 2:
        raise ValueError(
            f"{where}: needs a weight with at least 2 dimensions (out, in, ...), got shape "
            f"{tensor.shape}; initialise a bias with uniform_ or zeros_ instead"
        )
    receptive = math.prod(tensor.shape[2:])
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def _fan(tensor: Tensor, mode: str, where: str) -> int:
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"{where}: mode must be 'fan_in' or 'fan_out', got {mode!r}")
    fan_in, fan_out = _fans(tensor, where)
    fan = fan_in if mode == "fan_in" else fan_out
    if fan == 0:
        raise ValueError(f"{where}: a weight of shape {tensor.shape} has a fan of 0")
    return fan
