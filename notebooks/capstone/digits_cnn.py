"""Graduation capstone: chapter 10's digits CNN, trained, checkpointed and reloaded.

Written for minilucid. Change the first line of code to `import torch` and the same program
runs with PyTorch.

    python digits_cnn.py [--epochs 10] [--data path/to/digits.npz]
"""

import minilucid as torch

import argparse
import tempfile
from pathlib import Path

import numpy as np

# The digits ship inside the minilucid package folder. Reading them by path keeps the loading
# framework-neutral: the PyTorch run never imports minilucid (--data if you move this file).
DIGITS = Path(__file__).resolve().parents[2] / "minilucid" / "datasets" / "digits.npz"
SPLITS = {"train": 0, "val": 1, "test": 2}


def digits(split, path=DIGITS):
    """One split of the stored digits: images (N, 1, 8, 8) scaled to [0, 1], and labels."""
    with np.load(path) as stored:
        keep = stored["split"] == SPLITS[split]
        images = stored["images"][keep] / 16.0
        labels = stored["labels"][keep]
    x = torch.tensor(images, dtype=torch.float32).unsqueeze(1)
    y = torch.tensor(labels, dtype=torch.long)
    return torch.utils.data.TensorDataset(x, y)


class DigitsCNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.features = torch.nn.Sequential(
            torch.nn.Conv2d(1, 32, kernel_size=3, padding=1),
            torch.nn.ReLU(),
            torch.nn.MaxPool2d(2),  # 8x8 -> 4x4
            torch.nn.Conv2d(32, 64, kernel_size=3, padding=1),
            torch.nn.ReLU(),
            torch.nn.MaxPool2d(2),  # 4x4 -> 2x2
        )
        self.classifier = torch.nn.Linear(64 * 2 * 2, 10)

    def forward(self, x):
        return self.classifier(self.features(x).flatten(1))


def evaluate(model, loader):
    """How many of the loader's examples the model classifies correctly."""
    model.eval()
    correct = 0
    with torch.no_grad():
        for x, y in loader:
            correct += (model(x).argmax(dim=1) == y).sum().item()
    return correct


def main(epochs=10, seed=2, data=DIGITS):
    torch.manual_seed(seed)  # the initial weights and the shuffling
    train_set, val_set, test_set = (digits(split, data) for split in SPLITS)
    train_loader = torch.utils.data.DataLoader(train_set, batch_size=32, shuffle=True)
    val_loader = torch.utils.data.DataLoader(val_set, batch_size=256)
    test_loader = torch.utils.data.DataLoader(test_set, batch_size=256)

    model = DigitsCNN()
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=4, gamma=0.5)
    loss_fn = torch.nn.CrossEntropyLoss()

    for epoch in range(epochs):
        model.train()
        total = 0.0
        for x, y in train_loader:
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
            total += loss.item() * len(y)
        scheduler.step()
        val = evaluate(model, val_loader)
        print(
            f"epoch {epoch + 1:2}: train loss {total / len(train_set):.3f}, "
            f"val {val}/{len(val_set)}"
        )

    test = evaluate(model, test_loader)
    print(f"test accuracy {test / len(test_set):.1%} ({test}/{len(test_set)})")

    with tempfile.TemporaryDirectory() as folder:
        checkpoint = Path(folder) / "digits_cnn.pt"
        torch.save(model.state_dict(), checkpoint)
        reloaded = DigitsCNN()
        reloaded.load_state_dict(torch.load(checkpoint))
    print(f"reloaded from the checkpoint: {evaluate(reloaded, test_loader)}/{len(test_set)}")
    return test / len(test_set)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--data", type=Path, default=DIGITS, help="the digits' .npz file")
    args = parser.parse_args()
    main(epochs=args.epochs, data=args.data)
