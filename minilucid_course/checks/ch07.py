"""Checks for the exercises of chapter 07 (modules and parameters).

Each check runs the learner's code on models chosen to expose one plausible mistake each, raises
AssertionError with a plain-words message on the first problem, and prints one line on success.
The package's own Module, Linear and init are the reference; no expected number is printed.
"""

import math
import types

import numpy as np

import minilucid as ml
from minilucid import nn
from minilucid.tensor import Tensor
from minilucid_course.checks.common import call

# --------------------------------------------------------------------------------------------
# Exercise 1: a Module of your own - registration by assignment, the walk, the state dict


def _models(MiniModule):  # noqa: N803  (a class, named as one)
    """Small model classes built on the learner's MiniModule, as a learner would write them."""

    class Layer(MiniModule):
        """weight (out, in) and bias as Parameters; a plain tensor and a number beside them."""

        def __init__(self, n_in, n_out, bias=True, seed=0):
            super().__init__()
            rng = np.random.default_rng(seed)
            self.weight = nn.Parameter(rng.uniform(-1, 1, (n_out, n_in)).astype(np.float32))
            self.bias = nn.Parameter(rng.uniform(-1, 1, n_out).astype(np.float32)) if bias else None
            self.mask = Tensor(np.ones(n_out, dtype=np.float32))  # a constant, not learned
            self.table = np.zeros(3)  # an array, not learned
            self.n_in = n_in

        def forward(self, x):
            out = x @ self.weight.T
            return (out if self.bias is None else out + self.bias) * self.mask

    class Act(MiniModule):
        def forward(self, x):
            return x.tanh()

    class Seq(MiniModule):
        """Layers named '0', '1', ... as in nn.Sequential."""

        def __init__(self, *layers):
            super().__init__()
            for i, layer in enumerate(layers):
                setattr(self, str(i), layer)
            self.count = len(layers)

        def forward(self, x):
            for i in range(self.count):
                x = getattr(self, str(i))(x)
            return x

    class Block(MiniModule):
        """A parameter of its own first, then a Seq, then a layer without bias."""

        def __init__(self):
            super().__init__()
            self.scale = nn.Parameter(np.ones(3, dtype=np.float32))
            self.inner = Seq(Layer(3, 3, seed=1), Act(), Layer(3, 3, seed=2))
            self.head = Layer(3, 2, bias=False, seed=3)

    class Tied(MiniModule):
        """The same layer under two names, and a parameter assigned after the submodules."""

        def __init__(self):
            super().__init__()
            shared = Layer(2, 2, seed=4)
            self.encoder = shared
            self.act = Act()
            self.decoder = shared
            self.temperature = nn.Parameter(np.ones(1, dtype=np.float32))

    return types.SimpleNamespace(Layer=Layer, Act=Act, Seq=Seq, Block=Block, Tied=Tied)


def _registry(module, name: str, what: str) -> dict:
    registry = module.__dict__.get(name)
    if not isinstance(registry, dict):
        raise AssertionError(
            f"{what} has no dict {name} of its own: create _parameters and _modules in "
            "__init__, as empty dicts, with the plain assignment that bypasses your __setattr__"
        )
    return registry


