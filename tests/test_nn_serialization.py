"""minilucid.save / minilucid.load: .npz files of arrays, never pickles."""

from __future__ import annotations

import io
import json
import pickle
import zipfile

import numpy as np
import pytest

import minilucid as ml
from minilucid import nn


def model():
    return nn.Sequential(nn.Flatten(), nn.Linear(6, 5), nn.Tanh(), nn.Linear(5, 2))


def test_state_dict_round_trip_gives_identical_outputs(tmp_path):
    ml.manual_seed(0)
    source = model()
    path = tmp_path / "model.npz"
    ml.save(source.state_dict(), path)
    loaded = ml.load(path)
    assert list(loaded) == list(source.state_dict())
    assert all(isinstance(v, ml.Tensor) and not v.requires_grad for v in loaded.values())
    target = model()
    target.load_state_dict(loaded)
    x = ml.randn(4, 2, 3)
    assert np.array_equal(source(x).data, target(x).data)
    # a plain .npz: NumPy reads it too, without pickles
    with np.load(path, allow_pickle=False) as npz:
        assert np.array_equal(npz["1.weight"], source[1].weight.data)


def test_dtypes_and_str_paths_survive(tmp_path):
    state = {"a": ml.tensor(np.arange(3.0)), "i": ml.tensor([1, 2]), "f": np.ones(2, np.float32)}
    path = str(tmp_path / "x.npz")
    ml.save(state, path)
    loaded = ml.load(path)
    assert [v.dtype for v in loaded.values()] == [np.float64, np.int64, np.float32]


def test_a_checkpoint_of_dicts_lists_numbers_and_tensors_round_trips(tmp_path):
    checkpoint = {
        "model": model().state_dict(),
        "epoch": 3,
        "optimizer": {
            "state": {0: {"step": ml.tensor(4.0), "buf": np.zeros(2)}},
            "param_groups": [{"lr": 0.1, "betas": (0.9, 0.999), "params": [0, 1], "x": None}],
        },
        "name": "mlp",
    }
    ml.save(checkpoint, tmp_path / "ck.npz")
    back = ml.load(tmp_path / "ck.npz")
    assert back["epoch"] == 3 and back["name"] == "mlp"
    group = back["optimizer"]["param_groups"][0]
    assert group == {"lr": 0.1, "betas": (0.9, 0.999), "params": [0, 1], "x": None}
    state = back["optimizer"]["state"]
    assert list(state) == [0] and state[0]["step"].item() == 4.0
    assert isinstance(state[0]["buf"], np.ndarray)
    assert list(back["model"]) == list(checkpoint["model"])


def test_saving_an_object_that_needs_pickle_is_refused(tmp_path):
    with pytest.raises(TypeError, match=r"save: obj\['model'\] is a Sequential.*state_dict"):
        ml.save({"model": model()}, tmp_path / "x.npz")
    with pytest.raises(TypeError, match="dtype object"):
        ml.save({"w": np.array([{}, 1], dtype=object)}, tmp_path / "x.npz")


