# Every target creates .venv when it is missing and installs the package into it
# (editable) with what the target needs. torch is pinned to the CPU build 2.13.0
# when the venv has no torch yet, so no multi-GB CUDA build is ever pulled.

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
TORCH  ?= torch==2.13.0
STAMP  := $(VENV)/.stamp
# The oldest versions pyproject.toml supports, tested by `make test-oldest`.
OLD_VENV ?= .venv-oldest
OLDEST   ?= numpy==1.24.4 scipy==1.10.1 scikit-learn==1.6.0 pandas==2.0.3

.PHONY: install test test-oldest demo bench claims docs examples lint format gpu-check clean

$(VENV)/.stamp-base:
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@$(PY) -c "import torch" 2>/dev/null || $(PY) -m pip install --quiet "$(TORCH)"
	@touch $@

$(STAMP)-test: $(VENV)/.stamp-base pyproject.toml
	$(PY) -m pip install --quiet -e ".[test,distributed,text,federated,rl]"
	@touch $@

$(STAMP)-docs: $(STAMP)-test
	$(PY) -m pip install --quiet -e ".[docs]"
	@touch $@

# The examples need only the package and matplotlib (not the test tools).
$(STAMP)-examples: $(VENV)/.stamp-base pyproject.toml
	$(PY) -m pip install --quiet -e ".[examples]"
	@touch $@

$(STAMP)-bench: $(STAMP)-test
	$(PY) -m pip install --quiet -e ".[bench]"
	@touch $@

install: $(STAMP)-test

# worksteal: a worker that runs out of tests takes queued ones from the other,
# so a few long tests at the end of the order do not leave a core idle.
test: $(STAMP)-test
	$(PY) -m pytest -n 2 --dist worksteal -q

# The common checks against the oldest supported numpy, scipy and scikit-learn,
# in a venv of their own (the pins are repeated so pip cannot upgrade them).
$(OLD_VENV)/.stamp: pyproject.toml
	@test -x $(OLD_VENV)/bin/python || $(PYTHON) -m venv $(OLD_VENV)
	@$(OLD_VENV)/bin/python -c "import torch" 2>/dev/null || \
		$(OLD_VENV)/bin/python -m pip install --quiet "$(TORCH)"
	$(OLD_VENV)/bin/python -m pip install --quiet $(OLDEST)
	$(OLD_VENV)/bin/python -m pip install --quiet -e ".[test]" $(OLDEST)
	@touch $@

test-oldest: $(OLD_VENV)/.stamp
	$(OLD_VENV)/bin/python -c "import numpy, sklearn; print('oldest:', \
		'numpy', numpy.__version__, 'scikit-learn', sklearn.__version__)"
	$(OLD_VENV)/bin/python -m pytest -n 2 -q -p no:cacheprovider tests/test_common.py

demo: $(STAMP)-test
	$(PY) -m sklearn_ext demo

bench: $(STAMP)-bench
	$(PY) -m sklearn_ext bench

# The claims ledger: regenerate the README's estimator table and the user
# guide's results tables from benchmarks/results/*.json, then check that every
# quoted figure is traced and every results file is fresher than its code.
claims: $(STAMP)-test
	$(PY) -m sklearn_ext claims --write
	$(PY) -m sklearn_ext claims --check

gpu-check: $(STAMP)-test
	$(PY) benchmarks/gpu_check.py

# The gallery runs every example (sphinx-gallery), so this takes as long as
# `make examples`; a rebuild reruns only the examples that changed.
docs: $(STAMP)-docs
	$(PY) -m sphinx -W --keep-going -b html -q docs docs/_build/html

# Every examples/plot_*.py as a user runs it, without a display (Agg backend);
# stops at the first that fails and prints how long each one took.
examples: $(STAMP)-examples
	@for f in examples/plot_*.py; do \
		echo "== $$f"; start=$$(date +%s.%N); \
		MPLBACKEND=Agg $(PY) "$$f" || { echo "make examples: $$f failed"; exit 1; }; \
		echo "== $$f: $$(awk "BEGIN {printf \"%.1f\", $$(date +%s.%N) - $$start}") s"; \
	done

lint: $(STAMP)-test
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

format: $(STAMP)-test
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

clean:
	rm -rf docs/_build docs/generated docs/api.rst docs/auto_examples docs/sg_execution_times.rst .pytest_cache .ruff_cache
