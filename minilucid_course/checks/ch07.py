"""Checks for the exercises of chapter 07 (modules and parameters), as probes and judges.

Each probe builds small models on the learner's MiniModule (or calls MyLinear and the
initialiser) and returns what it found as plain data: the registries' names, which object sits
where (as the labels the probe gave each Parameter it made), outputs, gradients and state dicts
as arrays. Each judge builds the same models on the package's own nn.Module and computes every
expected name, order and number itself, and names the first problem in one line.
"""

from __future__ import annotations

import math
import types

import numpy as np

import minilucid as ml
from minilucid import nn
from minilucid.tensor import Tensor
from minilucid_course.checks.common import attempt
from minilucid_course.checks.exercise import Exercise, Wrong, register
from minilucid_course.checks.outcomes import (
    array_of,
    called,
    kind,
    package_kinds,
    raised_first,
    record,
)

# --------------------------------------------------------------------------------------------
# Exercise 1: a Module of your own - registration by assignment, the walk, the state dict


def _models(MiniModule, born: list):  # noqa: N803  (a class, named as one)
    """Small model classes built on MiniModule, as a learner would write them. Every Parameter
    they make is appended to `born`, so that its index labels it in both halves."""

    def parameter(values):
        p = nn.Parameter(values)
        born.append(p)
        return p

    class Layer(MiniModule):
        """weight (out, in) and bias as Parameters; a plain tensor and a number beside them."""

        def __init__(self, n_in, n_out, bias=True, seed=0):
            super().__init__()
            rng = np.random.default_rng(seed)
            self.weight = parameter(rng.uniform(-1, 1, (n_out, n_in)).astype(np.float32))
            self.bias = parameter(rng.uniform(-1, 1, n_out).astype(np.float32)) if bias else None
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
            self.scale = parameter(np.ones(3, dtype=np.float32))
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
            self.temperature = parameter(np.ones(1, dtype=np.float32))

    return types.SimpleNamespace(Layer=Layer, Act=Act, Seq=Seq, Block=Block, Tied=Tied)


def _label(p, born: list):
    """The index of Parameter p among those the models made; -1 for any other Parameter; the
    kind of anything else."""
    if isinstance(p, nn.Parameter):
        return next((i for i, q in enumerate(born) if q is p), -1)
    return "Tensor" if isinstance(p, Tensor) else type(p).__name__


def _keys(module, name: str):
    registry = module.__dict__.get(name)
    return list(registry) if isinstance(registry, dict) else None


def _registration_facts(MiniModule) -> dict:  # noqa: N803
    """Everything the registration exercise looks at, as plain data."""
    born: list = []
    kinds = _models(MiniModule, born)
    made = attempt(kinds.Layer, 3, 2)
    if made[0] == "raised":
        return {"layer": {"raised": list(made[1:])}}
    layer = made[1]
    facts = {"layer": {"ok": True}, "stored": {}}
    facts["params"], facts["modules"] = _keys(layer, "_parameters"), _keys(layer, "_modules")
    if facts["params"] is None or facts["modules"] is None:
        return facts
    for attribute in ("weight", "bias", "mask", "table", "n_in"):
        facts["stored"][attribute] = attribute in layer.__dict__
    params = layer.__dict__["_parameters"]
    facts["same_objects"] = bool(
        params.get("weight") is layer.__dict__.get("weight")
        and params.get("bias") is layer.__dict__.get("bias")
    )
    made = attempt(kinds.Seq, kinds.Layer(3, 4), kinds.Act(), kinds.Layer(4, 2))
    if made[0] == "raised":
        facts["seq"] = {"raised": list(made[1:])}
        return facts
    seq = made[1]
    facts["seq"] = {"ok": True}
    facts["children"], facts["seq_params"] = _keys(seq, "_modules"), _keys(seq, "_parameters")
    if facts["children"] is None or facts["seq_params"] is None:
        return facts
    children = seq.__dict__["_modules"]
    facts["children_same"] = all(children.get(str(i)) is seq.__dict__.get(str(i)) for i in range(3))
    outcome = attempt(lambda: setattr(layer, "bias", None))
    facts["unset_bias"] = (
        {"raised": list(outcome[1:])}
        if outcome[0] == "raised"
        else {"registered": "bias" in params, "value_none": layer.__dict__.get("bias") is None}
    )
    outcome = attempt(seq.__setattr__, "1", None)
    facts["unset_child"] = (
        {"raised": list(outcome[1:])} if outcome[0] == "raised" else {"registered": "1" in children}
    )
    facts["switch"] = _switch_facts(kinds)
    return facts


def _switch_facts(kinds) -> dict:
    """A name that changes kind (submodule <-> Parameter) stays in one registry only."""

    def run():
        seq = kinds.Seq(kinds.Layer(3, 4), kinds.Act())
        seq.__setattr__("0", nn.Parameter(np.ones(3, dtype=np.float32)))
        seq.__setattr__("1", kinds.Layer(4, 2))
        seq.__setattr__("1", nn.Parameter(np.ones(2, dtype=np.float32)))
        layer = kinds.Layer(3, 2)
        layer.weight = kinds.Act()
        return {
            "in_modules": "0" in seq._modules or "1" in seq._modules,
            "in_parameters": "weight" in layer._parameters,
        }

    outcome = attempt(run)
    return {"raised": list(outcome[1:])} if outcome[0] == "raised" else outcome[1]


