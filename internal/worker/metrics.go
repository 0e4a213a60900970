package worker

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Error kinds counted by ditto_worker_errors_total.
const (
	errInfra     = "infrastructure" // job Nak'ed for redelivery
	errPoison    = "malformed_job"  // job terminated
	errExhausted = "exhausted"      // job delivered more than MaxAttempts times
	errPublish   = "publish"        // events not acknowledged
	errAck       = "ack"            // the job's ack/nak/term not confirmed
	errFetch     = "fetch"
	errIllFormed = "ill_formed_history"
	errPanic     = "panic"
)

// metrics are the worker's Prometheus metrics.
type metrics struct {
	runs         *prometheus.CounterVec // by status
	inFlight     prometheus.Gauge
	steps        prometheus.Counter
	events       *prometheus.CounterVec // by type
	modelLatency prometheus.Histogram
	emitLatency  prometheus.Histogram
	ackWait      prometheus.Histogram
	runDuration  prometheus.Histogram
	errors       *prometheus.CounterVec // by kind
}

func newMetrics(reg prometheus.Registerer, workerID string) (*metrics, error) {
	labels := prometheus.Labels{"worker": workerID}
	m := &metrics{
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ditto_worker_runs_total",
			Help: "Run attempts finished, by status (succeeded, failed, escalated, aborted).", ConstLabels: labels}, []string{"status"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{Name: "ditto_worker_runs_in_flight",
			Help: "Runs being executed.", ConstLabels: labels}),
		steps: prometheus.NewCounter(prometheus.CounterOpts{Name: "ditto_worker_steps_total",
			Help: "Harness steps (model calls) executed.", ConstLabels: labels}),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ditto_worker_events_published_total",
			Help: "Events handed to JetStream, by type.", ConstLabels: labels}, []string{"type"}),
		modelLatency: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "ditto_worker_model_latency_seconds",
			Help: "Latency of model calls, transport retries included.", ConstLabels: labels,
			Buckets: prometheus.ExponentialBuckets(0.001, 2.5, 14)}),
		emitLatency: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "ditto_worker_event_publish_seconds",
			Help: "Time to fold, encode and hand one event to the publisher.", ConstLabels: labels,
			Buckets: prometheus.ExponentialBuckets(0.000005, 3, 12)}),
		ackWait: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "ditto_worker_publish_ack_wait_seconds",
			Help: "Time from a run's last event to JetStream's acknowledgement of all its events.", ConstLabels: labels,
			Buckets: prometheus.ExponentialBuckets(0.0001, 3, 12)}),
		runDuration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "ditto_worker_run_duration_seconds",
			Help: "Wall time of run attempts.", ConstLabels: labels, Buckets: prometheus.ExponentialBuckets(0.01, 2, 14)}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ditto_worker_errors_total",
			Help:        "Errors by kind (infrastructure, malformed_job, exhausted, publish, ack, fetch, ill_formed_history, panic).",
			ConstLabels: labels}, []string{"kind"}),
	}
	for _, c := range []prometheus.Collector{m.runs, m.inFlight, m.steps, m.events, m.modelLatency, m.emitLatency, m.ackWait, m.runDuration, m.errors} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}
