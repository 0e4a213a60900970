package receiver

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// metrics are the server's Prometheus metrics, on their own registry so that several servers
// (tests) can live in one process.
type metrics struct {
	reg           *prometheus.Registry
	requests      *prometheus.CounterVec   // endpoint, code
	accepted      *prometheus.CounterVec   // endpoint
	rejected      *prometheus.CounterVec   // endpoint, reason
	throttled     *prometheus.CounterVec   // endpoint, code
	spansReceived prometheus.Counter       //
	spansRejected *prometheus.CounterVec   // reason
	spansStored   prometheus.Counter       //
	logsReceived  prometheus.Counter       //
	logsRejected  *prometheus.CounterVec   // reason
	logsStored    prometheus.Counter       //
	duration      *prometheus.HistogramVec // endpoint
	inProgress    *prometheus.GaugeVec     // endpoint
	pending       prometheus.GaugeFunc
}

func newMetrics(pending func() float64) *metrics {
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
	m.spansStored = prometheus.NewCounter(prometheus.CounterOpts{Name: "ditto_ingest_spans_stored_total",
		Help: "OTLP spans stored on DITTO_SPANS (acknowledged by JetStream) before their export was answered."})
	m.logsReceived = prometheus.NewCounter(prometheus.CounterOpts{Name: "ditto_ingest_log_records_received_total",
		Help: "OTLP log records received."})
	m.logsRejected = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ditto_ingest_log_records_rejected_total",
		Help: "OTLP log records refused (reported in partial_success), by reason."}, []string{"reason"})
	m.logsStored = prometheus.NewCounter(prometheus.CounterOpts{Name: "ditto_ingest_log_records_stored_total",
		Help: "GenAI log records stored on DITTO_SPANS before their export was answered."})
	m.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "ditto_ingest_request_seconds",
		Help: "Request duration, including the wait for JetStream acknowledgements.", Buckets: prometheus.DefBuckets}, []string{"endpoint"})
	m.inProgress = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "ditto_ingest_requests_in_progress",
		Help: "Requests admitted (within the per-token and overall limits) and not yet answered, by endpoint."}, []string{"endpoint"})
	m.pending = prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "ditto_ingest_pending_events",
		Help: "Events published and not yet acknowledged by JetStream."}, pending)
	// The standard Go runtime and process collectors, as on every ditto /metrics: memory,
	// goroutines, GC, file descriptors and CPU of the producer are what an operator looks at
	// first when ingestion slows down.
	m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.reg.MustRegister(m.requests, m.accepted, m.rejected, m.throttled, m.spansReceived, m.spansRejected,
		m.spansStored, m.logsReceived, m.logsRejected, m.logsStored, m.duration, m.inProgress, m.pending)
	return m
}
