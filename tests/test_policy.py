"""Grading's static policy (minilucid_course/policy.py) on its own: what an answer may not write,
each with the line and the words the learner sees, and plain answer code that passes."""

import pytest

from minilucid_course import policy

FORBIDDEN = ("topological_order",)

REFUSED = {
    "a built-in that reads by name": ("f = getattr(ml.autograd, 'topo' + 'logical_order')", 2),
    "the package's own version": ("order = ml.autograd.topological_order(root)", 2),
    "an attribute by name through string.Formatter": (
        "f = string.Formatter().get_field('0.topo' + 'logical_order', [ml.autograd], {})[0]",
        2,
    ),
    "text run as code through typing": ("hints = typing.get_type_hints(f)", 2),
    "a dunder of the interpreter": ("d = ml.autograd.__dict__", 2),
    "a frame": ("import sys", 2),
    "a file": ("x = np.load('answers.npy')", 2),
    "NumPy's raw memory": ("p = x.ctypes.data", 2),
    "text run as code": ("eval('1 + 1')", 2),
}

ALLOWED = [
    "total = np.zeros(3)\nfor v in values:\n    total += v\n",
    "class Net(ml.nn.Module):\n    def __init__(self):\n        super().__init__()\n",
    "import math\ny = math.sqrt(2) * np.ones((2, 2)) @ np.eye(2)\n",
    "from collections import deque\nqueue = deque([root])\n",
]


@pytest.mark.parametrize("case", REFUSED, ids=list(REFUSED))
def test_the_policy_refuses_what_an_answer_never_needs(case):
    line, where = REFUSED[case]
    source = f"import string, typing\n{line}\n"
    found = policy.violations(source, FORBIDDEN, ())
    assert found, f"{case}: {line!r} passed the policy"
    assert any(v.line == where for v in found), [str(v) for v in found]
    assert all(str(v).startswith(f"line {v.line}: ") for v in found)


@pytest.mark.parametrize("source", ALLOWED)
def test_plain_answer_code_passes(source):
    assert policy.violations(source, FORBIDDEN, ()) == []
