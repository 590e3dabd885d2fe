"""Checks for the exercises of chapter 07 (modules and parameters).

Each check runs the learner's code on models chosen to expose one plausible mistake each, raises
AssertionError with a plain-words message on the first problem, and prints one line on success.
The package's own Module, Linear and init are the reference; no expected number is printed.
"""

import math

import numpy as np

import minilucid as ml
from minilucid import nn
from minilucid.tensor import Tensor
from minilucid_course.checks.common import call

# --------------------------------------------------------------------------------------------
# Exercise 1: the recursive walk of named_parameters


class _Block(nn.Module):
    """A parameter of its own first, then a Sequential, then a layer without bias."""

    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(np.ones(3, dtype=np.float32))
        self.inner = nn.Sequential(nn.Linear(3, 3), nn.Tanh(), nn.Linear(3, 3))
        self.head = nn.Linear(3, 2, bias=False)


class _Tied(nn.Module):
    """The same Linear under two names, and a parameter after the submodules."""

    def __init__(self):
        super().__init__()
        shared = nn.Linear(2, 2)
        self.encoder = shared
        self.act = nn.ReLU()
        self.decoder = shared
        self.temperature = nn.Parameter(np.ones(1, dtype=np.float32))


def _walk_cases():
    deep = nn.Sequential(nn.Sequential(nn.Linear(2, 2)), nn.Sequential(_Block()))
    return [
        ("a single Linear(2, 3)", nn.Linear(2, 3), ""),
        ("Sequential(Linear(4, 8), ReLU(), Linear(8, 3))", _mlp(), ""),
        ("a module with a Parameter of its own, a Sequential and a Linear", _Block(), ""),
        ("a module that uses one Linear twice (tied weights)", _Tied(), ""),
        ("Sequential(Sequential(Linear), Sequential(Block)), three levels deep", deep, ""),
        ("Sequential(Linear(4, 8), ReLU(), Linear(8, 3)) with prefix='model'", _mlp(), "model"),
    ]


def _mlp():
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))


def check_named_parameters(named_parameters) -> None:
    """named_parameters(module, prefix) must list torch's names, in torch's order, each once."""
    for description, model, prefix in _walk_cases():
        args = (model, prefix) if prefix else (model,)
        what = f"named_parameters on {description}"
        got = call(what, named_parameters, *args)
        if got is None:
            raise AssertionError(f"{what} returned None; return (or yield) (name, parameter) pairs")
        try:
            got = list(got)
        except TypeError:
            raise AssertionError(
                f"{what} returned a {type(got).__name__}; return a list of (name, parameter) "
                "pairs, or yield them"
            ) from None
        _compare_walk(what, got, list(model.named_parameters(prefix=prefix)))
    print("✓ named_parameters gives PyTorch's names in PyTorch's order, each parameter once")


def _compare_walk(what: str, got: list, expected: list) -> None:
    if not all(isinstance(pair, tuple | list) and len(pair) == 2 for pair in got):
        raise AssertionError(f"{what}: every item must be a pair (name, parameter)")
    names = [name for name, _ in got]
    params = [p for _, p in got]
    expected_names = [name for name, _ in expected]
    if any(not isinstance(p, nn.Parameter) for p in params):
        raise AssertionError(
            f"{what}: an item's second half is not a Parameter; give the parameter objects "
            "themselves (not their .data, not copies)"
        )
    ids = [id(p) for p in params]
    if len(set(ids)) < len(ids):
        raise AssertionError(
            f"{what}: a parameter appears more than once ({len(ids)} items for "
            f"{len(set(ids))} parameters). A module used twice must not be counted twice - an "
            "optimiser would update it twice. Remember which parameters you have given."
        )
    if len(params) < len(expected):
        raise AssertionError(
            f"{what}: your walk found {len(params)} parameters, the model has {len(expected)}. "
            "Are the submodules of submodules visited too (recursion), and the module's own "
            "parameters?"
        )
    if len(params) > len(expected):
        raise AssertionError(
            f"{what}: your walk gave {len(params)} items, the model has {len(expected)} parameters"
        )
    if any(not isinstance(n, str) for n in names):
        raise AssertionError(f"{what}: names must be strings such as 'weight'")
    bad = [n for n in names if n.startswith(".") or n.endswith(".") or ".." in n]
    if bad:
        raise AssertionError(
            f"{what}: the name {bad[0]!r} has a stray dot; join the parts with a single dot, "
            "and put none in front when the prefix is empty"
        )
    if [id(p) for _, p in expected] != ids:
        if sorted(ids) == sorted(id(p) for _, p in expected):
            raise AssertionError(
                f"{what}: the right parameters in another order. PyTorch lists a module's own "
                "parameters first, then those of each submodule in the order they were "
                "assigned, depth first."
            )
        raise AssertionError(f"{what}: these are not the model's parameters")
    if names != expected_names:
        short = [n for n in names if "." not in n]
        if len(short) == len(names) and any("." in n for n in expected_names):
            hint = "a submodule's parameters are named '<submodule>.<name>', e.g. '0.weight'"
        else:
            hint = "each name is the path of attribute names from the top module, dot-separated"
        wrong = next(n for n, e in zip(names, expected_names, strict=True) if n != e)
        raise AssertionError(f"{what}: the name {wrong!r} is not PyTorch's; {hint}")


