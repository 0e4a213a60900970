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
# test runs the warehouse a second time without the duckdb_arrow tag: its appender path is what
# a build without tags (go install, go run) stores events with; and checks that such a build's
# analyzer serve refuses to start (its console and query API cannot answer without the tag).
test: tools vet fuzz ## the whole test suite (what CI runs): vet, a short fuzz of each target, every test
	CGO_ENABLED=0 $(GO) build ./cmd/producer ./cmd/harness-worker ./events/... ./metrics/...
	$(GO) test -tags '$(GOTAGS)' -count=1 -timeout $(TEST_TIMEOUT) ./...
	$(GO) test -count=1 -timeout $(TEST_TIMEOUT) ./internal/warehouse/
	$(GO) test -count=1 -run 'TestServeNeedsTheArrowBuild' ./cmd/analyzer/
	$(MAKE) test-race

# test-race runs Go's data race detector over the code whose goroutines share state on the hot
# path: the warehouse's ingestion (the client's callback, the fetcher, the decoders and the
# committer share the gatherer and its batches; Warehouse.Memory reads counters the committer
# writes) and the bus (the publisher's async acknowledgements). A race in the first was found
# with -race on 2026-12-04 after several sessions unseen (countedMalloc); TestMemoryReadWhileIngesting
# finds it at the commit before the fix. The detector finds a race only when a run happens to
# interleave it, so this is a net, not a proof. The tests that hold memory to a bound
# (TestMemorySteadyIngest, TestMemoryBoundedUnderBacklog, TestLoadLeaves*) are left out: the
# detector changes what is allocated and when. -race needs cgo, as DuckDB does. About 2
# minutes on 2 idle cores.
RACE_WAREHOUSE ?= ^Test(MemoryFigures|Gate|Reattach(Keeps|Waits|Failure)|MemoryReadWhileIngesting|Fetch|Quiet|Delivered|Stall|SortItems|LargeMessages|Held|LiveStream|Take|OutOfMemory|RedeliveriesStoredOnce|CollectorsAndNoLeak)
.PHONY: test-race
test-race: ## the data race detector over ingestion and the bus
	$(GO) test -race -tags '$(GOTAGS)' -count=1 -timeout $(TEST_TIMEOUT) -run '$(RACE_WAREHOUSE)' ./internal/warehouse/
	$(GO) test -race -short -count=1 -timeout $(TEST_TIMEOUT) ./internal/bus/

# Fuzz budgets are counts of executions (-fuzztime Nx), never durations: Go 1.26's fuzz
# coordinator can fail a run at the end of a duration budget when the machine is loaded
# (golang/go#75804, "context deadline exceeded" with no failing input), and a count has no
# deadline. Each N is about what the former 10 s budget ran on this 2-core machine idle: about
# 9 s of fuzzing after the baseline-coverage pass, on 2 workers, so 18 CPU-seconds times the
# executions per CPU-second each target sustains. That rate was measured on 2026-12-01 as the
# difference between a 250000x and a 50000x run (which takes out the fixed start-up cost):
# FuzzDecode 25,700, FuzzEncodeFast 24,700, FuzzDecodeFast 21,000, FuzzCanonical 19,300,
# FuzzMapOTLP 10,100 (with the machine busy; per CPU-second an idle one does at least as well).
# FuzzServeIntoAnalyzer is the end-to-end target (an HTTP request to producer serve, JetStream,
# the analyzer's ingestion into DuckDB and its queries per input): 1000x took 13 s of fuzzing
# on 2026-12-01 with the machine busy, about 75 executions a second.
# On a busy machine a run only takes longer. FUZZTIME overrides every budget (e.g.
# FUZZTIME=2000000x for a longer search).
FUZZTIME ?=
run_fuzz = $(GO) test -run '^$$' -fuzz '^$(1)$$' -fuzztime $(or $(FUZZTIME),$(2)) $(3)
.PHONY: fuzz
fuzz: ## run each fuzz target for a fixed number of executions (about 10 s each on 2 idle cores); their seed corpora also run in every go test
	$(call run_fuzz,FuzzDecode,460000x,./events/)
	$(call run_fuzz,FuzzDecodeFast,380000x,./events/)
	$(call run_fuzz,FuzzEncodeFast,440000x,./events/)
	$(call run_fuzz,FuzzCanonical,350000x,./events/)
	$(call run_fuzz,FuzzMapOTLP,180000x,./internal/otlpmap/)
	$(call run_fuzz,FuzzServeIntoAnalyzer,1000x,./internal/receiver/)

.PHONY: readme-check
readme-check: ## run the quick starts of README.md (its readme-check blocks, with the files docs/production.md shows) and check docs/layout.md lists every package; part of make test
	$(GO) test -tags '$(GOTAGS)' -count=1 -run '^TestReadme' -v ./cmd/

.PHONY: demo
demo: ## the research study end to end in one process (embedded NATS, simulated models, workers, analyzer) and its report; DEMO_FLAGS="--n 20 --latency-scale 0" for a quicker run
	@mkdir -p $(BIN)
	$(GO) build -tags '$(GOTAGS)' -ldflags '$(LDFLAGS)' -o $(BIN)/analyzer ./cmd/analyzer
	$(BIN)/analyzer demo --data-dir $(DATA_DIR)/demo $(DEMO_FLAGS)

.PHONY: example
example: ## the example task of docs/own-agent.md (a DPA review whose tools an MCP server in examples/dpa-review serves) studied end to end against the simulated models, and its report
	@mkdir -p $(BIN)
	$(GO) build -tags '$(GOTAGS)' -ldflags '$(LDFLAGS)' -o $(BIN)/analyzer ./cmd/analyzer
	$(BIN)/analyzer demo --spec examples/dpa-review/study.json --data-dir $(DATA_DIR)/example --latency-scale 0 $(DEMO_FLAGS)

.PHONY: bench
bench: ## benchmarks, each printed as a ratio against a reference measured in the same run
	@echo "== metrics: all metrics of one cell, N = 1e4..1e6, two shapes; speed vs the all-pairs reference at N = 2,000 =="
	$(GO) test -run '^$$' -bench . -benchtime 1x ./metrics/
	@echo "== harness: its own overhead per step (zero-latency model), p50/p99 =="
	$(GO) test -run '^$$' -bench Step -benchtime 2000x ./internal/harness/
	@echo "== worker: overhead per step with NATS publishing, runs per second per worker =="
	$(GO) test -run '^$$' -bench . -benchtime 3x ./internal/worker/
	@echo "== analyzer ingestion vs a fetch+ack-only reference consumer on the same stream (medians of 3 passes) =="
	$(GO) test -tags '$(GOTAGS)' -run '^$$' -bench 'BenchmarkIngest$$' -benchtime 3x ./internal/warehouse/
	$(GO) test -tags '$(GOTAGS)' -run '^$$' -bench 'BenchmarkLoad' -benchtime 1x ./internal/warehouse/
	@echo "== analysis: one comparison of two cells of 1e6 runs each read from DuckDB (loading's share of it) =="
	$(GO) test -tags '$(GOTAGS)' -run '^$$' -bench 'BenchmarkComputeMillion' -benchtime 1x -timeout 30m ./internal/analysis/
	@echo "== producer serve: events/s over HTTP vs direct publishing with the bus =="
	$(GO) test -run '^$$' -bench IngestRatio -benchtime 3x ./internal/receiver/

.PHONY: clean
clean: ## remove build output and the demo data
	rm -rf $(BIN) $(DATA_DIR)

# Cluster, fault-test and load targets live beside the deployment files.
-include deploy/cluster.mk