def _forward_facts(MiniModule, seed: int) -> dict:  # noqa: N803
    kinds = _models(MiniModule, [])
    x = np.random.default_rng([7, 1, seed]).standard_normal((2, 3)).astype(np.float32)
    model = attempt(
        lambda: kinds.Seq(
            kinds.Layer(3, 4, seed=seed), kinds.Act(), kinds.Layer(4, 2, seed=seed + 1)
        )
    )
    if model[0] == "raised":
        return {"raised": list(model[1:])}
    return called(model[1], ml.tensor(x))


def _registration_message(facts) -> None:  # noqa: C901  (one fact after another)
    what = "Layer(3, 2), a subclass of your MiniModule that assigns weight, bias, a plain tensor"
    raised_first(
        facts["layer"],
        what,
        "Can MiniModule.__init__ create the registries while your own __setattr__ needs them?",
    )
    for name, key in (("_parameters", "params"), ("_modules", "modules")):
        if facts.get(key) is None:
            raise Wrong(f"{what} has no dict {name} of its own (an instance attribute)")
    for attribute, stored in facts["stored"].items():
        if stored is not True:
            raise Wrong(
                f"{what}: after self.{attribute} = ..., the attribute {attribute!r} is not "
                f"stored on the object, so reading layer.{attribute} fails"
            )
    params = facts["params"]
    if params != ["weight", "bias"]:
        extra = [n for n in params if n not in ("weight", "bias")]
        if extra:
            raise Wrong(
                f"{what}: _parameters holds {extra[0]!r}, which is not a Parameter (a plain "
                "Tensor or array is state, not something to learn)"
            )
        raise Wrong(
            f"{what}: _parameters should hold 'weight' and 'bias', in the order they were "
            f"assigned; it holds {params}"
        )
    if facts["same_objects"] is not True:
        raise Wrong(f"{what}: _parameters holds copies, not the Parameter objects themselves")
    if facts["modules"]:
        raise Wrong(f"{what}: _modules should be empty, it holds {facts['modules']}")
    raised_first(facts["seq"], "Seq(Layer(3, 4), Act(), Layer(4, 2))")
    if facts["children"] is None or facts["seq_params"] is None:
        raise Wrong("Seq(...) has no dicts _parameters and _modules of its own")
    if facts["children"] != ["0", "1", "2"]:
        raise Wrong(
            "Seq(Layer, Act, Layer), which assigns its layers under the names '0', '1', '2': "
            f"its _modules hold {facts['children']}, not every MiniModule in the order of "
            "assignment"
        )
    if facts["children_same"] is not True:
        raise Wrong("Seq(...): _modules holds copies, not the submodules themselves")
    if facts["seq_params"]:
        raise Wrong("Seq(...) has no parameters of its own, but its _parameters is not empty")
    unset = facts["unset_bias"]
    raised_first(unset, f"{what}, then layer.bias = None")
    if unset["registered"] is not False or unset["value_none"] is not True:
        raise Wrong(
            f"{what}, then layer.bias = None: 'bias' is still registered, though the name now "
            "holds no Parameter"
        )
    raised_first(facts["unset_child"], "Seq(...), then setting its submodule '1' to None")
    if facts["unset_child"]["registered"] is not False:
        raise Wrong("Seq(...), then setting its submodule '1' to None: '1' is still in _modules")
    switch = facts["switch"]
    raised_first(switch, "assigning a Parameter under a submodule's name")
    if switch["in_modules"] is not False:
        raise Wrong(
            "Seq(Layer, Act), then a Parameter assigned under the submodule name '0': '0' is "
            "now in _parameters and still in _modules (a name is registered once)"
        )
    if switch["in_parameters"] is not False:
        raise Wrong(
            "Layer(3, 2), then a submodule assigned under its Parameter's name 'weight': "
            "'weight' is now in _modules and still in _parameters (a name is registered once)"
        )


def _reference_forward(seed: int) -> np.ndarray:
    born: list = []
    kinds = _models(nn.Module, born)
    model = kinds.Seq(kinds.Layer(3, 4, seed=seed), kinds.Act(), kinds.Layer(4, 2, seed=seed + 1))
    x = np.random.default_rng([7, 1, seed]).standard_normal((2, 3)).astype(np.float32)
    with ml.no_grad():
        return np.asarray(model(ml.tensor(x)).data, dtype=np.float64)


def _module_cases(seed: int) -> dict:
    return {"seed": seed}


def _probe_registration(cases, MiniModule):  # noqa: N803
    return {
        "registration": _registration_facts(MiniModule),
        "forward": _forward_facts(MiniModule, cases["seed"]),
    }


def _judge_registration(cases, data) -> str:
    _registration_message(data["registration"])
    what = "calling Seq(Layer(3, 4), Act(), Layer(4, 2)) on a batch"
    raised_first(data["forward"], what)
    out = array_of(data["forward"], what)
    want = _reference_forward(cases["seed"])
    if out is None or out.shape != want.shape or not np.allclose(out, want, 1e-5, 1e-6):
        raise Wrong(f"{what} did not run its layers' forward")
    return (
        "✓ MiniModule registers Parameters and submodules as they are assigned, in order, and "
        "nothing else"
    )


EXERCISE_REGISTER = register(
    Exercise(
        check="check_module_registration",
        chapter="07",
        title="A Module of your own: registration",
        probe=_probe_registration,
        judge=_judge_registration,
        cases=_module_cases,
        forbidden=("Module",),
    )
)
check_module_registration = EXERCISE_REGISTER.lab_check


