# Two commands on a fresh machine: `make run` and `make test`. See README.md.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp

.PHONY: run test test-unit test-integration test-e2e test-faults test-properties lint bench clean

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@touch $(STAMP)

run: $(STAMP)
	$(BIN)/club up

test: $(STAMP)
	$(BIN)/pytest

# One layer at a time; `make test` runs them all.
# Bytecode is cached even where the environment sets PYTHONDONTWRITEBYTECODE (this
# machine's does): without it each xdist worker compiles and assert-rewrites every
# module again, ~3 s of CPU apiece, and each `python -m entrypoints.cli` a test runs.
test-unit: $(STAMP)
	PYTHONDONTWRITEBYTECODE= $(BIN)/pytest -m unit -n auto

test-integration: $(STAMP)
	$(BIN)/pytest -m integration

test-e2e: $(STAMP)
	$(BIN)/pytest -m e2e

test-faults: $(STAMP)
	$(BIN)/pytest -m faults

test-properties: $(STAMP)
	$(BIN)/pytest -m properties

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
