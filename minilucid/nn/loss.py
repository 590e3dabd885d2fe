"""Loss layers: modules around the loss functions of chapter 05."""

from minilucid.nn import functional as F
from minilucid.nn.module import Module
from minilucid.tensor import Tensor


class CrossEntropyLoss(Module):
    """loss(logits, targets): the mean over the batch of -log softmax(logits)[target]."""

    def forward(self, logits: Tensor, targets) -> Tensor:
        return F.cross_entropy(logits, targets)


class MSELoss(Module):
    """loss(prediction, target): the mean of the squared differences."""

    def forward(self, prediction: Tensor, target) -> Tensor:
        return F.mse_loss(prediction, target)