def _registration_problem(kinds) -> None:
    """Raise AssertionError on the first thing the learner's registration gets wrong."""
    what = "Layer(3, 2), a subclass of your MiniModule that assigns weight, bias, a plain tensor"
    hint = (
        "MiniModule.__init__ must create the registries without going through your own "
        "__setattr__ (which needs them already)"
    )
    layer = call(what, kinds.Layer, 3, 2, hint=hint)
    params = _registry(layer, "_parameters", what)
    modules = _registry(layer, "_modules", what)
    for attribute in ("weight", "bias", "mask", "table", "n_in"):
        if attribute not in layer.__dict__:
            raise AssertionError(
                f"{what}: after self.{attribute} = ..., the attribute {attribute!r} is not "
                "stored on the object, so reading layer."
                f"{attribute} fails. After registering, store the attribute as usual with the "
                "base class's __setattr__"
            )
    if list(params) != ["weight", "bias"]:
        extra = [n for n in params if n not in ("weight", "bias")]
        if extra:
            raise AssertionError(
                f"{what}: _parameters holds {extra[0]!r}, which is not a Parameter (a plain "
                "Tensor or array is state, not something to learn). Register only "
                "nn.Parameter values"
            )
        raise AssertionError(
            f"{what}: _parameters should hold 'weight' and 'bias', in the order they were "
            f"assigned; it holds {list(params)}"
        )
    if params["weight"] is not layer.__dict__["weight"] or params["bias"] is not layer.bias:
        raise AssertionError(
            f"{what}: _parameters must hold the Parameter objects themselves, not copies"
        )
    if modules:
        raise AssertionError(f"{what}: _modules should be empty, it holds {list(modules)}")
    seq = call(
        "Seq(Layer(3, 4), Act(), Layer(4, 2))",
        kinds.Seq,
        kinds.Layer(3, 4),
        kinds.Act(),
        kinds.Layer(4, 2),
    )
    children = _registry(seq, "_modules", "Seq(...)")
    if list(children) != ["0", "1", "2"]:
        raise AssertionError(
            "Seq(Layer, Act, Layer), which assigns its layers under the names '0', '1', '2': "
            f"its _modules hold {list(children)}. Register every value that is a MiniModule "
            "(isinstance), in the order of assignment"
        )
    if any(children[str(i)] is not seq.__dict__.get(str(i)) for i in range(3)):
        raise AssertionError("Seq(...): _modules must hold the submodules themselves")
    if _registry(seq, "_parameters", "Seq(...)"):
        raise AssertionError(
            "Seq(...) has no parameters of its own, but its _parameters is not empty"
        )
    layer.bias = None
    if "bias" in params or layer.bias is not None:
        raise AssertionError(
            f"{what}, then layer.bias = None: 'bias' is still registered. Assigning a value "
            "that is not a Parameter under a registered name removes that name from the registry"
        )
    seq.__setattr__("1", None)
    if "1" in children:
        raise AssertionError(
            "Seq(...), then setting its submodule '1' to None: '1' is still in _modules. "
            "Assigning None under a registered name removes it from the registry"
        )
    _switch_problem(kinds)


def _switch_problem(kinds) -> None:
    """A name that changes kind (submodule <-> Parameter) stays in one registry only."""
    seq = kinds.Seq(kinds.Layer(3, 4), kinds.Act())
    seq.__setattr__("0", nn.Parameter(np.ones(3, dtype=np.float32)))
    seq.__setattr__("1", kinds.Layer(4, 2))
    seq.__setattr__("1", nn.Parameter(np.ones(2, dtype=np.float32)))
    if "0" in seq._modules or "1" in seq._modules:
        raise AssertionError(
            "Seq(Layer, Act), then a Parameter assigned under the submodule name '0': '0' is "
            "now in _parameters and still in _modules. A name is registered once: assigning a "
            "Parameter removes that name from _modules"
        )
    layer = kinds.Layer(3, 2)
    layer.weight = kinds.Act()
    if "weight" in layer._parameters:
        raise AssertionError(
            "Layer(3, 2), then a submodule assigned under its Parameter's name 'weight': "
            "'weight' is now in _modules and still in _parameters. A name is registered once: "
            "assigning a submodule removes that name from _parameters"
        )


def check_module_registration(MiniModule) -> None:  # noqa: N803
    """MiniModule's __init__ and __setattr__ register Parameters and submodules, in order."""
    kinds = _models(MiniModule)
    _registration_problem(kinds)
    x = ml.tensor(np.ones((2, 3), dtype=np.float32))
    out = call(
        "calling Seq(Layer(3, 4), Act(), Layer(4, 2)) on a batch",
        kinds.Seq(kinds.Layer(3, 4), kinds.Act(), kinds.Layer(4, 2)),
        x,
        returns=Tensor,
    )
    if out.shape != (2, 2):
        raise AssertionError("calling a model of your MiniModules did not run its forward")
    print(
        "✓ MiniModule registers Parameters and submodules as they are assigned, in order, and "
        "nothing else"
    )


def _reference_walk(module, prefix: str = "") -> list:
    """PyTorch's order over the registries: own parameters, then each child's, each once."""
    out, seen, stack = [], set(), [(prefix, module)]
    while stack:
        path, m = stack.pop()
        for name, p in m._parameters.items():
            if p is not None and id(p) not in seen:
                seen.add(id(p))
                out.append((f"{path}.{name}" if path else name, p))
        children = [(f"{path}.{n}" if path else n, c) for n, c in m._modules.items()]
        stack.extend(reversed([(n, c) for n, c in children if c is not None]))
    return out


