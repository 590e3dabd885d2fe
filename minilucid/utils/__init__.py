"""PyTorch's `torch.utils`, as far as minilucid has it: `minilucid.utils.data` is the module
`minilucid.data` itself (chapter 09), so that `torch.utils.data.DataLoader` reads the same."""

from minilucid import data

__all__ = ["data"]
