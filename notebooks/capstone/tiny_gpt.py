"""A tiny GPT that learns to sort: chapter 13's transformer, trained on a task that needs no data.

The model reads six digits and a separator, then writes the six digits in ascending order, one
token at a time (greedy decoding). It is scored by exact match (all six right) on held-out
sequences that training never sees.

Written for minilucid. Change the first line of code to `import torch` and the same program
runs with PyTorch.

    python tiny_gpt.py [--steps 1000] [--seed 0] [--save model.pt | --load model.pt]
"""

import minilucid as torch

import argparse
import math
import time

import numpy as np

DIGITS, LENGTH = 10, 6  # sequences of six digits 0-9
SEP = DIGITS  # the separator token: the vocabulary is the ten digits and SEP
BLOCK = 2 * LENGTH  # the model sees the digits, SEP and the first five answers
SAMPLED = (5, 10, 20, 40, 100, 400)  # steps after which a checkpoint keeps samples


def problems(count, rng, avoid=None):
    """count random digit sequences (as rows), none of them in the set `avoid`."""
    rows = rng.integers(0, DIGITS, size=(count, LENGTH))
    if avoid is not None:
        keep = np.array([tuple(r) not in avoid for r in rows.tolist()])
        rows = rows[keep]
    return rows


def as_training(rows):
    """Input tokens (digits, SEP, sorted[:-1]) and the targets the model must say: sorted."""
    answers = np.sort(rows, axis=1)
    sep = np.full((len(rows), 1), SEP)
    tokens = np.concatenate([rows, sep, answers[:, :-1]], axis=1)
    return torch.tensor(tokens), torch.tensor(answers)


class SelfAttention(torch.nn.Module):
    """Causal multi-head self-attention: every position looks back at itself and those before."""

    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.qkv = torch.nn.Linear(width, 3 * width)
        self.proj = torch.nn.Linear(width, width)

    def forward(self, x):
        B, T, C = x.shape
        qkv = self.qkv(x)
        q, k, v = qkv[:, :, :C], qkv[:, :, C : 2 * C], qkv[:, :, 2 * C :]
        # (B, T, C) -> (B, heads, T, C / heads): each head attends on its own slice of features
        q = q.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        k = k.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        v = v.view(B, T, self.heads, C // self.heads).transpose(1, 2)
        y = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(y.transpose(1, 2).contiguous().view(B, T, C))


class Block(torch.nn.Module):
    """A pre-norm transformer block: x + attention(norm(x)), then x + mlp(norm(x))."""

    def __init__(self, width, heads):
        super().__init__()
        self.norm1 = torch.nn.LayerNorm(width)
        self.attention = SelfAttention(width, heads)
        self.norm2 = torch.nn.LayerNorm(width)
        self.mlp = torch.nn.Sequential(
            torch.nn.Linear(width, 4 * width),
            torch.nn.GELU(approximate="tanh"),  # GPT-2's GELU
            torch.nn.Linear(4 * width, width),
        )

    def forward(self, x):
        x = x + self.attention(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class TinyGPT(torch.nn.Module):
    def __init__(self, vocab=DIGITS + 1, block=BLOCK, width=64, heads=4, layers=2):
        super().__init__()
        self.tokens = torch.nn.Embedding(vocab, width)
        self.positions = torch.nn.Embedding(block, width)
        self.blocks = torch.nn.ModuleList([Block(width, heads) for _ in range(layers)])
        self.norm = torch.nn.LayerNorm(width)
        self.head = torch.nn.Linear(width, vocab, bias=False)
        with torch.no_grad():  # small embeddings, as GPT-2 starts them
            self.tokens.weight.mul_(0.1)
            self.positions.weight.mul_(0.1)

    def forward(self, idx):
        B, T = idx.shape
        x = self.tokens(idx) + self.positions(torch.arange(T))
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x))  # (B, T, vocab): the next token's scores at each place


def loss_of(model, tokens, answers):
    """Cross-entropy of the answers only: the scores from SEP's place onwards."""
    logits = model(tokens)[:, LENGTH:, :]
    return torch.nn.functional.cross_entropy(logits.reshape(-1, DIGITS + 1), answers.reshape(-1))


def sort_with(model, rows):
    """Greedy decoding: feed the digits and SEP, append the most likely token six times."""
    model.eval()
    with torch.no_grad():
        tokens = torch.tensor(np.concatenate([rows, np.full((len(rows), 1), SEP)], axis=1))
        for _ in range(LENGTH):
            logits = model(tokens)[:, -1, :]
            tokens = torch.cat([tokens, logits.argmax(dim=-1).unsqueeze(1)], dim=1)
    model.train()
    return tokens[:, LENGTH + 1 :].numpy()


def exact_match(model, rows):
    """How many rows the model sorts with all six digits right."""
    return int((sort_with(model, rows) == np.sort(rows, axis=1)).all(axis=1).sum())


def update(model, loss, optimizer, scheduler):
    """One training step: the gradients, clipped to norm 1, then the optimiser and schedule."""
    optimizer.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    scheduler.step()


def main(steps=1000, seed=0, batch=64, lr=3e-3, save=None, load=None, held_out=1000):
    torch.manual_seed(seed)  # the initial weights
    test = problems(held_out, np.random.default_rng(12345))  # the same held-out set every run
    avoid = {tuple(r) for r in test.tolist()}
    model = TinyGPT()
    started = time.perf_counter()
    if load:
        model.load_state_dict(torch.load(load)["model"])
    else:
        rng = np.random.default_rng(seed)
        optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
        scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=steps)
        losses, samples = [], [[0, sort_with(model, test[:3]).tolist()]]
        for step in range(1, steps + 1):
            tokens, answers = as_training(problems(batch, rng, avoid))
            loss = loss_of(model, tokens, answers)
            update(model, loss, optimizer, scheduler)
            losses.append(loss.item())
            if step in SAMPLED:  # how three held-out sequences come out as training goes on
                samples.append([step, sort_with(model, test[:3]).tolist()])
            if step % 250 == 0 or step in (1, steps):
                print(f"step {step:5}: loss {loss.item():.4f}")
        if save:
            torch.save({"model": model.state_dict(), "losses": losses, "samples": samples}, save)
    seconds = time.perf_counter() - started
    right = exact_match(model, test)
    example = test[:1]
    print(f"sorted {example[0].tolist()} as {sort_with(model, example)[0].tolist()}")
    print(f"held-out exact match {right / len(test):.1%} ({right}/{len(test)})")
    print(f"time {seconds:.1f} s, {count_parameters(model)} parameters")
    return right / len(test)


def count_parameters(model):
    return sum(math.prod(p.shape) for p in model.parameters())


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--save", help="save the trained weights here")
    parser.add_argument("--load", help="load trained weights from here instead of training")
    args = parser.parse_args()
    main(steps=args.steps, seed=args.seed, save=args.save, load=args.load)