def _walk_cases(kinds) -> tuple:
    shared = kinds.Layer(2, 2, seed=5)
    twin = kinds.Layer(2, 2, seed=6)
    twin.weight = shared.weight  # the same Parameter in two layers
    deep = kinds.Seq(kinds.Seq(kinds.Layer(2, 2)), kinds.Seq(kinds.Block()))
    mlp = kinds.Seq(kinds.Layer(4, 8), kinds.Act(), kinds.Layer(8, 3))
    return (
        ("a Layer(2, 3)", kinds.Layer(2, 3), ""),
        ("Seq(Layer(4, 8), Act(), Layer(8, 3))", mlp, ""),
        ("a module with a Parameter of its own, a Seq and a Layer without bias", kinds.Block(), ""),
        ("a module that uses one Layer twice (tied weights)", kinds.Tied(), ""),
        (
            "Seq(Layer, Layer) whose two layers share one weight Parameter",
            kinds.Seq(shared, twin),
            "",
        ),
        ("Seq(Seq(Layer), Seq(Block)), three levels deep", deep, ""),
        ("Seq(Layer(4, 8), Act(), Layer(8, 3)) with prefix='model'", mlp, "model"),
    )


def check_module_walk(MiniModule) -> None:  # noqa: N803
    """named_parameters(prefix) and parameters(): PyTorch's names and order, each once."""
    kinds = _models(MiniModule)
    _registration_problem(kinds)
    for description, model, prefix in _walk_cases(kinds):
        args = (prefix,) if prefix else ()
        what = f"named_parameters() on {description}"
        got = call(what, model.named_parameters, *args)
        if got is None:
            raise AssertionError(f"{what} returned None; return (or yield) (name, parameter) pairs")
        try:
            got = list(got)
        except TypeError:
            raise AssertionError(
                f"{what} returned a {type(got).__name__}; return a list of (name, parameter) "
                "pairs, or yield them"
            ) from None
        _compare_walk(what, got, _reference_walk(model, prefix))
        plain = call(f"parameters() on {description}", model.parameters)
        try:
            plain = list(plain)
        except TypeError:
            raise AssertionError(
                f"parameters() on {description} returned a {type(plain).__name__}; return a "
                "list of the parameters, or yield them"
            ) from None
        if [id(p) for p in plain] != [id(p) for _, p in _reference_walk(model)]:
            raise AssertionError(
                f"parameters() on {description} does not give the parameters of "
                "named_parameters(), in the same order, each once"
            )
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


def _reference_keys(module, prefix: str = "") -> list:
    """Every parameter's dotted path, own parameters first, tied ones under each name."""
    keys = [prefix + name for name, p in module._parameters.items() if p is not None]
    for name, child in module._modules.items():
        if child is not None:
            keys += _reference_keys(child, f"{prefix}{name}.")
    return keys


def _values(model) -> dict:
    """A copy of every parameter's numbers, by identity, to tell what a load changed."""
    return {id(p): (p, p.data.copy()) for _, p in _reference_walk(model)}


def _changed(before: dict) -> bool:
    return any(
        p.data.shape != old.shape or not np.array_equal(p.data, old) for p, old in before.values()
    )


def _state_dict(model, what: str) -> dict:
    state = call(what, model.state_dict, returns=dict)
    keys = _reference_keys(model)
    if list(state) != keys:
        missing = [k for k in keys if k not in state]
        if missing:
            raise AssertionError(
                f"{what} has no key {missing[0]!r}. Every parameter is saved under its dotted "
                "path, a tied one under each of its names, as PyTorch's state_dict does"
            )
        extra = [k for k in state if k not in keys]
        if extra:
            raise AssertionError(
                f"{what} has the key {extra[0]!r}, which names no parameter of the model (only "
                "Parameters are saved, under their dotted paths)"
            )
        raise AssertionError(
            f"{what}: the right keys in another order; PyTorch's order is the walk's: a "
            "module's own parameters first, then each submodule's in the order assigned"
        )
    for key, value in state.items():
        if not isinstance(value, Tensor):
            raise AssertionError(
                f"{what}[{key!r}] is a {type(value).__name__}; each value is a Tensor with the "
                "parameter's numbers, detached from any graph"
            )
        if isinstance(value, nn.Parameter) or value.requires_grad:
            raise AssertionError(
                f"{what}[{key!r}] is the parameter itself (it requires grad); save a tensor "
                "detached from the graph, which holds the same numbers"
            )
    if state is model._parameters:
        raise AssertionError(f"{what} returned the registry itself; build a new dict")
    return state


def _load(model, state: dict, what: str):
    return call(what, model.load_state_dict, state)


