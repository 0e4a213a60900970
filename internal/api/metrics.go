package api

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// IngestStats is a snapshot of ingestion, as /metrics reports it. The analyzer's serve
// command fills it from the warehouse's own statistics.
type IngestStats struct {
	Lag              uint64        // messages of DITTO_EVENTS not yet processed by the analyzer's consumer
	Events           uint64        // events committed to DuckDB, total
	Rejected         uint64        // messages kept in rejected_events, total
	Duplicates       uint64        // messages skipped as already stored, total
	Batches          uint64        // batches committed, total
	BatchLatencySum  time.Duration // sum of the fetch-to-commit latency of those batches
	LastBatchLatency time.Duration
}

// StatsFunc returns the current ingestion statistics. It is called on every scrape of
// /metrics and must be safe for concurrent use.
type StatsFunc func(ctx context.Context) (IngestStats, error)

// ingestCollector turns a StatsFunc into Prometheus metrics at scrape time, so the values are
// the warehouse's, never a second copy kept in step.
type ingestCollector struct {
	stats StatsFunc

	lag, events, rejected, duplicates, batches, rate, last, latency, up *prometheus.Desc

	mu       sync.Mutex
	prevAt   time.Time
	prevN    uint64
	lastRate float64
}

func newIngestCollector(stats StatsFunc) *ingestCollector {
	d := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc("ditto_analyzer_"+name, help, nil, nil)
	}
	return &ingestCollector{
		stats:      stats,
		lag:        d("consumer_lag_messages", "Messages of DITTO_EVENTS not yet processed by the analyzer's durable consumer."),
		events:     d("events_ingested_total", "Events committed to DuckDB."),
		rejected:   d("rejected_events_total", "Messages kept in rejected_events (undecodable or invalid)."),
		duplicates: d("duplicate_events_total", "Messages skipped because their event was already stored."),
		batches:    d("batches_committed_total", "Ingestion batches committed to DuckDB."),
		rate:       d("ingest_rate_events_per_second", "Events committed per second between the last two scrapes (use rate(ditto_analyzer_events_ingested_total) in queries)."),
		last:       d("last_batch_latency_seconds", "Fetch-to-commit latency of the last batch."),
		latency:    d("batch_latency_seconds", "Fetch-to-commit latency of ingestion batches."),
		up:         d("ingest_stats_up", "1 if the ingestion statistics could be read at this scrape."),
	}
}

func (c *ingestCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.lag, c.events, c.rejected, c.duplicates, c.batches, c.rate, c.last, c.latency, c.up} {
		ch <- d
	}
}

func (c *ingestCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := c.stats(ctx)
	if err != nil {
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 1)
	ch <- prometheus.MustNewConstMetric(c.lag, prometheus.GaugeValue, float64(s.Lag))
	ch <- prometheus.MustNewConstMetric(c.events, prometheus.CounterValue, float64(s.Events))
	ch <- prometheus.MustNewConstMetric(c.rejected, prometheus.CounterValue, float64(s.Rejected))
	ch <- prometheus.MustNewConstMetric(c.duplicates, prometheus.CounterValue, float64(s.Duplicates))
	ch <- prometheus.MustNewConstMetric(c.batches, prometheus.CounterValue, float64(s.Batches))
	ch <- prometheus.MustNewConstMetric(c.rate, prometheus.GaugeValue, c.rateOf(s.Events))
	ch <- prometheus.MustNewConstMetric(c.last, prometheus.GaugeValue, s.LastBatchLatency.Seconds())
	ch <- prometheus.MustNewConstSummary(c.latency, s.Batches, s.BatchLatencySum.Seconds(), nil)
}

// rateOf is the events-per-second between this scrape and the previous one at least a second
// earlier (closer scrapes keep the last value).
func (c *ingestCollector) rateOf(n uint64) float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	switch {
	case c.prevAt.IsZero():
		c.prevAt, c.prevN = now, n
	case now.Sub(c.prevAt) >= time.Second:
		if n >= c.prevN {
			c.lastRate = float64(n-c.prevN) / now.Sub(c.prevAt).Seconds()
		}
		c.prevAt, c.prevN = now, n
	}
	return c.lastRate
}

// queryMetrics are the API's own metrics.
type queryMetrics struct {
	queries  *prometheus.CounterVec
	duration *prometheus.HistogramVec
	rows     prometheus.Histogram
	exports  *prometheus.CounterVec
}

func newRegistry(stats StatsFunc) (*prometheus.Registry, *queryMetrics) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if stats != nil {
		reg.MustRegister(newIngestCollector(stats))
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
	reg.MustRegister(m.queries, m.duration, m.rows, m.exports)
	return reg, m
}
