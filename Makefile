# Two commands do everything on a fresh machine with Python 3.11+: `make run`, `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin

.PHONY: run test lint bench wheel clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# The stamps re-install only when pyproject.toml changes.
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@ $(VENV)/.installed

run: $(VENV)/.installed
	$(BIN)/ondeck up

# The fault suite times real processes (kills, outages), so it runs after the rest, not
# beside it; each shares the two cores between two pytest-xdist workers, an idle one taking
# tests queued for the other (worksteal) so neither waits alone at the end. The sources are
# compiled first, as an installed ondeck is: the suite starts ondeck's processes again and
# again, and under PYTHONDONTWRITEBYTECODE each would compile what it imports anew.
test: $(VENV)/.installed-dev
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench
	$(BIN)/mypy
	$(BIN)/python -m compileall -q src
	$(BIN)/python -m pytest -n 2 --dist worksteal -m "not faults" $(PYTEST_ARGS)
	$(BIN)/python -m pytest -n 2 --dist worksteal -m faults $(PYTEST_ARGS)

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check --fix src tests bench
	$(BIN)/ruff format src tests bench
	$(BIN)/mypy

$(VENV)/.installed-bench: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev,bench]'
	touch $@ $(VENV)/.installed-dev $(VENV)/.installed

# Every benchmark in turn (about 10 minutes; docs/benchmarks.md has the figures). The server
# bench uses wrk when installed (Debian package wrk), else an httpx client.
bench: $(VENV)/.installed-bench
	$(BIN)/python bench/all.py $(BENCH_ARGS)

# The wheel for `uv tool install` or `pipx install` (README: Install it anywhere), built
# without a network: the build backend comes with the dev extras.
wheel: $(VENV)/.installed-dev
	$(BIN)/python -m build --no-isolation

clean:
	rm -rf $(VENV) build dist src/*.egg-info .pytest_cache
