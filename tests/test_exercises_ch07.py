"""Chapter 07 (Modules and parameters): each check accepts the solution, rejects wrong answers."""

from __future__ import annotations

from pathlib import Path

from forged_data import forged_data_test
from nbharness import Wrong, mutation_tests, with_answer

NB = Path(__file__).resolve().parents[1] / "solutions" / "07_modules_and_parameters.ipynb"

MODULE = "ex07_1_module_answer"
EXERCISES = {
    "register": ("ex07_1_module_answer", "ex07_1a_register_check"),
    "walk": ("ex07_1_module_answer", "ex07_1b_walk_check"),
    "state dict": ("ex07_1_module_answer", "ex07_1c_state_dict_check"),
    "linear": ("ex07_2_linear_answer", "ex07_2_linear_check"),
    "init": ("ex07_3_init_answer", "ex07_3_init_check"),
}

# --- pieces of the solutions the mutants edit ---------------------------------------------------

REGISTRIES = (
    '        object.__setattr__(self, "_parameters", {})\n'
    '        object.__setattr__(self, "_modules", {})\n'
)
FORGET = (
    "        else:  # not learned: forget the name if it was registered\n"
    "            self._parameters.pop(name, None)\n"
    "            self._modules.pop(name, None)\n"
)
STORE = "        object.__setattr__(self, name, value)\n"
OWN = (
    "        for name, p in self._parameters.items():\n"
    "            if id(p) not in seen:\n"
    "                seen.add(id(p))\n"
    "                pairs.append((dot + name, p))\n"
)
RECURSE = (
    "        for name, child in self._modules.items():\n"
    "            pairs += child.named_parameters(dot + name, seen)\n"
)
CHECK_FIRST = (
    '        problems = [f"missing key {key!r}" for key in own if key not in state]\n'
    '        problems += [f"unexpected key {key!r}" for key in state if key not in own]\n'
)
SHAPES = (
    "        problems += [\n"
    '            f"{key!r} has shape {state[key].shape}, the model {own[key].shape}"\n'
    "            for key in own\n"
    "            if key in state and state[key].shape != own[key].shape\n"
    "        ]\n"
)
COPY = (
    "        for key, target in own.items():\n"
    "            target.data[...] = state[key].data  # the parameter's own array, in place\n"
)
HALF_LOAD = (
    "        for key, target in own.items():\n"
    "            if key not in state or state[key].shape != target.shape:\n"
    '                raise RuntimeError(f"load_state_dict: {key!r} missing or misshapen")\n'
    "            target.data[...] = state[key].data\n"
    "        for key in state:\n"
    "            if key not in own:\n"
    '                raise RuntimeError(f"load_state_dict: unexpected key {key!r}")\n'
)
LINEAR_INIT = "nn.Parameter((-k + 2 * k * ml.rand(*shape).data).astype(np.float32))"
BIAS = "self.bias = uniform(out_features) if bias else None"
FORWARD = "out = x @ self.weight.T"


def _init(body: str) -> str:
    return with_answer(NB, "ex07_3_init_answer", body)


