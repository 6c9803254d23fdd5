# One command each, doing their own set-up: `make demo`, `make test`.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-dev
BENCH_STAMP := $(VENV)/.installed-bench

.PHONY: demo test lint typecheck unit diagrams bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	# llama-cpp-python compiles llama.cpp on first install: several minutes on 2 cores.
	CMAKE_BUILD_PARALLEL_LEVEL=2 $(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

$(BENCH_STAMP): $(STAMP)
	$(PY) -m pip install --quiet -e '.[dev,bench]'
	touch $(BENCH_STAMP)

demo: $(STAMP)
	$(PY) -m turnloom demo

lint: $(STAMP)
	$(PY) -m ruff check turnloom tests bench
	$(PY) -m ruff format --check turnloom tests bench

typecheck: $(STAMP)
	$(PY) -m mypy

unit: $(STAMP)
	$(PY) -m pytest

test: lint typecheck unit

diagrams: $(STAMP)
	$(PY) -m turnloom diagrams

bench: $(BENCH_STAMP)
	$(PY) -m bench.turns
	$(PY) -m bench.paused_memory
	$(PY) -m bench.wire_bench
	$(PY) -m bench.llama_bench

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
