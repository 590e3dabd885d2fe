"""Neural-network building blocks; `minilucid.nn.functional` holds the functions."""

from minilucid.nn import functional

__all__ = ["functional"]
