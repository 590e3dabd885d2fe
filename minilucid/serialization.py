"""save and load: state dicts and checkpoints as .npz files, never pickles.

A state dict (names to tensors) becomes a plain .npz archive, one .npy array per name, that
NumPy opens too. Anything else made of dicts, lists, tuples, numbers, strings, None and tensors
(a checkpoint with a model, an optimiser and an epoch) keeps its arrays the same way and its
shape in one JSON member, `__tree__.json`. Loading reads arrays with allow_pickle=False, so a
file cannot run code: unpickling an untrusted file can.
"""

import json
import os
import zipfile

import numpy as np

from minilucid.tensor import Tensor

TREE = "__tree__.json"


def save(obj, path) -> None:
    """Write a state dict (or a checkpoint of dicts, lists, numbers and tensors) to `path`."""
    arrays = {}
    if isinstance(obj, dict) and all(
        isinstance(k, str) and isinstance(v, Tensor | np.ndarray) for k, v in obj.items()
    ):
        arrays = {key: _plain(value) for key, value in obj.items()}
        tree = None
    else:
        tree = _encode(obj, arrays, "obj")
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for key, array in arrays.items():
            with archive.open(key + ".npy", "w", force_zip64=True) as f:
                np.lib.format.write_array(f, array, allow_pickle=False)
        if tree is not None:
            archive.writestr(TREE, json.dumps(tree))


def load(path):
    """Read what `save` wrote; tensors come back as Tensors (without requires_grad)."""
    name = os.fspath(path)
    if not os.path.isfile(name):
        raise FileNotFoundError(f"load: there is no file {name!r}")
    if not zipfile.is_zipfile(name):
        raise ValueError(
            f"load: {name!r} is not an .npz file (a zip archive of .npy arrays), so it was "
            "not read. minilucid.save writes such files; it never reads pickles."
        )
    with zipfile.ZipFile(name) as archive:
        members = archive.namelist()
        strange = [m for m in members if not m.endswith(".npy") and m != TREE]
        if strange:
            raise ValueError(
                f"load: {name!r} holds {strange[0]!r}, which is not a .npy array (a pickle, "
                "perhaps, as torch.save writes); refusing to read it. Only .npz files of "
                "arrays, as minilucid.save writes, are loaded."
            )
        tree = json.loads(archive.read(TREE)) if TREE in members else None
    arrays = {}
    with np.load(name, allow_pickle=False) as npz:
        for key in npz.files:
            if key == TREE:
                continue
            try:
                arrays[key] = npz[key]
            except ValueError as error:
                raise ValueError(
                    f"load: array {key!r} in {name!r} holds Python objects, which would have "
                    f"to be unpickled; refusing to read it ({error})"
                ) from None
    if tree is None:
        return {key: Tensor(array) for key, array in arrays.items()}
    return _decode(tree, arrays)


def _plain(value) -> np.ndarray:
    array = value.data if isinstance(value, Tensor) else value
    if array.dtype.kind not in "biuf":
        raise TypeError(f"save: cannot store an array of dtype {array.dtype} without pickling")
    return array


def _encode(obj, arrays: dict, where: str):
    """A JSON-ready copy of obj; each tensor or array goes into `arrays` and leaves a reference."""
    if obj is None or isinstance(obj, bool | int | float | str):
        return obj
    if isinstance(obj, Tensor | np.ndarray | np.generic):
        key = f"a{len(arrays)}"
        arrays[key] = _plain(np.asarray(obj.data if isinstance(obj, Tensor) else obj))
        return {"array": key, "tensor": isinstance(obj, Tensor)}
    if isinstance(obj, dict):
        items = [
            [_encode(k, arrays, f"{where} key"), _encode(v, arrays, f"{where}[{k!r}]")]
            for k, v in obj.items()
        ]
        return {"dict": items}
    if isinstance(obj, list | tuple):
        kind = "list" if isinstance(obj, list) else "tuple"
        return {kind: [_encode(v, arrays, f"{where}[{i}]") for i, v in enumerate(obj)]}
    raise TypeError(
        f"save: {where} is a {type(obj).__name__}; only dicts, lists, tuples, numbers, strings, "
        "None, tensors and arrays can be saved without pickling (save its state_dict() instead)"
    )


def _decode(node, arrays: dict):
    if not isinstance(node, dict):
        return node
    if "array" in node:
        array = arrays[node["array"]]
        return Tensor(array) if node["tensor"] else array
    if "dict" in node:
        return {_decode(k, arrays): _decode(v, arrays) for k, v in node["dict"]}
    if "list" in node:
        return [_decode(v, arrays) for v in node["list"]]
    return tuple(_decode(v, arrays) for v in node["tuple"])
