# Quick start (a fresh machine; each command does all its own set-up; either order):
#   make test    build the engine, install everything, run every test
#   make run     the same set-up, then the whole study: snakemake --cores N all,
#                then re-hash every artifact of its manifest (dtrlab verify)
#   make run CONFIG=config/reduced.yaml   a reduced study (small grids) on top of the defaults
#
# Set-up = Debian packages that are missing (scripts/setup-system.sh), a venv in
# .venv, the Rust engine built by maturin, Python dependencies from pyproject at
# the exact versions of requirements.lock (make lock refreshes it).

SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
CORES ?= $(shell nproc)
CONFIG ?=
STAMP := $(VENV)/.dtrlab-installed
SOURCES := $(shell find crates python -type f \( -name '*.rs' -o -name '*.py' -o -name 'Cargo.toml' \) 2>/dev/null) \
	pyproject.toml Cargo.toml Cargo.lock requirements.lock

.PHONY: setup test test-rust test-python run verify lint bench lock clean

$(STAMP): $(SOURCES)
	./scripts/setup-system.sh
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	# Exact versions from requirements.lock (refresh: make lock).
	$(BIN)/python -m pip install --quiet -c requirements.lock -e '.[test,workflow,notebooks,slurm,capture]'
	# The figure notebooks' kernel, for opening them in Jupyter from this venv
	# (the workflow itself finds it in workflow/jupyter).
	$(BIN)/python -m ipykernel install --sys-prefix --name dtrlab --display-name "Python (dtrlab)" >/dev/null
	touch $@

setup: $(STAMP)

test: test-rust test-python

test-rust: setup
	cargo test -p dtr-core --release

test-python: setup
	$(BIN)/python -m pytest

run: setup
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/snakemake --cores $(CORES) all $(if $(CONFIG),--configfile "$(CONFIG)")
	$(BIN)/dtrlab verify

verify: setup
	$(BIN)/dtrlab verify

lint: setup
	cargo clippy -p dtr-core -p dtr-py --release -- -D warnings
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/snakemake --lint
	$(BIN)/snakefmt --check .

# Re-resolve requirements.lock: the newest versions pyproject.toml allows.
lock: setup
	$(BIN)/python scripts/lock.py

bench: setup
	$(BIN)/python benchmarks/bench_engine.py

clean:
	rm -rf $(VENV) target results data .snakemake
