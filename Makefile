# Two entry points a new machine needs: `make run` and `make test`.
# Both create .venv when it is missing and (re)install the project when
# pyproject.toml changed; nothing is assumed to be installed beforehand.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: run test test-all lint bench clean install install-dev

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(VENV)/.installed $@

install: $(VENV)/.installed
install-dev: $(VENV)/.installed-dev

# The main job: every demo case on the embedded default agent (scripted:oracle).
run: install
	$(BIN)/capeval run

# The fast tier, one worker per core: every test not marked slow. PYTEST_ARGS
# comes last, so it adds to these arguments or overrides them
# (PYTEST_ARGS='-m "slow or not slow"' runs every tier, as .ci/run does).
test: install-dev
	$(BIN)/python -m pytest -n auto -m "not slow" $(PYTEST_ARGS)

# Every tier: the slow one too (real agent CLIs, notebooks, packaging, the docs build).
test-all: install-dev
	$(BIN)/python -m pytest -n auto $(PYTEST_ARGS)

lint: install-dev
	$(BIN)/ruff check capeval tests benchmarks scripts notebooks
	$(BIN)/ruff format --check capeval tests benchmarks scripts notebooks
	$(BIN)/mypy capeval

bench: install-dev
	$(BIN)/python benchmarks/runner.py
	$(BIN)/python benchmarks/gate.py
	$(BIN)/python benchmarks/history.py
	$(BIN)/python benchmarks/advisory.py
	@if $(BIN)/python -c 'import ray' 2>/dev/null; then $(BIN)/python benchmarks/scale.py; \
	else echo "benchmarks/scale.py needs the ray extra: $(BIN)/python -m pip install -e '.[dev,ray]'"; fi

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis
