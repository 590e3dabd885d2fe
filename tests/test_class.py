"""A class, from start to finish, with the commands docs/teaching.md gives a teacher.

The teacher makes the class folder (`make class`), generates and releases chapter 01 through
nbgrader's exchange; two students fetch it, answer and submit it; the teacher collects,
autogrades, exports the grades and reads the dashboard (`make dashboard`). alice answers every
exercise right; bob keeps the plain numbers among a tensor's parents in Exercise 1 and leaves
Exercise 2 untouched; carol, on the class list, hands nothing in.

Run as root, the students are real Unix users (made here, removed afterwards) who run nbgrader
under their own accounts through `runuser`, so the exchange's permissions are tried as a shared
machine has them (with the course's Python, or where other users cannot reach it, as in root's
home, the system's Python of the same version with the course's packages on its path);
otherwise they are simulated by their user names, and the test says which it did.
"""

from __future__ import annotations

import csv
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

import nbformat
import pytest

pytest.importorskip("nbgrader")

ROOT = Path(__file__).resolve().parents[1]
SOLUTION = ROOT / "solutions" / "01_tensor_as_a_node.ipynb"
NOTEBOOK = SOLUTION.name
MARKER = re.compile(r"[ \t]*### (BEGIN|END) SOLUTION[^\n]*\n?")
BOB_EX1 = '''def parents_of(t):
    """The tensors the op that made `t` consumed, in order; [] for a leaf."""
    return [] if t.grad_fn is None else list(t.grad_fn.parents)
'''


def _runs_for_others(python: str) -> bool:
    """Whether another user can start this interpreter and import nbgrader with it."""
    done = subprocess.run(
        ["runuser", "-u", "nobody", "--", python, "-c", "import nbgrader"], capture_output=True
    )
    return done.returncode == 0


def student_python(place: Path) -> str | None:
    """An interpreter the students' accounts can run nbgrader with, or None.

    The course's own when they can reach it; otherwise (it may live in root's private home) a
    virtual environment of the system's Python of the same version, made here, whose path holds
    the course environment's packages: the students still run the course's nbgrader."""
    if not (os.geteuid() == 0 and shutil.which("useradd") and shutil.which("runuser")):
        return None
    if _runs_for_others(sys.executable):
        return sys.executable
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    system = shutil.which(version, path="/usr/bin:/usr/local/bin")
    if not system:
        return None
    folder = place / "student-python"
    made = subprocess.run([system, "-m", "venv", "--without-pip", str(folder)], capture_output=True)
    if made.returncode != 0:
        return None
    packages = sysconfig.get_paths()["purelib"]
    target = Path(sysconfig.get_paths(vars={"base": str(folder)})["purelib"])
    (target / "minilucid_course_environment.pth").write_text(packages + "\n", encoding="utf-8")
    python = str(folder / "bin" / "python")
    return python if _runs_for_others(python) else None


def _grade_id(cell) -> str | None:
    return cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")


def _answers() -> dict[str, str]:
    nb = nbformat.read(str(SOLUTION), as_version=4)
    return {
        _grade_id(c): MARKER.sub("", c.source)
        for c in nb.cells
        if c.metadata.get("nbgrader", {}).get("solution")
    }


def answer(path: Path, student: str) -> None:
    """Fill in the fetched notebook as this student would (in place: it stays the student's)."""
    nb = nbformat.read(str(path), as_version=4)
    for cell in nb.cells:
        grade_id = _grade_id(cell)
        if grade_id not in _answers():
            continue
        if student == "bob" and grade_id == "ex01_2_graph_size_answer":
            continue  # bob leaves the stub
        if student == "bob" and grade_id == "ex01_1_parents_of_answer":
            cell.source = BOB_EX1
        else:
            cell.source = _answers()[grade_id]
    nbformat.write(nb, str(path))


def run(args, cwd: Path, env: dict | None = None, timeout: float = 900) -> str:
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{' '.join(map(str, args))} failed:\n{done.stderr[-3000:]}"
    return done.stdout + done.stderr


class Student:
    """A student with a home folder who runs nbgrader there: a real user when we are root."""

    def __init__(self, name: str, place: Path, config: Path, python: str | None):
        self.name, self.python, self.real = name, python or sys.executable, python is not None
        if self.real:
            self.user = f"ml{name}{os.getpid()}"[:32]
            subprocess.run(["userdel", "-r", self.user], capture_output=True)
            self.home = place / "home" / self.user
            self.home.parent.mkdir(exist_ok=True)
            run(["useradd", "-m", "-d", str(self.home), "-s", "/bin/sh", self.user], cwd=place)
        else:
            self.user = name
            self.home = place / "home" / name
            self.home.mkdir(parents=True)
        self.config = config

    def nbgrader(self, *args: str) -> str:
        env = {
            "HOME": str(self.home),
            "USER": self.user,
            "LOGNAME": self.user,
            "PATH": f"{Path(self.python).parent}:/usr/bin:/bin",
            "JUPYTER_CONFIG_PATH": str(self.config),
            "LANG": "C.UTF-8",
        }
        command = [self.python, "-m", "nbgrader", *args]
        if not self.real and args[0] == "submit":  # nbgrader names a hand-in by its owner
            command.append(f"--CourseDirectory.student_id={self.user}")
        if self.real:
            settings = [f"{k}={v}" for k, v in env.items()]
            command = ["runuser", "-u", self.user, "--", "env", *settings, *command]
            return run(command, cwd=self.home)
        return run(command, cwd=self.home, env=env)

    def remove(self) -> None:
        if self.real:
            subprocess.run(["userdel", "-r", self.user], capture_output=True)


