# llmscaler — one Makefile for users, contributors and CI.
# Every target that needs Python creates .venv itself, so each works on a fresh machine.

SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
IMG ?= 4pdosc/llm-operator:$(shell sed -n 's/^version = "\(.*\)"/\1/p' pyproject.toml)
PYTEST_ARGS ?=

.PHONY: help venv install test test-tools lint fmt typecheck unit integration demo manifests chart-sync \
        docker-build deploy undeploy bench prometheus controlplane fuzz clean

help: ## List the targets.
	@grep -E '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN{FS=":.*?## "}{printf "  %-14s %s\n", $$1, $$2}'

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[test]'
	@touch $(STAMP)

venv: $(STAMP) ## Create .venv with the project and its test tools.

install: $(STAMP) ## Install the project (editable) into .venv.

prometheus: ## Make sure a Prometheus binary is available (apt-get when root).
	@bash hack/ensure-prometheus.sh

# Where hack/ensure-controlplane.sh puts the binaries (keyed by the pinned versions); the tests
# find them through this variable. Binaries of your own: see TEST_ASSET_* / KUBEBUILDER_ASSETS.
CONTROLPLANE_BIN = $(shell bash hack/ensure-controlplane.sh --print-dir)

controlplane: ## Build the real control plane (kube-apiserver, etcd, kwok, helm, ...) from Go modules, once.
	@bash hack/ensure-controlplane.sh

test-tools: prometheus ## Prometheus, and the real control plane with helm (where Go is).
	@bash hack/ensure-controlplane.sh --optional

fmt: $(STAMP) ## Format the code with ruff.
	$(BIN)/ruff format src test bench hack demo examples
	$(BIN)/ruff check --fix src test bench hack demo examples

lint: $(STAMP) ## ruff (lint + format check) and mypy.
	$(BIN)/ruff check src test bench hack demo examples
	$(BIN)/ruff format --check src test bench hack demo examples
	$(BIN)/mypy

typecheck: $(STAMP)
	$(BIN)/mypy

test: $(STAMP) test-tools lint ## Install everything, lint, type-check and run the whole test suite.
	LLMSCALER_CONTROLPLANE_BIN="$(CONTROLPLANE_BIN)" PATH="$$(bash hack/ensure-prometheus.sh --print-dir):$$PATH" \
	  $(BIN)/python -m pytest $(PYTEST_ARGS)

unit: $(STAMP) ## Only the unit tests (no servers).
	$(BIN)/python -m pytest test/unit $(PYTEST_ARGS)

fuzz: $(STAMP) ## The property tests and parser fuzzing with the long budget (random; ~3 min).
	HYPOTHESIS_PROFILE=long $(BIN)/python -m pytest test/unit/properties -q $(PYTEST_ARGS)

integration: $(STAMP) prometheus ## Only the integration tests (on every backend available).
	LLMSCALER_CONTROLPLANE_BIN="$(CONTROLPLANE_BIN)" $(BIN)/python -m pytest test/integration $(PYTEST_ARGS)

demo: $(STAMP) ## Run the scripted demo (embedded cluster; DEMO_ARGS="--cluster controlplane" for the real one).
	-@bash hack/ensure-prometheus.sh --optional
	$(BIN)/python -m demo $(DEMO_ARGS)

manifests: $(STAMP) ## Regenerate the CRD from the API types.
	$(BIN)/python hack/gen_crd.py

chart-sync: $(STAMP) ## Copy the generated CRD (and RBAC) into the Helm chart.
	$(BIN)/python hack/chart_sync.py

docker-build: ## Build the manager image (IMG=registry/llm-operator:tag).
	docker build -t $(IMG) .

deploy: ## Deploy into the current kube context with kustomize (IMG=...).
	cd config/default && kubectl kustomize . | sed 's#image: 4pdosc/llm-operator:.*#image: $(IMG)#' | kubectl apply -f -

undeploy: ## Remove what deploy created.
	kubectl kustomize config/default | kubectl delete --ignore-not-found -f -

bench: $(STAMP) ## Run the benchmarks and refresh bench/RESULTS.md.
	$(BIN)/python -m pip install --quiet -e '.[test,bench]'
	$(BIN)/python -m bench.run $(BENCH_ARGS)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache build *.egg-info
