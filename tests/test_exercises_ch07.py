"""Chapter 07 (Modules and parameters): each check accepts the solution, rejects wrong answers."""

import functools
from pathlib import Path

import pytest
from nbharness import edited, rejected, run_check, unanswered, with_answer

NB = Path(__file__).resolve().parents[1] / "solutions" / "07_modules_and_parameters.ipynb"

_rejected = functools.partial(rejected, NB)
_solved = functools.partial(with_answer, NB)
_edited = functools.partial(edited, NB)

EX1 = ("ex07_1_named_parameters_check", "ex07_1_named_parameters_answer")
EX2 = ("ex07_2_linear_check", "ex07_2_linear_answer")
EX3 = ("ex07_3_init_check", "ex07_3_init_answer")


@pytest.mark.parametrize(
    "check, answer, done",
    [(*EX1, "✓ named_parameters"), (*EX2, "✓ MyLinear"), (*EX3, "✓ init_for_relu")],
)
def test_solution_passes_and_stub_is_not_done(check, answer, done, capsys):
    run_check(NB, check)
    assert done in capsys.readouterr().out
    unanswered(NB, check, answer)


# --------------------------------------------------------------------------------------------
# Exercise 1: named_parameters


def test_ex1_rejects_no_recursion():
    wrong = _solved(
        EX1[1],
        """
return [(prefix + name, p) for name, p in module._parameters.items()]
""",
    )
    _rejected(*EX1, wrong, "found 0 parameters", "recursion")


def test_ex1_rejects_one_level_only():
    wrong = _edited(
        EX1[1],
        (
            'walk(child, path + name + ".")',
            "pairs.extend((path + name + '.' + n, q) for n, q in child._parameters.items())",
        ),
    )  # noqa: E501
    _rejected(*EX1, wrong, "found 2 parameters, the model has 6", "recursion")


def test_ex1_rejects_names_without_the_submodule():
    wrong = _edited(EX1[1], ('walk(child, path + name + ".")', "walk(child, path)"))
    _rejected(*EX1, wrong, "'weight'", "'<submodule>.<name>'")


def test_ex1_rejects_a_leading_dot():
    wrong = _edited(
        EX1[1], ('walk(module, prefix + "." if prefix else "")', "walk(module, prefix + '.')")
    )  # noqa: E501
    _rejected(*EX1, wrong, "stray dot", "'.weight'")


def test_ex1_rejects_a_missing_dot_after_the_prefix():
    wrong = _edited(
        EX1[1], ('walk(module, prefix + "." if prefix else "")', "walk(module, prefix)")
    )  # noqa: E501
    _rejected(*EX1, wrong, "with prefix='model'", "'model0.weight'")


def test_ex1_rejects_children_before_own_parameters():
    wrong = _solved(
        EX1[1],
        """
pairs, seen = [], set()

def walk(m, path):
    for name, child in m._modules.items():
        walk(child, path + name + ".")
    for name, p in m._parameters.items():
        if id(p) not in seen:
            seen.add(id(p))
            pairs.append((path + name, p))

walk(module, prefix + "." if prefix else "")
return pairs
""",
    )
    _rejected(*EX1, wrong, "another order", "own parameters first")


def test_ex1_rejects_counting_a_shared_module_twice():
    wrong = _edited(EX1[1], ("if p is not None and id(p) not in seen:", "if p is not None:"))
    _rejected(*EX1, wrong, "tied weights", "more than once", "update it twice")


def test_ex1_rejects_arrays_instead_of_parameters():
    wrong = _edited(
        EX1[1], ("pairs.append((path + name, p))", "pairs.append((path + name, p.data))")
    )  # noqa: E501
    _rejected(*EX1, wrong, "not a Parameter")


def test_ex1_rejects_forgetting_to_return():
    wrong = _edited(EX1[1], ("    return pairs\n", "    pairs\n"))
    _rejected(*EX1, wrong, "returned None")


# --------------------------------------------------------------------------------------------
# Exercise 2: MyLinear

SOLUTION_INIT = "nn.Parameter((-k + 2 * k * ml.rand(*shape).data).astype(np.float32))"


def test_ex2_rejects_forgetting_super_init():
    wrong = _edited(EX2[1], ("        super().__init__()\n", ""))
    _rejected(*EX2, wrong, "MyLinear(4, 3) raised AttributeError", "super().__init__()")


def test_ex2_rejects_a_transposed_weight():
    wrong = _edited(
        EX2[1],
        [
            ("uniform(out_features, in_features)", "uniform(in_features, out_features)"),
            ("x @ self.weight.T", "x @ self.weight"),
        ],
    )
    _rejected(*EX2, wrong, "weight has shape (4, 3)", "(out_features, in_features)")


@pytest.mark.parametrize(
    "edit, words",
    [
        (
            ("uniform(out_features) if bias else None", "uniform(out_features)"),
            ["bias=False", "self.bias = None"],
        ),
        (("return nn.Parameter(", "return Tensor("), ["has the parameters []", "nn.Parameter"]),
        ((".astype(np.float32)", ".astype(np.float64)"), ["float64", "float32"]),
        (
            ("return out if self.bias is None else out + self.bias", "return out"),
            ["the bias is missing"],
        ),
        (
            ("out = x @ self.weight.T", "out = Tensor(x.data @ self.weight.data.T)"),
            ["no gradient reached the input", ".data"],
        ),
    ],
    ids=["bias always", "plain tensors", "float64", "no bias in forward", "forward on arrays"],
)
def test_ex2_rejects_a_wrong_layer(edit, words):
    _rejected(*EX2, _edited(EX2[1], edit), *words)


