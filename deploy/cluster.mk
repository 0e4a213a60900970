# Local JetStream cluster, fault tests and sustained load. Included by the Makefile.
# See deploy/README.md.

NATS_SERVER  := $(TOOLS)/nats-server
CLUSTER_DIR  ?= $(DATA_DIR)/cluster
CLUSTER_URLS := nats://127.0.0.1:14221,nats://127.0.0.1:14222,nats://127.0.0.1:14223
SYNC         ?= always
RATE         ?= 2000
DURATION     ?= 30s
LOAD_MODE    ?= embedded
# The go test timeout of `make load`: a run of DURATION per rate and mode, with its start, drain
# and nats bench. Raise it for runs of an hour or more (DURATION=60m takes about 65 minutes).
LOAD_TIMEOUT ?= 2h
# The whole suite's go test -timeout, building the binaries included: under heavy load here the
# build alone took 10 minutes and the suite 12 (2 when the machine is idle).
FAULT_TIMEOUT ?= 40m
ANALYZER_FLAGS ?=
# Extra flags for `producer load` (e.g. LOAD_FLAGS='--batch 0': each event acknowledged on its own).
LOAD_FLAGS ?=
# A directory (absolute, or relative to the repository) for CPU and heap profiles of the load's
# processes; HEAP_EVERY is how often each writes a heap profile besides the one at its end
# (0: never).
PROFILE ?=
HEAP_EVERY ?= 5m

$(NATS_SERVER):
	@mkdir -p $(TOOLS)
	GOBIN=$(CURDIR)/$(TOOLS) $(GO) install github.com/nats-io/nats-server/v2@$(NATS_SERVER_VERSION)

.PHONY: nats-server
nats-server: $(NATS_SERVER) ## build nats-server from the pinned module into .bin/

.PHONY: producer-bin
producer-bin:
	@mkdir -p $(BIN)
	CGO_ENABLED=0 $(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/producer ./cmd/producer

.PHONY: cluster-up
cluster-up: $(NATS_SERVER) $(NATSCLI) producer-bin ## start a 3-node JetStream cluster on loopback (14221-3) with ditto's streams R3 (SYNC=always|default)
	NATS_SERVER=$(NATS_SERVER) PRODUCER=$(BIN)/producer NATSCLI=$(NATSCLI) CLUSTER_DIR=$(CLUSTER_DIR) SYNC=$(SYNC) \
		deploy/local/cluster.sh up

.PHONY: cluster-down
cluster-down: ## stop the local cluster cleanly (SIGTERM by pid file; stores are kept)
	NATS_SERVER=$(NATS_SERVER) CLUSTER_DIR=$(CLUSTER_DIR) deploy/local/cluster.sh down

.PHONY: cluster-status
cluster-status: ## show which local cluster nodes run
	NATS_SERVER=$(NATS_SERVER) CLUSTER_DIR=$(CLUSTER_DIR) deploy/local/cluster.sh status

.PHONY: cluster-clean
cluster-clean: cluster-down ## stop the local cluster and delete its stores
	rm -rf $(CLUSTER_DIR)

.PHONY: test-deploy
test-deploy: ## parse and check every file in deploy/ (YAML, NATS configs)
	$(GO) test -count=1 ./deploy/...

.PHONY: test-faults
test-faults: $(NATS_SERVER) ## crash tests with real processes (SIGKILL a NATS node, a worker, the analyzer, the embedded host)
	DITTO_FAULT_TESTS=1 DITTO_NATS_SERVER=$(CURDIR)/$(NATS_SERVER) DITTO_GOTAGS='$(GOTAGS)' \
		$(GO) test -tags '$(GOTAGS)' -count=1 -v -timeout $(FAULT_TIMEOUT) -run 'Test' ./internal/faultsuite/

.PHONY: load
load: $(NATS_SERVER) $(NATSCLI) ## sustained load, published -> committed in DuckDB (RATE=r1,r2 DURATION=30s LOAD_MODE=embedded|cluster|both SYNC=always|default ANALYZER_FLAGS=... LOAD_FLAGS=... PROFILE=dir HEAP_EVERY=5m)
	DITTO_LOAD=1 DITTO_NATS_SERVER=$(CURDIR)/$(NATS_SERVER) DITTO_NATSCLI=$(CURDIR)/$(NATSCLI) DITTO_GOTAGS='$(GOTAGS)' \
	DITTO_LOAD_RATE=$(RATE) DITTO_LOAD_DURATION=$(DURATION) DITTO_LOAD_MODE=$(LOAD_MODE) DITTO_LOAD_SYNC=$(SYNC) DITTO_LOAD_ANALYZER_FLAGS='$(ANALYZER_FLAGS)' DITTO_LOAD_FLAGS='$(LOAD_FLAGS)' \
	DITTO_LOAD_PROFILE='$(if $(PROFILE),$(abspath $(PROFILE)))' DITTO_LOAD_HEAP_EVERY=$(HEAP_EVERY) \
		$(GO) test -tags '$(GOTAGS)' -count=1 -v -timeout $(LOAD_TIMEOUT) -run 'TestLoad' ./internal/faultsuite/

.PHONY: load-judge
load-judge: ## judge a kept load run's memory again, the analyzer's around its reattaches (KEPT=the run's directory under DITTO_FAULT_KEEP; several, space-separated, runs of the same load at the same code, are also judged together)
	@test -n "$(KEPT)" || { echo "KEPT=<directory of a kept load run, with load.json and analyzer.log> [more of the same load]"; exit 2; }
	DITTO_LOAD_JUDGE='$(abspath $(KEPT))' $(GO) test -count=1 -v -run 'TestJudgeLoadAgain' ./internal/faultsuite/
