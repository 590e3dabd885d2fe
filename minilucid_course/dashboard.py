"""What a class gets wrong: per chapter and per check, how many students pass, fail or have not
answered, and the mistakes the checks named, counted.

    python -m minilucid_course.dashboard ~/minilucid-class      (make dashboard CLASS=...)

Reads an nbgrader course folder after `nbgrader autograde`: the gradebook (who is in the class,
which hand-ins were graded, the points of each check) and the autograded notebooks (what each
check cell printed). A check that fails names the mistake in the first line of its message
("your backward assigns the gradient instead of adding it up ..."); those lines are counted.
Prints the summary and writes dashboard.html in the course folder: a chart per chapter, no
network needed to view it.
"""

from __future__ import annotations

import argparse
import html
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

PASS, FAIL, NOT_ANSWERED = "pass", "fail", "not answered"
NOT_DONE_ERRORS = {"NotImplementedError", "NotDone"}
COLOURS = {PASS: "#2e7d32", FAIL: "#c62828", NOT_ANSWERED: "#9e9e9e"}


@dataclass
class CheckSummary:
    grade_id: str
    title: str = ""  # the exercise's title from the registry ("" when not in it)
    counts: Counter = field(default_factory=Counter)  # PASS / FAIL / NOT_ANSWERED -> students
    mistakes: Counter = field(default_factory=Counter)  # first line of the message -> students


@dataclass
class ChapterSummary:
    assignment: str
    students: int
    handed_in: int
    checks: list[CheckSummary]


def _check_cells(nb) -> list:
    return [
        c
        for c in nb.cells
        if c.cell_type == "code"
        and c.metadata.get("nbgrader", {}).get("grade")
        and not c.metadata.get("nbgrader", {}).get("solution")
    ]


def _error(cell) -> tuple[str, str] | None:
    """(error name, first line of its message) of a cell's error output, or None."""
    for output in cell.get("outputs", []):
        if output.get("output_type") == "error":
            lines = str(output.get("evalue", "")).strip().splitlines()
            return output.get("ename", "Error"), (lines[0].strip() if lines else "")
    return None


def _mistake(ename: str, first_line: str) -> str:
    if ename in ("AssertionError", "CheckFailed"):
        return first_line or "the check failed without a message"
    return f"{ename}: {first_line}" if first_line else ename


def verdict(cell, score: float | None, max_score: float) -> tuple[str, str | None]:
    """(PASS / FAIL / NOT_ANSWERED, the mistake) for one autograded check cell.

    The gradebook's points decide pass or fail (a check that printed no error but was refused its
    points, by the grading's own rules, fails); the cell's error says which mistake.
    """
    error = _error(cell)
    if score is not None and score >= max_score:
        return PASS, None
    if error and error[0] in NOT_DONE_ERRORS:
        return NOT_ANSWERED, None
    if error:
        return FAIL, _mistake(*error)
    return FAIL, "no points, and the check cell shows no error (see the gradebook)"


def titles(course: Path, assignment: str, notebook) -> dict[str, str]:
    """{check cell grade_id: the title of the exercise it checks}, from the registry."""
    import importlib.util

    from minilucid_course.checks.exercise import all_exercises
    from minilucid_course.policy import called_checks

    release = course / "release" / assignment
    if not release.is_dir():
        release = course / "source" / assignment
    for module in sorted(release.glob("*.py")):  # an assignment's own exercises (the teacher's)
        spec = importlib.util.spec_from_file_location(module.stem, module)
        loaded = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(loaded)
        except Exception:  # noqa: BLE001 - no titles from a module that does not load
            continue
    registry = all_exercises()
    path = release / f"{notebook.name}.ipynb"
    if not path.is_file():
        return {}
    out = {}
    for cell in _check_cells(nbformat.read(str(path), as_version=4)):
        names = [registry[n].title for n in called_checks(cell.source) if n in registry]
        if names:
            out[cell.metadata["nbgrader"]["grade_id"]] = " + ".join(dict.fromkeys(names))
    return out


def summarise(course: Path | str) -> list[ChapterSummary]:
    """One summary per assignment in the course's gradebook, in the gradebook's order."""
    from nbgrader.api import Gradebook, MissingEntry

    course = Path(course).resolve()
    database = course / "gradebook.db"
    if not database.exists():
        raise FileNotFoundError(
            f"{database} not found: run `nbgrader autograde <chNN>` in {course} first"
        )
    chapters = []
    with Gradebook(f"sqlite:///{database}") as gradebook:
        students = sorted(s.id for s in gradebook.students)
        for assignment in gradebook.assignments:
            checks: dict[str, CheckSummary] = {}
            handed_in = set()
            for notebook in assignment.notebooks:
                named = titles(course, assignment.name, notebook)
                for cell in notebook.grade_cells:
                    if cell.cell_type == "code":
                        checks.setdefault(
                            cell.name, CheckSummary(cell.name, named.get(cell.name, ""))
                        )
                maxima = {c.name: float(c.max_score) for c in notebook.grade_cells}
                for student in students:
                    path = course / "autograded" / student / assignment.name
                    path = path / f"{notebook.name}.ipynb"
                    try:
                        graded = gradebook.find_submission_notebook(
                            notebook.name, assignment.name, student
                        )
                    except MissingEntry:
                        graded = None
                    if graded is None or not path.exists():
                        for name in maxima:
                            if name in checks:
                                checks[name].counts[NOT_ANSWERED] += 1
                        continue
                    handed_in.add(student)
                    scores = {g.name: g.score for g in graded.grades}
                    cells = {
                        c.metadata["nbgrader"]["grade_id"]: c
                        for c in _check_cells(nbformat.read(str(path), as_version=4))
                    }
                    for name, summary in checks.items():
                        if name not in maxima:
                            continue
                        cell = cells.get(name)
                        if cell is None:  # the hand-in lost the cell: nbgrader scores it 0
                            summary.counts[FAIL] += 1
                            summary.mistakes["the check cell is missing from the hand-in"] += 1
                            continue
                        score = scores.get(name)
                        state, mistake = verdict(
                            cell, None if score is None else float(score), maxima[name]
                        )
                        summary.counts[state] += 1
                        if mistake:
                            summary.mistakes[mistake] += 1
            chapters.append(
                ChapterSummary(
                    assignment.name, len(students), len(handed_in), list(checks.values())
                )
            )
    return chapters