def test_ex2_rejects_an_input_only_2d():
    wrong = _edited(
        EX2[1],
        ("out = x @ self.weight.T", "out = x.reshape(-1, self.in_features) @ self.weight.T"),
    )
    _rejected(*EX2, wrong, "shape (2, 5, 4)", "every dimension but the last")


def test_ex2_rejects_a_message_without_shapes():
    wrong = _edited(
        EX2[1],
        ('f"MyLinear: input of shape {x.shape}, expected {self.in_features} features"', '"bad"'),
    )
    _rejected(*EX2, wrong, "'bad'", "name the layer")


def test_ex2_rejects_the_engines_matmul_message():
    wrong = _edited(EX2[1], ("if x.shape[-1:] != (self.in_features,):", "if False:"))
    _rejected(*EX2, wrong, "should name the layer (MyLinear)")


def test_ex2_rejects_numpy_random_numbers():
    wrong = _edited(EX2[1], ("ml.rand(*shape).data", "np.random.random(shape)"))
    _rejected(*EX2, wrong, "manual_seed", "ml.rand")


@pytest.mark.parametrize(
    "mutant, words",
    [
        ("nn.Parameter((k * ml.randn(*shape).data).astype(np.float32))", ["uniformly", "±0.05"]),
        ("nn.Parameter((-k + k * ml.rand(*shape).data).astype(np.float32))", ["evenly"]),
        (
            "nn.Parameter((np.sqrt(6 / 700) * (2 * ml.rand(*shape).data - 1)).astype(np.float32))",
            ["uniformly", "1/sqrt(in_features)"],
        ),
        ("nn.Parameter(np.full(shape, k / 2, dtype=np.float32))", ["the same number"]),
    ],
    ids=["normal", "not centred", "xavier bound", "constant"],
)
def test_ex2_rejects_other_initialisations(mutant, words):
    wrong = _edited(EX2[1], (SOLUTION_INIT, mutant))
    _rejected(*EX2, wrong, *words)


def test_ex2_rejects_a_zero_bias():
    wrong = _edited(
        EX2[1],
        (
            "self.bias = uniform(out_features) if bias else None",
            "self.bias = nn.Parameter(np.zeros(out_features, np.float32)) if bias else None",
        ),
    )
    _rejected(*EX2, wrong, "bias is all zeros", "(-k, k) too")


def test_ex2_rejects_a_bias_bound_from_out_features():
    wrong = _edited(
        EX2[1],
        (
            "self.bias = uniform(out_features) if bias else None",
            "self.bias = nn.Parameter((0.2 * ml.rand(out_features).data - 0.1).astype(np.float32)) if bias else None",  # noqa: E501
        ),
    )
    _rejected(*EX2, wrong, "bias is not drawn from (-k, k)")


# --------------------------------------------------------------------------------------------
# Exercise 3: init_for_relu


def _init(body):
    return _solved(EX3[1], body)


def test_ex3_rejects_xavier():
    wrong = _init(
        """
if isinstance(module, nn.Linear):
    nn.init.xavier_normal_(module.weight)
    nn.init.zeros_(module.bias)
"""
    )
    _rejected(*EX3, wrong, "gain for 'relu' is sqrt(2)")


def test_ex3_rejects_fan_out():
    wrong = _init(
        """
if isinstance(module, nn.Linear):
    nn.init.kaiming_normal_(module.weight, mode="fan_out", nonlinearity="relu")
    nn.init.zeros_(module.bias)
"""
    )
    _rejected(*EX3, wrong, "layer 0", "fan-out", "mode='fan_in'")


def test_ex3_rejects_the_uniform_variant():
    wrong = _init(
        """
if isinstance(module, nn.Linear):
    nn.init.kaiming_uniform_(module.weight, nonlinearity="relu")
    nn.init.zeros_(module.bias)
"""
    )
    _rejected(*EX3, wrong, "uniform distribution", "kaiming_normal_")


def test_ex3_rejects_a_bias_left_as_it_was():
    wrong = _init(
        """
if isinstance(module, nn.Linear):
    nn.init.kaiming_normal_(module.weight, nonlinearity="relu")
"""
    )
    _rejected(*EX3, wrong, "bias is not zero")


def test_ex3_rejects_changing_every_parameter():
    wrong = _init(
        """
for p in module.parameters(recurse=False):
    if p.ndim == 2:
        nn.init.kaiming_normal_(p, nonlinearity="relu")
    else:
        nn.init.zeros_(p)
"""
    )
    _rejected(*EX3, wrong, "not a Linear", "isinstance")


def test_ex3_rejects_initialising_vectors_as_weights():
    wrong = _init(
        """
for p in module.parameters(recurse=False):
    nn.init.kaiming_normal_(p, nonlinearity="relu")
"""
    )
    _rejected(*EX3, wrong, "raised ValueError", "at least 2 dimensions")


def test_ex3_rejects_the_default_left_alone():
    wrong = _init("pass")
    _rejected(*EX3, wrong, "bias is not zero")