def _walk_models(kinds) -> tuple:
    """(description, model, prefix) of every walk case, built in this order in both halves."""
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
        ("Seq(Layer, Layer) whose two layers share one weight Parameter", kinds.Seq(shared, twin),
         ""),
        ("Seq(Seq(Layer), Seq(Block)), three levels deep", deep, ""),
        ("Seq(Layer(4, 8), Act(), Layer(8, 3)) with prefix='model'", mlp, "model"),
    )  # fmt: skip


def _pairs(outcome, born) -> dict:
    if outcome[0] == "raised":
        return {"raised": list(outcome[1:])}
    got = outcome[1]
    if got is None:
        return {"type": "None"}
    listed = attempt(list, got)
    if listed[0] == "raised":
        return {"type": type(got).__name__}
    items = []
    for pair in listed[1]:
        if not isinstance(pair, tuple | list) or len(pair) != 2:
            items.append({"pair": False})
            continue
        name, p = pair
        items.append({"name": name if isinstance(name, str) else None, "label": _label(p, born)})
    return {"items": items}


def _probe_walk(cases, MiniModule):  # noqa: N803
    data = {"registration": _registration_facts(MiniModule), "cases": []}
    if "raised" in data["registration"]["layer"]:
        return data
    born: list = []
    built = attempt(lambda: _walk_models(_models(MiniModule, born)))
    if built[0] == "raised":
        data["built"] = {"raised": list(built[1:])}
        return data
    for _, model, prefix in built[1]:
        args = (prefix,) if prefix else ()
        named = _pairs(attempt(model.named_parameters, *args), born)
        plain = attempt(lambda m=model: [_label(p, born) for p in m.parameters()])
        data["cases"].append({
            "named": named,
            "plain": {"raised": list(plain[1:])} if plain[0] == "raised" else {"labels": plain[1]},
        })  # fmt: skip
    return data


def _reference_walk(module, born, prefix: str = "") -> list:
    """PyTorch's order: own parameters, then each child's, each once: [(name, label)]."""
    pairs = module.named_parameters(prefix) if prefix else module.named_parameters()
    return [(name, _label(p, born)) for name, p in pairs]


def _judge_walk(cases, data) -> str:
    _registration_message(data["registration"])
    raised_first(data.get("built", {}), "building the models of your MiniModule")
    born: list = []
    reference = _walk_models(_models(nn.Module, born))
    for (description, model, prefix), facts in zip(reference, data["cases"], strict=True):
        what = f"named_parameters() on {description}"
        named = facts["named"]
        raised_first(named, what)
        if "items" not in named:
            raise Wrong(
                f"{what} returned {kind(named)}"
                + (" (did you forget `return`?)" if named == {"type": "None"} else "")
                + "; the contract is a list of (name, parameter) pairs, or a generator of them"
            )
        _compare_walk(what, named["items"], _reference_walk(model, born, prefix))
        plain = facts["plain"]
        raised_first(plain, f"parameters() on {description}")
        if plain["labels"] != [label for _, label in _reference_walk(model, born)]:
            raise Wrong(
                f"parameters() on {description} does not give the parameters of "
                "named_parameters(), in the same order, each once"
            )
    return "✓ named_parameters gives PyTorch's names in PyTorch's order, each parameter once"


def _compare_walk(what: str, items: list, expected: list) -> None:
    if not all(item.get("pair") is not False for item in items):
        raise Wrong(f"{what}: an item is not a pair (name, parameter)")
    labels = [item["label"] for item in items]
    names = [item["name"] for item in items]
    if any(type(label) is not int or label < 0 for label in labels):
        raise Wrong(
            f"{what}: an item's second half is not one of the model's Parameter objects (its "
            ".data, or a copy?)"
        )
    if len(set(labels)) < len(labels):
        raise Wrong(
            f"{what}: a parameter appears more than once ({len(labels)} items for "
            f"{len(set(labels))} parameters); a module used twice is counted twice, and an "
            "optimiser would update it twice"
        )
    if len(labels) < len(expected):
        raise Wrong(
            f"{what}: your walk found {len(labels)} parameters, the model has {len(expected)}: "
            "are the submodules of submodules visited too (recursion), and the module's own "
            "parameters?"
        )
    if len(labels) > len(expected):
        raise Wrong(f"{what}: your walk gave {len(labels)} items, the model has {len(expected)}")
    if any(not isinstance(n, str) for n in names):
        raise Wrong(f"{what}: a name is not a string such as 'weight'")
    bad = [n for n in names if n.startswith(".") or n.endswith(".") or ".." in n]
    if bad:
        raise Wrong(f"{what}: the name {bad[0]!r} has a stray dot")
    expected_names = [name for name, _ in expected]
    if [label for _, label in expected] != labels:
        if sorted(labels) == sorted(label for _, label in expected):
            raise Wrong(
                f"{what}: the right parameters in another order than PyTorch's (a module's own "
                "parameters first, then those of each submodule in the order they were "
                "assigned, depth first)"
            )
        raise Wrong(f"{what}: these are not the model's parameters")
    if names != expected_names:
        short = [n for n in names if "." not in n]
        if len(short) == len(names) and any("." in n for n in expected_names):
            hint = "a submodule's parameters are named '<submodule>.<name>', e.g. '0.weight'"
        else:
            hint = "each name is the path of attribute names from the top module, dot-separated"
        wrong = next(n for n, e in zip(names, expected_names, strict=True) if n != e)
        raise Wrong(f"{what}: the name {wrong!r} is not PyTorch's; {hint}")


