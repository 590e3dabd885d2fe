"""Generated two-dimensional toy sets for classifiers: two moons and interleaved spirals."""

import numpy as np

from minilucid.tensor import Tensor


def make_moons(n_samples: int = 200, noise: float = 0.1, seed: int = 0) -> tuple[Tensor, Tensor]:
    """Two interleaving half circles: inputs (n, 2) float32 and labels 0/1 (int64), shuffled."""
    rng = np.random.default_rng(seed)
    n_upper = n_samples // 2
    angles_upper = np.linspace(0, np.pi, n_upper)
    angles_lower = np.linspace(0, np.pi, n_samples - n_upper)
    upper = np.stack([np.cos(angles_upper), np.sin(angles_upper)], axis=1)
    lower = np.stack([1 - np.cos(angles_lower), 0.5 - np.sin(angles_lower)], axis=1)
    x = np.concatenate([upper, lower]) + noise * rng.standard_normal((n_samples, 2))
    y = np.repeat([0, 1], [n_upper, n_samples - n_upper])
    order = rng.permutation(n_samples)
    return Tensor(x[order].astype(np.float32)), Tensor(y[order].astype(np.int64))


def make_spirals(
    n_samples: int = 300, n_classes: int = 3, noise: float = 0.2, seed: int = 0
) -> tuple[Tensor, Tensor]:
    """`n_classes` spiral arms around the origin: inputs (n, 2) float32, labels int64, shuffled."""
    rng = np.random.default_rng(seed)
    labels = np.arange(n_samples) % n_classes
    radius = rng.random(n_samples)  # 0 at the centre, 1 at the tip of an arm
    # from centre to tip an arm turns three quarters of a circle; arms are evenly spaced
    angle = 1.5 * np.pi * radius + 2 * np.pi * labels / n_classes
    angle = angle + noise * rng.standard_normal(n_samples)
    x = radius[:, None] * np.stack([np.cos(angle), np.sin(angle)], axis=1)
    return Tensor(x.astype(np.float32)), Tensor(labels.astype(np.int64))
