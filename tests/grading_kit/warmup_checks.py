"""Two small exercises in the registry's form, for the grading tests' own assignment (ch99).

An assignment may ship its exercises beside its notebook like this: the hand-in imports this
file's copy in its sandbox, the judge imports the release's copy.
"""

import numpy as np

from minilucid_course.checks.exercise import Exercise, Wrong, register


def _scale_cases(seed):
    rng = np.random.default_rng(seed)
    return {"x": rng.normal(size=(3, 4)).tolist(), "a": float(rng.uniform(0.5, 3.0))}


def _scale_probe(cases, scale):
    got = scale(np.array(cases["x"]), cases["a"])
    return {"got": np.asarray(got, dtype=np.float64)}


def _scale_judge(cases, data):
    want = cases["a"] * np.array(cases["x"])
    try:
        got = np.asarray(data["got"], dtype=np.float64)
    except (KeyError, TypeError, ValueError):
        raise Wrong("your scale returned something that is not an array of numbers") from None
    if got.shape != want.shape:
        raise Wrong(f"your scale returned shape {got.shape} for an input of shape {want.shape}")
    if not np.allclose(got, want):
        raise Wrong("your scale(x, a) differs from a times x on a 3 x 4 array")
    return "✓ scale multiplies every entry by a"


def _mean_cases(seed):
    rng = np.random.default_rng(seed + 1)
    return {"v": rng.normal(size=int(rng.integers(3, 9))).tolist()}


def _mean_probe(cases, mean):
    return {"got": float(mean(np.array(cases["v"])))}


def _mean_judge(cases, data):
    got = data.get("got") if isinstance(data, dict) else None
    if type(got) is not float:
        raise Wrong("your mean returned something that is not a number")
    if not np.isclose(got, float(np.mean(cases["v"]))):
        raise Wrong("your mean of a short vector differs from its average")
    return "✓ mean is the average"


SCALE = register(
    Exercise(
        check="check_warmup_scale",
        chapter="99",
        title="Scaling an array",
        probe=_scale_probe,
        judge=_scale_judge,
        cases=_scale_cases,
    )
)
MEAN = register(
    Exercise(
        check="check_warmup_mean",
        chapter="99",
        title="The mean of a vector",
        probe=_mean_probe,
        judge=_mean_judge,
        cases=_mean_cases,
        forbidden=("mean",),
    )
)
check_warmup_scale = SCALE.lab_check
check_warmup_mean = MEAN.lab_check
