// Package demo runs ditto end to end in one process, on nothing but this machine: an embedded
// nats-server (a fresh JetStream store under the data directory, a free port), the simulated
// models on loopback, a harness worker, the analyzer's ingestion into DuckDB, the shipped
// research study (3 conditions × 2 simulated models × 3 tasks, N = 100 per cell), a progress
// bar, and the variance report (Markdown, HTML, JSON) with its table printed. It is what
// `analyzer demo` and `make demo` run.
//
// The simulated models' latency is scaled (Config.LatencyScale, default DefaultLatencyScale)
// so that 1,800 runs fit in well under 3 minutes on 2 cores; the report says so, and its
// latency figures are the modelled latencies times the scale. Tokens, agreement and success do
// not depend on the scale.
package demo
