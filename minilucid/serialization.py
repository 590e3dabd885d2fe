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
    """Read what `save` wrote (from a path or a binary file object such as io.BytesIO); tensors
    come back as Tensors (without requires_grad)."""
    name = _file_name(path)
    if not hasattr(path, "read"):
        if not os.path.isfile(name):
            raise FileNotFoundError(f"load: there is no file {name!r}")
        if not zipfile.is_zipfile(name):
            raise ValueError(
                f"load: {name!r} is not an .npz file (a zip archive of .npy arrays), so it was "
                "not read. minilucid.save writes such files; it never reads pickles."
            )
    try:
        with zipfile.ZipFile(path if hasattr(path, "read") else name) as archive:
            tree, arrays = _read(archive, name)
        if tree is None:
            return {key: Tensor(array) for key, array in arrays.items()}
        return _decode(tree, arrays)
    except (zipfile.BadZipFile, EOFError, OSError, KeyError, TypeError, IndexError) as error:
        raise _damaged(name, error) from None
    except (json.JSONDecodeError, RecursionError) as error:
        raise _damaged(name, error, f"its {TREE} is not the JSON that save writes") from None


def _file_name(path) -> str:
    if hasattr(path, "read"):
        return getattr(path, "name", None) or f"the {type(path).__name__}"
    return os.fspath(path)


def _read(archive: zipfile.ZipFile, name: str) -> tuple:
    """The archive's tree (or None) and its arrays by key, refusing anything but .npy arrays."""
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
    for member in members:
        if member == TREE:
            continue
        key = member[: -len(".npy")]
        with archive.open(member) as f:
            try:
                arrays[key] = np.lib.format.read_array(f, allow_pickle=False)
            except ValueError as error:
                if "allow_pickle" not in str(error):
                    raise _damaged(
                        name, error, f"its array {key!r} is not a readable .npy"
                    ) from None
                raise ValueError(
                    f"load: array {key!r} in {name!r} holds Python objects, which would have "
                    f"to be unpickled; refusing to read it ({error})"
                ) from None
        if arrays[key].dtype.kind not in "biuf":
            raise ValueError(
                f"load: array {key!r} in {name!r} holds {arrays[key].dtype} values, not "
                "numbers; save never writes such arrays, so it was not read"
            )
    return tree, arrays


def _damaged(name: str, error: Exception, what: str = "") -> ValueError:
    what = what or "it is not a complete archive as save writes"
    return ValueError(
        f"load: {name!r} is damaged or was not written by minilucid.save: {what} "
        f"({type(error).__name__}: {error}). Save it again from its source."
    )


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
        if isinstance(node, list):  # save writes lists as {"list": [...]}
            raise TypeError("a bare JSON list in the tree")
        return node
    if "array" in node:
        array = arrays[node["array"]]
        return Tensor(array) if node["tensor"] else array
    if "dict" in node:
        return {_decode(k, arrays): _decode(v, arrays) for k, v in node["dict"]}
    if "list" in node:
        return [_decode(v, arrays) for v in node["list"]]
    return tuple(_decode(v, arrays) for v in node["tuple"])