def check_module_state_dict(MiniModule) -> None:  # noqa: N803
    """state_dict() by dotted path; load_state_dict checks every key and shape, then copies."""
    kinds = _models(MiniModule)
    _registration_problem(kinds)
    for description, model in (
        ("Seq(Layer(4, 8), Act(), Layer(8, 3))", _seq(kinds, 0)),
        ("a module with a Parameter of its own, a Seq and a Layer without bias", kinds.Block()),
        ("a module that uses one Layer twice (tied weights)", kinds.Tied()),
    ):
        state = _state_dict(model, f"state_dict() of {description}")
        for key, value in state.items():
            owner = _reference_param(model, key)
            if value.shape != owner.shape or not np.array_equal(value.data, owner.data):
                raise AssertionError(
                    f"state_dict() of {description}: the value under {key!r} does not hold "
                    "that parameter's numbers"
                )

    # your state_dict loads into the package's model, which then computes what yours does
    mine = _seq(kinds, 1)
    theirs = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3))
    what = "nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3)).load_state_dict(yours)"
    try:
        theirs.load_state_dict(_state_dict(mine, "state_dict() of Seq(Layer(4, 8), ...)"))
    except RuntimeError as error:
        raise AssertionError(f"{what} refused it: {str(error).splitlines()[1].strip()}") from None
    x = ml.tensor(np.random.default_rng(9).standard_normal((5, 4)).astype(np.float32))
    with ml.no_grad():
        same = np.allclose(theirs(x).data, mine(x).data, rtol=1e-5, atol=1e-6)
    if not same:
        raise AssertionError(f"after {what}, the two models compute different outputs")

    # and the package's state_dict loads into yours, in place
    source = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3))
    state = {k: Tensor(v.data.astype(np.float64)) for k, v in source.state_dict().items()}
    target = _seq(kinds, 2)
    before = _values(target)
    what = (
        "load_state_dict(a state dict of float64 tensors) on Seq(Layer(4, 8), Act(), Layer(8, 3))"
    )
    _load(target, state, what)
    after = _reference_walk(target)
    if [id(p) for _, p in after] != list(before):
        raise AssertionError(
            f"{what} replaced the Parameter objects; copy the numbers into the existing ones "
            "(an optimiser holds them)"
        )
    for name, p in after:
        if p.dtype != ml.float32:
            raise AssertionError(
                f"{what}: parameter {name!r} became {p.dtype}; copy the numbers into the "
                "parameter's own array, which keeps its dtype (float32)"
            )
        if not np.allclose(p.data, state[name].data, rtol=1e-6):
            raise AssertionError(f"{what}: parameter {name!r} does not hold the loaded numbers")
    state = {k: Tensor(v.data.copy()) for k, v in source.state_dict().items()}  # float32
    _load(target, state, "load_state_dict(a state dict of float32 tensors)")
    for value in state.values():
        value.data += 1.0
    if any(np.allclose(p.data, state[name].data) for name, p in after):
        raise AssertionError(
            "load_state_dict(a state dict of float32 tensors): after loading, the model shares "
            "its arrays with the state dict (changing the state dict changed the model); copy "
            "the numbers"
        )

    # a state dict that does not fit changes nothing, and says which key
    good = {k: Tensor(v.data.copy()) for k, v in source.state_dict().items()}
    wrong = {
        "a missing key '2.bias'": ({k: v for k, v in good.items() if k != "2.bias"}, "2.bias"),
        "an unexpected key '2.scale'": ({**good, "2.scale": Tensor(np.ones(3))}, "2.scale"),
        "'2.bias' of shape (4,) instead of (3,)": (
            {**good, "2.bias": Tensor(np.ones(4))},
            "2.bias",
        ),
    }
    for problem, (bad, key) in wrong.items():
        target = _seq(kinds, 3)
        before = _values(target)
        what = f"load_state_dict(a state dict with {problem})"
        try:
            with np.errstate(all="ignore"):
                target.load_state_dict(bad)
        except NotImplementedError:
            raise
        except Exception as error:  # noqa: BLE001  (any error is the learner's to choose)
            if key not in str(error):
                raise AssertionError(
                    f"{what} raised {type(error).__name__}, but its message does not name the "
                    f"key {key!r}; say which key is wrong, and how"
                ) from None
            if _changed(before):
                raise AssertionError(
                    f"{what} raised an error, but only after changing some parameters: a half-"
                    "loaded model. Check every key and shape first, then copy"
                ) from None
            continue
        raise AssertionError(
            f"{what} raised no error; compare the keys and shapes with the model's own "
            "state_dict() and raise (RuntimeError, as PyTorch) naming the key"
        )
    print(
        "✓ state_dict names every parameter by its path, your model's state loads into the "
        "package's nn.Sequential and back, and a state that does not fit changes nothing"
    )


def _seq(kinds, seed: int):
    return kinds.Seq(kinds.Layer(4, 8, seed=seed), kinds.Act(), kinds.Layer(8, 3, seed=seed + 10))


def _reference_param(model, key: str):
    *path, name = key.split(".")
    module = model
    for part in path:
        module = module._modules[part]
    return module._parameters[name]


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
