"""minilucid.data: Dataset, TensorDataset, Subset, random_split, DataLoader, default_collate.

The loader's batch counts, batch sizes, drop_last and unshuffled order are compared with
PyTorch's when it is installed. Shuffled orders cannot be equal to PyTorch's (another random
number generator), so what is tested is what matters: every epoch is a permutation of the
dataset, the same seed gives the same epochs, and consecutive epochs differ.
"""

import numpy as np
import pytest

import minilucid as ml
from minilucid.data import (
    DataLoader,
    Dataset,
    Subset,
    TensorDataset,
    default_collate,
    random_split,
)

try:
    import torch
    import torch.utils.data as tdata
except ImportError:  # the optional oracle
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")


def numbered(n: int) -> TensorDataset:
    """Example i is (a row of three copies of i as float32, the label i)."""
    x = np.repeat(np.arange(n, dtype=np.float32)[:, None], 3, axis=1)
    return TensorDataset(ml.tensor(x), ml.tensor(np.arange(n)))


def labels_of(loader) -> list[list[int]]:
    return [y.data.tolist() for _, y in loader]


# --------------------------------------------------------------------------------------------
# datasets


def test_tensor_dataset_items_and_length():
    ds = numbered(5)
    assert len(ds) == 5
    x, y = ds[3]
    assert isinstance(x, ml.Tensor) and isinstance(y, ml.Tensor)
    assert x.data.tolist() == [3.0, 3.0, 3.0] and y.item() == 3
    assert x.dtype == np.float32 and y.dtype == np.int64


def test_tensor_dataset_rejects_different_lengths():
    with pytest.raises(ValueError, match=r"TensorDataset: tensors of shapes \(4, 2\), \(3,\)"):
        TensorDataset(ml.zeros(4, 2), ml.zeros(3))


def test_tensor_dataset_rejects_nothing_and_scalars():
    with pytest.raises(ValueError, match="at least one tensor"):
        TensorDataset()
    with pytest.raises(ValueError, match="same first dimension"):
        TensorDataset(ml.tensor(1.0))


def test_base_dataset_says_what_to_define():
    with pytest.raises(NotImplementedError, match="Empty must define __len__"):

        class Empty(Dataset):
            pass

        len(Empty())


def test_subset_maps_indices_and_batches():
    sub = Subset(numbered(10), [7, 2, 5])
    assert len(sub) == 3
    assert sub[0][1].item() == 7
    x, y = sub.get_batch(np.array([2, 0]))
    assert y.data.tolist() == [5, 7] and x.shape == (2, 3)


# --------------------------------------------------------------------------------------------
# DataLoader without shuffling: exactly PyTorch's batches


@pytest.mark.parametrize(
    "n, batch_size, drop_last",
    [
        (10, 3, False),
        (10, 3, True),
        (10, 5, False),
        (10, 5, True),
        (3, 7, False),
        (3, 7, True),
        (1797, 64, False),
        (1797, 64, True),
        (0, 4, False),
    ],
)
def test_batch_counts_and_sizes(n, batch_size, drop_last):
    loader = DataLoader(numbered(n), batch_size=batch_size, drop_last=drop_last)
    sizes = [len(y) for _, y in loader]
    full, rest = divmod(n, batch_size)
    expected = [batch_size] * full + ([rest] if rest and not drop_last else [])
    assert sizes == expected
    assert len(loader) == len(expected)


@needs_torch
@pytest.mark.parametrize(
    "n, batch_size, drop_last",
    [
        (10, 3, False),
        (10, 3, True),
        (10, 1, False),
        (3, 7, False),
        (3, 7, True),
        (100, 32, True),
    ],
)
def test_unshuffled_batches_equal_torch(n, batch_size, drop_last):
    ours = DataLoader(numbered(n), batch_size=batch_size, drop_last=drop_last)
    x = torch.arange(n, dtype=torch.float32)[:, None].repeat(1, 3)
    theirs = tdata.DataLoader(
        tdata.TensorDataset(x, torch.arange(n)), batch_size=batch_size, drop_last=drop_last
    )
    assert len(ours) == len(theirs)
    pairs = list(zip(ours, theirs, strict=True))
    assert len(pairs) == len(theirs)
    for (xa, ya), (xb, yb) in pairs:
        np.testing.assert_array_equal(xa.data, xb.numpy())
        np.testing.assert_array_equal(ya.data, yb.numpy())
        assert xa.dtype == np.float32 and ya.dtype == np.int64