# --------------------------------------------------------------------------------------------
# Exercise 2: a Linear layer from scratch


def check_linear(MyLinear) -> None:  # noqa: N803  (a class, named as one)
    """MyLinear(in, out, bias=True): torch's shapes, names, forward, gradients and init."""
    layer = call("MyLinear(4, 3)", MyLinear, 4, 3)
    if not isinstance(layer, nn.Module):
        raise AssertionError(
            "MyLinear(4, 3) is not a Module: write `class MyLinear(nn.Module):` and call "
            "super().__init__() first in __init__"
        )
    _check_parameters(layer, [("weight", (3, 4)), ("bias", (3,))], "MyLinear(4, 3)")
    no_bias = call("MyLinear(4, 3, bias=False)", MyLinear, 4, 3, bias=False)
    _check_parameters(no_bias, [("weight", (3, 4))], "MyLinear(4, 3, bias=False)")
    for p in layer.parameters():
        if p.dtype != ml.float32:
            raise AssertionError(
                f"MyLinear(4, 3): the parameters are {p.dtype}; make them float32, like "
                "PyTorch's (np.zeros(..., dtype=np.float32), or ml.zeros)"
            )
    _check_forward(layer, "MyLinear(4, 3)", bias=True)
    _check_forward(no_bias, "MyLinear(4, 3, bias=False)", bias=False)
    _check_wrong_features(layer)
    _check_init(MyLinear)
    print(
        "✓ MyLinear has PyTorch's parameters, forward, gradients and initialisation, and "
        "says clearly when the input has the wrong number of features"
    )


def _check_parameters(layer, expected: list, what: str) -> None:
    got = [(name, tuple(p.shape)) for name, p in layer.named_parameters()]
    if got == expected:
        return
    names = [name for name, _ in got]
    if sorted(names) != sorted(n for n, _ in expected):
        raise AssertionError(
            f"{what} has the parameters {names}, PyTorch's has {[n for n, _ in expected]}: "
            "assign nn.Parameter objects to self.weight (and self.bias unless bias=False, "
            "when self.bias = None)"
        )
    shapes = dict(got)
    if shapes.get("weight") == expected[0][1][::-1]:
        raise AssertionError(
            f"{what}: weight has shape {shapes['weight']}; PyTorch stores it as "
            "(out_features, in_features) and computes x @ weight.T"
        )
    if names != [n for n, _ in expected]:
        raise AssertionError(f"{what}: assign self.weight before self.bias, as PyTorch does")
    raise AssertionError(f"{what}: the parameter shapes {got} are not (out, in) and (out,)")


