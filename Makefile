# gpunode developer entry points. `make demo` and `make test` work on a fresh machine.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: demo test test-serial check lint fmt types bench setup native system-deps test-fast clean catalogs screenshots

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test]'
	touch $(STAMP)

setup: $(STAMP) native

# The collector's optional C module (bot/collectors/_statm.c: the statm loop of a busy node),
# built in place for this interpreter when a compiler and Python's headers are here (else it
# says why, and the collector reads statm in Python); left as it is while newer than its source.
native: $(STAMP)
	$(BIN)/python -m bot.collectors.native

# Debian packages the tests need: Chromium for the console tests (with the emoji font and
# fonts-noto-cjk, so the zh-CN console renders Chinese rather than boxes), promtool for the alert rules,
# Alertmanager (binary /usr/bin/prometheus-alertmanager) for the webhook tests against it, and
# prometheus itself for the history tests (tests/prom start one on loopback), and PostgreSQL
# (initdb, pg_ctl) for the store's contract tests and the replica tests (tests/pgserver.py
# starts a throwaway cluster on a free loopback port, or uses $GPUNODE_TEST_PG_DSN).
system-deps:
	@missing=""; \
	command -v chromium >/dev/null 2>&1 || missing="$$missing chromium"; \
	{ command -v promtool >/dev/null 2>&1 && command -v prometheus >/dev/null 2>&1; } || missing="$$missing prometheus"; \
	command -v prometheus-alertmanager >/dev/null 2>&1 || missing="$$missing prometheus-alertmanager"; \
	dpkg -s fonts-noto-color-emoji >/dev/null 2>&1 || missing="$$missing fonts-noto-color-emoji"; \
	dpkg -s fonts-noto-cjk >/dev/null 2>&1 || missing="$$missing fonts-noto-cjk"; \
	{ command -v initdb >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; } || missing="$$missing postgresql"; \
	if [ -n "$$missing" ]; then \
	  echo "installing from Debian:$$missing"; \
	  $(SUDO) apt-get update -qq && $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi

demo: $(STAMP) native
	$(BIN)/gpunode demo

# The one entry point (README, .ci/run): what `make check` checks, then every test, spread
# with pytest-xdist (worksteal: the slow end-to-end files don't pile up on one worker) over
# two workers a core: the end-to-end tests wait on sockets, subprocesses and the stand-ins'
# clocks about half their time (a worker a core kept 2 cores 52% busy; two a core, 72%, and
# the same tests took 22% less wall time). TEST_WORKERS=N to choose. `make test-serial` runs
# them in one process (-p no:xdist) for debugging.
TEST_WORKERS ?= $(shell echo $$(( $$(nproc) * 2 )))
# Compiled modules are cached (__pycache__, ignored by git) even where the environment says
# not to (PYTHONDONTWRITEBYTECODE=1, as on this project's machines): without the cache each
# xdist worker, and each worker, collector and CLI process the tests start, compiles the same
# sources again (collecting the suite took 12.2 s of CPU a process without it, 6.6 with it).
test test-serial test-fast: export PYTHONDONTWRITEBYTECODE :=
test: $(STAMP) native system-deps lint types
	$(BIN)/pytest -q -n $(TEST_WORKERS) --dist worksteal

test-serial: $(STAMP) native system-deps
	$(BIN)/pytest -q -p no:xdist

test-fast: $(STAMP) native
	$(BIN)/pytest -q -n auto -m 'not slow and not browser'

fmt: $(STAMP)
	$(BIN)/ruff format bot gpunode_sandbox tests bench
	$(BIN)/ruff check --fix bot gpunode_sandbox tests bench

lint: $(STAMP)
	$(BIN)/ruff format --check bot gpunode_sandbox tests bench
	$(BIN)/ruff check bot gpunode_sandbox tests bench
	$(BIN)/lint-imports

types: $(STAMP)
	$(BIN)/mypy

check: test

# The words: extract every marked message from templates/ and bot/render, bot/charts, bot/slack into
# locales/gpunode.pot, then carry new ids into each locale's .po (translate the empty msgstrs;
# tests/render/test_catalogs.py fails on any left empty). The .po files are read at runtime
# (bot/render/catalogs.py compiles them in memory), so nothing is built from them here.
catalogs: $(STAMP)
	$(BIN)/pybabel -q extract -F babel.cfg --no-location --omit-header --sort-output -k _ \
	  -o locales/gpunode.pot .
	for l in en zh_CN; do \
	  $(BIN)/pybabel -q update -N --no-fuzzy-matching --ignore-obsolete \
	    -i locales/gpunode.pot -d locales -D gpunode -l $$l || exit 1; \
	done

# the issue screenshots (docs/screenshots/*.png), taken in Chromium from the demo's console
screenshots: $(STAMP)
	$(BIN)/python -m gpunode_sandbox.screenshots

bench: $(STAMP) native
	for b in bench/*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

clean:
	rm -f bot/collectors/_statm*.so
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache dist build test-artifacts
