"""Is this machine ready for the course? Python, NumPy, Graphviz's `dot`, JupyterLab.

The commands that install `dot` live with the pictures that need it (minilucid.graphviz_install).
"""

import importlib.metadata
import shutil
import subprocess
import sys

from minilucid.graphviz_install import graphviz_install_hint

# The Python packages the course uses: the name pip knows them by -> the name on conda-forge
# (the Python side of Graphviz is `python-graphviz` there; plain `graphviz` is the `dot` program).
PYTHON_PACKAGES = {
    "numpy": "numpy",
    "graphviz": "python-graphviz",
    "jupyterlab": "jupyterlab",
    "matplotlib": "matplotlib",
}

PYTHON_PACKAGE_INSTALL = {
    "Linux/macOS (.venv)": ".venv/bin/python -m pip install {pip_name}",
    "Windows (.venv)": r".venv\Scripts\python -m pip install {pip_name}",
    "conda (any system)": "conda install -c conda-forge {conda_name}",
}


def dot_version() -> str | None:
    """The version `dot -V` reports, or None if `dot` is not installed."""
    dot = shutil.which("dot")
    if dot is None:
        return None
    try:
        result = subprocess.run([dot, "-V"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):  # found, but it does not run
        return "unknown"
    words = (result.stderr or result.stdout).split()
    return words[words.index("version") + 1] if "version" in words else "unknown"


def check_environment(verbose: bool = True) -> dict:
    """Check each piece the course needs; print a line per piece and the fix for what is missing.

    Returns {piece: version or None}.
    """
    found = {"Python": sys.version.split()[0]}
    for package in PYTHON_PACKAGES:
        try:
            found[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            found[package] = None
    found["dot (Graphviz)"] = dot_version()
    if verbose:
        for piece, version in found.items():
            print(f"{'ok' if version else 'MISSING':<7}  {piece:<15} {version or ''}".rstrip())
        for piece, version in found.items():
            if version is not None:
                continue
            print()
            if piece == "dot (Graphviz)":
                print(graphviz_install_hint())
                continue
            print(f"The Python package {piece} is missing. Install it with one of:")
            for where, command in PYTHON_PACKAGE_INSTALL.items():
                names = {"pip_name": piece, "conda_name": PYTHON_PACKAGES[piece]}
                print(f"  {where:<20} {command.format(**names)}")
    return found
