# LeadCRM — `make dev` runs the product on this machine, `make test` proves it.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PORT ?= 8000
export PYTHONPATH := $(CURDIR)/functions:$(CURDIR)/layers/core/python:$(CURDIR)
export JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION := 1
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20

.PHONY: install npm client docs dev admin test redrive test-unit test-integration test-infra test-e2e test-reliability test-deep lint openapi synth layer migrate clean

$(BIN)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[dev]"
	touch $@

install: $(BIN)/.installed

# The Node tooling (package.json, pinned by package-lock.json): openapi-typescript, openapi-fetch and tsc for the
# client check, swagger-ui-dist for the local stack's /docs, redoc for `make docs`. Keyed on the lockfile like
# the venv; --prefer-offline: once npm's cache holds them, no network. --ignore-scripts: none of them needs an
# install script, and swagger-ui-dist's analytics dependency would phone home from one.
NODE_MODULES := node_modules
$(NODE_MODULES)/.installed: package.json package-lock.json
	npm ci --prefer-offline --no-audit --no-fund --ignore-scripts
	touch $@

npm: $(NODE_MODULES)/.installed

# The TypeScript types of the current document in clients/typescript/api.ts (git-ignored), and the usage
# sample beside them compiled under tsc --strict: what the test does, left on disk to read.
client: openapi npm  ## generates clients/typescript/api.ts from openapi.json and compiles the usage sample
	$(NODE_MODULES)/.bin/openapi-typescript openapi.json -o clients/typescript/api.ts --default-non-nullable=false
	$(NODE_MODULES)/.bin/tsc -p clients/typescript

docs: install npm  ## writes docs/api/index.html, a self-contained API reference (Redoc) that opens from file://
	$(BIN)/python -m infra.api_reference docs/api/index.html

dev: install npm  ## the whole product on 127.0.0.1:$(PORT) (PostgreSQL under .local/, moto, pollers, scheduler)
	$(BIN)/python -m infra.local --port $(PORT)

# make admin ARGS="create-organization --name … --owner-email … --owner-subject …" (infra/admin.py: add-member,
# set-role, remove-member, show-organization; --aws invokes the deployed admin function instead).
ARGS ?= --help
admin: install  ## operator commands on the directory, against the local stack's database or (--aws) the deployed stack
	$(BIN)/python -m infra.admin $(ARGS)

# pytest-xdist: TEST_WORKERS processes, each with its own PostgreSQL cluster (copied from one migrated
# template) and local stack; whole modules per worker, the slowest handed out first (tests/conftest.py).
TEST_WORKERS ?= 2
PARALLEL := -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder

# `make test CAP=tickets`: one capability's tests of every kind (tests/<kind>/<capability>/), nothing else.
CAP ?=
CAP_TESTS = $(wildcard tests/unit/$(CAP) tests/integration/$(CAP) tests/infra/$(CAP) tests/e2e/$(CAP))

# The context `make test` and `make synth` synthesize with: the example values of infra/test-context.json,
# never a deployment's (cdk.json has none: a deploy takes its own with -c, see README "Deploy").
# `make synth SYNTH_CONTEXT=my-context.json` checks your own values offline.
SYNTH_CONTEXT ?= infra/test-context.json

test: install npm  ## lint (ruff + import contracts), synth (cdk-nag) + cfn-lint, then every kind of test, in parallel
ifneq ($(CAP),)
	@test -n "$(CAP_TESTS)" || { echo "no tests for capability '$(CAP)' (tests/<kind>/$(CAP)/)"; exit 2; }
	$(BIN)/python -m pytest -q $(PARALLEL) $(CAP_TESTS)
else
	$(BIN)/ruff check .
	$(BIN)/lint-imports
	$(BIN)/python infra/app.py --context-file $(SYNTH_CONTEXT)
	$(BIN)/cfn-lint --non-zero-exit-code error cdk.out/LeadCrmStack.template.json
	$(BIN)/python -m pytest -q $(PARALLEL)
endif

test-unit: install
	$(BIN)/python -m pytest -q tests/unit

test-integration: install npm
	$(BIN)/python -m pytest -q $(PARALLEL) tests/integration

test-infra: install
	$(BIN)/python -m pytest -q tests/infra

test-e2e: install npm
	$(BIN)/python -m pytest -q tests/e2e