@pytest.fixture
def place():
    """A folder every user can reach (pytest's tmp_path is private to root)."""
    folder = Path(tempfile.mkdtemp(prefix="minilucid-class-"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_a_class_runs_from_release_to_dashboard(place):
    started = time.monotonic()
    python = student_python(place)
    print("students:", f"real Unix users, running {python}" if python else "simulated by name")
    course = place / "class"
    make = ["make", "-s", "-C", str(ROOT)]
    run([*make, "class", f"CLASS={course}", "CH=01"], cwd=ROOT)
    assert (course / "source" / "ch01" / NOTEBOOK).exists()
    course.chmod(0o755)

    # the students' nbgrader finds the exchange through the settings the class folder provides
    student_config = place / "student-config"
    student_config.mkdir()
    shutil.copy(course / "student_nbgrader_config.py", student_config / "nbgrader_config.py")
    student_config.chmod(0o755)
    (student_config / "nbgrader_config.py").chmod(0o644)

    teacher = [str(course / "nbgrader")]  # nbgrader from the course's environment
    run([*teacher, "generate_assignment", "ch01"], cwd=course)
    run([*teacher, "release_assignment", "ch01"], cwd=course)

    students = []
    try:
        for name in ("alice", "bob"):
            student = Student(name, place, student_config, python)
            students.append(student)
            assert "ch01" in student.nbgrader("list")
            student.nbgrader("fetch_assignment", "ch01")
            fetched = student.home / "ch01" / NOTEBOOK
            assert fetched.exists()
            answer(fetched, name)
            student.nbgrader("submit", "ch01")

        run([*teacher, "collect", "ch01"], cwd=course)
        for student in students:
            assert (course / "submitted" / student.user / "ch01" / NOTEBOOK).exists()
        run([*teacher, "autograde", "ch01"], cwd=course, timeout=1200)
        run([*teacher, "export"], cwd=course)
        with open(course / "grades.csv", newline="", encoding="utf-8") as handle:
            grades = {row["student_id"]: row for row in csv.DictReader(handle)}
        alice, bob = (grades[s.user] for s in students)
        assert float(alice["score"]) == float(alice["max_score"]) == 9
        assert float(bob["score"]) == 9 - 1 - 2  # Exercise 1 wrong, Exercise 2 not answered

        # carol is on the class list and hands nothing in
        run([*teacher, "db", "student", "add", "carol"], cwd=course)
        shown = run([*make, "dashboard", f"CLASS={course}"], cwd=ROOT)
    finally:
        for student in students:
            student.remove()

    lines = shown.splitlines()
    assert "ch01: 2 of 3 students handed in" in lines

    def block(check: str) -> list[str]:
        """The dashboard's lines for a check, named by its exercise's title and its id."""
        start = next(i for i, line in enumerate(lines) if f"({check}):" in line)
        end = next(
            (i for i in range(start + 1, len(lines)) if not lines[i].startswith("      ")),
            len(lines),
        )
        return [line.strip() for line in lines[start:end]]

    first = block("ex01_1_parents_of_check")
    assert first[0].endswith("pass 1, fail 1, not answered 1")
    assert len(first) == 2 and first[1].endswith(": 1") and "plain number" in first[1]
    size = block("ex01_2_graph_size_check")
    assert len(size) == 1 and size[0].endswith(": pass 1, fail 0, not answered 2"), size
    assert size[0].startswith("Counting a graph (ex01_2_graph_size_check)"), size
    for check in ("ex01_3_poly_check", "ex01_4_predict_check", "ex01_5_count_paths_check"):
        shown_check = block(check)
        assert len(shown_check) == 1, shown_check
        assert shown_check[0].endswith(f"({check}): pass 2, fail 0, not answered 1")
    page = (course / "dashboard.html").read_text(encoding="utf-8")
    assert (
        page.count("<svg") == 1
        and "plain number" in page
        and "http" not in page.split("<body>")[1].replace('xmlns="http://www.w3.org/2000/svg"', "")
    )
    print(f"the class's sequence took {time.monotonic() - started:.0f} s")
