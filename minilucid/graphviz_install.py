"""How to install Graphviz's `dot` program, the one home of these commands.

The pictures print this when `dot` is missing; the course's environment check and its set-up
print the same lines.
"""

GRAPHVIZ_INSTALL = {
    "Debian/Ubuntu": "sudo apt-get install -y graphviz",
    "Fedora": "sudo dnf install graphviz",
    "macOS (Homebrew)": "brew install graphviz",
    "conda (any system)": "conda install -c conda-forge graphviz python-graphviz",
    "Windows (winget)": "winget install -e --id Graphviz.Graphviz  (then open a new terminal)",
}


def graphviz_install_hint() -> str:
    """How to install Graphviz's `dot` program, one line per platform."""
    lines = ["Graphviz's `dot` program is not on PATH. Install it with one of:"]
    lines += [f"  {where:<20} {command}" for where, command in GRAPHVIZ_INSTALL.items()]
    return "\n".join(lines)
