# Every target creates .venv when it is missing and installs the package into it
# (editable) with what the target needs. torch is pinned to the CPU build 2.13.0
# when the venv has no torch yet, so no multi-GB CUDA build is ever pulled.

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
TORCH  ?= torch==2.13.0
STAMP  := $(VENV)/.stamp

.PHONY: install test demo bench docs lint format gpu-check clean

$(VENV)/.stamp-base:
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@$(PY) -c "import torch" 2>/dev/null || $(PY) -m pip install --quiet "$(TORCH)"
	@touch $@

$(STAMP)-test: $(VENV)/.stamp-base pyproject.toml
	$(PY) -m pip install --quiet -e ".[test,distributed]"
	@touch $@

$(STAMP)-docs: $(STAMP)-test
	$(PY) -m pip install --quiet -e ".[docs]"
	@touch $@

$(STAMP)-bench: $(STAMP)-test
	$(PY) -m pip install --quiet -e ".[bench]"
	@touch $@

install: $(STAMP)-test

test: $(STAMP)-test
	$(PY) -m pytest -n 2 -q

demo: $(STAMP)-test
	$(PY) -m sklearn_ext demo

bench: $(STAMP)-bench
	$(PY) -m sklearn_ext bench

gpu-check: $(STAMP)-test
	$(PY) benchmarks/gpu_check.py

docs: $(STAMP)-docs
	$(PY) -m sphinx -W --keep-going -b html -q docs docs/_build/html

lint: $(STAMP)-test
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

format: $(STAMP)-test
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

clean:
	rm -rf docs/_build docs/generated docs/api.rst .pytest_cache .ruff_cache