MUTANTS = {
    "register": {
        "registries made through its own __setattr__": Wrong(
            [(REGISTRIES, "        self._parameters = {}\n        self._modules = {}\n")],
            "raised AttributeError",
            "your own __setattr__",
        ),
        "registries shared by every instance (class attributes)": Wrong(
            [
                (REGISTRIES, "        pass\n"),
                (
                    '    """A minimal Module: registration by assignment, the walk of its tree, '
                    'its state dict."""\n',
                    '    """A minimal Module."""\n\n    _parameters, _modules = {}, {}\n',
                ),
            ],
            "no dict _parameters of its own",
        ),
        "__setattr__ forgets to store the attribute (no super().__setattr__)": Wrong(
            [(STORE, "")], "not stored on the object"
        ),
        "stores only the attributes it does not register": Wrong(
            [(FORGET + STORE, FORGET + "    " + STORE)], "'weight' is not stored"
        ),
        "registers plain tensors and arrays as parameters": Wrong(
            [("if isinstance(value, nn.Parameter):", "if isinstance(value, Tensor | np.ndarray):")],
            "'mask'",
            "not a Parameter",
        ),
        "registers submodules only if they are the package's nn.Module": Wrong(
            [("elif isinstance(value, MiniModule):", "elif isinstance(value, nn.Module):")],
            "its _modules hold []",
        ),
        "registers a copy of each parameter": Wrong(
            [
                (
                    "self._parameters[name] = value",
                    "self._parameters[name] = nn.Parameter(value.data.copy())",
                )
            ],
            "copies, not the Parameter objects",
        ),
        "None does not unregister a name": Wrong([(FORGET, "")], "'bias' is still registered"),
        "a Parameter under a submodule's name stays in _modules too": Wrong(
            [
                (
                    "            self._modules.pop(name, None)\n            self._parameters[name]",
                    "            self._parameters[name]",
                )
            ],
            "still in _modules",
        ),
        "a submodule under a Parameter's name stays in _parameters too": Wrong(
            [
                (
                    "            self._parameters.pop(name, None)\n            self._modules[name]",
                    "            self._modules[name]",
                )
            ],
            "still in _parameters",
        ),
        "registers a module under the parameters": Wrong(
            [("self._modules[name] = value", "self._parameters[name] = value")],
            "its _modules hold []",
        ),
    },
    "walk": {
        "no recursion into submodules": Wrong([(RECURSE, "")], "found 0 parameters", "recursion"),
        "one level of submodules only": Wrong(
            [
                (
                    "pairs += child.named_parameters(dot + name, seen)",
                    "pairs += [(dot + name + '.' + n, q) for n, q in child._parameters.items()]",
                )
            ],
            "found 2 parameters, the model has 6",
        ),
        "names without the submodule's name": Wrong(
            [("child.named_parameters(dot + name, seen)", "child.named_parameters(prefix, seen)")],
            "'weight'",
            "'<submodule>.<name>'",
        ),
        "a leading dot when there is no prefix": Wrong(
            [('dot = prefix + "." if prefix else ""', 'dot = prefix + "."')],
            "stray dot",
            "'.weight'",
        ),
        "names without dots": Wrong(
            [('dot = prefix + "." if prefix else ""', "dot = prefix")], "'0weight'"
        ),
        "children before the module's own parameters": Wrong(
            [(OWN + RECURSE, RECURSE + OWN)], "another order", "own parameters first"
        ),
        "counts a shared module twice": Wrong(
            [
                (
                    "            if id(p) not in seen:\n                seen.add(id(p))\n"
                    "                pairs.append((dot + name, p))\n",
                    "            pairs.append((dot + name, p))\n",
                )
            ],
            "tied weights",
            "more than once",
            "update it twice",
        ),
        "a new record of what was given in each submodule": Wrong(
            [("child.named_parameters(dot + name, seen)", "child.named_parameters(dot + name)")],
            "more than once",
        ),
        "arrays instead of parameters": Wrong(
            [("pairs.append((dot + name, p))", "pairs.append((dot + name, p.data))")],
            "Parameter objects",
        ),
        "forgets to return": Wrong(
            [("        return pairs\n", "        pairs\n")], "returned None"
        ),
        "sorted by name": Wrong(
            [
                (
                    "        return pairs\n",
                    "        return sorted(pairs, key=lambda pair: pair[0])\n",
                )
            ],
            "another order",
        ),
        "parameters() gives the pairs": Wrong(
            [("return [p for _, p in self.named_parameters()]", "return self.named_parameters()")],
            "parameters() on",
        ),
    },
    "state dict": {
        "a tied parameter under one name only": Wrong(
            [
                (
                    "state = {prefix + name: p.detach() for name, p in self._parameters.items()}",
                    "state = {n: p.detach() for n, p in self.named_parameters(prefix[:-1])}\n"
                    "        return state",
                )
            ],
            "no key 'decoder.weight'",
        ),
        "the parameters themselves, not detached": Wrong(
            [("{prefix + name: p.detach()", "{prefix + name: p")], "the parameter itself"
        ),
        "arrays instead of tensors": Wrong(
            [("{prefix + name: p.detach()", "{prefix + name: p.data")], "is a ndarray"
        ),
        "keys without dots": Wrong(
            [('child.state_dict(prefix + name + ".")', "child.state_dict(prefix + name)")],
            "no key '0.weight'",
        ),
        "half-loads before it finds the problem": Wrong(
            [(CHECK_FIRST + SHAPES, "        problems = []\n"), (COPY, HALF_LOAD)],
            "half-loaded",
        ),
        "no shape check": Wrong([(SHAPES, "")], "(4,)"),
        "unexpected keys ignored": Wrong(
            [
                (
                    '        problems += [f"unexpected key {key!r}" for key in state '
                    "if key not in own]\n",
                    "",
                )
            ],
            "unexpected key '2.scale'",
            "raised no error",
        ),
        "an error that names no key": Wrong(
            [
                (
                    '"load_state_dict: nothing was loaded: " + "; ".join(problems)',
                    '"load_state_dict: the state dict does not fit"',
                )
            ],
            "does not name the key",
        ),
        "rebinds each parameter to the state's array": Wrong(
            [
                (
                    COPY,
                    "        for key, p in self.named_parameters():\n"
                    "            p.data = state[key].data\n",
                )
            ],
            "became float64",
        ),
        "shares the state's arrays": Wrong(
            [
                (
                    COPY,
                    "        for key, p in self.named_parameters():\n"
                    "            p.data = state[key].data.astype(p.dtype, copy=False)\n",
                )
            ],
            "shares its arrays",
        ),
        "checks but never copies": Wrong([(COPY, "")], "does not hold the loaded numbers"),
        "replaces the parameters with new ones": Wrong(
            [
                (
                    COPY,
                    "        for key, p in list(self.named_parameters()):\n"
                    "            *path, name = key.split('.')\n"
                    "            module = self\n"
                    "            for part in path:\n"
                    "                module = module._modules[part]\n"
                    "            setattr(module, name, "
                    "nn.Parameter(state[key].data.astype(p.dtype)))\n",
                )
            ],
            "replaced the Parameter objects",
        ),
    },
    "linear": {
        "the package's Linear under another name": Wrong(
            "class MyLinear(nn.Linear):\n    pass\n", "minilucid's own Linear"
        ),
        "forgets super().__init__()": Wrong(
            [("        super().__init__()  # given: the registries first (Exercise 1)\n", "")],
            "MyLinear(4, 3) raised AttributeError",
            "super().__init__()",
        ),
        "a transposed weight": Wrong(
            [
                ("uniform(out_features, in_features)", "uniform(in_features, out_features)"),
                (FORWARD, "out = x @ self.weight"),
            ],
            "weight has shape (4, 3)",
            "(out_features, in_features)",
        ),
        "a bias even with bias=False": Wrong(
            [("uniform(out_features) if bias else None", "uniform(out_features)")],
            "bias=False",
            "self.bias = None",
        ),
        "plain tensors instead of parameters": Wrong(
            [("return nn.Parameter(", "return Tensor(")], "has the parameters []", "nn.Parameter"
        ),
        "float64 parameters": Wrong([(".astype(np.float32)", ".astype(np.float64)")], "float64"),
        "no bias in forward": Wrong(
            [("return out if self.bias is None else out + self.bias", "return out")],
            "the bias is missing",
        ),
        "forward on arrays": Wrong(
            [(FORWARD, "out = Tensor(x.data @ self.weight.data.T)")],
            "no gradient reached the input",
            ".data",
        ),
        "an input of two dimensions only": Wrong(
            [(FORWARD, "out = x.reshape(-1, self.in_features) @ self.weight.T")],
            "shape (2, 5, 4)",
            "every dimension but the last",
        ),
        "a message without shapes": Wrong(
            [
                (
                    'f"MyLinear: input of shape {x.shape}, expected {self.in_features} features"',
                    '"bad"',
                )
            ],
            "'bad'",
            "name the layer",
        ),
        "the engine's matmul message": Wrong(
            [("if x.shape[-1:] != (self.in_features,):", "if False:")],
            "does not name the layer (MyLinear)",
        ),
        "NumPy's random numbers": Wrong(
            [("ml.rand(*shape).data", "np.random.random(shape)")], "manual_seed"
        ),
        "normal weights": Wrong(
            [(LINEAR_INIT, "nn.Parameter((k * ml.randn(*shape).data).astype(np.float32))")],
            "uniformly",
            "±0.05",
        ),
        "weights not centred": Wrong(
            [(LINEAR_INIT, "nn.Parameter((-k + k * ml.rand(*shape).data).astype(np.float32))")],
            "evenly",
        ),
        "Xavier's bound": Wrong(
            [
                (
                    LINEAR_INIT,
                    "nn.Parameter((np.sqrt(6 / 700) * (2 * ml.rand(*shape).data - 1))"
                    ".astype(np.float32))",
                )
            ],
            "uniformly",
            "1/sqrt(in_features)",
        ),
        "constant weights": Wrong(
            [(LINEAR_INIT, "nn.Parameter(np.full(shape, k / 2, dtype=np.float32))")],
            "the same number",
        ),
        "a zero bias": Wrong(
            [
                (
                    BIAS,
                    "self.bias = nn.Parameter(np.zeros(out_features, np.float32)) "
                    "if bias else None",
                )
            ],
            "bias is all zeros",
            "(-k, k) too",
        ),
        "a bias bound from out_features": Wrong(
            [
                (
                    BIAS,
                    "self.bias = nn.Parameter((0.2 * ml.rand(out_features).data - 0.1)"
                    ".astype(np.float32)) if bias else None",
                )
            ],
            "bias is not drawn from (-k, k)",
        ),
    },
    "init": {
        "Xavier": Wrong(
            _init(
                "if isinstance(module, nn.Linear):\n"
                "    nn.init.xavier_normal_(module.weight)\n"
                "    nn.init.zeros_(module.bias)\n"
            ),
            "zeroes half",
        ),
        "fan out": Wrong(
            _init(
                "if isinstance(module, nn.Linear):\n"
                '    nn.init.kaiming_normal_(module.weight, mode="fan_out", nonlinearity="relu")\n'
                "    nn.init.zeros_(module.bias)\n"
            ),
            "layer 0",
            "fan-out",
            "fan-out",
        ),
        "the uniform variant": Wrong(
            _init(
                "if isinstance(module, nn.Linear):\n"
                '    nn.init.kaiming_uniform_(module.weight, nonlinearity="relu")\n'
                "    nn.init.zeros_(module.bias)\n"
            ),
            "uniform distribution",
            "the normal one",
        ),
        "a bias left as it was": Wrong(
            _init(
                "if isinstance(module, nn.Linear):\n"
                '    nn.init.kaiming_normal_(module.weight, nonlinearity="relu")\n'
            ),
            "bias is not zero",
        ),
        "changes every parameter": Wrong(
            _init(
                "for p in module.parameters(recurse=False):\n"
                "    if p.ndim == 2:\n"
                '        nn.init.kaiming_normal_(p, nonlinearity="relu")\n'
                "    else:\n"
                "        nn.init.zeros_(p)\n"
            ),
            "not a Linear",
            "not a Linear",
        ),
        "initialises vectors as weights": Wrong(
            _init(
                "for p in module.parameters(recurse=False):\n"
                '    nn.init.kaiming_normal_(p, nonlinearity="relu")\n'
            ),
            "raised ValueError",
            "at least 2 dimensions",
        ),
        "the default left alone": Wrong(_init("pass"), "bias is not zero"),
    },
}


DONE = {
    "register": "✓ MiniModule registers",
    "walk": "✓ named_parameters",
    "state dict": "✓ state_dict",
    "linear": "✓ MyLinear",
    "init": "✓ init_for_relu",
}


test_the_solution_passes, test_a_wrong_answer_is_rejected, test_the_stub_raises = mutation_tests(
    NB,
    EXERCISES,
    MUTANTS,
    stand_ins={check: "pass" for _, check in EXERCISES.values()},  # each check judged alone
    done=DONE,
)


test_forged_data_is_wrong = forged_data_test(
    NB, EXERCISES, seeded=("register", "state dict", "linear")
)