def test_a_file_that_is_not_an_npz_is_refused(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("hello")
    with pytest.raises(ValueError, match=r"notes.txt' is not an .npz file"):
        ml.load(path)
    pickled = tmp_path / "model.pkl"
    pickled.write_bytes(pickle.dumps({"w": np.ones(2)}))
    with pytest.raises(ValueError, match=r"model.pkl' is not an .npz file"):
        ml.load(pickled)
    with pytest.raises(FileNotFoundError, match="no file"):
        ml.load(tmp_path / "missing.npz")


def test_an_npz_holding_a_pickled_array_is_refused(tmp_path):
    path = tmp_path / "evil.npz"
    np.savez(path, w=np.ones(2), evil=np.array([{"code": 1}], dtype=object))
    with pytest.raises(ValueError, match=r"array 'evil' .* Python objects"):
        ml.load(path)


def test_a_zip_holding_a_pickle_is_refused(tmp_path):
    path = tmp_path / "torch_like.npz"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("archive/data.pkl", pickle.dumps({"w": 1}))
    with pytest.raises(ValueError, match=r"holds 'archive/data.pkl', which is not a .npy"):
        ml.load(path)


def test_a_torch_file_is_refused_and_torch_reads_nothing_from_us(tmp_path):
    torch = pytest.importorskip("torch")
    path = tmp_path / "t.pt"
    torch.save(torch.nn.Linear(2, 2).state_dict(), path)
    with pytest.raises(ValueError, match="not a .npy array"):
        ml.load(path)


def test_a_checkpoint_with_an_optimiser_resumes_training_exactly(tmp_path):
    from minilucid import optim

    def train(model, opt, steps):
        x, y = ml.tensor(np.linspace(-1, 1, 24).reshape(8, 3)), np.arange(8) % 2
        for _ in range(steps):
            loss = nn.CrossEntropyLoss()(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()

    ml.manual_seed(0)
    first = nn.Sequential(nn.Linear(3, 5), nn.Tanh(), nn.Linear(5, 2))
    opt = optim.Adam(first.parameters(), lr=0.01)
    train(first, opt, 3)
    ml.save(
        {"model": first.state_dict(), "optimizer": opt.state_dict(), "epoch": 3}, tmp_path / "c.npz"
    )
    back = ml.load(tmp_path / "c.npz")
    second = nn.Sequential(nn.Linear(3, 5), nn.Tanh(), nn.Linear(5, 2))
    second.load_state_dict(back["model"])
    opt2 = optim.Adam(second.parameters(), lr=0.01)
    opt2.load_state_dict(back["optimizer"])
    train(first, opt, 4)
    train(second, opt2, 4)
    assert back["epoch"] == 3
    for a, b in zip(first.parameters(), second.parameters(), strict=True):
        assert np.array_equal(a.data, b.data)


# --------------------------------------------------------------------------------------------
# A checkpoint that does not fit loads nothing; a damaged file is named in its error


@pytest.mark.parametrize(
    "bad",
    [
        np.array(["a", "b", "c", "d", "e", "f"]),
        np.array([b"a", b"b", b"c", b"d", b"e", b"f"]),
        np.array([{}, 1, 2, 3, 4, 5], dtype=object),
        [[1.0, 2.0], [3.0]],
    ],
    ids=["strings", "bytes", "objects", "ragged"],
)
def test_load_state_dict_checks_every_entry_before_changing_anything(bad):
    ml.manual_seed(0)
    target = nn.Sequential(nn.Linear(6, 5), nn.Linear(5, 6))
    before = {k: v.data.copy() for k, v in target.state_dict().items()}
    state = {k: np.zeros_like(v.data) for k, v in target.state_dict().items()}
    state["1.bias"] = bad  # the last entry: every other would have been written before it
    with pytest.raises(RuntimeError, match=r"^load_state_dict: Sequential: nothing was loaded"):
        target.load_state_dict(state)
    for key, value in target.state_dict().items():
        np.testing.assert_array_equal(value.data, before[key])


def test_a_crafted_checkpoint_of_strings_is_refused_and_loads_nothing(tmp_path):
    """save never writes strings; a file that holds some (NumPy writes them without pickling)
    is refused by load, naming the file, before any model sees it."""
    ml.manual_seed(0)
    target = model()
    before = [p.data.copy() for p in target.parameters()]
    state = {k: v.data for k, v in target.state_dict().items()}
    state["3.bias"] = np.array(["x", "y"])  # the last entry, of the right shape
    path = tmp_path / "crafted.npz"
    with zipfile.ZipFile(path, "w") as archive:
        items = []
        for i, (key, array) in enumerate(state.items()):
            with archive.open(f"a{i}.npy", "w") as f:
                np.lib.format.write_array(f, array, allow_pickle=False)
            items.append([key, {"array": f"a{i}", "tensor": False}])
        archive.writestr("__tree__.json", json.dumps({"dict": items}))
    with pytest.raises(ValueError, match=r"^load: array 'a3' in '.*crafted.npz' holds <U1"):
        target.load_state_dict(ml.load(path))
    for p, b in zip(target.parameters(), before, strict=True):
        np.testing.assert_array_equal(p.data, b)


def damaged_files(tmp_path):
    """(name, path) of files save never writes: each is refused with an error naming it."""
    good = tmp_path / "good.npz"
    ml.save({"epoch": 3, "model": {"w": ml.ones(2)}}, good)
    data = good.read_bytes()
    files = {"truncated.npz": data[: len(data) // 2]}

    def zipped(name, members):
        path = tmp_path / name
        with zipfile.ZipFile(path, "w") as archive:
            for member, text in members.items():
                archive.writestr(member, text)
        files[name] = path.read_bytes()

    zipped("bad_json.npz", {"__tree__.json": "{not json"})
    zipped("missing_array.npz", {"__tree__.json": '{"array": "a0", "tensor": true}'})
    zipped("bad_tree.npz", {"__tree__.json": '{"tuple": 3}'})
    zipped("deep_json.npz", {"__tree__.json": "[" * 100_000 + "]" * 100_000})
    zipped("bad_npy.npz", {"w.npy": b"\x93NUMPY not really"})
    for name, content in files.items():
        (tmp_path / name).write_bytes(content)
    return [(name, tmp_path / name) for name in files]


def test_a_damaged_file_is_refused_with_an_error_naming_it(tmp_path):
    for name, path in damaged_files(tmp_path):
        refused = rf"^load: .*{name}' (is damaged|is not an \.npz file)"
        with pytest.raises(ValueError, match=refused) as info:
            ml.load(path)
        assert info.value.__cause__ is None, name


def test_save_and_load_through_a_file_object():
    buffer = io.BytesIO()
    checkpoint = {"model": {"w": ml.tensor([1.0, 2.0])}, "epoch": 2}
    ml.save(checkpoint, buffer)
    buffer.seek(0)
    back = ml.load(buffer)
    assert back["epoch"] == 2
    np.testing.assert_array_equal(back["model"]["w"].data, [1.0, 2.0])
    with pytest.raises(ValueError, match=r"^load: 'the BytesIO' is damaged"):
        ml.load(io.BytesIO(b"not a zip"))


def test_a_key_named_like_the_tree_member_survives_a_round_trip(tmp_path):
    state = {"__tree__.json": ml.tensor([1.0]), "__tree__": ml.tensor([2.0]), "w": ml.ones(1)}
    ml.save(state, tmp_path / "s.npz")
    back = ml.load(tmp_path / "s.npz")
    assert list(back) == list(state)
    for key, value in state.items():
        np.testing.assert_array_equal(back[key].data, value.data)