# Authorization matrix, replays and races, faults, and schemathesis fuzzing of every operation over the
# local stack (FUZZ_EXAMPLES=1000 make test-reliability for a longer run; make test runs 12 each), stateful
# sequences that follow the document's links (FUZZ_STATEFUL_SCENARIOS of at most FUZZ_STATEFUL_STEPS calls,
# default 80 of 15), and the edge values of every field through the handler (BOUNDS_EXAMPLES drawn values
# per field, default 3).
test-reliability: install
	$(BIN)/python -m pytest -q $(PARALLEL) tests/reliability

# The reliability suite with the long budgets (an hour or so on 2 cores): every knob above raised at once.
DEEP_FUZZ_EXAMPLES ?= 1000
DEEP_BOUNDS_EXAMPLES ?= 50
DEEP_STATEFUL_SCENARIOS ?= 2000
DEEP_STATEFUL_STEPS ?= 25
test-deep: install  ## the reliability suite with long fuzzing budgets (FUZZ_EXAMPLES, BOUNDS_EXAMPLES, stateful)
	FUZZ_EXAMPLES=$(DEEP_FUZZ_EXAMPLES) BOUNDS_EXAMPLES=$(DEEP_BOUNDS_EXAMPLES) \
	FUZZ_STATEFUL_SCENARIOS=$(DEEP_STATEFUL_SCENARIOS) FUZZ_STATEFUL_STEPS=$(DEEP_STATEFUL_STEPS) \
		$(BIN)/python -m pytest -q $(PARALLEL) tests/reliability

lint: install  ## ruff, and the architecture's import contracts (pyproject [tool.importlinter])
	$(BIN)/ruff check .
	$(BIN)/lint-imports

openapi: install  ## writes openapi.json and the route index (functions/api/route_index.json) from the API's routes
	$(BIN)/python -c "import api.handler as h; open('functions/api/route_index.json', 'w').write(h.route_index_text()); open('openapi.json', 'w').write(h.openapi_text())"
	@echo "wrote openapi.json and functions/api/route_index.json"

synth: install  ## synthesizes the CDK app offline into cdk.out/ (with SYNTH_CONTEXT, default infra/test-context.json)
	$(BIN)/python infra/app.py --context-file $(SYNTH_CONTEXT)

# Lambda python3.12 on arm64 runs Amazon Linux 2023 (glibc 2.34): manylinux2014 (glibc 2.17) and
# manylinux_2_28 aarch64 wheels both load there. --only-binary: nothing is compiled on this machine.
# --no-deps: infra/layer-requirements.txt is the complete lock. --no-compile: .pyc written by this
# machine's Python would not be 3.12's; Lambda compiles what it imports.
LAYER_DIR := build/layer
LAYER_REQUIREMENTS := infra/layer-requirements.txt
layer: install  ## the third-party dependencies layer in build/layer/python/ (pinned arm64 wheels, no Docker)
	rm -rf $(LAYER_DIR)
	$(BIN)/pip install --quiet --disable-pip-version-check --no-deps --no-compile --only-binary=:all: \
		--implementation cp --python-version 3.12 --abi cp312 \
		--platform manylinux2014_aarch64 --platform manylinux_2_28_aarch64 \
		--target $(LAYER_DIR)/python -r $(LAYER_REQUIREMENTS)
	rm -rf $(LAYER_DIR)/python/bin $(LAYER_DIR)/python/include  # console scripts for this venv, C headers
	find $(LAYER_DIR)/python -name __pycache__ -type d -prune -exec rm -rf {} +
	@du -sh $(LAYER_DIR)/python | sed 's/^/layer size (unzipped): /'

migrate: install  ## applies migrations to DATABASE_URL (or DB_* settings)
	$(BIN)/python -m leadcrm.platform.db.migrate

QUEUE ?= ingestion
redrive: install  ## moves the messages of a DLQ back to its queue in AWS (QUEUE=ingestion|task-lifecycle|graph-fetch|meta-events|webhook-delivery; --status: python -m infra.redrive --status)
	$(BIN)/python -m infra.redrive --queue $(QUEUE)

clean:
	rm -rf $(VENV) cdk.out .pytest_cache .ruff_cache

.PHONY: bench bench-ingestion
bench-ingestion: install  ## Meta leads through the ingestion handler and a CSV import vs raw INSERTs (BENCH_META_LEADS, BENCH_CSV_ROWS)
	$(BIN)/python -m bench.ingestion

bench: install  ## seeds its own PostgreSQL once (1M leads; BENCH_QUICK=1: 100k), runs every scenario, writes bench/results.json + RESULTS.md
	$(BIN)/python -m bench