EXERCISE_WALK = register(
    Exercise(
        check="check_module_walk",
        chapter="07",
        title="A Module of your own: the walk",
        probe=_probe_walk,
        judge=_judge_walk,
        cases=_module_cases,
        forbidden=("Module",),
    )
)
check_module_walk = EXERCISE_WALK.lab_check


def _state_models(kinds) -> tuple:
    return (
        ("Seq(Layer(4, 8), Act(), Layer(8, 3))", _seq(kinds, 0)),
        ("a module with a Parameter of its own, a Seq and a Layer without bias", kinds.Block()),
        ("a module that uses one Layer twice (tied weights)", kinds.Tied()),
    )


def _seq(kinds, seed: int):
    return kinds.Seq(kinds.Layer(4, 8, seed=seed), kinds.Act(), kinds.Layer(8, 3, seed=seed + 10))


def _state_record(outcome, model) -> dict:
    if outcome[0] == "raised":
        return {"raised": list(outcome[1:])}
    state = outcome[1]
    if not isinstance(state, dict):
        return {"type": type(state).__name__}
    values = {}
    for key, value in state.items():
        if not isinstance(key, str):
            return {"type": "dict with keys that are not str"}
        values[key] = {
            "kind": type(value).__name__,
            "tensor": isinstance(value, Tensor),
            "grad": bool(getattr(value, "requires_grad", False)),
            "data": np.array(getattr(value, "data", np.zeros(0)), dtype=np.float64)
            if isinstance(value, Tensor) else np.zeros(0),
        }  # fmt: skip
    return {"keys": list(state), "values": values,
            "is_registry": state is model.__dict__.get("_parameters")}  # fmt: skip


def _source_state(seed: int) -> dict:
    """A package nn.Sequential's state, seeded: {key: array}."""
    rng = np.random.default_rng([7, 3, seed])
    shapes = {"0.weight": (8, 4), "0.bias": (8,), "2.weight": (3, 8), "2.bias": (3,)}
    return {k: rng.uniform(-0.5, 0.5, s).astype(np.float32) for k, s in shapes.items()}


def _numbers(model) -> list:
    return [np.array(p.data, dtype=np.float64) for p in model.parameters()]


def _load_facts(kinds, state_arrays: dict, dtype) -> dict:
    target = _seq(kinds, 2)
    before = list(target.parameters())
    born_before = [id(p) for p in before]
    state = {k: Tensor(v.astype(dtype)) for k, v in state_arrays.items()}
    outcome = attempt(target.load_state_dict, state)
    facts = {"load": {"raised": list(outcome[1:])} if outcome[0] == "raised" else {"ok": True}}
    after = attempt(lambda: list(target.parameters()))
    if after[0] == "raised":
        facts["after"] = {"raised": list(after[1:])}
        return facts
    facts["same_objects"] = [id(p) for p in after[1]] == born_before
    facts["dtypes"] = [str(p.dtype) for p in after[1]]
    facts["values"] = [np.array(p.data, dtype=np.float64) for p in after[1]]
    for value in state.values():
        value.data += 1.0
    facts["after_state_changed"] = [np.array(p.data, dtype=np.float64) for p in after[1]]
    return facts


def _probe_state(cases, MiniModule):  # noqa: N803
    data = {"registration": _registration_facts(MiniModule)}
    if "raised" in data["registration"]["layer"]:
        return data
    kinds = _models(MiniModule, [])
    built = attempt(lambda: _state_models(kinds))
    if built[0] == "raised":
        data["built"] = {"raised": list(built[1:])}
        return data
    data["states"] = [_state_record(attempt(m.state_dict), m) for _, m in built[1]]
    rest = attempt(_state_rest, cases, kinds, data)
    if rest[0] == "raised":
        data["built"] = {"raised": list(rest[1:])}
    return data


def _state_rest(cases, kinds, data) -> None:
    mine = _seq(kinds, 1)
    data["mine"] = _state_record(attempt(mine.state_dict), mine)
    x = np.random.default_rng([7, 2, cases["seed"]]).standard_normal((5, 4)).astype(np.float32)
    data["mine_out"] = called(mine, ml.tensor(x))
    source = _source_state(cases["seed"])
    data["load64"] = _load_facts(kinds, source, np.float64)
    data["load32"] = _load_facts(kinds, source, np.float32)
    data["bad"] = []
    for _, bad in _bad_states(source):
        target = _seq(kinds, 2)
        outcome = attempt(target.load_state_dict, {k: Tensor(v) for k, v in bad.items()})
        data["bad"].append({
            "load": {"raised": list(outcome[1:])} if outcome[0] == "raised" else {"ok": True},
            "after": _numbers(target),
        })  # fmt: skip


def _bad_states(source: dict) -> list:
    good = {k: v.copy() for k, v in source.items()}
    return [
        ("a missing key '2.bias'", {k: v for k, v in good.items() if k != "2.bias"}),
        ("an unexpected key '2.scale'", {**good, "2.scale": np.ones(3)}),
        ("'2.bias' of shape (4,) instead of (3,)", {**good, "2.bias": np.ones(4)}),
    ]


_BAD_KEYS = ("2.bias", "2.scale", "2.bias")


