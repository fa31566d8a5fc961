# maelab: two commands for a newcomer -- `make book` and `make test`. Both set themselves up.
SHELL   := /bin/bash
PYTHON  ?= python3
VENV    ?= .venv
PY      := $(VENV)/bin/python
STAMP   := $(VENV)/.maelab-installed
PROFILE ?= auto
PYTEST_ARGS ?=

.PHONY: book test dryrun lint venv notebooks html chromium mathjax clean help

help:
	@echo "make book   - set up .venv, execute every notebook (papermill), build _build/html"
	@echo "make test   - set up .venv, ruff lint + format check, the library tests, smoke-execute every notebook, the zoo's gpu dry run, the committed book built strictly"
	@echo "make dryrun - every notebook with its gpu settings under the dry-run caps, on a CPU (CI runs it after make test)"
	@echo "              PROFILE=auto|smoke|cpu|gpu (book), PYTEST_ARGS='-k store' (test)"

# The virtualenv is created once and reused; it is rebuilt only when the pins change.
venv: $(STAMP)
$(STAMP): requirements.lock pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.lock
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	@touch $@

notebooks: venv
	$(PY) -m maelab.book run --profile $(PROFILE)

html: venv
	$(PY) -m maelab.book build

book: notebooks html
	@echo "open _build/html/index.html"

# Headless Chromium checks that maths is typeset in the built pages; installed from Debian when missing.
chromium:
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "installing Debian chromium for the page checks"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium >/dev/null; }

# ruff (pinned in requirements.lock): lint and format check of the Python sources
LINTED := src tests benchmarks scripts
lint: venv
	$(PY) -m ruff check $(LINTED)
	$(PY) -m ruff format --check $(LINTED)

# make test: everything but the gpu dry run of every page (~10 of its ~30 min on 2 cores), which is `make dryrun`;
# .ci/run runs both. make test keeps the gpu dry run of the shared zoo, one seed (tests/test_dryrun.py::ZOO_DRY_RUN).
test: venv chromium lint
	$(PY) -m pytest -m "not every_page_dry_run" $(PYTEST_ARGS)

dryrun: venv
	$(PY) -m pytest -m every_page_dry_run $(PYTEST_ARGS) tests/test_dryrun.py

mathjax:
	./scripts/vendor_mathjax.sh

clean:
	rm -rf _build .cache/results-smoke
