# ditto — make help lists the targets. `make test` is what CI runs.
SHELL      := /usr/bin/env bash
GO         ?= go
# duckdb_arrow: the analyzer loads DuckDB through the driver's Arrow interface (the faster path,
# measured in internal/warehouse's BenchmarkLoad); without it the appender path is used.
GOTAGS     ?= duckdb_arrow
DATA_DIR   ?= ditto-data
BIN        := bin
TOOLS      := .bin
NATSCLI    := $(TOOLS)/nats
NATSCLI_VERSION := v0.5.0
NATS_SERVER_VERSION := v2.15.2
TEST_TIMEOUT ?= 30m
# VERSION is what the binaries' --version prints; empty leaves the module version and commit Go
# stamps into every build (see internal/cli/version.go).
VERSION    ?= $(shell git describe --tags --always --dirty 2>/dev/null)
LDFLAGS    := -X github.com/dittolab/ditto/internal/cli.version=$(VERSION)

.DEFAULT_GOAL := help

.PHONY: help
help: ## list the targets
	@grep -hE '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

.PHONY: build
build: ## build the three binaries into bin/ (producer and worker without cgo)
	@mkdir -p $(BIN)
	CGO_ENABLED=0 $(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/producer ./cmd/producer
	CGO_ENABLED=0 $(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/harness-worker ./cmd/harness-worker
	$(GO) build -tags '$(GOTAGS)' -ldflags '$(LDFLAGS)' -o $(BIN)/analyzer ./cmd/analyzer

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
test: tools vet fuzz ## the whole test suite (what CI runs): vet, a short fuzz of each target, every test
	CGO_ENABLED=0 $(GO) build ./cmd/producer ./cmd/harness-worker ./events/... ./metrics/...
	$(GO) test -tags '$(GOTAGS)' -count=1 -timeout $(TEST_TIMEOUT) ./...

FUZZTIME ?= 10s
.PHONY: fuzz
fuzz: ## run each fuzz target briefly (FUZZTIME, default 10s); their seed corpora also run in every go test
	$(GO) test -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime $(FUZZTIME) ./events/
	$(GO) test -run '^$$' -fuzz '^FuzzCanonical$$' -fuzztime $(FUZZTIME) ./events/
	$(GO) test -run '^$$' -fuzz '^FuzzMapOTLP$$' -fuzztime $(FUZZTIME) ./internal/otlpmap/

.PHONY: demo
demo: ## the research study end to end in one process (embedded NATS, simulated models, workers, analyzer) and its report; DEMO_FLAGS="--n 20 --latency-scale 0" for a quicker run
	@mkdir -p $(BIN)
	$(GO) build -tags '$(GOTAGS)' -ldflags '$(LDFLAGS)' -o $(BIN)/analyzer ./cmd/analyzer
	$(BIN)/analyzer demo --data-dir $(DATA_DIR)/demo $(DEMO_FLAGS)

.PHONY: bench
bench: ## benchmarks, each printed as a ratio against a reference measured in the same run
	@echo "== metrics: all metrics of one cell, N = 1e4..1e6, two shapes; speed vs the all-pairs reference at N = 2,000 =="
	$(GO) test -run '^$$' -bench . -benchtime 1x ./metrics/
	@echo "== harness: its own overhead per step (zero-latency model), p50/p99 =="
	$(GO) test -run '^$$' -bench Step -benchtime 2000x ./internal/harness/
	@echo "== worker: overhead per step with NATS publishing, runs per second per worker =="
	$(GO) test -run '^$$' -bench . -benchtime 3x ./internal/worker/
	@echo "== analyzer ingestion vs a fetch+ack-only reference consumer on the same stream =="
	$(GO) test -tags '$(GOTAGS)' -run '^$$' -bench 'BenchmarkIngest$$|BenchmarkLoad' -benchtime 1x ./internal/warehouse/
	@echo "== producer serve: events/s over HTTP vs direct publishing with the bus =="
	$(GO) test -run '^$$' -bench IngestRatio -benchtime 3x ./internal/receiver/

.PHONY: clean
clean: ## remove build output and the demo data
	rm -rf $(BIN) $(DATA_DIR)

# Cluster, fault-test and load targets live beside the deployment files.
-include deploy/cluster.mk