def _judge_state_dict(what: str, rec, reference) -> dict:
    raised_first(rec, what)
    if "keys" not in rec:
        raise Wrong(f"{what} returned {kind(rec)}; the contract is a dict")
    keys = reference.state_dict()
    expected = list(keys)
    got = rec["keys"]
    if got != expected:
        missing = [k for k in expected if k not in got]
        if missing:
            raise Wrong(
                f"{what} has no key {missing[0]!r}: every parameter is saved under its dotted "
                "path, a tied one under each of its names, as in PyTorch's state_dict"
            )
        extra = [k for k in got if k not in expected]
        if extra:
            raise Wrong(f"{what} has the key {extra[0]!r}, which names no parameter of the model")
        raise Wrong(f"{what}: the right keys in another order than the walk's")
    for key, value in rec["values"].items():
        if value["tensor"] is not True:
            raise Wrong(
                f"{what}[{key!r}] is a {value['kind']}, not a Tensor detached from the graph"
            )
        if value["grad"] is not False or value["kind"] == "Parameter":
            raise Wrong(f"{what}[{key!r}] is the parameter itself (it requires grad)")
        want = np.asarray(keys[key].data, dtype=np.float64)
        if value["data"].shape != want.shape or not np.array_equal(value["data"], want):
            raise Wrong(f"{what}: the value under {key!r} does not hold that parameter's numbers")
    if rec["is_registry"] is not False:
        raise Wrong(f"{what} returned the registry itself, not a new dict")
    return rec["values"]


def _judge_state(cases, data) -> str:  # noqa: C901  (one case after another)
    _registration_message(data["registration"])
    raised_first(data.get("built", {}), "building the models of your MiniModule")
    kinds = _models(nn.Module, [])
    for (description, reference), rec in zip(_state_models(kinds), data["states"], strict=True):
        _judge_state_dict(f"state_dict() of {description}", rec, reference)
    mine = _judge_state_dict("state_dict() of Seq(Layer(4, 8), ...)", data["mine"], _seq(kinds, 1))
    theirs = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3))
    theirs.load_state_dict({k: Tensor(v["data"].astype(np.float32)) for k, v in mine.items()})
    x = np.random.default_rng([7, 2, cases["seed"]]).standard_normal((5, 4)).astype(np.float32)
    with ml.no_grad():
        want = np.asarray(theirs(ml.tensor(x)).data, dtype=np.float64)
    what = "nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3)).load_state_dict(yours)"
    got = array_of(data["mine_out"], "your Seq(Layer(4, 8), Act(), Layer(8, 3))")
    if got is None or got.shape != want.shape or not np.allclose(got, want, 1e-5, 1e-6):
        raise Wrong(f"after {what}, the two models compute different outputs")
    source = _source_state(cases["seed"])
    names = list(source)
    for facts, dtype in ((data["load64"], "float64"), (data["load32"], "float32")):
        what = (
            f"load_state_dict(a state dict of {dtype} tensors) on Seq(Layer(4, 8), Act(), "
            "Layer(8, 3))"
        )
        raised_first(facts["load"], what)
        raised_first(facts.get("after", {}), what)
        if facts["same_objects"] is not True:
            raise Wrong(
                f"{what} replaced the Parameter objects, where an optimiser holds the old ones"
            )
        for name, dt, value in zip(names, facts["dtypes"], facts["values"], strict=True):
            if dt != "float32":
                raise Wrong(f"{what}: parameter {name!r} became {dt}, not the float32 it was")
            if value.shape != source[name].shape or not np.allclose(value, source[name], 1e-6):
                raise Wrong(f"{what}: parameter {name!r} does not hold the loaded numbers")
        if dtype == "float32" and any(
            np.allclose(a, b) for a, b in zip(facts["after_state_changed"],
                                              [source[n] + 1.0 for n in names], strict=True)
        ):  # fmt: skip
            raise Wrong(
                f"{what}: after loading, the model shares its arrays with the state dict "
                "(changing the state dict changed the model)"
            )
    start = [np.asarray(p.data, dtype=np.float64) for p in _seq(kinds, 2).parameters()]
    for (problem, _), key, facts in zip(_bad_states(source), _BAD_KEYS, data["bad"], strict=True):
        what = f"load_state_dict(a state dict with {problem})"
        load = facts["load"]
        if "raised" not in load:
            raise Wrong(
                f"{what} raised no error: the keys and shapes differ from the model's own "
                "state_dict()"
            )
        name, text = load["raised"]
        if key not in str(text):
            raise Wrong(f"{what} raised {name}, but its message does not name the key {key!r}")
        after = facts["after"]
        if len(after) != len(start) or any(
            a.shape != b.shape or not np.array_equal(a, b)
            for a, b in zip(after, start, strict=True)
        ):
            raise Wrong(
                f"{what} raised an error, but only after changing some parameters: a "
                "half-loaded model"
            )
    return (
        "✓ state_dict names every parameter by its path, your model's state loads into the "
        "package's nn.Sequential and back, and a state that does not fit changes nothing"
    )


EXERCISE_STATE = register(
    Exercise(
        check="check_module_state_dict",
        chapter="07",
        title="A Module of your own: the state dict",
        probe=_probe_state,
        judge=_judge_state,
        cases=_module_cases,
        forbidden=("Module",),
    )
)
check_module_state_dict = EXERCISE_STATE.lab_check


# --------------------------------------------------------------------------------------------
# Exercise 2: a Linear layer from scratch

_LINEAR_INPUTS = ((5, 4), (2, 5, 4), (4,))


