# Two entry points: `make run` (the main job) and `make test`. Both set everything up first.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup solvers run test bench clean

setup: $(STAMP) solvers

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e ".[test]"
	touch $(STAMP)

# GLPK (glpsol) and CBC come from Debian packages; installed only where missing.
solvers:
	@command -v glpsol >/dev/null && command -v cbc >/dev/null || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq glpk-utils coinor-cbc >/dev/null; }

run: setup
	$(BIN)/pdors simulate --policy pdors --machines 30 --jobs 50 --slots 20 --seed 1 --json results/quickstart-pdors.json

test: setup
	$(BIN)/python -m pytest -q

clean:
	rm -rf $(VENV) results mlruns mlflow.db .pytest_cache
