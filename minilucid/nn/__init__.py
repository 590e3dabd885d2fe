"""Neural-network building blocks; `minilucid.nn.functional` holds the functions."""

from minilucid.nn import functional, init, utils
from minilucid.nn.activation import Flatten, ReLU, Sigmoid, Tanh
from minilucid.nn.container import Sequential
from minilucid.nn.dropout import Dropout
from minilucid.nn.linear import Linear
from minilucid.nn.loss import CrossEntropyLoss, MSELoss
from minilucid.nn.module import Module
from minilucid.nn.normalization import BatchNorm1d, BatchNorm2d, LayerNorm
from minilucid.nn.parameter import Parameter

__all__ = [
    "BatchNorm1d",
    "BatchNorm2d",
    "CrossEntropyLoss",
    "Dropout",
    "Flatten",
    "LayerNorm",
    "Linear",
    "MSELoss",
    "Module",
    "Parameter",
    "ReLU",
    "Sequential",
    "Sigmoid",
    "Tanh",
    "functional",
    "init",
    "utils",
]