def name(check: CheckSummary) -> str:
    """What the teacher reads for a check: its exercise's title, else its grade id."""
    return f"{check.title} ({check.grade_id})" if check.title else check.grade_id


def report(chapters: list[ChapterSummary]) -> str:
    """The summary as text, one block per chapter; everything from a hand-in escaped."""
    from minilucid_course.audit import shown

    lines = []
    for chapter in chapters:
        lines.append(
            f"{shown(chapter.assignment)}: {chapter.handed_in} of {chapter.students} students "
            "handed in"
        )
        for check in chapter.checks:
            counts = ", ".join(f"{state} {check.counts[state]}" for state in COLOURS)
            lines.append(f"  {shown(name(check))}: {counts}")
            for mistake, n in check.mistakes.most_common():
                lines.append(f"      {shown(mistake)}: {n}")
        lines.append("")
    return "\n".join(lines)


def _chart(chapter: ChapterSummary) -> str:
    """An inline SVG: one stacked bar per check, students who pass, fail, have not answered."""
    label_width, bar_width, row = 300, 360, 26
    total = max(chapter.students, 1)
    height = row * len(chapter.checks) + 30
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{label_width + bar_width + 60}" '
        f'height="{height}" role="img" aria-label="checks of {html.escape(chapter.assignment)}">'
    ]
    for i, check in enumerate(chapter.checks):
        y = i * row + 4
        parts.append(
            f'<text x="{label_width - 8}" y="{y + 15}" text-anchor="end" font-size="13">'
            f"{html.escape(name(check))}</text>"
        )
        x = float(label_width)
        for state, colour in COLOURS.items():
            n = check.counts[state]
            if not n:
                continue
            width = bar_width * n / total
            parts.append(
                f'<rect x="{x:.1f}" y="{y}" width="{width:.1f}" height="20" fill="{colour}">'
                f"<title>{state}: {n}</title></rect>"
            )
            if width >= 18:
                parts.append(
                    f'<text x="{x + width / 2:.1f}" y="{y + 15}" text-anchor="middle" '
                    f'font-size="12" fill="white">{n}</text>'
                )
            x += width
    legend_y = row * len(chapter.checks) + 20
    x = label_width
    for state, colour in COLOURS.items():
        parts.append(f'<rect x="{x}" y="{legend_y - 10}" width="12" height="12" fill="{colour}"/>')
        parts.append(f'<text x="{x + 16}" y="{legend_y}" font-size="12">{state}</text>')
        x += 120
    parts.append("</svg>")
    return "".join(parts)


def page(chapters: list[ChapterSummary]) -> str:
    """A self-contained HTML page: per chapter its chart and the mistakes per check."""
    from minilucid_course.audit import shown

    body = []
    for chapter in chapters:
        body.append(f"<h2>{html.escape(chapter.assignment)}</h2>")
        body.append(
            f"<p>{chapter.handed_in} of {chapter.students} students handed in.</p>{_chart(chapter)}"
        )
        for check in chapter.checks:
            if not check.mistakes:
                continue
            body.append(f"<h3>{html.escape(name(check))}: the mistakes</h3><ul>")
            for mistake, n in check.mistakes.most_common():
                body.append(f"<li><b>{n}</b> {html.escape(shown(mistake))}</li>")
            body.append("</ul>")
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        "<title>minilucid: the class's checks</title>"
        "<style>body{font-family:sans-serif;max-width:60em;margin:2em auto;padding:0 1em}"
        "svg{max-width:100%;height:auto}li{margin:.2em 0}</style></head><body>"
        "<h1>The class's checks</h1>"
        "<p>Per chapter and check: students who pass (green), fail (red) or have not answered "
        "(grey, including those who handed nothing in); under it, the mistakes the checks "
        "named, most frequent first.</p>" + "\n".join(body) + "</body></html>\n"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("course", help="the nbgrader course folder (after nbgrader autograde)")
    parser.add_argument("--html", help="where to write the page (default: <course>/dashboard.html)")
    args = parser.parse_args(argv)
    try:
        chapters = summarise(args.course)
    except FileNotFoundError as error:
        print(f"dashboard: {error}")
        return 1
    print(report(chapters), end="")
    out = Path(args.html) if args.html else Path(args.course) / "dashboard.html"
    out.write_text(page(chapters), encoding="utf-8")
    print(f"dashboard: wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
