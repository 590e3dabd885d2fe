"""Neural-network building blocks; `minilucid.nn.functional` holds the functions."""

from minilucid.nn import functional, init, utils
from minilucid.nn.activation import Flatten, ReLU, Sigmoid, Tanh
from minilucid.nn.container import Sequential
from minilucid.nn.linear import Linear
from minilucid.nn.loss import CrossEntropyLoss, MSELoss
from minilucid.nn.module import Module
from minilucid.nn.parameter import Parameter

__all__ = [
    "CrossEntropyLoss",
    "Flatten",
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
