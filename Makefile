# The README's two commands: `make serve` and `make test`.
SHELL := /bin/bash
PLANSTACK_HOME ?= $(HOME)/.cache/planstack
export PLANSTACK_HOME
PY := .venv/bin/python
PLANSTACK := .venv/bin/planstack

.PHONY: setup model postgres chromium promtool serve test test-unit reliability lint bench-gateway clean-venv

setup:
	@scripts/bootstrap.sh >/dev/null

model: setup
	@$(PLANSTACK) model prepare

## PostgreSQL server binaries for the run-store tests (apt-installs Debian's package when missing).
postgres:
	@scripts/ensure_postgres.sh >/dev/null

## Headless Chromium + ChromeDriver for the web-UI tests (apt-installs Debian's packages when missing).
chromium:
	@scripts/ensure_chromium.sh >/dev/null

## Prometheus's promtool for the alert-rule and dashboard checks (apt-installs Debian's `prometheus` when missing).
promtool:
	@scripts/ensure_promtool.sh >/dev/null

## Set up everything on a fresh machine, start the engine and the gateway (Ctrl-C stops both).
serve: model
	@$(PLANSTACK) index build >/dev/null
	@$(PLANSTACK) serve

## Run the whole test suite, the real-engine tests included.
test: model postgres chromium promtool
	@$(PY) -m pytest

## Fast tests only (no real engine).
test-unit: setup postgres chromium promtool
	@$(PY) -m pytest -m "not engine"

## Reliability and security: load, faults (incl. a dedicated-engine kill), fuzzing, tenant isolation.
reliability: model postgres
	@$(PY) -m pytest tests/reliability
	@if curl -sf http://127.0.0.1:8001/health >/dev/null; then $(PY) -m benchmarks.reliability_load; fi

lint: setup
	@$(PY) -m ruff check contract serving planner executors retrieval benchmarks tests scripts examples
	@$(PY) -m mypy

## The deployment files in configs/deploy (docker-compose config, kubernetes-validate; see the README "Scaling out").
.PHONY: validate-deploy
validate-deploy: setup
	@scripts/validate_deploy.sh

bench-gateway: model
	@$(PY) -m benchmarks.gateway_overhead

clean-venv:
	rm -rf .venv "$(PLANSTACK_HOME)"/venv-*