@needs_torch
def test_shuffled_batch_shapes_equal_torch():
    torch.manual_seed(0)
    ours = DataLoader(numbered(50), batch_size=8, shuffle=True, drop_last=True)
    x = torch.zeros(50, 3)
    theirs = tdata.DataLoader(
        tdata.TensorDataset(x, torch.arange(50)), batch_size=8, shuffle=True, drop_last=True
    )
    assert [tuple(b[0].shape) for b in ours] == [tuple(b[0].shape) for b in theirs]


def test_batches_are_tuples_of_tensors():
    batch = next(iter(DataLoader(numbered(6), batch_size=4)))
    assert isinstance(batch, tuple) and len(batch) == 2
    x, y = batch
    assert x.shape == (4, 3) and y.shape == (4,)
    assert not x.requires_grad and x.is_leaf


# --------------------------------------------------------------------------------------------
# DataLoader with shuffling


def test_each_shuffled_epoch_is_a_permutation():
    loader = DataLoader(
        numbered(23), batch_size=5, shuffle=True, generator=np.random.default_rng(1)
    )
    for _ in range(3):
        seen = [i for batch in labels_of(loader) for i in batch]
        assert sorted(seen) == list(range(23))


def test_shuffle_is_reproducible_from_a_generator_seed():
    def epochs(seed):
        loader = DataLoader(
            numbered(20), batch_size=4, shuffle=True, generator=np.random.default_rng(seed)
        )
        return [labels_of(loader) for _ in range(3)]

    first, again, other = epochs(7), epochs(7), epochs(8)
    assert first == again
    assert first != other


def test_shuffle_differs_from_epoch_to_epoch():
    loader = DataLoader(
        numbered(20), batch_size=4, shuffle=True, generator=np.random.default_rng(0)
    )
    e1, e2 = labels_of(loader), labels_of(loader)
    assert e1 != e2
    assert e1 != labels_of(DataLoader(numbered(20), batch_size=4))  # it does shuffle


def test_shuffle_without_a_generator_follows_manual_seed():
    loader = DataLoader(numbered(20), batch_size=4, shuffle=True)
    ml.manual_seed(3)
    first = [labels_of(loader), labels_of(loader)]
    ml.manual_seed(3)
    again = [labels_of(loader), labels_of(loader)]
    assert first == again and first[0] != first[1]


def test_drop_last_drops_only_the_short_batch_when_shuffled():
    loader = DataLoader(
        numbered(10), batch_size=4, shuffle=True, drop_last=True, generator=np.random.default_rng(0)
    )
    batches = labels_of(loader)
    assert [len(b) for b in batches] == [4, 4]
    assert len(set(sum(batches, []))) == 8


# --------------------------------------------------------------------------------------------
# any dataset, collate


class Squares(Dataset):
    """Example i is (float i, i squared): plain Python numbers."""

    def __len__(self):
        return 5

    def __getitem__(self, i):
        return float(i), i * i


def test_a_dataset_of_plain_numbers_is_collated():
    batches = list(DataLoader(Squares(), batch_size=2))
    assert [len(b[0]) for b in batches] == [2, 2, 1]
    x, y = batches[1]
    assert x.data.tolist() == [2.0, 3.0] and y.data.tolist() == [4, 9]
    assert y.dtype == np.int64


def test_a_plain_list_works_as_a_dataset():
    pairs = [(np.array([i, i], dtype=np.float32), i) for i in range(5)]
    x, y = next(iter(DataLoader(pairs, batch_size=3)))
    assert x.shape == (3, 2) and y.data.tolist() == [0, 1, 2]


