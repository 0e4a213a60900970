package warehouse

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Stats is a snapshot of this process's ingestion.
type Stats struct {
	Running     bool      // an Ingest or CatchUp is running
	Watermark   uint64    // committed stream sequence
	Lag         uint64    // messages beyond the watermark: max(stream last seq - watermark, consumer pending)
	Events      uint64    // events stored by this process
	Rejected    uint64    // messages stored in rejected_events by this process
	Duplicates  uint64    // events skipped because their id was already stored
	IDLookups   uint64    // batches whose ids were looked up among the stored ones (not all newer than the largest stored id or in the window of recent ids)
	Redelivered uint64    // redeliveries at or below the watermark, acknowledged without storing
	Batches     uint64    // transactions committed (each of one or more fetched batches)
	Restarts    uint64    // consumer restarts (gaps, errors, stalls)
	Resets      uint64    // consumer recreated by the stall watchdog (also counted in Restarts)
	Rate        float64   // events stored per second, averaged over the last ~10 seconds
	LastCommit  time.Time // when the last batch committed (zero before the first)
	LastBatch   time.Duration
	FoldErrors  uint64 // run attempts folded with an error by this process
	RunsFolded  uint64 // run_folds rows written by this process
	OpenRuns    int    // run attempts held open in memory for the fold
	OpenEvents  int    // their events

	// ShortTransactions counts the committed transactions that stored fewer events than the
	// DuckDB row group their batches are held open for (RowGroupRows): DuckDB writes their
	// events through its WAL, to compress and write them again at the next checkpoint, where a
	// transaction of a whole row group writes its events into the database file once. Under a
	// steady load only a real pause of about BatchWait and the end of the load should make one.
	ShortTransactions uint64
	// Reattaches counts the times ingestion detached the database and attached it again, to
	// return the memory DuckDB keeps for the row groups appended (IngestConfig.ReattachEvents).
	Reattaches uint64
	// ReattachesPutOff counts the reattaches put off to the next transaction because the
	// database's other users (the query API, the console, reports) held connections.
	ReattachesPutOff uint64
}

type statsRecorder struct {
	mu sync.Mutex
	s  Stats
	// rate: events over a sliding window of recent commits
	window []rateSample

	lag              prometheus.Gauge
	watermark        prometheus.Gauge
	ingested         prometheus.Counter
	rejected         prometheus.Counter
	duplicates       prometheus.Counter
	idLookups        prometheus.Counter
	redeliv          prometheus.Counter
	batchDur         prometheus.Histogram
	batchSize        prometheus.Histogram
	foldErrors       prometheus.Counter
	rate             prometheus.GaugeFunc
	resets           prometheus.Counter
	short            prometheus.Counter
	reattaches       prometheus.Counter
	reattachesPutOff prometheus.Counter

	streamLast uint64 // the stream's last sequence when last asked (0: not known)
}

type rateSample struct {
	at time.Time
	n  uint64
}

func newStatsRecorder() *statsRecorder {
	r := &statsRecorder{
		lag: prometheus.NewGauge(prometheus.GaugeOpts{Name: "ditto_analyzer_consumer_lag",
			Help: "Messages in DITTO_EVENTS beyond the analyzer's watermark (stream last sequence - watermark, or the consumer's pending count if larger)."}),
		watermark: prometheus.NewGauge(prometheus.GaugeOpts{Name: "ditto_analyzer_watermark",
			Help: "Stream sequence at and below which every message is stored."}),
		ingested: prometheus.NewCounter(prometheus.CounterOpts{Name: "ditto_analyzer_events_ingested_total",
			Help: "Events stored in DuckDB."}),
		rejected: prometheus.NewCounter(prometheus.CounterOpts{Name: "ditto_analyzer_rejected_events_total",
			Help: "Messages stored in rejected_events and terminated."}),
		duplicates: prometheus.NewCounter(prometheus.CounterOpts{Name: "ditto_analyzer_duplicate_events_total",
			Help: "Events skipped because their id was already stored (re-sent after the duplicate window)."}),
		idLookups: prometheus.NewCounter(prometheus.CounterOpts{Name: "ditto_analyzer_id_lookups_total",
			Help: "Batches whose event ids were looked up among the stored ones in DuckDB (not all newer than the largest stored id or in the window of recent ids)."}),
		redeliv: prometheus.NewCounter(prometheus.CounterOpts{Name: "ditto_analyzer_redelivered_total",
			Help: "Redelivered messages at or below the watermark, acknowledged without storing."}),
		batchDur: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "ditto_analyzer_batch_seconds",
			Help:    "Time to store and commit one batch in DuckDB.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 15)}),
		batchSize: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "ditto_analyzer_batch_events",
			Help:    "Messages per committed batch.",
			Buckets: prometheus.ExponentialBuckets(1, 4, 9)}),
		foldErrors: prometheus.NewCounter(prometheus.CounterOpts{Name: "ditto_analyzer_fold_errors_total",
			Help: "Finished run attempts whose events the fold refused."}),
		short: prometheus.NewCounter(prometheus.CounterOpts{Name: "ditto_analyzer_short_transactions_total",
			Help: "Transactions that stored fewer events than a DuckDB row group, whose events DuckDB writes through its WAL and again at the next checkpoint."}),
		reattaches: prometheus.NewCounter(prometheus.CounterOpts{Name: "ditto_analyzer_reattaches_total",
			Help: "Times ingestion detached the database and attached it again, returning the memory DuckDB keeps for the row groups it appended."}),
		reattachesPutOff: prometheus.NewCounter(prometheus.CounterOpts{Name: "ditto_analyzer_reattaches_put_off_total",
			Help: "Reattaches put off to the next transaction because the database's other users held connections."}),
		resets: prometheus.NewCounter(prometheus.CounterOpts{Name: "ditto_analyzer_consumer_resets_total",
			Help: "Times the analyzer recreated its consumer from the watermark because nothing was delivered while the stream held more."}),
	}
	r.rate = prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "ditto_analyzer_ingest_rate",
		Help: "Events stored per second over the last ~10 seconds."}, func() float64 { return r.snapshot().Rate })
	return r
}

