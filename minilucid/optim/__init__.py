"""Optimisers: rules that turn gradients into parameter updates, and learning-rate schedules."""

from minilucid.optim import lr_scheduler
from minilucid.optim.adam import Adam, AdamW
from minilucid.optim.optimizer import Optimizer
from minilucid.optim.sgd import SGD

__all__ = ["SGD", "Adam", "AdamW", "Optimizer", "lr_scheduler"]
