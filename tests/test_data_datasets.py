"""minilucid.datasets: the shipped digits (shape, dtype, classes, split) and the toy sets."""

import zipfile

import numpy as np
import pytest

from minilucid.data import TensorDataset
from minilucid.datasets import DIGITS_SPLITS, digits, load_digits, make_moons, make_spirals
from minilucid.datasets.digits import FILE


def test_digits_file_is_small_plain_arrays():
    assert FILE.stat().st_size < 100_000
    with zipfile.ZipFile(FILE) as archive:
        assert sorted(archive.namelist()) == ["images.npy", "labels.npy", "split.npy"]
    with np.load(FILE, allow_pickle=False) as stored:  # would raise on pickled objects
        assert {k: stored[k].dtype for k in stored.files} == {
            "images": np.uint8,
            "labels": np.uint8,
            "split": np.uint8,
        }


def test_all_digits_shape_dtype_and_classes():
    images, labels = load_digits()
    assert images.shape == (1797, 8, 8) and images.dtype == np.uint8
    assert labels.shape == (1797,) and labels.dtype == np.int64
    assert images.min() == 0 and images.max() == 16
    counts = np.bincount(labels)
    assert len(counts) == 10 and counts.min() >= 170  # every digit, roughly balanced
    assert labels[:10].tolist() == list(range(10))  # the source's first ten rows are 0..9


def test_splits_partition_the_digits_with_stated_sizes():
    sizes = {name: len(load_digits(name)[1]) for name in ("train", "val", "test")}
    assert sizes == DIGITS_SPLITS == {"train": 1259, "val": 179, "test": 359}
    assert sum(sizes.values()) == 1797
    everything, _ = load_digits()
    parts = np.concatenate([load_digits(name)[0] for name in ("train", "val", "test")])
    # the same images, each exactly once (compare rows as bytes, order aside)
    key = lambda a: sorted(row.tobytes() for row in a)  # noqa: E731
    assert key(parts) == key(everything)


@pytest.mark.parametrize("split", ["train", "val", "test"])
def test_each_split_has_every_class_in_proportion(split):
    _, labels = load_digits(split)
    share = np.bincount(labels, minlength=10) / len(labels)
    assert np.all(np.abs(share - 0.1) < 0.02)


def test_digits_dataset_is_ready_for_an_mlp():
    ds = digits("test")
    assert isinstance(ds, TensorDataset) and len(ds) == 359
    x, y = ds.tensors
    assert x.shape == (359, 64) and x.dtype == np.float32
    assert y.dtype == np.int64 and 0.0 <= x.data.min() and x.data.max() == 1.0
    images, labels = load_digits("test")
    np.testing.assert_array_equal(x.data[5].reshape(8, 8) * 16, images[5])
    np.testing.assert_array_equal(y.data, labels)


def test_unknown_split_is_refused_by_name():
    with pytest.raises(ValueError, match="load_digits: unknown split 'valid'"):
        load_digits("valid")


@pytest.mark.parametrize("make, classes", [(make_moons, 2), (make_spirals, 3)])
def test_toy_sets_are_seeded_and_shaped(make, classes):
    x, y = make(n_samples=101, seed=4)
    assert x.shape == (101, 2) and x.dtype == np.float32
    assert y.shape == (101,) and y.dtype == np.int64
    assert set(y.data.tolist()) == set(range(classes))
    again, _ = make(n_samples=101, seed=4)
    other, _ = make(n_samples=101, seed=5)
    np.testing.assert_array_equal(x.data, again.data)
    assert not np.array_equal(x.data, other.data)


def test_moons_without_noise_lie_on_their_half_circles():
    x, y = make_moons(n_samples=40, noise=0.0)
    upper, lower = x.data[y.data == 0], x.data[y.data == 1]
    np.testing.assert_allclose(np.hypot(*upper.T), 1.0, atol=1e-6)
    np.testing.assert_allclose(np.hypot(lower[:, 0] - 1, lower[:, 1] - 0.5), 1.0, atol=1e-6)
    assert (upper[:, 1] >= 0).all() and (lower[:, 1] <= 0.5).all()


def test_spiral_arms_are_rotated_copies():
    x, y = make_spirals(n_samples=300, n_classes=3, noise=0.0)
    radius = np.hypot(*x.data.T)
    assert radius.max() <= 1.0
    # without noise, rotating arm 0 by a third of a turn puts each point on arm 1's curve:
    # the angle of a point is a function of its radius and its arm
    angle = np.arctan2(x.data[:, 1], x.data[:, 0])
    expected = 1.5 * np.pi * radius + 2 * np.pi * y.data / 3
    np.testing.assert_allclose(np.cos(angle - expected), 1.0, atol=1e-5)
