package assembler

import "github.com/prometheus/client_golang/prometheus"

// metrics are the Assembler's Prometheus metrics.
type metrics struct {
	runs       *prometheus.CounterVec // complete
	events     prometheus.Counter
	dropped    *prometheus.CounterVec // reason
	late       prometheus.Counter
	retries    prometheus.Counter
	notes      prometheus.Counter
	unreadable prometheus.Counter
}

func newMetrics() *metrics {
	return &metrics{
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ditto_assembly_runs_total",
			Help: "Traces assembled into runs and stored on DITTO_EVENTS; complete=false: the root span never came (aborted run)."}, []string{"complete"}),
		events: prometheus.NewCounter(prometheus.CounterOpts{Name: "ditto_assembly_events_total",
			Help: "Events published for assembled runs (acknowledged by JetStream)."}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ditto_assembly_traces_dropped_total",
			Help: "Traces that produced no run, by reason (no_genai, no_spans, unsafe_study, map_error)."}, []string{"reason"}),
		late: prometheus.NewCounter(prometheus.CounterOpts{Name: "ditto_assembly_late_traces_total",
			Help: "Traces that received spans after they were assembled (the late spans are not in the run)."}),
		retries: prometheus.NewCounter(prometheus.CounterOpts{Name: "ditto_assembly_retries_total",
			Help: "Assemblies or idle checks that failed (JetStream unavailable) and will be made again."}),
		notes: prometheus.NewCounter(prometheus.CounterOpts{Name: "ditto_assembly_mapping_notes_total",
			Help: "Mapping notes: spans not mapped, attributes missing, values digested (logged at debug level)."}),
		unreadable: prometheus.NewCounter(prometheus.CounterOpts{Name: "ditto_assembly_unreadable_records_total",
			Help: "Records on DITTO_SPANS that could not be read (not written by producer serve) and were skipped."}),
	}
}

func (m *metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.runs, m.events, m.dropped, m.late, m.retries, m.notes, m.unreadable}
}
