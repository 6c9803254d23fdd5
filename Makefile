# One command each, doing their own set-up: `make demo`, `make test`.
# PYTHON: the interpreter that builds .venv (3.11 or newer), e.g. `make test PYTHON=python3.12`.
# `make clean` removes .venv, site/ and the tool caches (not the GGUF in ~/.cache, see
# docs/guides/models.md).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-dev
BENCH_STAMP := $(VENV)/.installed-bench
# llama.cpp's AMX kernels crash (SIGSEGV in ggml_backend_amx_mul_mat) on Q4_K_M models, the
# default model's quantization, on CPUs that have AMX (Sapphire Rapids and later Xeons): a build
# on such a CPU keeps its other native instructions (AVX-512 included) and leaves AMX out.
LLAMA_CMAKE_ARGS := $(if $(shell grep -qw amx_int8 /proc/cpuinfo 2>/dev/null && echo y),-DCMAKE_C_FLAGS=-mno-amx-int8 -DCMAKE_CXX_FLAGS=-mno-amx-int8)
# Exits 0 only on Python 3.11+ (the package's requires-python).
PY_CHECK := -c 'import sys; sys.exit(sys.version_info < (3, 11))'
# `pip install -e` in setuptools' default mode puts an import hook in site-packages, which type
# checkers never run: mypy on a host app's own file would not find turnloom. compat mode puts
# the checkout on sys.path through a plain .pth line instead, which mypy reads (py.typed and all).
# A step of its own: pip hands --config-settings to every package it builds, and the build
# backend of llama-cpp-python refuses settings it does not know.
EDITABLE := $(PY) -m pip install --quiet --no-deps -e . --config-settings editable_mode=compat

.PHONY: demo test lint typecheck unit python-headers redis-server chromium graphviz cpp cpp-sanitize csharp diagrams render-diagrams bench soak clean docs docs-serve

# A .venv made by an older Python (or left broken) would fail on every run: forget its stamps
# so the recipe below rebuilds it from scratch.
ifneq ($(shell $(PY) $(PY_CHECK) >/dev/null 2>&1 && echo ok),ok)
$(shell rm -f $(STAMP) $(BENCH_STAMP))
endif
# Likewise a .venv that has turnloom through the import hook (installed before EDITABLE).
ifneq ($(wildcard $(VENV)/lib/python*/site-packages/__editable___turnloom_*_finder.py),)
$(shell rm -f $(STAMP) $(BENCH_STAMP))
endif

