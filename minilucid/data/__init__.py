"""Datasets and the loader that cuts them into shuffled mini-batches (chapter 09)."""

from minilucid.data.loading import (
    DataLoader,
    Dataset,
    Subset,
    TensorDataset,
    default_collate,
    random_split,
)

__all__ = ["DataLoader", "Dataset", "Subset", "TensorDataset", "default_collate", "random_split"]