def test_collate_fn_replaces_the_default():
    loader = DataLoader(Squares(), batch_size=2, collate_fn=lambda samples: len(samples))
    assert list(loader) == [2, 2, 1]


def test_default_collate_stacks_tensors_and_refuses_strings():
    x, y = default_collate([(ml.tensor([1.0, 2.0]), 0), (ml.tensor([3.0, 4.0]), 1)])
    assert x.shape == (2, 2) and y.data.tolist() == [0, 1]
    with pytest.raises(TypeError, match="default_collate: do not know how to batch .* str"):
        default_collate(["a", "b"])


def test_get_batch_of_tensor_dataset_equals_item_by_item():
    ds = numbered(9)
    idx = np.array([4, 0, 8])
    fast = ds.get_batch(idx)
    slow = Dataset.get_batch(ds, idx)
    for a, b in zip(fast, slow, strict=True):
        np.testing.assert_array_equal(a.data, b.data)
        assert a.dtype == b.dtype


# --------------------------------------------------------------------------------------------
# bad input


@pytest.mark.parametrize("size", [0, -3])
def test_batch_size_zero_or_negative_is_refused_by_value(size):
    with pytest.raises(
        ValueError, match=f"DataLoader: batch_size must be a positive integer, got {size}"
    ):
        DataLoader(numbered(4), batch_size=size)


@pytest.mark.parametrize("size", [2.0, "8", True, None])
def test_batch_size_of_another_type_is_refused(size):
    with pytest.raises(TypeError, match="DataLoader: batch_size must be a positive integer"):
        DataLoader(numbered(4), batch_size=size)


def test_a_generator_that_is_not_a_numpy_generator_is_refused():
    loader = DataLoader(numbered(4), batch_size=2, shuffle=True, generator=42)
    with pytest.raises(TypeError, match="NumPy Generator such as np.random.default_rng"):
        list(loader)


# --------------------------------------------------------------------------------------------
# random_split


def test_random_split_partitions_and_is_seeded():
    ds = numbered(30)
    parts = random_split(ds, [20, 6, 4], generator=np.random.default_rng(0))
    assert [len(p) for p in parts] == [20, 6, 4]
    indices = np.concatenate([p.indices for p in parts])
    assert sorted(indices.tolist()) == list(range(30))
    again = random_split(ds, [20, 6, 4], generator=np.random.default_rng(0))
    other = random_split(ds, [20, 6, 4], generator=np.random.default_rng(1))
    assert all((a.indices == b.indices).all() for a, b in zip(parts, again, strict=True))
    assert any((a.indices != b.indices).any() for a, b in zip(parts, other, strict=True))
    assert parts[0][0][1].item() == parts[0].indices[0]  # items come from the dataset


def test_random_split_without_generator_follows_manual_seed():
    ml.manual_seed(5)
    first = random_split(numbered(12), [6, 6])[0].indices
    ml.manual_seed(5)
    assert (random_split(numbered(12), [6, 6])[0].indices == first).all()


@pytest.mark.parametrize(
    "n, fractions",
    [(10, [0.7, 0.3]), (11, [0.5, 0.25, 0.25]), (1797, [0.8, 0.1, 0.1]), (7, [1 / 3] * 3)],
)
def test_random_split_fractions_give_torchs_lengths(n, fractions):
    ours = [len(p) for p in random_split(numbered(n), fractions)]
    assert sum(ours) == n
    if torch is not None:
        theirs = [len(p) for p in tdata.random_split(range(n), fractions)]
        assert ours == theirs


@pytest.mark.parametrize("lengths", [[5, 4], [5, 6], [-1, 11], [0.5, 0.4], [2.5, 7.5]])
def test_random_split_refuses_lengths_that_do_not_add_up(lengths):
    with pytest.raises(ValueError, match=r"random_split: lengths .* add up to the dataset's 10"):
        random_split(numbered(10), lengths)


def test_loader_over_a_split_batches_the_subset():
    train, _ = random_split(numbered(10), [6, 4], generator=np.random.default_rng(0))
    got = [i for batch in labels_of(DataLoader(train, batch_size=4)) for i in batch]
    assert got == train.indices.tolist()
