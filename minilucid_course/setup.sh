#!/usr/bin/env bash
# Set up the course in a local virtual environment (.venv). Safe to run again and again: each
# step is skipped when it is already done. Used by `make setup` (and so by `make lab`, `make test`).
#
#   1. create .venv with Python 3.10+ (PYTHON=python3.12 make setup picks another interpreter)
#   2. install the engine with the extras asked for, then the course package (editable):
#      EXTRAS=course (make lab: what learning needs), course,test (make test, make setup),
#      course,teacher (make teacher, make class: nbgrader), course,test,hub (make hub-test:
#      JupyterHub and the test tools); .venv/.installed records what is in
#   3. check for Graphviz's `dot` (installed with apt when we are root on Debian/Ubuntu)
#   4. trust the stored notebooks, so JupyterLab shows their pictures
#
# Nothing is installed outside .venv except Graphviz (as root) and Jupyter's notebook trust
# database in your user folder; no kernel or extension is registered globally.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

PYTHON="${PYTHON:-python3}"
VENV=.venv
STAMP="$VENV/.installed"
EXTRAS="${EXTRAS:-course,test}"
say() { printf 'setup: %s\n' "$*"; }
is_root() { [ "$(id -u 2>/dev/null || echo 1)" = 0 ]; }
have() { command -v "$1" >/dev/null 2>&1; }

# --- 1. the virtual environment --------------------------------------------------------------
if [ -x "$VENV/bin/python" ]; then
    :
else
    if ! have "$PYTHON"; then
        say "$PYTHON not found. Install Python 3.10 or newer (https://www.python.org/downloads/)"
        say "or use conda: conda env create -f environment.yml"
        exit 1
    fi
    if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 10))'; then
        say "$("$PYTHON" --version 2>&1) is too old; the course needs Python 3.10 or newer."
        say "Run again with a newer one, e.g.  make setup PYTHON=python3.11"
        exit 1
    fi
    say "creating $VENV with $("$PYTHON" --version 2>&1)"
    if ! "$PYTHON" -m venv "$VENV"; then
        rm -rf "$VENV"  # Debian leaves a venv without pip behind when python3-venv is missing
        pyver="$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
        if is_root && have apt-get; then
            say "installing python3-venv with apt-get"
            apt-get update -qq
            apt-get install -y -qq "python${pyver}-venv" || apt-get install -y -qq python3-venv
            "$PYTHON" -m venv "$VENV" || { rm -rf "$VENV"; exit 1; }
        else
            say "Python's venv module is missing. On Debian/Ubuntu install it with:"
            say "    sudo apt-get install python3-venv      (or python${pyver}-venv)"
            say "then run this again."
            exit 1
        fi
    fi
fi
PY="$VENV/bin/python"
if ! "$PY" -m pip --version >/dev/null 2>&1; then
    "$PY" -m ensurepip --upgrade >/dev/null 2>&1 || {
        say "$VENV has no pip. Remove it (rm -rf $VENV) and run this again."
        exit 1
    }
fi

# --- 2. the package and the course's tools ----------------------------------------------------
# The extras installed so far (one a line in the stamp) and those asked for now: install when one
# is missing, or when a pyproject.toml changed since.
installed_extras() { [ -f "$STAMP" ] && grep -E '^[a-z]+$' "$STAMP" || true; }
wanted="$(printf '%s\n' ${EXTRAS//,/ } | sort -u)"
have_extras="$(installed_extras | sort -u)"
needs_install=0
[ -f "$STAMP" ] || needs_install=1
[ -z "$(comm -23 <(echo "$wanted") <(echo "$have_extras"))" ] || needs_install=1
[ "$needs_install" = 1 ] || [ pyproject.toml -ot "$STAMP" ] || needs_install=1
[ "$needs_install" = 1 ] || [ minilucid_course/pyproject.toml -ot "$STAMP" ] || needs_install=1
# a distribution that each installed extra brings, still there?
dists="jupyterlab graphviz"
grep -qx test <<<"$have_extras" && dists="$dists nbval nbgrader pytest-xdist ruff"
grep -qx teacher <<<"$have_extras" && dists="$dists nbgrader"
grep -qx hub <<<"$have_extras" && dists="$dists jupyterhub nbgitpuller"
# still installed, and the package imported from this folder (not a moved or stale copy)?
[ "$needs_install" = 1 ] || "$PY" - $dists >/dev/null 2>&1 <<'PYCHECK' || needs_install=1
import importlib.metadata as md, os, sys
for dist in sys.argv[1:]:
    md.version(dist)
import minilucid, minilucid_course
here = os.getcwd() + os.sep
for package in (minilucid, minilucid_course):
    if not os.path.abspath(package.__file__).startswith(here):
        sys.exit(1)
