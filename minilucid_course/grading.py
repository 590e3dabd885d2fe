"""How `nbgrader autograde` runs a minilucid hand-in: fenced in, on a clock, never dropped.

The class's nbgrader_config.py (written by `python -m minilucid_course.classroom`) puts
`HandInExecute` in place of nbgrader's own Execute step. For each hand-in it

1. runs the kernel in a private empty working folder, not in the class folder; when autograde
   runs as root on Linux, in a mount namespace of its own where the class folder and the
   course's solutions/ are empty, without capabilities (and as `nobody` where that user can run
   the course's Python): the hand-in can neither read the answer key (source/, solutions/) or
   other students' work nor write the gradebook;
2. gives the whole hand-in a time budget (`hand_in_timeout`) on top of nbgrader's time per cell;
3. records a hand-in whose kernel dies (its code ended the process, or ran out of memory), stops
   answering, or runs past its budget: every graded cell from where it stopped scores 0, with the
   reason as that cell's error, and grading goes on with the next hand-in (nbgrader alone drops
   such a hand-in and stops with an error at the end);
4. copies the gradebook before the kernel starts and compares it after: a hand-in that changed it
   (extra credit, scores, comments) has the gradebook put back and scores 0 on every graded cell.

    python -m minilucid_course.grading sandbox HOME [--user U] [--hide DIR ...] -- <kernel command>
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from jupyter_client.manager import AsyncKernelManager
from nbclient.exceptions import CellTimeoutError, DeadKernelError
from nbformat.v4 import new_output
from nbgrader.preprocessors import Execute
from traitlets import Bool, Integer, Unicode

STOPPED = "HandInStopped"
SOLUTIONS = Path(__file__).resolve().parents[1] / "solutions"  # the course's answer key


class HandInOverTime(Exception):
    """The hand-in used up its time budget."""


def _reachable_by_others(path: Path) -> bool:
    """Whether a user who is not the owner can read `path` (every folder above it passable)."""
    path = path.resolve()
    if not path.exists() or not path.stat().st_mode & stat.S_IROTH:
        return False
    return all(p.stat().st_mode & stat.S_IXOTH for p in path.parents)


def fence(user: str) -> tuple[bool, str | None]:
    """(hide the class in a mount namespace?, the user to run kernels as) for this process.

    Only as root on Linux with util-linux's unshare and setpriv: then the kernel sees an empty
    folder in place of the class and of the course's solutions/, has no capabilities left (it
    cannot unmount that), and runs as `user` when that user can run the course's Python.
    """
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return False, None
    if not all(shutil.which(p) for p in ("unshare", "setpriv", "mount")):
        return False, None
    import minilucid

    needed = (Path(sys.executable), Path(minilucid.__file__).parent, Path(__file__).parent)
    runs = bool(user) and all(_reachable_by_others(p) for p in needed)
    return True, user if runs else None


class SandboxKernelManager(AsyncKernelManager):
    """Starts the kernel through `sandbox`: in a private empty folder, fenced in where it can be."""

    hidden: tuple[str, ...] = ()  # folders the kernel must not see (set per hand-in)
    user = ""  # run the kernel as this user ("" for the same user)
    namespace = False  # hide `hidden` in a mount namespace of its own
    _home: str | None = None

    def format_kernel_cmd(self, extra_arguments=None):
        cmd = super().format_kernel_cmd(extra_arguments)
        self._home = tempfile.mkdtemp(prefix="minilucid-hand-in-")
        launcher = [sys.executable, "-m", "minilucid_course.grading", "sandbox"]
        hide = [a for folder in self.hidden for a in ("--hide", folder)] if self.namespace else []
        own = ["unshare", "--mount", "--propagation", "private", "--"] if self.namespace else []
        user = ["--user", self.user] if self.user else []
        return [*own, *launcher, self._home, *user, *hide, "--", *cmd]

    async def _async_cleanup_resources(self, restart: bool = False) -> None:
        await super()._async_cleanup_resources(restart=restart)
        if self._home and not restart:
            shutil.rmtree(self._home, ignore_errors=True)
            self._home = None


def sandbox(home: str, user: str, hide: list[str], command: list[str]) -> None:
    """Run `command` (a kernel, `-f connection_file`) in `home`, fenced in; never returns."""
    home_path = Path(home)
    for item in Path.cwd().iterdir():  # the files beside the notebook (data an assignment ships)
        if item.is_file() and item.suffix != ".ipynb":
            shutil.copy(item, home_path / item.name)
    index = command.index("-f") + 1
    connection = home_path / "kernel.json"
    connection.write_text(Path(command[index]).read_text(encoding="utf-8"), encoding="utf-8")
    command[index] = str(connection)
    os.chmod(connection, 0o600)
    os.chdir(home_path)
    env = {
        **os.environ,
        "HOME": home,
        "IPYTHONDIR": str(home_path / ".ipython"),
        "MPLCONFIGDIR": str(home_path / ".matplotlib"),
        "XDG_CACHE_HOME": str(home_path / ".cache"),
        "JUPYTER_RUNTIME_DIR": str(home_path / ".runtime"),
    }
    prefix = []
    if hide:  # in a mount namespace of our own (unshare): cover each folder with an empty one
        for path in hide:
            if Path(path).is_dir():
                run = ["mount", "-t", "tmpfs", "-o", "size=16k,mode=000", "hidden", path]
            else:
                run = ["mount", "--bind", os.devnull, path]
            subprocess.run(run, check=True)
        prefix = ["setpriv", "--bounding-set=-all", "--inh-caps=-all", "--no-new-privs"]
    if user:
        import pwd

        entry = pwd.getpwnam(user)
        for folder, _subfolders, files in os.walk(home_path):
            for name in [folder, *(os.path.join(folder, f) for f in files)]:
                os.chown(name, entry.pw_uid, entry.pw_gid)
        ids = [f"--reuid={entry.pw_uid}", f"--regid={entry.pw_gid}", "--clear-groups"]
        prefix = [*(prefix or ["setpriv"]), *ids]
        env.update(USER=user, LOGNAME=user)
    command = [*prefix, "--", *command] if prefix else command
    os.execvpe(command[0], command, env)


def _dump(path: str) -> list[str] | None:
    """The gradebook's content (None when it is not an SQLite file here)."""
    if not path or not Path(path).is_file():
        return None
    with sqlite3.connect(path) as db:
        return list(db.iterdump())


