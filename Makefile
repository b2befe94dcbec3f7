# Two commands on a fresh machine: `make run` and `make test`. See README.md.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp

.PHONY: run browser test test-unit test-integration test-postgres test-e2e test-faults test-properties lint bench clean

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@touch $(STAMP)

run: $(STAMP)
	$(BIN)/club up

# Bytecode is cached even where the environment sets PYTHONDONTWRITEBYTECODE (this
# machine's does): without it each xdist worker compiles and assert-rewrites every
# module again, ~3 s of CPU apiece, and so does each `python -m entrypoints.cli` a
# test starts (hundreds in `make test`).
PYTEST := PYTHONDONTWRITEBYTECODE= $(BIN)/pytest

# The /ops/ page's test drives Debian's headless Chromium (tests/e2e/test_ops_page.py):
# `make test` installs it where it is missing, as root; anyone else is told how.
browser:
	@if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    apt-get update -qq && apt-get install -y -qq chromium chromium-driver >/dev/null; \
	  else \
	    echo "make: the /ops/ page's test needs Chromium: sudo apt-get install chromium chromium-driver" >&2; \
	    exit 1; \
	  fi; \
	fi

# Most of the suite waits (for servers, deadlines, retries) rather than computes:
# two or more workers share the cores. A file's tests stay together and in order,
# with their module's servers (--dist loadfile).
PARALLEL := -n auto --maxprocesses 4 --dist loadfile

test: $(STAMP) browser
	$(PYTEST) $(PARALLEL)

# One layer at a time; `make test` runs them all.
test-unit: $(STAMP)
	$(PYTEST) -m unit -n auto

test-integration: $(STAMP)
	$(PYTEST) -m integration

# The integration tests that reach PostgreSQL: CI runs them again against the
# machine's server (CLUB_DATABASE_URL); the others would only repeat themselves.
# One file at a time: two at once outgrow a stock server's 100 connections.
test-postgres: $(STAMP)
	$(PYTEST) -m "integration and postgres"

test-e2e: $(STAMP) browser
	$(PYTEST) -m e2e

test-faults: $(STAMP)
	$(PYTEST) -m faults

test-properties: $(STAMP)
	$(PYTEST) -m properties

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports

bench: $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[dev,bench]'
	$(BIN)/python -m bench.run

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