PYCHECK
# pip, telling what it does in one short line per step (a first set-up takes a few minutes);
# its whole output goes to $VENV/pip.log, and the end of it is shown if it fails
pip_install() {
    local log="$VENV/pip.log" status=0
    "$PY" -m pip install --disable-pip-version-check --progress-bar off "$@" >"$log" 2>&1 &
    local pid=$! seen=0 installing=0 quiet=0
    while kill -0 "$pid" 2>/dev/null; do
        sleep 2
        quiet=$((quiet + 2))
        local found
        found="$(grep -c '^Collecting' "$log" || true)"
        if [ "$installing" = 0 ] && grep -q '^Installing collected packages' "$log"; then
            say "  pip: installing the packages (the longest step)"
            installing=1 quiet=0
        elif [ "$installing" = 0 ] && [ "$found" -gt "$seen" ]; then
            say "  pip: $found packages found, the latest $(grep '^Collecting' "$log" | tail -n 1 | cut -d' ' -f2)"
            seen="$found" quiet=0
        elif [ "$quiet" -ge 30 ]; then
            say "  pip: still working"
            quiet=0
        fi
    done
    wait "$pid" || status=$?
    if [ "$status" != 0 ]; then
        tail -n 30 "$log"
        say "pip failed (whole output in $log)"
        exit "$status"
    fi
}
if [ "$needs_install" = 1 ]; then
    extras="$(printf '%s\n' $wanted $have_extras | sort -u | paste -sd, -)"
    # the test tools include the teacher's (nbgrader; tests/test_lab.py checks it): a later
    # `make teacher` after `make test` needs no install
    say "installing minilucid with its extras [$extras] into $VENV (a few minutes the first time)"
    pip_install -e ".[$extras]"
    say "installing the course's machinery (minilucid_course) into $VENV"
    pip_install --no-deps -e ./minilucid_course
    # a venv set up before jsonschema was held below 4.25 (pyproject.toml) keeps rfc3987-syntax,
    # which nothing needs any more and which costs every Jupyter process a second: remove it
    if "$PY" -m pip show rfc3987-syntax 2>/dev/null | grep -qE '^Required-by: *$'; then
        "$PY" -m pip uninstall -y -q rfc3987-syntax >>"$VENV/pip.log" 2>&1 || true
    fi
    printf '%s\n' ${extras//,/ } $(grep -qx test <<<"${extras//,/$'\n'}" && echo teacher) \
        | sort -u >"$STAMP"
fi

# --- 3. Graphviz ------------------------------------------------------------------------------
if ! have dot; then
    if is_root && have apt-get; then
        say "installing Graphviz with apt-get"
        apt-get update -qq && apt-get install -y -qq graphviz || true
    fi
fi
if ! have dot; then
    # the same words as the pictures and the environment check (minilucid/graphviz_install.py)
    "$PY" -c 'from minilucid.graphviz_install import graphviz_install_hint as h; print(h())' \
        | sed 's/^/setup: /'
    say "Everything else works without it."
fi

# --- 3b. bubblewrap, the sandbox grading runs hand-ins in (the teacher's tools and the tests) --
if grep -qx -e teacher -e test <<<"$wanted" && ! have bwrap; then
    if is_root && have apt-get; then
        say "installing bubblewrap (grading's sandbox) with apt-get"
        apt-get update -qq && apt-get install -y -qq bubblewrap || true
    fi
    have bwrap || say "grading needs bubblewrap: sudo apt-get install bubblewrap (Linux only)"
fi

# --- 4. JupyterLab settings for the course: no news pop-up over the chapters -------------------
settings="$VENV/share/jupyter/lab/settings"
if [ ! -f "$settings/overrides.json" ]; then
    mkdir -p "$settings"
    printf '{\n  "@jupyterlab/apputils-extension:notification": {"fetchNews": "false"}\n}\n' \
        > "$settings/overrides.json"
fi

# --- 5. nbgrader's teacher tools off for learners (`make teacher` turns them on) --------------
"$PY" -m minilucid_course.jupyter_setup

# --- 6. trust the stored notebooks ------------------------------------------------------------
shopt -s nullglob
stored=(notebooks/*.ipynb solutions/*.ipynb)
TRUSTED="$VENV/.trusted"
if [ "${#stored[@]}" -gt 0 ]; then
    if [ ! -f "$TRUSTED" ] || [ -n "$(find "${stored[@]}" -newer "$TRUSTED" | head -n 1)" ]; then
        "$VENV/bin/jupyter" trust "${stored[@]}" >/dev/null
        touch "$TRUSTED"
    fi
fi

dot_version="$(dot -V 2>&1 | sed -n 's/.*version \([0-9.]*\).*/\1/p' || true)"
say "ready: $("$PY" --version 2>&1) in $VENV; graphviz ${dot_version:-missing}; ${#stored[@]} notebooks trusted"