def _copy_database(source: Path | str, target: Path | str) -> None:
    source, target = sqlite3.connect(source), sqlite3.connect(target)
    try:
        source.backup(target)
    finally:
        source.close()
        target.close()


def hidden_from_kernel(gradebook: Path) -> list[str]:
    """What a kernel must not see: the class folder and the course's solutions/.

    When the class folder holds the course's Python or packages (a class made in the repository
    itself), its gradebook and nbgrader's folders instead.
    """
    import minilucid

    course = gradebook.resolve().parent
    needed = (Path(sys.executable).resolve(), Path(minilucid.__file__).resolve(), Path(__file__))
    if any(course in p.parents for p in needed):
        parts = [gradebook, *(course / f for f in ("source", "release", "submitted", "autograded"))]
        parts += [course / "feedback"]
    else:
        parts = [course]
    return [str(p) for p in [*parts, SOLUTIONS] if p.exists()]


class HandInExecute(Execute):
    """nbgrader's Execute, fenced in and on a clock; see the module's docstring."""

    hand_in_timeout = Integer(
        900, help="Seconds one hand-in may run in all (each cell also has `timeout`)."
    ).tag(config=True)
    sandbox_user = Unicode(
        "nobody", help="When autograde runs as root, run kernels as this user ('' to never)."
    ).tag(config=True)
    sandbox = Bool(True, help="Run kernels fenced in (private folder; as root, hidden class).").tag(
        config=True
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        namespace, user = fence(self.sandbox_user)
        self._fence = {"namespace": namespace, "user": user or ""}
        self._deadline = None
        self._running = None

    def _get_timeout(self, cell):
        timeout = super()._get_timeout(cell)
        if self._deadline is None:
            return timeout
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise HandInOverTime()
        return max(1, int(min(timeout or left, left)))

    def preprocess_cell(self, cell, resources, index):
        self._running = index
        return super().preprocess_cell(cell, resources, index)

    def preprocess(self, nb, resources=None, km=None):
        about = (resources or {}).get("nbgrader", {})
        who = f"{about.get('student', '?')}/{about.get('assignment', '?')}"
        gradebook = about.get("db_url", "").removeprefix("sqlite:///")
        hidden = hidden_from_kernel(Path(gradebook)) if gradebook else []
        if self.sandbox:
            self.kernel_manager_class = type(
                "SandboxKernelManager", (SandboxKernelManager,), {**self._fence, "hidden": hidden}
            )
        before = _dump(gradebook)
        with tempfile.TemporaryDirectory() as scratch:
            copy = Path(scratch) / "gradebook.db"
            if before is not None:
                _copy_database(gradebook, copy)
            self._deadline = time.monotonic() + self.hand_in_timeout
            self._running = None
            try:
                nb, resources = super().preprocess(nb, resources, km)
            except (KeyboardInterrupt, SystemExit):
                raise
            except Exception as error:  # noqa: BLE001 - every way a hand-in stops is recorded
                reason = self._reason(error)
                self.log.warning("%s: %s; its graded cells from there on score 0", who, reason)
                stop(nb, self._running or 0, reason)
            finally:
                self._deadline = None
            if before is not None and _dump(gradebook) != before:
                _copy_database(copy, gradebook)
                reason = "this hand-in changed the gradebook (now put back as it was)"
                self.log.warning("%s: %s; all its graded cells score 0", who, reason)
                stop(nb, 0, reason)
        return nb, resources

    def _reason(self, error: Exception) -> str:
        if isinstance(error, HandInOverTime):
            return f"this hand-in ran longer than {self.hand_in_timeout} s in all"
        if isinstance(error, DeadKernelError):
            return "the kernel died running this hand-in (its code ended Python, or used up memory)"
        if isinstance(error, (CellTimeoutError, TimeoutError, RuntimeError)):
            return "the kernel stopped responding, even to an interrupt"
        text = str(error).strip().splitlines()
        return f"grading stopped: {type(error).__name__}" + (f": {text[0]}" if text else "")


def stop(nb, index: int, reason: str) -> None:
    """Every graded code cell from `index` on fails with `reason` (nbgrader scores it 0)."""
    for position, cell in enumerate(nb.cells):
        graded = cell.get("metadata", {}).get("nbgrader", {}).get("grade")
        if position >= index and cell.cell_type == "code" and (graded or position == index):
            cell.outputs = [o for o in cell.get("outputs", []) if o.get("ename") != STOPPED]
            cell.outputs.append(
                new_output("error", ename=STOPPED, evalue=reason, traceback=[f"✗ {reason}"])
            )


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) < 3 or argv[0] != "sandbox" or "--" not in argv:
        print(__doc__.rstrip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    split = argv.index("--")
    options, command = argv[2:split], argv[split + 1 :]
    pairs = dict(zip(options[::2], options[1::2], strict=False))
    hide = [
        value for flag, value in zip(options[::2], options[1::2], strict=False) if flag == "--hide"
    ]
    sandbox(argv[1], pairs.get("--user", ""), hide, command)
    return 1  # sandbox() replaces this process with the kernel


if __name__ == "__main__":
    sys.exit(main())
