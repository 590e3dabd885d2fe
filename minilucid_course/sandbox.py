"""A hand-in's code runs here: bubblewrap, never as root, nothing of the class in sight.

`run(workdir, argv, ...)` starts `argv` (the course's Python running `minilucid_course.runner`)
under bubblewrap (`bwrap`, Debian's package `bubblewrap`) with

- fresh user, PID, network, IPC, UTS and mount namespaces (`--unshare-all`): no network, no
  other process visible, nothing of the machine's file system but what is bound in;
- the runtime read-only: /usr, the interpreter's installation, the course's environment and the
  minilucid and minilucid_course packages, each at its own path; a private /tmp; `workdir` (the
  hand-in's cells and the channel file) at /hand-in, the only place it can write. The class
  folder, solutions/, the repository's .git, the gradebook and every other hand-in are not there;
- an environment allow-list (`--clearenv`, then `ENVIRONMENT` and what the caller adds);
- limits: CPU seconds, address space, file size, open files, processes (`prlimit`);
- `--die-with-parent` and its own PID namespace: when the run ends, or runs past its time,
  every process it started is killed with it.

As root, it never runs the hand-in as root: in a mount namespace of its own (util-linux's
`unshare`) it binds the runtime where the user `nobody` can reach it (the interpreter may live in
root's private home), drops to that user with no capabilities and no way to gain any (`setpriv`),
and only then starts bwrap, as that user. Run as another user, bwrap runs as that user.

`missing()` says what this machine lacks for all of it; grading refuses to start without it.
"""

from __future__ import annotations

import functools
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

NOBODY = 65534
INSIDE = "/hand-in"  # where the hand-in's folder is, inside the sandbox
ENVIRONMENT = {
    "PATH": "/usr/bin:/bin",
    "HOME": INSIDE,
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "MPLBACKEND": "Agg",
    "MPLCONFIGDIR": "/tmp/matplotlib",
    "OPENBLAS_NUM_THREADS": "1",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "PYTHONDONTWRITEBYTECODE": "1",
    "PYTHONHASHSEED": "0",
}
MEMORY = 4 * 1024**3  # bytes of address space
FILE_SIZE = 64 * 1024**2  # bytes, the largest file it may write
OPEN_FILES = 256
PROCESSES = 256  # for the user nobody, as root; a margin over the user's own otherwise


def runtime() -> list[Path]:
    """The folders the course's Python needs, read-only: environment, interpreter, packages."""
    import minilucid
    import minilucid_course

    paths = [Path(sys.prefix), Path(sys.base_prefix)]
    for package in (minilucid, minilucid_course):
        paths.append(Path(package.__file__).resolve().parent)
    out = []
    for path in paths:
        path = path.resolve()
        if str(path).startswith(("/usr/", "/bin", "/lib")) or path == Path("/usr"):
            continue
        if not any(p == path or p in path.parents for p in out):
            out = [p for p in out if path not in p.parents] + [path]
    return out


def package_path() -> str:
    """PYTHONPATH that finds minilucid and minilucid_course where this process found them."""
    import minilucid
    import minilucid_course

    parents = [str(Path(p.__file__).resolve().parent.parent) for p in (minilucid, minilucid_course)]
    return os.pathsep.join(dict.fromkeys(parents))


def _root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


@functools.cache
def missing() -> tuple[str, ...]:
    """What this machine lacks to run a hand-in in the sandbox (empty when nothing)."""
    if sys.platform != "linux":
        return [f"Linux (this is {sys.platform}): the sandbox needs Linux namespaces"]
    lacks = []
    tools = ["bwrap", "prlimit"] + (["unshare", "setpriv", "mount"] if _root() else [])
    for tool in tools:
        if not shutil.which(tool, path="/usr/bin:/bin:/usr/sbin:/sbin"):
            package = "bubblewrap" if tool == "bwrap" else "util-linux"
            lacks.append(f"the program {tool} (Debian/Ubuntu: apt install {package})")
    if lacks:
        return tuple(lacks)
    with tempfile.TemporaryDirectory() as folder:
        os.chmod(folder, 0o755)
        done = subprocess.run(
            command(Path(folder), ["/usr/bin/true"], {}, cpu_seconds=5),
            capture_output=True,
            text=True,
            timeout=60,
        )
    if done.returncode != 0:
        why = (done.stderr.strip().splitlines() or ["no message"])[-1]
        lacks.append(
            "unprivileged user namespaces (bwrap --unshare-all failed: "
            f"{why}; on Debian/Ubuntu: sysctl kernel.unprivileged_userns_clone=1, "
            "or kernel.apparmor_restrict_unprivileged_userns=0)"
        )
    return tuple(lacks)


