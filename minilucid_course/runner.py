"""Runs a rebuilt hand-in's code cells in order, inside the sandbox (`minilucid_course.sandbox`).

    python -m minilucid_course.runner cells.json

`cells.json` is a list of {"index": i, "source": code}. Before each cell the runner appends
{"cell": i} to the channel file (MINILUCID_PROBE_CHANNEL), and after it {"cell": i, "done": ...,
"error": name, "message": first line}; the checks the cell calls append their probes' records in
between (`Exercise.lab_check`). Nothing here decides a grade: the judge reads the channel in a
process of its own, and everything in it is treated as the hand-in's word.
"""

from __future__ import annotations

import json
import os
import sys


def _write(channel: str, record: dict) -> None:
    from minilucid_course.checks import plain

    with open(channel, "ab") as out:
        out.write(plain.encode(record) + b"\n")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    channel = os.environ["MINILUCID_PROBE_CHANNEL"]
    with open(argv[0], encoding="utf-8") as f:
        cells = json.load(f)
    sys.path.insert(0, os.getcwd())  # modules an assignment ships beside its notebook
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance(colors="NoColor", history_length=0)
    for cell in cells:
        _write(channel, {"cell": cell["index"]})
        result = shell.run_cell(cell["source"], store_history=False)
        error = result.error_before_exec or result.error_in_exec
        record = {"cell": cell["index"], "done": error is None}
        if error is not None:
            lines = str(error).strip().splitlines()
            record.update(error=type(error).__name__, message=lines[0][:300] if lines else "")
        _write(channel, record)
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
