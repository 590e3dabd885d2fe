"""Datasets (sized collections of examples), ways to split them, and the DataLoader."""

import math

import numpy as np

from minilucid.creation import rand
from minilucid.tensor import Tensor, float64


class Dataset:
    """A sized collection of examples: define `__len__` and `__getitem__(i)` in a subclass."""

    def __len__(self) -> int:
        raise NotImplementedError(f"{type(self).__name__} must define __len__")

    def __getitem__(self, index: int):
        raise NotImplementedError(f"{type(self).__name__} must define __getitem__")

    def get_batch(self, indices: np.ndarray):
        """The examples at `indices`, collated into one batch (one item at a time here)."""
        return default_collate([self[int(i)] for i in indices])


class TensorDataset(Dataset):
    """Example i is `(t[i] for t in tensors)`: inputs and targets that share their first axis."""

    def __init__(self, *tensors: Tensor) -> None:
        if not tensors:
            raise ValueError("TensorDataset: give at least one tensor, e.g. TensorDataset(x, y)")
        tensors = tuple(t if isinstance(t, Tensor) else Tensor(t) for t in tensors)
        lengths = [t.shape[0] if t.ndim > 0 else None for t in tensors]
        if None in lengths or len(set(lengths)) > 1:
            shapes = ", ".join(str(t.shape) for t in tensors)
            raise ValueError(
                f"TensorDataset: tensors of shapes {shapes} - every tensor needs the same "
                "first dimension, one row per example"
            )
        self.tensors = tensors

    def __len__(self) -> int:
        return self.tensors[0].shape[0]

    def __getitem__(self, index):
        return tuple(Tensor(t.data[index]) for t in self.tensors)

    def get_batch(self, indices: np.ndarray) -> tuple:
        # one fancy-indexing copy per tensor instead of len(indices) items stacked together
        return tuple([Tensor(t.data[indices]) for t in self.tensors])


class Subset(Dataset):
    """The examples of `dataset` at `indices`, in that order."""

    def __init__(self, dataset, indices) -> None:
        self.dataset = dataset
        self.indices = np.asarray(indices, dtype=np.int64)

    def __len__(self) -> int:
        return len(self.indices)

    def __getitem__(self, index):
        return self.dataset[int(self.indices[index])]

    def get_batch(self, indices: np.ndarray):
        inner = self.indices[indices]
        if hasattr(self.dataset, "get_batch"):
            return self.dataset.get_batch(inner)
        return Dataset.get_batch(self, indices)


def random_split(dataset, lengths, generator: np.random.Generator | None = None) -> list:
    """Shuffle `dataset` once and cut it into Subsets of the given lengths (or fractions)."""
    n = len(dataset)
    lengths = list(lengths)
    if lengths and all(isinstance(x, float) for x in lengths) and math.isclose(sum(lengths), 1):
        counts = [math.floor(n * f) for f in lengths]
        for i in range(n - sum(counts)):  # hand out the remainder one by one
            counts[i % len(counts)] += 1
        lengths = counts
    if any(not isinstance(x, int | np.integer) or x < 0 for x in lengths) or sum(lengths) != n:
        raise ValueError(
            f"random_split: lengths {lengths} must be non-negative integers that add up to the "
            f"dataset's {n} examples (or fractions that add up to 1)"
        )
    order = _generator(generator).permutation(n)
    ends = np.cumsum(lengths)
    return [Subset(dataset, order[end - k : end]) for k, end in zip(lengths, ends, strict=True)]


def _generator(generator: np.random.Generator | None) -> np.random.Generator:
    """The generator to shuffle with: the one given, or one seeded from minilucid's own stream."""
    if generator is None:
        # a draw from the stream that ml.manual_seed resets, so a seeded program repeats
        seed = int(rand(1, dtype=float64).item() * 2**53)
        return np.random.default_rng(seed)
    if not isinstance(generator, np.random.Generator):
        raise TypeError(
            f"generator must be a NumPy Generator such as np.random.default_rng(0), "
            f"not {type(generator).__name__}"
        )
    return generator


def default_collate(samples: list):
    """A list of examples -> one batch: tuples column by column, tensors and numbers stacked."""
    first = samples[0]
    if isinstance(first, tuple | list):
        return tuple(default_collate(list(column)) for column in zip(*samples, strict=True))
    if isinstance(first, Tensor):
        return Tensor(np.stack([s.data for s in samples]))
    if isinstance(first, np.ndarray | np.generic | int | float):
        return Tensor(np.array(samples))
    raise TypeError(
        f"default_collate: do not know how to batch examples of type {type(first).__name__}; "
        "return tensors, arrays or numbers from __getitem__, or pass collate_fn="
    )


class DataLoader:
    """Iterate over `dataset` in batches of `batch_size`; `shuffle` draws a new order each epoch."""

    def __init__(
        self,
        dataset,
        batch_size: int = 1,
        shuffle: bool = False,
        drop_last: bool = False,
        generator: np.random.Generator | None = None,
        collate_fn=None,
    ) -> None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int | np.integer):
            raise TypeError(
                f"DataLoader: batch_size must be a positive integer, got {batch_size!r} "
                f"of type {type(batch_size).__name__}"
            )
        if batch_size <= 0:
            raise ValueError(
                f"DataLoader: batch_size must be a positive integer, got {batch_size}; "
                "use e.g. batch_size=32"
            )
        self.dataset = dataset
        self.batch_size = int(batch_size)
        self.shuffle = shuffle
        self.drop_last = drop_last
        self.generator = generator
        self.collate_fn = collate_fn

    def __len__(self) -> int:
        n, b = len(self.dataset), self.batch_size
        return n // b if self.drop_last else -(-n // b)

    def __iter__(self):
        n = len(self.dataset)
        order = _generator(self.generator).permutation(n) if self.shuffle else np.arange(n)
        stop, size, fetch = len(self) * self.batch_size, self.batch_size, self._fetcher()
        for start in range(0, min(stop, n), size):
            yield fetch(order[start : start + size])

    def _fetcher(self):
        """How a batch is made from its indices: the dataset's own get_batch when it has one
        and no collate_fn is given (one indexing per tensor), else item by item, collated."""
        if self.collate_fn is None and hasattr(self.dataset, "get_batch"):
            return self.dataset.get_batch
        collate, dataset = self.collate_fn or default_collate, self.dataset
        return lambda indices: collate([dataset[int(i)] for i in indices])
