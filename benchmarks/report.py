"""The results as Markdown: one summary table, one table of details, and the machine."""

from __future__ import annotations

from dataclasses import dataclass, field

ENGINE_TITLES = {
    "numpy": "NumPy by hand",
    "minilucid": "minilucid",
    "bare": "bare graph",
    "torch": "PyTorch",
}


@dataclass
class Row:
    benchmark: str
    unit: str
    values: dict  # engine -> number (None: not measured)
    ratios: dict = field(default_factory=dict)  # engine -> ratio to NumPy by hand
    target: str = ""
    met: bool | None = None  # None: no target


def _number(x) -> str:
    if x is None:
        return "-"
    if x >= 100:
        return f"{x:.0f}"
    if x >= 10:
        return f"{x:.1f}"
    if x >= 1:
        return f"{x:.2f}"
    return f"{x:.3f}"


def table(rows: list[Row], engines: list[str]) -> str:
    others = [e for e in engines if e != "numpy"]
    head = ["Benchmark", "unit"] + [ENGINE_TITLES[e] for e in engines]
    head += [f"{ENGINE_TITLES[e]} / NumPy" for e in others] + ["target (minilucid)", "met"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in rows:
        cells = [row.benchmark, row.unit]
        cells += [_number(row.values.get(e)) for e in engines]
        cells += [f"{row.ratios[e]:.2f}x" if row.ratios.get(e) is not None else "-" for e in others]
        cells.append(row.target or "-")
        cells.append("-" if row.met is None else ("yes" if row.met else "**no**"))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def machine_list(info: dict) -> str:
    return "\n".join(f"- {key}: {value}" for key, value in info.items())


def document(info: dict, summary: str, details: str, notes: str) -> str:
    return f"""# minilucid benchmark results

Written by `python -m benchmarks` (`make bench`); do not edit by hand.

## Summary

{summary}

## Machine

{machine_list(info)}

## Details

{details}

## How these were measured

{notes}
"""
