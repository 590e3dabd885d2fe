"""The judge: turns what a hand-in's probes wrote into verdicts, in a process of its own.

    python -s -m minilucid_course.judge < request.json > verdicts.json

Started by grading (`minilucid_course.grading`) after the hand-in's sandbox has ended; no
hand-in code ever runs in this process. The request names the channel file the hand-in wrote,
the seed grading chose for it, and each graded check cell with the checks it calls. The channel
is read as plain data only (`plain.decode`, size-capped; a line that is not plain data is
skipped) and every record in it is the hand-in's word, never trusted:

- a check in the registry: its `Exercise.verdict` on the probe's data with the grader's seed.
  The judge recomputes every reference itself; forged data passes only if it is a right answer.
  A cell passes when every check it calls left data and every verdict passes;
- an assignment may ship its own exercises in a module beside its notebook (registered with
  `register`): the judge imports the release's copy of it, never the hand-in's;
- a check not in the registry yet (a chapter whose checks are not split into probe and judge):
  the old check ran whole inside the sandbox, and only whether its cell ended without an error
  is taken. Weaker: code in the same sandboxed process could fake that (docs/teaching.md).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from minilucid_course.checks import plain

MAX_CHANNEL = 256 * 1024 * 1024  # bytes read from a channel file, at most
NOT_DONE = {"NotImplementedError", "NotDone", "NameError"}
NOT_DONE_MESSAGE = (
    "not done yet: an answer this check needs still raises NotImplementedError or is not "
    "defined. Write it in its cell, run that cell, then run this one again."
)


def read_channel(path: str) -> list:
    """The plain records in the channel, in order (what is not plain data is left out)."""
    try:
        with open(path, "rb") as f:
            blob = f.read(MAX_CHANNEL)
    except OSError:
        return []
    records = []
    for line in blob.split(b"\n"):
        if not line.strip():
            continue
        try:
            record = plain.decode(line)
        except (ValueError, TypeError, RecursionError):
            continue
        if type(record) is dict:
            records.append(record)
    return records


def segments(records: list) -> tuple[dict[int, list], dict[int, dict]]:
    """({cell index: the check records written while it ran}, {cell index: its outcome})."""
    per_cell: dict[int, list] = {}
    outcome: dict[int, dict] = {}
    current = None
    for record in records:
        cell = record.get("cell")
        if type(cell) is int:
            if "done" in record:
                outcome[cell] = record
            else:
                current = cell
                per_cell[cell] = []
        elif current is not None and type(record.get("check")) is str:
            per_cell[current].append(record)
    return per_cell, outcome


def _text(value, limit: int = 300) -> str:
    return str(value)[:limit] if type(value) is str else ""


def decide(
    cell: dict, seed: int, per_cell: dict, outcome: dict, registry: dict, stopped: bool = False
) -> dict:
    """{"index", "state": pass / fail / not_done / stopped, "message"} for one check cell.

    `stopped`: the hand-in's run did not end normally; a cell that never finished is "stopped".
    """
    index, checks = cell["index"], cell["checks"]
    verdict = {"index": index}
    if cell.get("refused"):
        return {**verdict, "state": "fail", "message": cell["refused"]}
    ran = outcome.get(index)
    if ran is None and (stopped or index not in per_cell):
        return {**verdict, "state": "stopped", "message": ""}
    records = per_cell.get(index, [])
    ended = ran or {}
    if checks and all(name in registry for name in checks):
        messages = []
        for name in checks:
            mine = [r for r in records if r.get("check") == name]
            if any(r.get("not_done") for r in mine):
                return {**verdict, "state": "not_done", "message": NOT_DONE_MESSAGE}
            data = [r for r in mine if "data" in r]
            if not data:
                error = _text(ended.get("error"))
                if error in NOT_DONE:
                    return {**verdict, "state": "not_done", "message": NOT_DONE_MESSAGE}
                why = f" (the cell raised {error})" if error else ""
                return {**verdict, "state": "fail", "message": f"{name} did not run{why}"}
            for record in data:
                passed, message = registry[name].verdict(seed, record["data"])
                if not passed:
                    return {**verdict, "state": "fail", "message": message}
                messages.append(message)
        return {**verdict, "state": "pass", "message": "\n".join(dict.fromkeys(messages))}
    # a check not in the registry yet: only how its cell ended, inside the sandbox
    if ended.get("done") is True:
        return {**verdict, "state": "pass", "message": "✓ passed (checked in the sandbox)"}
    error, message = _text(ended.get("error"), 80), _text(ended.get("message"))
    if error in NOT_DONE:
        return {**verdict, "state": "not_done", "message": NOT_DONE_MESSAGE}
    if not ran:
        return {**verdict, "state": "fail", "message": "the check cell did not finish"}
    return {**verdict, "state": "fail", "message": message or error or "the check failed"}


def _import(path: str) -> None:
    """An assignment's own exercises, from the release's copy of its module (the teacher's)."""
    import importlib.util

    name = Path(path).stem
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)


def judge(request: dict) -> list[dict]:
    import importlib

    from minilucid_course.checks.exercise import REGISTRY

    for name in request.get("imports", []):  # the chapter's checks, as its notebook imports them
        if name.startswith("minilucid_course.checks.") and name.count(".") == 2:
            importlib.import_module(name)
    for path in request.get("modules", []):
        _import(path)
    registry = dict(REGISTRY)
    per_cell, outcome = segments(read_channel(request["channel"]))
    seed = int(request["seed"])
    stopped = bool(request.get("stopped"))
    return [decide(c, seed, per_cell, outcome, registry, stopped) for c in request["cells"]]


def main() -> int:
    request = json.load(sys.stdin)
    json.dump({"verdicts": judge(request)}, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