def _linear_cases(seed: int) -> dict:
    return {"seed": seed}


def _linear_arrays(seed: int) -> dict:
    rng = np.random.default_rng(7 if seed == 0 else [7, 4, seed])
    out = {"weight": rng.standard_normal((3, 4)).astype(np.float32),
           "bias": rng.standard_normal(3).astype(np.float32)}  # fmt: skip
    out["x"] = [rng.standard_normal(s).astype(np.float32) for s in _LINEAR_INPUTS]
    out["g"] = [np.random.default_rng([8, seed, i]).standard_normal((*s[:-1], 3)).astype(np.float32)
                for i, s in enumerate(_LINEAR_INPUTS)]  # fmt: skip
    return out


def _layer_facts(MyLinear, args, kwargs) -> tuple:  # noqa: N803
    made = attempt(MyLinear, *args, **kwargs)
    if made[0] == "raised":
        return None, {"made": {"raised": list(made[1:])}}
    layer = made[1]
    facts = {"made": {"ok": True}, "module": isinstance(layer, nn.Module)}
    if not facts["module"]:
        facts["type"] = type(layer).__name__
        return None, facts

    def describe():
        return [
            (str(n), [int(d) for d in p.shape], str(p.dtype), isinstance(p, nn.Parameter))
            for n, p in layer.named_parameters()
        ]

    named = attempt(describe)
    if named[0] == "raised":
        facts["named"] = {"raised": list(named[1:])}
        return None, facts
    rows = named[1]
    facts["named"] = {
        "names": [r[0] for r in rows],
        "shapes": [r[1] for r in rows],
        "dtypes": [r[2] for r in rows],
        "parameters": [r[3] for r in rows],
    }
    return layer, facts


def _forward_run(layer, arrays, bias: bool) -> list:
    runs = []
    set_up = attempt(_set_linear, layer, arrays, bias)
    if set_up[0] == "raised":
        return [{"raised": list(set_up[1:])}]
    for x_np, g in zip(arrays["x"], arrays["g"], strict=True):
        x = Tensor(x_np.copy(), requires_grad=True)
        attempt(layer.zero_grad)
        made = attempt(layer, x)
        if made[0] == "raised":
            runs.append({"out": {"raised": list(made[1:])}})
            continue
        facts = {"out": record(made[1])}
        out = made[1]
        if isinstance(out, Tensor) and out.grad_fn is not None and out.shape == g.shape:
            facts["backward"] = called(out.backward, g)
            facts["grads"] = [record(x.grad), record(layer.weight.grad)] + (
                [record(layer.bias.grad)] if bias else []
            )
        runs.append(facts)
    return runs


def _set_linear(layer, arrays, bias: bool) -> None:
    layer.weight.data = arrays["weight"].copy()
    if bias:
        layer.bias.data = arrays["bias"].copy()


def _probe_linear(cases, MyLinear):  # noqa: N803
    arrays = _linear_arrays(cases["seed"])
    package = package_kinds(MyLinear, ("Linear",), nn)
    layer, facts = _layer_facts(MyLinear, (4, 3), {})
    if layer is not None:
        package += package_kinds(layer, ("Linear",), nn)
    if package:
        return {"package": package}
    no_bias, facts_nb = _layer_facts(MyLinear, (4, 3), {"bias": False})
    data = {"layer": facts, "no_bias": facts_nb}
    if layer is None or no_bias is None:
        return data
    data["forward"] = _forward_run(layer, arrays, True)
    data["forward_nb"] = _forward_run(no_bias, arrays, False)
    data["features"] = called(layer, ml.ones(5, 3))
    draws = []
    for _ in range(2):
        ml.manual_seed(0)
        big, facts = _layer_facts(MyLinear, (400, 300), {})
        draws.append(facts if big is None else {
            "made": {"ok": True}, "weight": np.array(big.weight.data, dtype=np.float64),
            "bias": np.array(big.bias.data, dtype=np.float64)})  # fmt: skip
    data["init"] = draws
    return data


def _judge_parameters(facts, expected: list, what: str) -> None:
    raised_first(facts["made"], what, "Is super().__init__() called first in __init__?")
    if facts["module"] is not True:
        raise Wrong(f"{what} is a {facts.get('type', '?')}, not a Module")
    raised_first(facts["named"], f"{what}.named_parameters()")
    named = facts["named"]
    names, shapes = named["names"], [tuple(s) for s in named["shapes"]]
    if not all(q is True for q in named["parameters"]):
        names = [n for n, q in zip(names, named["parameters"], strict=True) if q is True]
    got = list(zip(names, shapes, strict=False))
    if got == expected:
        for dtype in named["dtypes"]:
            if dtype != "float32":
                raise Wrong(f"{what}: the parameters are {dtype}, where PyTorch's are float32")
        return
    if sorted(names) != sorted(n for n, _ in expected):
        raise Wrong(
            f"{what} has the parameters {names}, PyTorch's has {[n for n, _ in expected]} "
            "(nn.Parameter objects; self.bias = None when bias=False)"
        )
    shape_of = dict(got)
    if shape_of.get("weight") == expected[0][1][::-1]:
        raise Wrong(
            f"{what}: weight has shape {shape_of['weight']}, where PyTorch stores it as "
            "(out_features, in_features)"
        )
    if names != [n for n, _ in expected]:
        raise Wrong(f"{what}: bias is assigned before weight, where PyTorch assigns weight first")
    raise Wrong(f"{what}: the parameter shapes {got} are not (out, in) and (out,)")