func (r *statsRecorder) collectors() []prometheus.Collector {
	return []prometheus.Collector{r.lag, r.watermark, r.ingested, r.rejected, r.duplicates, r.idLookups, r.redeliv,
		r.batchDur, r.batchSize, r.foldErrors, r.rate, r.resets, r.short, r.reattaches, r.reattachesPutOff}
}

// batchDone records one committed batch.
func (r *statsRecorder) batchDone(b batchStats) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := &r.s
	s.Watermark = b.watermark
	s.Lag = max(b.lag, r.streamLag(b.watermark))
	s.Events += b.events
	s.Rejected += b.rejected
	s.Duplicates += b.duplicates
	s.IDLookups += b.idLookups
	s.Redelivered += b.redelivered
	s.Batches++
	if b.events < uint64(rowGroupRows) {
		s.ShortTransactions++
		r.short.Inc()
	}
	s.LastCommit = b.at
	s.LastBatch = b.took
	s.FoldErrors += b.foldErrors
	s.RunsFolded += b.folded
	s.OpenRuns, s.OpenEvents = b.openRuns, b.openEvents
	r.window = append(r.window, rateSample{b.at, b.events})
	cut := 0
	for cut < len(r.window)-1 && b.at.Sub(r.window[cut].at) > 10*time.Second {
		cut++
	}
	r.window = r.window[cut:]
	r.lag.Set(float64(s.Lag))
	r.watermark.Set(float64(b.watermark))
	r.ingested.Add(float64(b.events))
	r.rejected.Add(float64(b.rejected))
	r.duplicates.Add(float64(b.duplicates))
	r.idLookups.Add(float64(b.idLookups))
	r.redeliv.Add(float64(b.redelivered))
	r.batchDur.Observe(b.took.Seconds())
	r.batchSize.Observe(float64(b.messages))
	r.foldErrors.Add(float64(b.foldErrors))
}

func (r *statsRecorder) setRunning(on bool) {
	r.mu.Lock()
	r.s.Running = on
	r.mu.Unlock()
}

func (r *statsRecorder) setWatermark(wm uint64) {
	r.mu.Lock()
	r.s.Watermark = wm
	r.mu.Unlock()
	r.watermark.Set(float64(wm))
}

// streamLag is the stream's last sequence (as last known) minus wm.
func (r *statsRecorder) streamLag(wm uint64) uint64 {
	if r.streamLast <= wm {
		return 0
	}
	return r.streamLast - wm
}

// streamState records the stream's last sequence (just asked) and the lag it gives with the
// watermark wm, whatever the consumer says it has pending: a stalled consumer says 0.
func (r *statsRecorder) streamState(last, wm uint64) {
	r.mu.Lock()
	r.streamLast = last
	r.s.Lag = r.streamLag(wm)
	lag := r.s.Lag
	r.mu.Unlock()
	r.lag.Set(float64(lag))
}

// consumerReset counts a consumer recreated by the stall watchdog.
func (r *statsRecorder) consumerReset() {
	r.mu.Lock()
	r.s.Resets++
	r.mu.Unlock()
	r.resets.Inc()
}

func (r *statsRecorder) reattached() {
	r.mu.Lock()
	r.s.Reattaches++
	r.mu.Unlock()
	r.reattaches.Inc()
}

func (r *statsRecorder) reattachPutOff() {
	r.mu.Lock()
	r.s.ReattachesPutOff++
	r.mu.Unlock()
	r.reattachesPutOff.Inc()
}

func (r *statsRecorder) restarted() {
	r.mu.Lock()
	r.s.Restarts++
	r.mu.Unlock()
}

func (r *statsRecorder) snapshot() Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.s
	if n := len(r.window); n > 0 {
		span := time.Since(r.window[0].at)
		if span < time.Second {
			span = time.Second
		}
		var total uint64
		for _, w := range r.window {
			total += w.n
		}
		if time.Since(r.window[n-1].at) < 10*time.Second {
			s.Rate = float64(total) / span.Seconds()
		}
	}
	return s
}

type batchStats struct {
	at                              time.Time
	took                            time.Duration
	watermark, lag                  uint64
	messages                        int
	events, rejected, duplicates    uint64
	idLookups                       uint64
	redelivered, foldErrors, folded uint64
	openRuns, openEvents            int
}

// Stats returns a snapshot of this process's ingestion.
func (w *Warehouse) Stats() Stats { return w.stats.snapshot() }

// Collectors returns the Prometheus collectors of ingestion (consumer lag, ingest rate, batch
// latency, rejected events, …) and of the process's memory by part (Memory: all but DuckDB's
// buffer manager are the whole process's figures) for the caller to register once.
func (w *Warehouse) Collectors() []prometheus.Collector {
	return append(w.stats.collectors(), newMemoryCollector(w))
}
