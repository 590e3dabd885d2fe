# The one home of the course's commands. `make help` lists them.
#
# Learners:  make lab        set up (first time) and open the course in JupyterLab
#            make progress   which exercises pass (CH=02 for one chapter)
#            make update     the course's latest version (the chapters you ran are kept in work/)
# Everyone:  make test       set up (first time) and run the whole test suite

SHELL := /bin/bash
.DEFAULT_GOAL := help

VENV := .venv
BIN := $(VENV)/bin
PY := $(BIN)/python
# kernels named python3 come from this environment, not from a user-wide Jupyter
export JUPYTER_PREFER_ENV_PATH := 1

STORED := $(wildcard notebooks/*.ipynb solutions/*.ipynb)
NBVAL_DIRS := $(wildcard notebooks solutions)
LINT_PATHS := $(wildcard minilucid minilucid_course tests benchmarks)
WELCOME := $(firstword $(wildcard notebooks/00_welcome.ipynb) $(wildcard notebooks))
ALLOW_ROOT := $(if $(filter 0,$(shell id -u 2>/dev/null)),--allow-root)

LAB_ARGS ?=
CH ?=
WORKERS ?= 2
PYTEST_ARGS ?=
NBVAL := --nbval --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg \
	--nbval-cell-timeout=300

.PHONY: help setup lab update teacher class dashboard slides hub-test tiny-gpt audit reset kit test \
	test-other-blas check sync exercises \
	progress execute html bench clean distclean

# What each command installs into .venv (minilucid's extras; minilucid_course/setup.sh records
# what is in): learners get what learning needs, the test tools come with the tests, nbgrader
# with the teacher's commands (and with `make hub-test`, which runs a test: pytest comes with it).
# `make setup` alone installs the course and the test tools.
EXTRAS ?= course,test
lab update progress reset html bench: EXTRAS = course
slides: EXTRAS = course,slides
teacher class dashboard audit: EXTRAS = course,teacher
hub-test: EXTRAS = course,test,hub

help:
	@echo "make lab         set up, then open the course in JupyterLab (LAB_ARGS='--no-browser --port 8899')"
	@echo "make test        set up, then run every test: unit tests, exercises, notebooks (nbval)"
	@echo "make update      the course's latest version: the chapters you ran go to work/backups/, then git pull"
	@echo "make progress    which exercises in work/ pass, fail or are not done yet (CH=02: one chapter)"
	@echo "make reset CH=03 a fresh copy of chapter 03's exercises in work/ (yours kept in work/backups/)"
	@echo "make teacher     JupyterLab with solutions/ and nbgrader's teacher tools (docs/teaching.md);"
	@echo "                 CLASS=~/minilucid-class: Formgrader on that class (in the foreground: use"
	@echo "                 a second terminal; a JupyterLab workspace of its own, not the learner's)"
	@echo "make class CLASS=~/minilucid-class   an nbgrader class folder from solutions/ (CH=\"03 05\": some)"
	@echo "make dashboard CLASS=...  what the class gets right and wrong, per check (and dashboard.html)"
	@echo "make slides CH=03 slides of a chapter, one per section, in site/slides/"
	@echo "make hub-test    the JupyterHub configuration for a class, started and tried (docs/teaching.md)"
	@echo "make audit CLASS=~/minilucid-class  hand-ins to read after autograde (docs/teaching.md)"
	@echo "make test-other-blas  the tests of trained figures again, on another BLAS kernel (CI runs it)"
	@echo "make setup       create .venv and install the course into it (idempotent)"
	@echo "make check       fast checks: lint, format, chapters in sync with the package, exercises"
	@echo "make sync        rewrite the chapters' tagged cells from the package"
	@echo "make exercises   generate exercises/ from solutions/"
	@echo "make kit         regenerate the teacher's chapter tables (docs/teaching-chapters.md)"
	@echo "make execute     re-run notebooks/ and solutions/ and store their outputs (NB=\"paths\" for some)"
	@echo "make html        static HTML copy of the course in site/"
	@echo "make bench       speed comparisons (python -m benchmarks)"
	@echo "make tiny-gpt    retrain chapter 13's two tiny GPTs and their checkpoints (minutes)"
	@echo "make clean       remove built and cached files (distclean also removes .venv)"

setup:
	@EXTRAS="$(EXTRAS)" bash minilucid_course/setup.sh

# The repository is Jupyter's root; the URL it prints (and the browser) opens chapter 00. Learners
# answer in work/ (copies of exercises/ made the first time, never overwritten, ignored by git);
# exercises/ and solutions/ stay out of the file browser, and nbgrader's teacher tools stay off.
HIDE_GLOBS := ['__pycache__', '*.pyc', '*.pyo', '.DS_Store', '*.so', '*.dylib', '*~', \
	'exercises', 'solutions', '*.egg-info']
lab: setup
	@$(PY) -m minilucid_course.workspace prepare
	$(BIN)/jupyter lab --ServerApp.root_dir="$(CURDIR)" --LabApp.default_url=/lab/tree/$(WELCOME) \
		--ContentsManager.hide_globs="$(HIDE_GLOBS)" $(ALLOW_ROOT) $(LAB_ARGS)

# JupyterLab for a teacher: nbgrader's formgrader and assignment tools on, Markdown opened as a
# preview (minilucid_course/teacher/settings). Without CLASS: the repository, at the teacher's
# guide. With CLASS=<folder made by `make class`>: that class, at its Formgrader, with the class's
# nbgrader_config.py (course folder and exchange) read from the folder it starts in.
NBGRADER_ON := {$(foreach x,formgrader validate_assignment assignment_list course_list,\
	'nbgrader.server_extensions.$(x)': True,)}
CLASS ?=
CLASS_DIR = $(abspath $(patsubst ~/%,$(HOME)/%,$(CLASS)))
TEACHER_ROOT = $(if $(CLASS),$(CLASS_DIR),$(CURDIR))
TEACHER_URL = $(if $(CLASS),/formgrader,/lab/tree/docs/teaching.md)
teacher: setup
	@$(if $(CLASS),test -f "$(CLASS_DIR)/nbgrader_config.py" || { echo "teacher: $(CLASS) is no \
		class folder; make one with: make class CLASS=$(CLASS)"; exit 1; },:)
	cd "$(TEACHER_ROOT)" && JUPYTER_CONFIG_PATH="$(CURDIR)/minilucid_course/teacher" \
		"$(CURDIR)/$(BIN)/jupyter" lab --ServerApp.root_dir="$(TEACHER_ROOT)" \
		--LabApp.default_url=$(TEACHER_URL) \
		--LabApp.app_settings_dir="$(CURDIR)/minilucid_course/teacher/settings" \
		--LabApp.workspaces_dir="$(CURDIR)/$(VENV)/share/minilucid-teacher-workspaces" \
		--ServerApp.jpserver_extensions="$(NBGRADER_ON)" $(ALLOW_ROOT) $(LAB_ARGS)

# The course's latest version. JupyterLab saves every chapter a learner runs (with its outputs), and
# git pull refuses to overwrite them: the notebooks a run changed go to work/backups/<time>/
# first, then the pull, then the set-up again (what the update needs, the new notebooks trusted,
# a new chapter's exercises copied into work/). Answers in work/ are never touched.
update: setup
	@$(PY) -m minilucid_course.workspace update
	@EXTRAS="$(EXTRAS)" bash minilucid_course/setup.sh

# An nbgrader class folder from solutions/ (docs/teaching.md, "Running a class with nbgrader");
# EXCHANGE=/srv/nbgrader/exchange puts the exchange where other users can reach it
EXCHANGE ?=
class: setup
	@test -n "$(CLASS)" || { echo "class: say where, e.g. make class CLASS=~/minilucid-class"; exit 1; }
	$(PY) -m minilucid_course.classroom "$(CLASS_DIR)" $(CH) $(if $(EXCHANGE),--exchange "$(EXCHANGE)")

# Per chapter and check: students who pass, fail or have not answered, and their mistakes
dashboard: setup
	@test -n "$(CLASS)" || { echo "dashboard: say which class, e.g. make dashboard CLASS=~/minilucid-class"; exit 1; }
	$(PY) -m minilucid_course.dashboard "$(CLASS_DIR)"

# Slides of one chapter (CH=03) or of every chapter: one slide per section; they open offline
# (reveal.js and MathJax are copied next to them from Python packages)
slides: setup
	$(PY) -m minilucid_course.slides $(CH)

# The JupyterHub configuration for a class (minilucid_course/hub/), started and tried: needs
# JupyterHub (the `hub` extra) and configurable-http-proxy (npm, installed here when missing)
hub-test: setup
	@command -v configurable-http-proxy >/dev/null || npm install -g configurable-http-proxy
	$(BIN)/pytest -q -p no:xdist tests/test_hub.py $(PYTEST_ARGS)

# After autograde: the hand-ins whose answers do what an answer never needs, the gradebook's extra
# credit and hand-set scores, and the hand-ins autograde stopped (docs/teaching.md).
audit: setup
	@test -n "$(CLASS)" || { echo "audit: say which class, e.g. make audit CLASS=~/minilucid-class"; exit 1; }
	@$(PY) -m minilucid_course.audit "$(CLASS_DIR)"

# A fresh copy of one chapter's exercises in work/; the old copy goes to work/backups/.
reset: setup
	@$(PY) -m minilucid_course.workspace reset "$(CH)"

# One pytest run over two workers. --dist loadfile keeps each file on one worker: nbval makes
# one test per cell and the cells of a notebook share its kernel, in order. One BLAS thread per
# process: the workers already use the cores, and a BLAS that starts threads for small products
# and waits for them when the cores are busy made chapter 11's runs eight times slower.
ONE_THREAD = OPENBLAS_NUM_THREADS=$${OPENBLAS_NUM_THREADS:-1} OMP_NUM_THREADS=$${OMP_NUM_THREADS:-1} \
	MKL_NUM_THREADS=$${MKL_NUM_THREADS:-1}
# Whole files to each worker, in the order tests/conftest.py gives them (its longest first), not
# xdist's own order (the files with the most tests first, which leaves the long one-test files for
# the end, one worker running them alone)
DIST := --dist loadfile --no-loadscope-reorder
test: setup
	$(ONE_THREAD) $(BIN)/pytest -n $(WORKERS) $(DIST) tests $(NBVAL_DIRS) $(NBVAL) $(PYTEST_ARGS)

# The chapters and tests whose figures come from training, again on another BLAS kernel than this machine's
# (OpenBLAS's Prescott: SSE3 only, sums its products in another order than the AVX kernels of
# any recent x86-64 CPU). A figure compared by its last digit fails here, as it would on a
# learner's laptop. CI runs it after `make test` (.ci/run); BLAS_CORE=... picks another kernel.
BLAS_CORE ?= Prescott
NUMERIC := $(wildcard notebooks/0[789]_*.ipynb notebooks/1[0-3]_*.ipynb solutions/12_*.ipynb) \
	tests/test_experiments_ch10_ch11.py tests/test_tiny_gpt.py tests/test_training.py
test-other-blas: setup
	OPENBLAS_CORETYPE=$(BLAS_CORE) $(ONE_THREAD) $(BIN)/pytest -n $(WORKERS) $(DIST) \
		$(wildcard $(NUMERIC)) $(NBVAL) $(PYTEST_ARGS)

check: setup
	@status=0; \
	run() { echo "+ $$*"; "$$@" || status=1; }; \
	run $(BIN)/ruff check $(LINT_PATHS); \
	run $(BIN)/ruff format --check $(LINT_PATHS); \
	run $(PY) -m minilucid_course.sync --check; \
	run $(PY) -m minilucid_course.sync --coverage; \
	run $(PY) -m minilucid_course.make_exercises --check; \
	run $(PY) -m minilucid_course.teaching --check; \
	exit $$status

sync: setup
	$(PY) -m minilucid_course.sync --write

# docs/teaching-chapters.md: objectives, times and the wrong answers each check rejects, generated
kit: setup
	$(PY) -m minilucid_course.teaching

exercises: setup
	$(PY) -m minilucid_course.make_exercises

progress: setup
	@$(PY) -m minilucid_course.progress $(CH)

# Tagged cells first, so the stored outputs come from the package's current code; then the
# exercises, which carry the solutions' notebook metadata. NB="notebooks/03_x.ipynb ..." runs only
# those notebooks (and regenerates only their exercises); without NB, every stored notebook.
NB ?=
EXECUTE := $(if $(strip $(NB)),$(NB),$(STORED))
execute: setup
	$(PY) -m minilucid_course.sync --write
ifneq ($(strip $(EXECUTE)),)
	$(PY) -m minilucid_course.execute $(EXECUTE)
	$(PY) -m minilucid_course.sync --write
	$(PY) -m minilucid_course.make_exercises $(if $(strip $(NB)),$(filter solutions/%,$(NB)) --only-given,)
	$(BIN)/jupyter trust $(EXECUTE) >/dev/null
endif
	$(PY) -m minilucid_course.teaching

html: setup
	$(PY) -m minilucid_course.build_site --out site

bench: setup
	$(PY) -m benchmarks

# chapter 13's checkpoints: the sorting program and the character model, seed 0, their budgets
tiny-gpt: setup
	cd notebooks/capstone && OPENBLAS_NUM_THREADS=1 ../../$(PY) tiny_gpt.py --seed 0 --save tiny_gpt.npz
	cd notebooks/capstone && OPENBLAS_NUM_THREADS=1 ../../$(PY) char_gpt.py --seed 0 --save char_gpt.npz

clean:
	rm -rf site .pytest_cache .hypothesis *.egg-info
	find . -path ./$(VENV) -prune -o \( -name __pycache__ -o -name .ipynb_checkpoints \) \
		-type d -prune -exec rm -rf {} +

distclean: clean
	rm -rf $(VENV)
