"""The exercises' checks: one module per chapter (chNN), the registry every exercise is in
(exercise), the plain data between a probe and its judge (plain), the helpers they share
(common), and what the checks need in a learner's notebook (lab; installed when this package is
imported inside IPython, a no-op elsewhere)."""

from minilucid_course.checks.lab import install

install()
