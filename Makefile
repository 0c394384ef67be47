# LeadCRM — `make dev` runs the product on this machine, `make test` proves it.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PORT ?= 8000
export PYTHONPATH := $(CURDIR)/functions:$(CURDIR)/layers/core/python:$(CURDIR)
export JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION := 1
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20

.PHONY: install dev test test-unit test-integration test-infra test-e2e lint openapi synth migrate clean

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[dev]"
	touch $@

install: $(BIN)/.installed

dev: install  ## the whole product on 127.0.0.1:$(PORT) (PostgreSQL under .local/, moto, pollers, scheduler)
	$(BIN)/python -m infra.local --port $(PORT)

test: install  ## lint, then unit, integration (PostgreSQL + moto), CDK template and end-to-end tests
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -q

test-unit: install
	$(BIN)/python -m pytest -q tests/unit

test-integration: install
	$(BIN)/python -m pytest -q tests/integration

test-infra: install
	$(BIN)/python -m pytest -q tests/infra

test-e2e: install
	$(BIN)/python -m pytest -q tests/e2e

lint: install
	$(BIN)/ruff check .

openapi: install  ## writes openapi.json from the API's routes
	$(BIN)/python -c "import json, api.handler as h; json.dump(h.openapi_schema(), open('openapi.json', 'w'), indent=2)"
	@echo "wrote openapi.json"

synth: install  ## synthesizes the CDK app offline into cdk.out/
	$(BIN)/python infra/app.py

migrate: install  ## applies migrations to DATABASE_URL (or DB_* settings)
	$(BIN)/python -m leadcrm.db.migrate

clean:
	rm -rf $(VENV) cdk.out .pytest_cache .ruff_cache

.PHONY: bench
bench: install  ## seeds its own PostgreSQL once (1M leads; BENCH_QUICK=1: 100k) and measures lists, detail, bulk move
	$(BIN)/python -m bench