def _check_forward(layer, what: str, bias: bool) -> None:
    rng = np.random.default_rng(7)
    weight = rng.standard_normal((3, 4)).astype(np.float32)
    layer.weight.data = weight
    b = rng.standard_normal(3).astype(np.float32)
    if bias:
        layer.bias.data = b
    for shape in [(5, 4), (2, 5, 4), (4,)]:
        x_data = rng.standard_normal(shape).astype(np.float32)
        x = Tensor(x_data, requires_grad=True)
        layer.zero_grad()
        out = call(f"{what} on an input of shape {shape}", layer, x)
        expected = x_data @ weight.T + (b if bias else 0)
        if not isinstance(out, Tensor):
            raise AssertionError(f"{what} returned a {type(out).__name__}, not a Tensor")
        if out.shape != expected.shape:
            raise AssertionError(
                f"{what} on an input of shape {shape} gave shape {out.shape}; it should keep "
                "every dimension but the last, which becomes out_features"
            )
        if not np.allclose(out.data, expected, rtol=1e-5, atol=1e-5):
            words = "x @ weight.T" + (" + bias" if bias else "")
            if bias and np.allclose(out.data, x_data @ weight.T, rtol=1e-5, atol=1e-5):
                words = "the bias is missing: x @ weight.T + bias"
            raise AssertionError(f"{what} on an input of shape {shape}: the output is not {words}")
        if out.grad_fn is None:
            raise AssertionError(
                f"{what}: the output has no graph (grad_fn is None), so no gradient can reach "
                "the weights. Compute it with tensor operations (@, .T, +), not on .data"
            )
        g = np.random.default_rng(8).standard_normal(out.shape).astype(np.float32)
        out.backward(g)
        g2, x2 = g.reshape(-1, 3), x_data.reshape(-1, 4)
        wanted = [("the input", x.grad, g @ weight), ("weight", layer.weight.grad, g2.T @ x2)]
        if bias:
            wanted.append(("bias", layer.bias.grad, g2.sum(axis=0)))
        for name, got, exact in wanted:
            if got is None:
                raise AssertionError(
                    f"{what} on an input of shape {shape}: no gradient reached {name}. Compute "
                    "the output with tensor operations on x and the parameters themselves "
                    "(@, .T, +), not on their .data arrays"
                )
            if not np.allclose(got, exact, rtol=1e-4, atol=1e-4):
                raise AssertionError(
                    f"{what} on an input of shape {shape}: the gradient of {name} is wrong"
                )
    layer.zero_grad()


def _check_wrong_features(layer) -> None:
    x = ml.ones(5, 3)
    try:
        layer(x)
    except ValueError as error:
        text = str(error)
        if "(5, 3)" in text and "4" in text and ("Linear" in text or "in_features" in text):
            return
        raise AssertionError(
            "MyLinear(4, 3) on an input of shape (5, 3) raised ValueError, but its message "
            f"{text!r} should name the layer (MyLinear), the input's shape (5, 3) and the "
            "in_features it expects (4)"
        ) from None
    except Exception as error:
        raise AssertionError(
            "MyLinear(4, 3) on an input of shape (5, 3) raised "
            f"{type(error).__name__}: {error}; check the features yourself first and raise a "
            "ValueError that names the input's shape and in_features"
        ) from None
    raise AssertionError(
        "MyLinear(4, 3) accepted an input of shape (5, 3); it must raise a ValueError that "
        "names the shape and the 4 features it expects"
    )


def _check_init(MyLinear) -> None:  # noqa: N803
    what = "MyLinear(400, 300)"
    ml.manual_seed(0)
    layer = call(what, MyLinear, 400, 300)
    ml.manual_seed(0)
    again = call(what, MyLinear, 400, 300)
    w, b = layer.weight.data.astype(np.float64), layer.bias.data.astype(np.float64)
    bound = 1 / math.sqrt(400)
    if not np.array_equal(w, again.weight.data):
        raise AssertionError(
            f"{what}: after ml.manual_seed(0), two layers got different weights. Draw the "
            "random numbers with ml.rand / ml.randn (or nn.init), so the seed repeats them"
        )
    if np.all(w == 0) or np.all(w == w.flat[0]):
        raise AssertionError(
            f"{what}: every weight is the same number. Equal weights make every output the "
            "same function of the input, and they stay equal in training; draw them at random"
        )
    if not np.allclose(np.abs(w).max(), bound, rtol=0.01):
        if abs(w.std() - bound / math.sqrt(3)) < 0.03 * bound:
            problem = "the weights have the right spread but not PyTorch's distribution"
        else:
            problem = "the weights are not spread like PyTorch's"
        raise AssertionError(
            f"{what}: {problem}. PyTorch draws them uniformly from (-k, k) with "
            "k = 1/sqrt(in_features); with 400 inputs that is ±0.05"
        )
    if abs(w.mean()) > 0.01 * bound or abs(w.std() - bound / math.sqrt(3)) > 0.02 * bound:
        raise AssertionError(
            f"{what}: the weights are not spread evenly over (-k, k), k = 1/sqrt(in_features)"
        )
    if np.all(b == 0):
        raise AssertionError(
            f"{what}: the bias is all zeros; PyTorch draws the bias from (-k, k) too, with the "
            "same k = 1/sqrt(in_features)"
        )
    if np.abs(b).max() > bound * 1.0001 or np.abs(b).max() < 0.9 * bound:
        raise AssertionError(
            f"{what}: the bias is not drawn from (-k, k) with k = 1/sqrt(in_features)"
        )


