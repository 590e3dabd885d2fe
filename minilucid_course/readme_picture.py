"""Draw the backward-pass picture shown at the top of the README (docs/backward.png).

    python -m minilucid_course.readme_picture

It is the README's quick-start expression, drawn as `viz.draw_backward` draws it in a notebook:
top to bottom, at full size, so it reads at the README's width (about 830 px on a code host).
"""

import pathlib

import minilucid as ml
from minilucid import viz

OUT = pathlib.Path(__file__).resolve().parent.parent / "docs" / "backward.png"


def expression():
    """The README's quick start: x, w and the loss (h is used twice)."""
    x = ml.tensor([1.0, 2.0, 3.0], requires_grad=True, name="x")
    w = ml.tensor(0.5, requires_grad=True, name="w")
    h = (w * x).tanh()
    h.name = "h"
    loss = (h * h).sum()
    loss.name = "loss"
    return x, w, loss


def main() -> None:
    *_, loss = expression()
    viz.draw_backward(loss).save(OUT)
    print(f"wrote {OUT.name}")


if __name__ == "__main__":
    main()
