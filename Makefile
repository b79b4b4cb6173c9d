# aitc: two commands do everything on a fresh machine -- `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
N ?= 500
SEED ?= 0

.PHONY: all demo test lit pytest lint bench conformance fuzz clean

all: test

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet -c requirements.lock -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/python examples/demo.py

test: $(STAMP) lit pytest

lit: $(STAMP)
	$(BIN)/lit -sv test

pytest: $(STAMP)
	$(BIN)/pytest -n auto --dist worksteal

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python scripts/pyright.py

conformance: $(STAMP)
	$(BIN)/python -m aitc.testing.conformance

fuzz: $(STAMP)
	$(BIN)/python -m aitc.fuzz --n $(N) --seed $(SEED)

$(VENV)/.installed-iree: $(STAMP)
	$(BIN)/pip install --quiet -c requirements.lock -e '.[dev,iree]'
	touch $@

bench: $(STAMP) $(VENV)/.installed-iree
	$(BIN)/python benchmarks/bench_import.py
	$(BIN)/python benchmarks/bench_sim.py
	$(BIN)/python benchmarks/bench_compile.py
	$(BIN)/python benchmarks/bench_encoder.py --scaling
	$(BIN)/python benchmarks/bench_encoder.py --model resnet50
	$(BIN)/python benchmarks/bench_scaling.py
	$(BIN)/python benchmarks/bench_efficiency.py --tune
	$(BIN)/python benchmarks/bench_verification.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .ruff_cache
	find test -name Output -type d -prune -exec rm -rf {} +
