"""Neural-network building blocks; `minilucid.nn.functional` holds the functions."""

from minilucid.nn import functional, init, utils
from minilucid.nn.activation import Flatten, ReLU, Sigmoid, Tanh
from minilucid.nn.attention import GELU, Embedding, ModuleList
from minilucid.nn.container import ModuleDict, Sequential
from minilucid.nn.conv import Conv2d
from minilucid.nn.dropout import Dropout
from minilucid.nn.linear import Linear
from minilucid.nn.loss import CrossEntropyLoss, MSELoss
from minilucid.nn.module import Module
from minilucid.nn.normalization import BatchNorm1d, BatchNorm2d, LayerNorm
from minilucid.nn.parameter import Parameter
from minilucid.nn.pooling import AvgPool2d, MaxPool2d

__all__ = [
    "AvgPool2d",
    "BatchNorm1d",
    "BatchNorm2d",
    "Conv2d",
    "CrossEntropyLoss",
    "Dropout",
    "Embedding",
    "Flatten",
    "GELU",
    "LayerNorm",
    "Linear",
    "MSELoss",
    "MaxPool2d",
    "Module",
    "ModuleDict",
    "ModuleList",
    "Parameter",
    "ReLU",
    "Sequential",
    "Sigmoid",
    "Tanh",
    "functional",
    "init",
    "utils",
]
