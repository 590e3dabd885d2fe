"""A character-level language model (chapter 13): the tiny GPT, reading Shakespeare.

The model of tiny_gpt.py, with one token per character, learns to continue the first two acts
of Much Ado About Nothing (much_ado.txt; see MUCH_ADO.md for its source and licence). The last
tenth of the text is held out to measure the loss on text the model never trained on. It
writes a sample before and after training, drawing each character with `multinomial`.

    python char_gpt.py [--steps 1000] [--seed 0] [--save char_gpt.npz]
"""

import minilucid as torch

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # tiny_gpt.py lives beside this file
from tiny_gpt import TinyGPT, update  # noqa: E402

TEXT = Path(__file__).with_name("much_ado.txt")
BLOCK = 64  # characters of context
PROMPT = "LEONATO\n"


def corpus(path=TEXT):
    """The text, its sorted characters, and the text as int64 ids split 90% / 10%."""
    text = path.read_text(encoding="utf-8")
    chars = sorted(set(text))
    ids = np.array([chars.index(c) for c in text], dtype=np.int64)
    cut = int(0.9 * len(ids))
    return text, chars, ids[:cut], ids[cut:]


def batch(ids, rng, size):
    """size random windows of BLOCK characters, and the characters that follow each one."""
    starts = rng.integers(0, len(ids) - BLOCK - 1, size)
    x = np.stack([ids[s : s + BLOCK] for s in starts])
    y = np.stack([ids[s + 1 : s + BLOCK + 1] for s in starts])
    return torch.tensor(x), torch.tensor(y)


def loss_on(model, x, y):
    logits = model(x)
    return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))


def held_out_loss(model, ids, windows=32):
    """The loss on evenly spaced windows of the held-out text."""
    starts = np.linspace(0, len(ids) - BLOCK - 1, windows).astype(np.int64)
    x = torch.tensor(np.stack([ids[s : s + BLOCK] for s in starts]))
    y = torch.tensor(np.stack([ids[s + 1 : s + BLOCK + 1] for s in starts]))
    model.eval()
    with torch.no_grad():
        loss = loss_on(model, x, y).item()
    model.train()
    return loss


def sample(model, chars, length=300, temperature=0.8, prompt=PROMPT):
    """Continue the prompt one character at a time, each drawn from the model's distribution."""
    idx = torch.tensor([[chars.index(c) for c in prompt]])
    model.eval()
    with torch.no_grad():
        for _ in range(length):
            logits = model(idx[:, -BLOCK:])[:, -1, :] / temperature
            probs = torch.nn.functional.softmax(logits, dim=-1)
            idx = torch.cat([idx, torch.multinomial(probs, 1)], dim=1)
    model.train()
    return "".join(chars[i] for i in idx[0].numpy().tolist())


def main(steps=1000, seed=0, size=32, lr=3e-3, save=None):
    text, chars, train, held_out = corpus()
    torch.manual_seed(seed)
    model = TinyGPT(vocab=len(chars), block=BLOCK, width=64, heads=4, layers=2)
    before = sample(model, chars)
    losses, held = [], [held_out_loss(model, held_out)]
    rng = np.random.default_rng(seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=steps)
    started = time.perf_counter()
    for step in range(1, steps + 1):
        loss = loss_on(model, *batch(train, rng, size))
        update(model, loss, optimizer, scheduler)
        losses.append(loss.item())
        if step % 100 == 0:
            held.append(held_out_loss(model, held_out))
            print(f"step {step:5}: loss {loss.item():.3f}, held-out {held[-1]:.3f}")
    seconds = time.perf_counter() - started
    after = sample(model, chars)
    print(f"before training:\n{before}\n\nafter training:\n{after}\n")
    print(f"{len(text)} characters, {len(chars)} distinct; trained in {seconds:.0f} s")
    if save:
        torch.save(
            {"model": model.state_dict(), "losses": losses, "held_out": held,
             "before": before, "after": after},
            save,
        )  # fmt: skip
    return held[-1]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--save", help="save the weights, losses and samples here")
    args = parser.parse_args()
    main(steps=args.steps, seed=args.seed, save=args.save)
