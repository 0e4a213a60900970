# ditto — make help lists the targets. `make test` is what CI runs.
SHELL      := /usr/bin/env bash
GO         ?= go
GOTAGS     ?=
DATA_DIR   ?= ditto-data
BIN        := bin
TOOLS      := .bin
NATSCLI    := $(TOOLS)/nats
NATSCLI_VERSION := v0.5.0
NATS_SERVER_VERSION := v2.15.2
TEST_TIMEOUT ?= 30m

.DEFAULT_GOAL := help

.PHONY: help
help: ## list the targets
	@grep -hE '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

.PHONY: build
build: ## build the three binaries into bin/ (producer and worker without cgo)
	@mkdir -p $(BIN)
	CGO_ENABLED=0 $(GO) build -o $(BIN)/producer ./cmd/producer
	CGO_ENABLED=0 $(GO) build -o $(BIN)/harness-worker ./cmd/harness-worker
	$(GO) build -tags '$(GOTAGS)' -o $(BIN)/analyzer ./cmd/analyzer

.PHONY: tools
tools: $(NATSCLI) ## install the nats CLI (natscli v0.5.0) into .bin/ for the interoperability test

$(NATSCLI):
	@mkdir -p $(TOOLS)
	GOBIN=$(CURDIR)/$(TOOLS) $(GO) install github.com/nats-io/natscli/nats@$(NATSCLI_VERSION)

.PHONY: vet
vet: ## go vet and gofmt check
	$(GO) vet -tags '$(GOTAGS)' ./...
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

.PHONY: test
test: tools vet ## the whole test suite (what CI runs)
	CGO_ENABLED=0 $(GO) build ./cmd/producer ./cmd/harness-worker ./events/... ./metrics/...
	$(GO) test -tags '$(GOTAGS)' -count=1 -timeout $(TEST_TIMEOUT) ./...

.PHONY: demo
demo: ## the research study end to end in one process (embedded NATS, simulated models, workers, analyzer) and its report; DEMO_FLAGS="--n 20 --latency-scale 0" for a quicker run
	@mkdir -p $(BIN)
	$(GO) build -tags '$(GOTAGS)' -o $(BIN)/analyzer ./cmd/analyzer
	$(BIN)/analyzer demo --data-dir $(DATA_DIR)/demo $(DEMO_FLAGS)

.PHONY: bench
bench: ## benchmarks, printed as ratios against references measured in the same run
	$(GO) test -tags '$(GOTAGS)' -run '^$$' -bench . -benchtime 3x ./metrics/ ./internal/harness/

.PHONY: clean
clean: ## remove build output and the demo data
	rm -rf $(BIN) $(DATA_DIR)

# Cluster, fault-test and load targets live beside the deployment files.
-include deploy/cluster.mk
