# Two entry points: `make demo` and `make test`. Both build .venv on first use.
# `make docs` builds the docs site strictly (make test does too).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test
DOCS_STAMP := $(VENV)/.installed-docs
# pytest-xdist workers for `make test`: each test file goes whole to a worker, and the real-vLLM
# tier's two groups (its servers' tests; its engines' tests) take one worker each, first: they
# mostly wait on vLLM while the other workers run the rest (tests/conftest.py).
# `make test PYTEST_WORKERS=0` runs the suite in one process.
PYTEST_WORKERS ?= 4
PYTEST_XDIST := $(if $(filter-out 0,$(PYTEST_WORKERS)),-n $(PYTEST_WORKERS) --dist loadfile)

.PHONY: demo test install-test pytest lint docs bench clean real-vllm

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e ".[dev]"
	touch $(STAMP)

# Everything `make test` needs, in one pip run (one resolution, not four): the tests also run
# `misstep discover` with its offline embedding (the discover extra: wordllama, weights in its
# wheel), the Ray path on a local CPU cluster (the ray extra, about 80 MB), Inspect AI's .eval
# logs (the inspect extra: inspect_ai) and the docs build (the docs extra). Where ray or
# inspect_ai cannot be installed, their tests skip, and say so.
$(TEST_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e ".[dev,discover,docs,ray,inspect]" \
	  || { $(BIN)/python -m pip install -q -e ".[dev,discover,docs]" \
	       && { $(BIN)/python -m pip install -q -e ".[dev,ray]" \
	            || echo "note: the ray extra could not be installed; its tests will skip"; } \
	       && { $(BIN)/python -m pip install -q -e ".[dev,inspect]" \
	            || echo "note: the inspect extra could not be installed; the Inspect log tests will skip"; }; }
	touch $(STAMP) $(DOCS_STAMP) $(TEST_STAMP)

# The docs site: mkdocs with the Material theme and mkdocstrings (the docs extra).
$(DOCS_STAMP): $(STAMP)
	$(BIN)/python -m pip install -q -e ".[dev,docs]"
	touch $(DOCS_STAMP)

install-test: $(TEST_STAMP)

demo: $(STAMP)
	$(BIN)/misstep demo --out demo-run

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks examples scripts
	$(BIN)/ruff format --check src tests benchmarks examples scripts
	$(BIN)/mypy

# --strict: a broken link, a missing page or a docstring mkdocstrings cannot read fails the build.
docs: $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

# The real-vLLM tier (tests/real) runs inside `make test`: with CI=true it builds its environment
# (~/.cache/misstep/vllm: vLLM CPU build + converted SmolLM2-135M) when missing and fails loudly if
# it cannot; elsewhere it skips unless that environment is built (`make real-vllm` builds it).
# --durations=25: the 25 slowest tests (calls, set-ups and tear-downs) end the report.
pytest: $(TEST_STAMP)
	$(BIN)/python -m pytest -q --durations=25 $(PYTEST_XDIST)

# The linters and the docs build run beside the tests (they take a core for a minute while
# the tests' vLLM workers wait); make reports any of them failing.
test: $(TEST_STAMP)
	$(MAKE) --no-print-directory -j 3 lint docs pytest

real-vllm: $(TEST_STAMP)
	$(PYTHON) scripts/real_vllm_env.py
	MISSTEP_REAL_VLLM=1 $(BIN)/python -m pytest -q tests/real

clean:
	rm -rf $(VENV) demo-run site .pytest_cache .mypy_cache .ruff_cache