def _judge_forward(runs, arrays, what: str, bias: bool) -> None:
    if len(runs) != len(_LINEAR_INPUTS):
        raised_first(runs[0] if runs else {}, what)
        raise Wrong(f"{what}: the results could not be read")
    weight, b = arrays["weight"].astype(np.float64), arrays["bias"].astype(np.float64)
    for shape, x_np, g, facts in zip(_LINEAR_INPUTS, arrays["x"], arrays["g"], runs, strict=True):
        x64, g64 = x_np.astype(np.float64), g.astype(np.float64)
        raised_first(facts["out"], f"{what} on an input of shape {shape}")
        if "tensor" not in facts["out"]:
            raise Wrong(f"{what} returned a {kind(facts['out'])}, not a Tensor")
        out = array_of(facts["out"], what)
        expected = x64 @ weight.T + (b if bias else 0)
        if out.shape != expected.shape:
            raise Wrong(
                f"{what} on an input of shape {shape} gave shape {out.shape}; it should keep "
                "every dimension but the last, which becomes out_features"
            )
        if not np.allclose(out, expected, rtol=1e-5, atol=1e-5):
            words = "x @ weight.T" + (" + bias" if bias else "")
            if bias and np.allclose(out, x64 @ weight.T, rtol=1e-5, atol=1e-5):
                words = "x @ weight.T + bias: the bias is missing"
            raise Wrong(f"{what} on an input of shape {shape}: the output is not {words}")
        if facts["out"]["grad_fn"] is not True:
            raise Wrong(
                f"{what}: the output has no graph (grad_fn is None), so no gradient can reach "
                "the weights"
            )
        raised_first(facts["backward"], f"backward through {what}")
        g2, x2 = g64.reshape(-1, 3), x64.reshape(-1, 4)
        wanted = [("the input", g64 @ weight), ("weight", g2.T @ x2)]
        if bias:
            wanted.append(("bias", g2.sum(axis=0)))
        for (name, exact), rec in zip(wanted, facts["grads"], strict=True):
            got = array_of(rec, f"{what}: {name}'s gradient")
            if got is None:
                raise Wrong(
                    f"{what} on an input of shape {shape}: no gradient reached {name} (is the "
                    "output computed on .data arrays?)"
                )
            if got.shape != exact.shape or not np.allclose(got, exact, rtol=1e-4, atol=1e-4):
                raise Wrong(f"{what} on an input of shape {shape}: the gradient of {name} is wrong")


def _judge_wrong_features(rec) -> None:
    what = "MyLinear(4, 3) on an input of shape (5, 3)"
    if not isinstance(rec, dict):
        raise Wrong(f"{what}: its result has a form no answer gives")
    if "raised" not in rec:
        raise Wrong(
            f"{what} was accepted, where the contract raises a ValueError that names the shape "
            "and the 4 features it expects"
        )
    name, text = rec["raised"]
    if name != "ValueError":
        raise Wrong(f"{what} raised {name}: {text}, where the contract raises a ValueError")
    if not ("(5, 3)" in text and "4" in text and ("Linear" in text or "in_features" in text)):
        raise Wrong(
            f"{what} raised ValueError, but its message {text!r} does not name the layer "
            "(MyLinear), the input's shape (5, 3) and the in_features it expects (4)"
        )


def _judge_init(draws) -> None:
    what = "MyLinear(400, 300)"
    for facts in draws:
        raised_first(facts["made"], what)
    w, b = draws[0]["weight"], draws[0]["bias"]
    bound = 1 / math.sqrt(400)
    if w.shape != (300, 400) or b.shape != (300,):
        raise Wrong(f"{what}: the parameters do not have the shapes (300, 400) and (300,)")
    if not np.array_equal(w, draws[1]["weight"]):
        raise Wrong(
            f"{what}: after ml.manual_seed(0), two layers got different weights: the draws do "
            "not come from the stream ml.manual_seed resets"
        )
    if np.all(w == 0) or np.all(w == w.flat[0]):
        raise Wrong(
            f"{what}: every weight is the same number: every output is then the same function "
            "of the input, and they stay equal in training"
        )
    if not np.allclose(np.abs(w).max(), bound, rtol=0.01):
        if abs(w.std() - bound / math.sqrt(3)) < 0.03 * bound:
            problem = "the weights have the right spread but not PyTorch's distribution"
        else:
            problem = "the weights are not spread like PyTorch's"
        raise Wrong(
            f"{what}: {problem}, uniformly over (-k, k) with k = 1/sqrt(in_features), which "
            "with 400 inputs is ±0.05"
        )
    if abs(w.mean()) > 0.01 * bound or abs(w.std() - bound / math.sqrt(3)) > 0.02 * bound:
        raise Wrong(
            f"{what}: the weights are not spread evenly over (-k, k), k = 1/sqrt(in_features)"
        )
    if np.all(b == 0):
        raise Wrong(f"{what}: the bias is all zeros, where PyTorch draws it from (-k, k) too")
    if np.abs(b).max() > bound * 1.0001 or np.abs(b).max() < 0.9 * bound:
        raise Wrong(f"{what}: the bias is not drawn from (-k, k) with k = 1/sqrt(in_features)")


def _package_message(what: str, package) -> str:
    names = [str(n) for n in package] if isinstance(package, list) and package else ["class"]
    return (
        f"{what} is (or keeps) minilucid's own {names[0]} and lets it do the work: nothing of "
        "it is yours"
    )


