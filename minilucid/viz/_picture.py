"""A drawn graph as Jupyter shows it: SVG, PNG and a text listing; a clear message without `dot`."""

import base64
from pathlib import Path

import graphviz

from minilucid.graphviz_install import graphviz_install_hint
from minilucid.viz._dot import _dot
from minilucid.viz._listing import _backward_text, _forward_text


class _Picture:
    """DOT source plus its text listing; Jupyter displays it, `.save(path)` writes it."""

    def __init__(self, source: str, text: str):
        self.source = source  # the DOT source, always available
        self.text = text  # nodes and edges in order, no addresses

    def __repr__(self) -> str:
        return self.text

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        try:
            svg = _render(self.source, "svg").decode("utf-8")
            png = _render(self.source, "png")
        except graphviz.ExecutableNotFound:
            return {"text/plain": self.text + "\n\n" + _no_dot_message()}
        return {
            "image/svg+xml": svg,
            "image/png": base64.b64encode(png).decode("ascii"),
            "text/plain": self.text,
        }

    def save(self, path) -> Path:
        """Write the picture as .svg, .png or .pdf, or its DOT source as .gv; returns the path.

        Without Graphviz's `dot`, writes the DOT source next to it (as .gv) and says how to
        install Graphviz.
        """
        path = Path(path)
        kind = path.suffix.lstrip(".").lower()
        if kind in ("dot", "gv"):
            path.write_text(self.source, encoding="utf-8")
            return path
        if kind not in ("svg", "png", "pdf"):
            raise ValueError(f"save: cannot write a .{kind} file; use .svg, .png, .pdf or .gv")
        try:
            path.write_bytes(_render(self.source, kind))
        except graphviz.ExecutableNotFound:
            path = path.with_suffix(".gv")
            path.write_text(self.source, encoding="utf-8")
            print(f"{_no_dot_message()}\nWrote the DOT source to {path} instead.")
        return path


def _render(source: str, kind: str) -> bytes:
    return graphviz.Source(source).pipe(format=kind, quiet=True)


def _no_dot_message() -> str:
    return (
        graphviz_install_hint()
        + "\nThe picture needs it; the listing above says the same in text, and the DOT source "
        "is in .source."
    )


def _forward_picture(graph, show_values=True, rankdir="LR", checks=None) -> _Picture:
    dot = _dot(graph, rankdir=rankdir, show_values=show_values, checks=checks)
    return _Picture(dot.source, _forward_text(graph, show_values, checks))


def _backward_picture(graph, sweep) -> _Picture:
    return _Picture(_dot(graph, sweep=sweep).source, _backward_text(graph, sweep))
