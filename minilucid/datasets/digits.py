"""The 8x8 handwritten digits: 1,797 images of 0-9, shipped with the package (digits.npz).

Source: the test part of "Optical Recognition of Handwritten Digits" by E. Alpaydin and
C. Kaynak, UCI Machine Learning Repository
(https://archive.ics.uci.edu/dataset/80/optical+recognition+of+handwritten+digits), licensed under
CC BY 4.0. Each pixel counts the inked pixels of a 4x4 block of a 32x32 bitmap: 0 to 16.
DIGITS.md beside this file says how digits.npz was made from it, and how the split was drawn.
"""

from pathlib import Path

import numpy as np

from minilucid.data import TensorDataset
from minilucid.tensor import Tensor

FILE = Path(__file__).with_name("digits.npz")
# The fixed split stored in digits.npz, stratified by class: 70% / 10% / 20%.
DIGITS_SPLITS = {"train": 1259, "val": 179, "test": 359}
_SPLIT_CODES = {"train": 0, "val": 1, "test": 2}


def load_digits(split: str = "all") -> tuple[np.ndarray, np.ndarray]:
    """Images (n, 8, 8) as uint8 in 0..16 and labels (n,) as int64, for "train", "val",
    "test" or "all" (1,797 images, in the file's order)."""
    if split != "all" and split not in _SPLIT_CODES:
        raise ValueError(
            f"load_digits: unknown split {split!r}; choose 'train', 'val', 'test' or 'all'"
        )
    with np.load(FILE, allow_pickle=False) as stored:
        images, labels, codes = stored["images"], stored["labels"], stored["split"]
    keep = slice(None) if split == "all" else codes == _SPLIT_CODES[split]
    return images[keep], labels[keep].astype(np.int64)


def digits(split: str = "train") -> TensorDataset:
    """The digits ready for an MLP: inputs (n, 64) float32 scaled to [0, 1], labels int64."""
    images, labels = load_digits(split)
    x = images.reshape(len(images), 64).astype(np.float32) / 16
    return TensorDataset(Tensor(x), Tensor(labels))