def _judge_linear(cases, data) -> str:
    arrays = _linear_arrays(cases["seed"])
    if "package" in data:
        raise Wrong(_package_message("MyLinear", data["package"]))
    _judge_parameters(data["layer"], [("weight", (3, 4)), ("bias", (3,))], "MyLinear(4, 3)")
    _judge_parameters(data["no_bias"], [("weight", (3, 4))], "MyLinear(4, 3, bias=False)")
    _judge_forward(data["forward"], arrays, "MyLinear(4, 3)", bias=True)
    _judge_forward(data["forward_nb"], arrays, "MyLinear(4, 3, bias=False)", bias=False)
    _judge_wrong_features(data["features"])
    _judge_init(data["init"])
    return (
        "✓ MyLinear has PyTorch's parameters, forward, gradients and initialisation, and "
        "says clearly when the input has the wrong number of features"
    )


EXERCISE_LINEAR = register(
    Exercise(
        check="check_linear",
        chapter="07",
        title="A Linear layer from scratch",
        probe=_probe_linear,
        judge=_judge_linear,
        cases=_linear_cases,
        forbidden=("Linear", "linear"),
    )
)
check_linear = EXERCISE_LINEAR.lab_check


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


def _init_cases(seed: int) -> dict:
    return {"seed": seed}


def _probe_init(cases, init_for_relu):
    model = deep_relu_mlp(seed=cases["seed"])
    applied = called(model.apply, init_for_relu)
    layers = [{"weight": np.array(m.weight.data), "bias": np.array(m.bias.data)}
              for m in model if isinstance(m, nn.Linear)]  # fmt: skip
    return {"applied": applied, "layers": layers, "gain": np.array(model[-1].gain.data)}


def _judge_init_fn(cases, data) -> str:
    raised_first(data["applied"], "model.apply(init_for_relu)")
    model = deep_relu_mlp(seed=cases["seed"])
    linears = [(i, m) for i, m in enumerate(model) if isinstance(m, nn.Linear)]
    if len(data["layers"]) != len(linears):
        raise Wrong("model.apply(init_for_relu): the layers could not be read")
    for (index, module), facts in zip(linears, data["layers"], strict=True):
        name = str(index)
        w = np.asarray(facts["weight"], dtype=np.float64)
        b = np.asarray(facts["bias"], dtype=np.float64)
        if w.shape != tuple(module.weight.shape) or b.shape != tuple(module.bias.shape):
            raise Wrong(f"layer {name}: the weight or the bias changed shape")
        fan_in = w.shape[1]
        std = math.sqrt(2 / fan_in)
        if np.any(b != 0):
            raise Wrong(
                f"layer {name}: the bias is not zero (with zero biases every layer starts as a "
                "pure scaling of its input, and the spread is set by the weights alone)"
            )
        if abs(w.mean()) > 0.05 * std or abs(w.std() - std) > 0.05 * std:
            fan_out = w.shape[0]
            gain_one = [1 / math.sqrt(fan_in), math.sqrt(2 / (fan_in + fan_out))]
            if fan_in != fan_out and abs(w.std() - std * math.sqrt(fan_in / fan_out)) < 0.05 * std:
                hint = "its spread uses the fan-out, where the forward pass needs fan_in"
            elif any(abs(w.std() - s) < 0.05 * s for s in gain_one):
                hint = (
                    "this spread suits layers that keep the variance (gain 1), but a ReLU "
                    "zeroes half of its input"
                )
            else:
                hint = "the weights' spread is not the one a ReLU network needs"
            raise Wrong(f"layer {name} (weight of shape {tuple(w.shape)}, fan_in {fan_in}): {hint}")
        if np.abs(w).max() < 3 * std:
            raise Wrong(
                f"layer {name}: the weights are spread like a uniform distribution, where this "
                "exercise asks for the normal one"
            )
    gain = np.asarray(data["gain"])
    if gain.shape != (1,) or not np.array_equal(gain, np.ones(1, dtype=np.float32)):
        raise Wrong(
            "init_for_relu changed the parameter of a module that is not a Linear (a learned "
            "gain, set to 1 on purpose)"
        )
    for (_, module), facts in zip(linears, data["layers"], strict=True):
        module.weight.data = np.asarray(facts["weight"], dtype=np.float32)
        module.bias.data = np.asarray(facts["bias"], dtype=np.float32)
    stds = activation_stds(model)
    if not 0.5 < stds[-1] / stds[0] < 2:
        raise Wrong(
            "after your initialisation, the activations' spread changes by a factor "
            f"{stds[-1] / stds[0]:.3g} over 20 layers, more than 2x"
        )
    default = activation_stds(deep_relu_mlp(seed=cases["seed"]))
    return (
        f"✓ init_for_relu keeps the activations' spread steady through 20 ReLU layers "
        f"(std {stds[0]:.2f} after the first, {stds[-1]:.2f} after the last; PyTorch's "
        f"default initialisation shrinks it to {default[-1]:.1e})"
    )


EXERCISE_INIT = register(
    Exercise(
        check="check_relu_init",
        chapter="07",
        title="An initialisation for deep ReLU networks",
        probe=_probe_init,
        judge=_judge_init_fn,
        cases=_init_cases,
        forbidden=("kaiming_uniform_",),
    )
)
check_relu_init = EXERCISE_INIT.lab_check
