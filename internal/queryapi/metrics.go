package queryapi

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// queryMetrics are the API's own metrics.
type queryMetrics struct {
	queries  *prometheus.CounterVec
	duration *prometheus.HistogramVec
	rows     prometheus.Histogram
	exports  *prometheus.CounterVec
}

// newRegistry registers the process's, the caller's (the warehouse's ingestion metrics:
// consumer lag, ingest rate, batch latency, rejected events) and the API's own metrics.
func newRegistry(extra []prometheus.Collector) (*prometheus.Registry, *queryMetrics, error) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for _, c := range extra {
		if err := reg.Register(c); err != nil {
			return nil, nil, fmt.Errorf("%w: metrics: %v", ErrConfig, err)
		}
	}
	m := &queryMetrics{
		queries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ditto_analyzer_sql_queries_total",
			Help: "Queries to POST /v1/sql by outcome (ok, refused, timeout, error, bad_request).",
		}, []string{"outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "ditto_analyzer_sql_query_duration_seconds",
			Help:    "Time to check and run a query of POST /v1/sql.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 10),
		}, []string{"outcome"}),
		rows: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "ditto_analyzer_sql_result_rows",
			Help:    "Rows returned by POST /v1/sql.",
			Buckets: prometheus.ExponentialBuckets(1, 10, 7),
		}),
		exports: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ditto_analyzer_exports_total",
			Help: "Parquet exports through POST /v1/export by outcome.",
		}, []string{"outcome"}),
	}
	for _, c := range []prometheus.Collector{m.queries, m.duration, m.rows, m.exports} {
		if err := reg.Register(c); err != nil {
			return nil, nil, fmt.Errorf("%w: metrics: %v", ErrConfig, err)
		}
	}
	return reg, m, nil
}
