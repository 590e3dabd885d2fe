"""Links for hosting the course on a JupyterHub with nbgitpuller, or on Binder.

    python -m minilucid_course.hosting --hub https://hub.example.org \\
        --repo https://github.com/you/minilucid [--branch main]

prints, for each chapter, an nbgitpuller link (the first click clones the repository into the
learner's home on the hub, later clicks pull updates and keep the learner's changes) and a
Binder link. The hub's image is built from this repository by repo2docker (environment.yml,
postBuild).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from urllib.parse import quote, urlencode

ROOT = Path(__file__).resolve().parents[1]


def chapters(notebooks: Path = ROOT / "notebooks") -> list[str]:
    return [p.name for p in sorted(notebooks.glob("[0-9][0-9]_*.ipynb"))]


def nbgitpuller_link(hub: str, repo: str, path: str, branch: str = "main") -> str:
    """A link that pulls the repository into the learner's home and opens `path` in it."""
    folder = repo.rstrip("/").rsplit("/", 1)[-1].removesuffix(".git")
    query = urlencode(
        {"repo": repo, "branch": branch, "urlpath": f"lab/tree/{folder}/{path}"}, quote_via=quote
    )
    return f"{hub.rstrip('/')}/hub/user-redirect/git-pull?{query}"


def binder_link(repo: str, path: str, branch: str = "main") -> str:
    """mybinder.org for a GitHub repository, opening `path` in JupyterLab."""
    slug = repo.rstrip("/").removesuffix(".git").split("github.com/")[-1]
    return (
        f"https://mybinder.org/v2/gh/{slug}/{branch}?urlpath={quote(f'lab/tree/{path}', safe='')}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hub", required=True, help="the JupyterHub's address")
    parser.add_argument("--repo", required=True, help="the course repository's git URL")
    parser.add_argument("--branch", default="main")
    args = parser.parse_args(argv)
    for name in chapters():
        print(f"{name}")
        print(
            f"  hub:    {nbgitpuller_link(args.hub, args.repo, f'notebooks/{name}', args.branch)}"
        )
        print(f"  binder: {binder_link(args.repo, f'notebooks/{name}', args.branch)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
