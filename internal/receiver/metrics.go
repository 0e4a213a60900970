package receiver

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// metrics are the server's Prometheus metrics, on their own registry so that several servers
// (tests) can live in one process.
type metrics struct {
	reg            *prometheus.Registry
	requests       *prometheus.CounterVec   // endpoint, code
	accepted       *prometheus.CounterVec   // endpoint
	rejected       *prometheus.CounterVec   // endpoint, reason
	throttled      *prometheus.CounterVec   // endpoint, code
	spansReceived  prometheus.Counter       //
	spansRejected  *prometheus.CounterVec   // reason
	tracesDropped  *prometheus.CounterVec   // reason
	runs           *prometheus.CounterVec   // complete
	notes          prometheus.Counter       //
	duration       *prometheus.HistogramVec // endpoint
	pending        prometheus.GaugeFunc
	bufferedSpans  prometheus.GaugeFunc
	bufferedTraces prometheus.GaugeFunc
}

func newMetrics(pending, spans, traces func() float64) *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ditto_ingest_requests_total",
		Help: "HTTP requests by endpoint and status code."}, []string{"endpoint", "code"})
	m.accepted = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ditto_ingest_events_accepted_total",
		Help: "Events acknowledged by JetStream, by endpoint (traces: events mapped from spans)."}, []string{"endpoint"})
	m.rejected = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ditto_ingest_events_rejected_total",
		Help: "Events refused, by endpoint and reason."}, []string{"endpoint", "reason"})
	m.throttled = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ditto_ingest_throttled_total",
		Help: "Requests answered 429 or 503 with Retry-After, by endpoint and code."}, []string{"endpoint", "code"})
	m.spansReceived = prometheus.NewCounter(prometheus.CounterOpts{Name: "ditto_ingest_spans_received_total",
		Help: "OTLP spans received."})
	m.spansRejected = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ditto_ingest_spans_rejected_total",
		Help: "OTLP spans refused (reported in partial_success), by reason."}, []string{"reason"})
	m.tracesDropped = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ditto_ingest_traces_dropped_total",
		Help: "Complete traces that produced no run, by reason."}, []string{"reason"})
	m.runs = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ditto_ingest_runs_total",
		Help: "Runs mapped from traces and stored; complete=false: the root span never came (aborted run)."}, []string{"complete"})
	m.notes = prometheus.NewCounter(prometheus.CounterOpts{Name: "ditto_ingest_mapping_notes_total",
		Help: "Mapping notes: spans not mapped, attributes missing, values digested (see the server log at debug level)."})
	m.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "ditto_ingest_request_seconds",
		Help: "Request duration, including the wait for JetStream acknowledgements.", Buckets: prometheus.DefBuckets}, []string{"endpoint"})
	m.pending = prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "ditto_ingest_pending_events",
		Help: "Events published and not yet acknowledged by JetStream."}, pending)
	m.bufferedSpans = prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "ditto_ingest_buffered_spans",
		Help: "Spans of incomplete traces held in memory."}, spans)
	m.bufferedTraces = prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "ditto_ingest_buffered_traces",
		Help: "Incomplete traces held in memory."}, traces)
	// The standard Go runtime and process collectors, as on every ditto /metrics: memory,
	// goroutines, GC, file descriptors and CPU of the producer are what an operator looks at
	// first when ingestion slows down.
	m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.reg.MustRegister(m.requests, m.accepted, m.rejected, m.throttled, m.spansReceived, m.spansRejected,
		m.tracesDropped, m.runs, m.notes, m.duration, m.pending, m.bufferedSpans, m.bufferedTraces)
	return m
}