# --------------------------------------------------------------------------------------------
# Exercise 3: an initialisation for deep ReLU networks


class _Scaled(nn.Module):
    """A module that is not a Linear and has a Parameter: an initialiser must leave it alone."""

    def __init__(self):
        super().__init__()
        self.gain = nn.Parameter(np.ones(1, dtype=np.float32))

    def forward(self, x):
        return x * self.gain


def deep_relu_mlp(init_fn=None, depth: int = 20, width: int = 128, inputs: int = 64, seed=0):
    """depth Linear+ReLU pairs (inputs -> width -> ... -> width) and a _Scaled head."""
    ml.manual_seed(seed)
    layers = [nn.Linear(inputs, width), nn.ReLU()]
    for _ in range(depth - 1):
        layers += [nn.Linear(width, width), nn.ReLU()]
    model = nn.Sequential(*layers, _Scaled())
    if init_fn is not None:
        model.apply(init_fn)
    return model


def activation_stds(model, batch: int = 512, seed: int = 1) -> list:
    """The standard deviation of the activations after each ReLU, for a standard normal input."""
    x = ml.tensor(np.random.default_rng(seed).standard_normal((batch, model[0].in_features)))
    stds = []
    with ml.no_grad():
        for layer in model:
            x = layer(x)
            if isinstance(layer, nn.ReLU):
                stds.append(float(np.sqrt((x.data.astype(np.float64) ** 2).mean())))
    return stds


def check_relu_init(init_for_relu) -> None:
    """model.apply(init_for_relu): He (Kaiming) normal for every Linear, bias zero, nothing else."""
    ml.manual_seed(0)
    model = deep_relu_mlp()
    call("model.apply(init_for_relu)", model.apply, init_for_relu)
    for name, module in model.named_modules():
        if not isinstance(module, nn.Linear):
            continue
        w = module.weight.data.astype(np.float64)
        fan_in = w.shape[1]
        std = math.sqrt(2 / fan_in)
        if module.bias is not None and np.any(module.bias.data != 0):
            raise AssertionError(
                f"layer {name}: the bias is not zero. With zero biases every layer starts as a "
                "pure scaling of its input, and the spread of the activations is set by the "
                "weights alone"
            )
        if abs(w.mean()) > 0.05 * std or abs(w.std() - std) > 0.05 * std:
            fan_out = w.shape[0]
            gain_one = [1 / math.sqrt(fan_in), math.sqrt(2 / (fan_in + fan_out))]
            if fan_in != fan_out and abs(w.std() - std * math.sqrt(fan_in / fan_out)) < 0.05 * std:
                hint = "its spread uses the fan-out; the forward pass needs fan_in (mode='fan_in')"
            elif any(abs(w.std() - s) < 0.05 * s for s in gain_one):
                hint = (
                    "this spread suits layers that keep the variance (gain 1), but a ReLU "
                    "zeroes half of its input: the gain for 'relu' is sqrt(2)"
                )
            else:
                hint = "for a ReLU network the weights need std sqrt(2 / fan_in)"
            raise AssertionError(
                f"layer {name} (weight of shape {tuple(w.shape)}, fan_in {fan_in}): {hint}"
            )
        if np.abs(w).max() < 3 * std:
            raise AssertionError(
                f"layer {name}: the weights are spread like a uniform distribution; this "
                "exercise asks for the normal one (nn.init.kaiming_normal_)"
            )
    head = model[-1].gain.data
    if not np.array_equal(head, np.ones(1, dtype=np.float32)):
        raise AssertionError(
            "init_for_relu changed the parameter of a module that is not a Linear (a learned "
            "gain, set to 1 on purpose). Change only nn.Linear modules: test isinstance"
        )
    stds = activation_stds(model)
    if not 0.5 < stds[-1] / stds[0] < 2:
        raise AssertionError(
            "after your initialisation, the activations' spread changes by a factor "
            f"{stds[-1] / stds[0]:.3g} over 20 layers; it should stay within 2x"
        )
    default = activation_stds(deep_relu_mlp())
    print(
        f"✓ init_for_relu keeps the activations' spread steady through 20 ReLU layers "
        f"(std {stds[0]:.2f} after the first, {stds[-1]:.2f} after the last; PyTorch's "
        f"default initialisation shrinks it to {default[-1]:.1e})"
    )
