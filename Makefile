# The two commands of the README: `make demo` and `make test`. Both create the virtualenv when missing.
PYTHON ?= python3.11
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export DAGSTER_HOME ?= $(CURDIR)/.dagster_home

.PHONY: demo demo-postgres test test-fast lint dev bench reliability clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[test]"
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/backfill-assets demo

# The same demo with Dagster's storage and the catalog on PostgreSQL (two databases on one server).
PG_HOST ?= 127.0.0.1
PG_USER ?= postgres
PG_DAGSTER_DB ?= backfill_dagster
PG_CATALOG_DB ?= backfill_catalog
PG_HOME ?= $(CURDIR)/.dagster_home_pg

demo-postgres: $(STAMP)
	for db in $(PG_DAGSTER_DB) $(PG_CATALOG_DB); do \
	  psql -h $(PG_HOST) -U $(PG_USER) -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname='$$db'" | grep -q 1 \
	    || psql -h $(PG_HOST) -U $(PG_USER) -d postgres -c "CREATE DATABASE $$db"; \
	done
	mkdir -p $(PG_HOME) && cp deploy/postgres/dagster.yaml $(PG_HOME)/dagster.yaml
	DAGSTER_HOME=$(PG_HOME) \
	DAGSTER_PG_URL=postgresql://$(PG_USER)@$(PG_HOST):5432/$(PG_DAGSTER_DB) \
	BACKFILL_CATALOG_URL=postgresql://$(PG_USER)@$(PG_HOST):5432/$(PG_CATALOG_DB) \
	$(BIN)/backfill-assets --home $(PG_HOME) demo

# Two workers (most test time is waiting on daemons and runs); the PostgreSQL server restart runs alone, last.
test: $(STAMP)
	$(BIN)/python -m pytest -q -n 2 --dist loadgroup -m "not server_restart"
	$(BIN)/python -m pytest -q -m server_restart

test-fast: $(STAMP)
	$(BIN)/python -m pytest -q tests/engine

lint: $(STAMP)
	$(BIN)/ruff check backfill_assets tests

dev: $(STAMP)
	mkdir -p $(DAGSTER_HOME) && test -f $(DAGSTER_HOME)/dagster.yaml || cp dagster.yaml $(DAGSTER_HOME)/
	$(BIN)/dagster dev -w workspace.yaml -h 127.0.0.1 -p 3000

# Benchmarks of issue 6 (docs/BENCHMARKS.md); never part of `make test`. Sizes and contenders as flags, e.g.
# make bench BENCH_ARGS="--with-airflow"   (python -m bench.run --help lists them)
BENCH_ARGS ?=

bench: $(STAMP)
	$(BIN)/python -m bench.run $(BENCH_ARGS)

# Issue 7: every fault class at full strength (30 trials per class, large hypothesis runs; ~30-40 min on 2 cores),
# then docs/RELIABILITY.md rendered from the counts it measured. `make test` runs the same suite with 3 trials.
reliability: $(STAMP)
	tmp=$$(mktemp -d); \
	BACKFILL_RELIABILITY=slow BACKFILL_RELIABILITY_JSON=$$tmp/trials.json \
	  $(BIN)/python -m pytest -q -p no:cacheprovider tests/reliability; status=$$?; \
	$(BIN)/python -m tests.reliability.render $$tmp/trials.json docs/RELIABILITY.md || status=2; \
	rm -rf $$tmp; exit $$status

clean:
	rm -rf .dagster_home .pytest_cache .hypothesis
