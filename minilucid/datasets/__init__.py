"""Datasets that work offline: the 8x8 handwritten digits, and generated toy sets (chapter 09)."""

from minilucid.datasets.digits import DIGITS_SPLITS, digits, load_digits
from minilucid.datasets.toy import make_moons, make_spirals

__all__ = ["DIGITS_SPLITS", "digits", "load_digits", "make_moons", "make_spirals"]
