# Two entry points: `make demo` and `make test`. Both build .venv on first use.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test

.PHONY: demo test lint bench clean real-vllm

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e ".[dev]"
	touch $(STAMP)

# The tests also run the Ray path on a local CPU cluster: the ray extra (about 80 MB). Where it
# cannot be installed, those tests skip, and say so.
$(TEST_STAMP): $(STAMP)
	$(BIN)/python -m pip install -q -e ".[dev,ray]" || echo "note: the ray extra could not be installed; its tests will skip"
	touch $(TEST_STAMP)

demo: $(STAMP)
	$(BIN)/misstep demo --out demo-run

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks examples scripts
	$(BIN)/ruff format --check src tests benchmarks examples scripts
	$(BIN)/mypy

# The real-vLLM tier (tests/real) runs inside `make test`: with CI=true it builds its environment
# (~/.cache/misstep/vllm: vLLM CPU build + converted SmolLM2-135M) when missing and fails loudly if
# it cannot; elsewhere it skips unless that environment is built (`make real-vllm` builds it).
test: $(TEST_STAMP) lint
	$(BIN)/python -m pytest -q

real-vllm: $(TEST_STAMP)
	python3.11 scripts/real_vllm_env.py
	MISSTEP_REAL_VLLM=1 $(BIN)/python -m pytest -q tests/real

clean:
	rm -rf $(VENV) demo-run .pytest_cache .mypy_cache .ruff_cache
