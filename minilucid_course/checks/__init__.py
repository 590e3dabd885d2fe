"""The exercises' checks: one module per chapter (chNN), the helpers they share (common), and
the guard that keeps grading honest in a notebook (guard; installed when this package is
imported inside IPython, a no-op elsewhere)."""

from minilucid_course.checks.guard import install

install()
