# Two entry points: `make demo` and `make test`. Both build .venv on first use.
# `make docs` builds the docs site strictly (make test does too).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test
DOCS_STAMP := $(VENV)/.installed-docs

.PHONY: demo test lint docs bench clean real-vllm

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e ".[dev]"
	touch $(STAMP)

# The tests also run `misstep discover` with its offline embedding (the discover extra: wordllama,
# weights in its wheel) and the Ray path on a local CPU cluster: the ray extra (about 80 MB).
# Where ray cannot be installed, its tests skip, and say so. The inspect extra (inspect_ai) reads
# Inspect AI's .eval logs; the same holds for it.
$(TEST_STAMP): $(STAMP)
	$(BIN)/python -m pip install -q -e ".[dev,discover]"
	$(BIN)/python -m pip install -q -e ".[dev,discover,ray]" || echo "note: the ray extra could not be installed; its tests will skip"
	$(BIN)/python -m pip install -q -e ".[dev,discover,inspect]" || echo "note: the inspect extra could not be installed; the Inspect log tests will skip"
	touch $(TEST_STAMP)

# The docs site: mkdocs with the Material theme and mkdocstrings (the docs extra).
$(DOCS_STAMP): $(STAMP)
	$(BIN)/python -m pip install -q -e ".[dev,docs]"
	touch $(DOCS_STAMP)

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
test: $(TEST_STAMP) lint docs
	$(BIN)/python -m pytest -q

real-vllm: $(TEST_STAMP)
	$(PYTHON) scripts/real_vllm_env.py
	MISSTEP_REAL_VLLM=1 $(BIN)/python -m pytest -q tests/real

clean:
	rm -rf $(VENV) demo-run site .pytest_cache .mypy_cache .ruff_cache