$(STAMP): pyproject.toml setup.py $(wildcard turnloom/engine/durable/*.[ch] turnloom/engine/durable/store/*.c) | python-headers
	@$(PYTHON) $(PY_CHECK) || { echo "turnloom needs Python >= 3.11, and '$(PYTHON)' is" \
		"$$($(PYTHON) -V 2>&1). Pick another: make $(MAKECMDGOALS) PYTHON=python3.12" >&2; exit 1; }
	@$(PY) $(PY_CHECK) 2>/dev/null || $(PYTHON) -m venv --clear $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	# llama-cpp-python compiles llama.cpp on first install: several minutes on 2 cores.
	CMAKE_BUILD_PARALLEL_LEVEL=2 CMAKE_ARGS="$(LLAMA_CMAKE_ARGS) $$CMAKE_ARGS" \
		$(PY) -m pip install --quiet -e '.[dev,llama,docs]'
	$(EDITABLE)
	touch $(STAMP)

$(BENCH_STAMP): $(STAMP)
	$(PY) -m pip install --quiet -e '.[dev,llama,docs,bench]'
	$(EDITABLE)
	touch $(BENCH_STAMP)

demo: $(STAMP)
	$(PY) -m turnloom demo

lint: $(STAMP)
	$(PY) -m ruff check turnloom tests bench examples docs/_hooks
	$(PY) -m ruff format --check turnloom tests bench examples docs/_hooks
	$(VENV)/bin/lint-imports --no-cache

typecheck: $(STAMP)
	$(PY) -m mypy

# $(call apt_install,COMMAND,PACKAGE,NOTE[,FAIL]): install PACKAGE with apt-get when COMMAND is
# missing and we are root, else print NOTE with the command to run (and exit 1 when FAIL is set).
define apt_install
@command -v $(1) >/dev/null || { \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		apt-get install -y -q $(2) >/dev/null 2>&1 || \
		{ apt-get update -q >/dev/null && apt-get install -y -q $(2) >/dev/null; }; \
	else echo "$(3): sudo apt-get install $(2)" >&2; $(if $(4),exit 1,true); fi; }
endef

# The package's two C extensions (setup.py) are built against Python's headers: Debian's
# python3-dev, installed here when they are missing and we are root with apt-get, else the
# command is printed (the install then goes on without the extensions, and a test says so).
HAS_HEADERS := -c 'import os, sys, sysconfig; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))'
python-headers:
	@$(PYTHON) $(HAS_HEADERS) 2>/dev/null || { \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
			apt-get install -y -q python3-dev >/dev/null 2>&1 || \
			{ apt-get update -q >/dev/null && apt-get install -y -q python3-dev >/dev/null; }; \
		else echo "note: Python's headers are missing, turnloom's C extensions will not be" \
			"built: sudo apt-get install python3-dev" >&2; fi; }

# The durability tests start a real Redis server (Debian's redis-server) and skip without one:
# installed here when missing and we are root with apt-get, else the command is printed.
redis-server:
	$(call apt_install,redis-server,redis-server,note: the Redis tests are skipped without redis-server)

# The inspector's browser tests drive Debian's chromium with Playwright (never a downloaded
# browser): installed here when missing and we are root with apt-get, else the command is
# printed; the tests skip loudly without it, and fail when $CI is set.
chromium:
	$(call apt_install,chromium,chromium,note: the inspector's browser tests are skipped without chromium)

unit: $(STAMP) redis-server chromium
	$(PY) -m pytest

test: lint typecheck docs unit cpp csharp

# The docs site (mkdocs.yml) into site/: --strict fails on a broken link or anchor, a page left
# out of the nav, or a public name without a docstring (docs/_hooks/docstrings.py).
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

# The same, served on loopback and rebuilt on every change: http://127.0.0.1:8000
docs-serve: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs serve --dev-addr 127.0.0.1:8000

# The C++ client (clients/cpp): build it and run its ctest suite against the real server
# (clients/cpp/build/default). Installs g++, cmake, msgpack-cxx and asio with apt-get when run
# as root; otherwise prints the command and skips loudly (a failure when $CI is set).
cpp: $(STAMP)
	clients/cpp/tools/make_cpp.sh test $(abspath $(PY))

# The same suite under ThreadSanitizer and AddressSanitizer (not part of `make test`).
cpp-sanitize: $(STAMP)
	clients/cpp/tools/make_cpp.sh sanitize $(abspath $(PY))

# The C# / Unity client (clients/csharp): build it with Mono and run its NUnit suite against the
# real server, through tests/test_csharp_client.py. Installs mono-devel and nunit-console with
# apt-get when run as root; otherwise prints the command and skips loudly (a failure when $CI
# is set). After `make cpp`, it also compares the Python, C++ and C# transcripts of one story.
csharp: $(STAMP)
	"clients/csharp/Tools~/make_csharp.sh" test $(abspath $(PY))

# The generated files a test keeps fresh: diagrams/ and docs/params.md.
diagrams: $(STAMP)
	$(PY) -m turnloom diagrams --out diagrams
	$(PY) -c 'from pathlib import Path; from turnloom.engine.params_doc import write_params_doc as w; w(Path("docs"))'

# Graphviz's `dot` draws the pictures: installed here when missing and we are root with apt-get,
# else the command is printed and the recipe stops.
graphviz:
	$(call apt_install,dot,graphviz,the pictures need Graphviz's dot,fail)

# The pictures, as SVG files anyone can open (Mermaid: paste the .mmd files into
# https://mermaid.live). The turn machine and the demo's agent are committed in docs/assets/ for
# the docs site; a test checks each stamp against the DOT it was drawn from.
render-diagrams: diagrams graphviz
	for f in diagrams/*.dot; do dot -Tsvg "$$f" -o "$${f%.dot}.svg"; done
	for name in turn_machine demo_graph; do \
		cp diagrams/$$name.svg docs/assets/$$name.svg && \
		echo "<!-- made by make render-diagrams from diagrams/$$name.dot, sha256 $$(sha256sum \
			diagrams/$$name.dot | cut -d' ' -f1) -->" >> docs/assets/$$name.svg; done

bench: $(BENCH_STAMP) redis-server
	$(PY) -m bench.turns
	$(PY) -m bench.paused_memory
	$(PY) -m bench.wire_bench
	$(PY) -m bench.llama_bench
	$(PY) -m bench.toolcall_quality
	$(PY) -m bench.served_bench
	$(PY) -m bench.durable
	$(PY) -m bench.workers
	$(PY) -m bench.npcs

# Reliability (not part of `make test`; several minutes): 5 rounds x 20,000 turns embedded and
# over the wire, 100,000 fuzzed frames beside a well-behaved client, the heaviest requests.
soak: $(STAMP)
	$(PY) -m bench.soak
	$(PY) -m bench.fuzz
	$(PY) -m bench.worst_case

clean:
	rm -rf $(VENV) site .pytest_cache .mypy_cache .ruff_cache
