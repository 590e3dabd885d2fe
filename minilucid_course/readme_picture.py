"""Draw the backward-pass picture shown at the top of the README (docs/backward.png)."""

import pathlib

import minilucid as ml
from minilucid import viz


def main() -> None:
    x = ml.tensor([1.0, 2.0, 3.0], requires_grad=True, name="x")
    w = ml.tensor(0.5, requires_grad=True, name="w")
    h = (w * x).tanh()
    h.name = "h"
    loss = (h * h).sum()
    loss.name = "loss"
    out = pathlib.Path(__file__).resolve().parent.parent / "docs" / "backward.png"
    viz.draw_backward(loss).save(str(out))
    print(f"wrote {out.name}")


if __name__ == "__main__":
    main()
