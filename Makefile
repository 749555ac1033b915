# Two entry points: `make run` (the main job) and `make test`. Both set everything up first.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test
# setuptools' editable build warns "Editable installation ... folders with the same name may take precedence" (152
# columns, nothing a user can act on): that one warning is silenced, for the install only.
QUIET_BUILD := PYTHONWARNINGS="ignore:Editable installation"

.PHONY: setup test-setup solvers browser postgres run lint test test-fast bench reproduce clean

# The example external policy package (docs/WRITE_A_POLICY.md): installed for the tests, which run its sweep.
EXAMPLE := examples/pdors-greedy
EXAMPLE_STAMP := $(VENV)/.example-installed

# What `make run` needs: the runtime dependencies and the solvers.
setup: $(STAMP) solvers

# What `make test` needs on top: the test extras (pytest, ruff, mypy, Playwright, ...), Chromium and PostgreSQL.
test-setup: setup $(TEST_STAMP) browser postgres

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(QUIET_BUILD) $(BIN)/python -m pip install -q -e .
	touch $(STAMP)

$(TEST_STAMP): $(STAMP)
	$(QUIET_BUILD) $(BIN)/python -m pip install -q -e ".[test]"
	touch $(TEST_STAMP)

$(EXAMPLE_STAMP): $(STAMP) $(shell find $(EXAMPLE) -name '*.py' -o -name pyproject.toml)
	$(BIN)/python -m pip install -q --no-deps ./$(EXAMPLE)
	touch $@

# GLPK (glpsol) and CBC come from Debian packages; installed only where missing.
solvers:
	@command -v glpsol >/dev/null && command -v cbc >/dev/null || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq glpk-utils coinor-cbc >/dev/null; }

# Chromium for the MLflow UI test (tests/test_mlflow_browser.py, driven by Playwright): Debian's package, where
# missing.
browser:
	@command -v chromium >/dev/null || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq chromium >/dev/null; }

# PostgreSQL (the team MLflow server's backend store, started by tests/test_mlflow_team_stack.py) from Debian,
# installed only where missing; the Debian package's own cluster is not used.
postgres:
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq postgresql >/dev/null; }

# The quickstart sweep (configs/quickstart.yaml), recomputed from scratch: Ray -> Parquet -> table, plots, MLflow.
run: setup
	rm -rf results/quickstart
	$(BIN)/pdors sweep run configs/quickstart.yaml --out results/quickstart

# The quality gate: lint, format and types (pyproject.toml [tool.ruff], [tool.mypy]); zero findings.
lint: setup $(TEST_STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	cd $(EXAMPLE) && MYPYPATH=$(CURDIR) $(CURDIR)/$(BIN)/mypy  # --strict, against pdors.api (its pyproject.toml)

# Tests run in TEST_WORKERS processes (pytest-xdist; each integration test's services live in a network namespace
# of their own, or are found by their own session); TEST_WORKERS=0 runs them in this one.
TEST_WORKERS ?= 2

test: test-setup $(EXAMPLE_STAMP)
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist worksteal

# Everything but the integration tier (tests marked `slow`, pyproject.toml [tool.pytest.ini_options] markers).
test-fast: test-setup $(EXAMPLE_STAMP)
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) --dist worksteal -m "not slow"

# Speed figures of docs/PERFORMANCE.md in one run (medians and ratios); `pdors bench --quick` for a short one.
bench: setup
	$(BIN)/pdors bench

# Every reproduction config at full size (docs/REPRODUCTION.md); --resume keeps finished runs.
reproduce: setup
	for c in configs/fig*.yaml configs/thesis*.yaml; do \
	  $(BIN)/pdors sweep run $$c --resume && $(BIN)/pdors report results/$$(basename $$c .yaml) --out docs/figures || exit 1; \
	done

clean:
	rm -rf $(VENV) results mlruns mlflow.db .pytest_cache