def _processes_of_this_user() -> int:
    uid, count = os.getuid(), 0
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid == uid:
                    count += len(list((entry / "task").iterdir()))
            except OSError:
                continue
    return count


def command(
    workdir: Path, argv: list[str], env: dict[str, str], cpu_seconds: int = 600
) -> list[str]:
    """The command that runs `argv` in the sandbox, `workdir` at /hand-in (see the docstring)."""
    root = _root()
    stage = workdir.parent / "runtime" if root else None
    binds = []
    for index, path in enumerate(runtime()):
        source = stage / str(index) if stage else path
        binds += ["--ro-bind", str(source), str(path)]
    environment = {**ENVIRONMENT, **env}
    setenv = [a for k, v in environment.items() for a in ("--setenv", k, v)]
    processes = PROCESSES if root else _processes_of_this_user() + PROCESSES
    limits = [
        "prlimit",
        f"--cpu={cpu_seconds}",
        f"--as={MEMORY}",
        f"--fsize={FILE_SIZE}",
        f"--nofile={OPEN_FILES}",
        f"--nproc={processes}",
        "--core=0",
        "--",
    ]
    bwrap = [
        "bwrap",
        "--unshare-all",
        "--die-with-parent",
        "--new-session",
        "--clearenv",
        *setenv,
        "--ro-bind",
        "/usr",
        "/usr",
        *[a for d in ("bin", "lib", "lib64", "sbin") for a in _merged(d)],
        "--ro-bind-try",
        "/etc/ld.so.cache",
        "/etc/ld.so.cache",
        "--ro-bind-try",
        "/etc/localtime",
        "/etc/localtime",
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--tmpfs",
        "/tmp",
        *binds,
        "--bind",
        str(workdir),
        INSIDE,
        "--chdir",
        INSIDE,
        "--",
        *argv,
    ]
    if not root:
        return [*limits, *bwrap]
    # as root: bind the runtime where `nobody` can reach it, in a mount namespace of our own,
    # then become nobody (no capabilities, none to gain) and start bwrap as that user
    mounts = [
        f"mkdir -p {shlex.quote(str(stage / str(i)))} && "
        f"mount --bind {shlex.quote(str(p))} {shlex.quote(str(stage / str(i)))}"
        for i, p in enumerate(runtime())
    ]
    drop = [
        "setpriv",
        f"--reuid={NOBODY}",
        f"--regid={NOBODY}",
        "--clear-groups",
        "--inh-caps=-all",
        "--bounding-set=-all",
        "--no-new-privs",
        "--",
    ]
    script = " && ".join([*mounts, "exec " + shlex.join([*drop, *limits, *bwrap])])
    return ["unshare", "--mount", "--propagation", "private", "--", "/bin/sh", "-c", script]


def _merged(name: str) -> list[str]:
    """/bin, /lib, ... as the machine has them: a link into /usr, or a folder bound read-only."""
    path = Path("/") / name
    if path.is_symlink():
        return ["--symlink", os.readlink(path), str(path)]
    if path.is_dir():
        return ["--ro-bind", str(path), str(path)]
    return []


def prepare(workdir: Path) -> None:
    """Make `workdir` (inside a private folder of its own) the sandbox's to write."""
    workdir.mkdir(parents=True, exist_ok=True)
    if _root():
        for folder in workdir.parent.resolve().parents:
            if not folder.stat().st_mode & 0o001:
                raise PermissionError(f"{folder}: the sandbox's user cannot pass it; use /tmp")
        os.chmod(workdir.parent, 0o711)
        (workdir.parent / "runtime").mkdir(exist_ok=True)
        os.chmod(workdir.parent / "runtime", 0o755)
        for folder, _subfolders, files in os.walk(workdir):
            for name in [folder, *(os.path.join(folder, f) for f in files)]:
                os.chown(name, NOBODY, NOBODY)
        os.chmod(workdir, 0o700)


def run(workdir: Path, argv: list[str], env: dict[str, str], timeout: float) -> tuple[int, str]:
    """(exit status, or -9 when it ran past `timeout` seconds; what it printed, last 4 kB)."""
    log = workdir.parent / "sandbox.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            command(workdir, argv, env, cpu_seconds=int(timeout) + 5),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            status = process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            status = -9
        finally:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            process.wait()
    with open(log, "rb") as f:
        f.seek(max(0, log.stat().st_size - 4096))
        return status, f.read().decode("utf-8", "replace")
