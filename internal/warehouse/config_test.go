package warehouse_test

import (
	"errors"
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/dittolab/ditto/internal/bus/bustest"
	"github.com/dittolab/ditto/internal/leaktest"
	"github.com/dittolab/ditto/internal/warehouse"
	"github.com/dittolab/ditto/internal/warehouse/warehousetest"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"
)

func TestIngestConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		give    warehouse.IngestConfig
		wantErr error
	}{
		{"zero value", warehouse.IngestConfig{}, nil},
		{"negative batch", warehouse.IngestConfig{BatchSize: -1}, warehouse.ErrConfig},
		{"batch bytes below one event", warehouse.IngestConfig{MaxBatchBytes: 1000}, warehouse.ErrConfig},
		{"ack pending below batch", warehouse.IngestConfig{BatchSize: 100, MaxAckPending: 10}, warehouse.ErrConfig},
		{"tiny ack wait", warehouse.IngestConfig{AckWait: time.Millisecond}, warehouse.ErrConfig},
		{"unsafe durable", warehouse.IngestConfig{Durable: "a.b"}, warehouse.ErrConfig},
		{"negative stall timeout", warehouse.IngestConfig{StallTimeout: -time.Second}, warehouse.ErrConfig},
		{"fine", warehouse.IngestConfig{BatchSize: 100, MaxAckPending: 500, AckWait: time.Second, Durable: "x-1"}, nil},
	}
	for _, tt := range tests {
		if err := tt.give.Validate(); !errors.Is(err, tt.wantErr) {
			t.Errorf("%s: Validate() = %v, want %v", tt.name, err, tt.wantErr)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		give    warehouse.Config
		wantErr error
	}{
		{"memory", warehouse.Config{}, nil},
		{"read-only memory", warehouse.Config{ReadOnly: true}, warehouse.ErrConfig},
		{"negative threads", warehouse.Config{Path: "x", Threads: -1}, warehouse.ErrConfig},
	}
	for _, tt := range tests {
		if err := tt.give.Validate(); !errors.Is(err, tt.wantErr) {
			t.Errorf("%s: Validate() = %v, want %v", tt.name, err, tt.wantErr)
		}
	}
}

func TestReadOnlyRefusesIngest(t *testing.T) {
	b := bustest.NewServer(t).Connect(t)
	path := tempDB(t)
	w := openWH(t, path)
	w.Close()
	ro, err := warehouse.Open(warehousetest.Context(t, 2*time.Minute), warehouse.Config{Path: path, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if err := ro.CatchUp(warehousetest.Context(t, 2*time.Minute), b, warehouse.IngestConfig{}); !errors.Is(err, warehouse.ErrReadOnly) {
		t.Errorf("CatchUp(read-only) = %v, want ErrReadOnly", err)
	}
}

// Ingestion's collectors register and count; Ingest leaves no goroutine behind.
func TestCollectorsAndNoLeak(t *testing.T) {
	b := externalServer(t) // the broker's own goroutines (a durable consumer lives on) stay out
	msgs := warehousetest.SampleMsgs(t)
	warehousetest.Publish(t, b, append(msgs, msg{Subject: "ditto.events.a.b.c", ID: "poison", Data: []byte("nope")}))
	w := openWH(t, tempDB(t))
	reg := prometheus.NewRegistry()
	for _, c := range w.Collectors() {
		if err := reg.Register(c); err != nil {
			t.Fatal(err)
		}
	}
	ignore := goleak.IgnoreCurrent()
	catchUp(t, w, b, small())
	leaktest.VerifyNone(t, ignore)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	values := map[string]float64{}
	for _, f := range families {
		m := f.GetMetric()[0]
		switch {
		case m.GetCounter() != nil:
			values[f.GetName()] = m.GetCounter().GetValue()
		case m.GetGauge() != nil:
			values[f.GetName()] = m.GetGauge().GetValue()
		case m.GetHistogram() != nil:
			values[f.GetName()] = float64(m.GetHistogram().GetSampleCount())
		}
	}
	for name, want := range map[string]float64{
		"ditto_analyzer_events_ingested_total": float64(len(msgs)),
		"ditto_analyzer_rejected_events_total": 1,
		"ditto_analyzer_watermark":             float64(len(msgs) + 1),
		"ditto_analyzer_consumer_lag":          0,
		"ditto_analyzer_consumer_resets_total": 0,
	} {
		if got, ok := values[name]; !ok || got != want {
			t.Errorf("%s = %v (present %v), want %v", name, got, ok, want)
		}
	}
	if values["ditto_analyzer_batch_seconds"] == 0 {
		t.Errorf("ditto_analyzer_batch_seconds observed no batch")
	}
	st := w.Stats()
	if st.Events != uint64(len(msgs)) || st.Rejected != 1 || st.Watermark != uint64(len(msgs)+1) || st.Batches == 0 {
		t.Errorf("Stats() = %+v, want %d events, 1 rejected, watermark %d", st, len(msgs), len(msgs)+1)
	}
	// A few events make no transaction of a row group: each is short.
	if got := values["ditto_analyzer_short_transactions_total"]; st.ShortTransactions != st.Batches || got != float64(st.Batches) {
		t.Errorf("%d transactions of %d events: ShortTransactions %d, ditto_analyzer_short_transactions_total %v; want each short",
			st.Batches, len(msgs), st.ShortTransactions, got)
	}
}

// The DuckDB settings of Config reach the database.
func TestDuckDBSettingsApplied(t *testing.T) {
	ctx := warehousetest.Context(t, 2*time.Minute)
	w, err := warehouse.Open(ctx, warehouse.Config{Path: tempDB(t), Threads: 1, MemoryLimit: "256MB", CheckpointThreshold: "64MB"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for setting, want := range map[string]string{"threads": "1", "memory_limit": "244.1 MiB", "checkpoint_threshold": "61.0 MiB",
		"preserve_insertion_order": "false"} {
		var got string
		if err := w.DB().QueryRowContext(ctx, "SELECT current_setting('"+setting+"')::VARCHAR").Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("%s = %q, want %q", setting, got, want)
		}
	}
}

// A database opened for writing without a checkpoint threshold takes DefaultCheckpointThreshold
// (64MB), not DuckDB's 16MB.
func TestDefaultCheckpointThreshold(t *testing.T) {
	ctx := warehousetest.Context(t, 2*time.Minute)
	w, err := warehouse.Open(ctx, warehouse.Config{Path: tempDB(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var got string
	if err := w.DB().QueryRowContext(ctx, "SELECT current_setting('checkpoint_threshold')::VARCHAR").Scan(&got); err != nil {
		t.Fatal(err)
	}
	if want := "61.0 MiB"; warehouse.DefaultCheckpointThreshold != "64MB" || got != want {
		t.Errorf("checkpoint_threshold = %q with DefaultCheckpointThreshold %q, want %q (64MB)", got, warehouse.DefaultCheckpointThreshold, want)
	}
}

// Memory reports the Go heap, DuckDB's buffer manager and the RSS of a database with data.
func TestMemoryFigures(t *testing.T) {
	ctx := warehousetest.Context(t, 2*time.Minute)
	w := openWH(t, tempDB(t))
	defer w.Close()
	if _, err := w.DB().ExecContext(ctx, "CREATE TABLE big AS SELECT range AS i, repeat('x', 100) AS s FROM range(200000)"); err != nil {
		t.Fatal(err)
	}
	// 16 MiB held across a collection, then 16 MiB of garbage with the collector off: the live
	// heap counts the first and not the second, the heap's objects both.
	held := make([]byte, 16<<20)
	for i := range held {
		held[i] = byte(i)
	}
	runtime.GC()
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	garbageForMemory = make([]byte, 16<<20)
	garbageForMemory = nil
	m := w.Memory(ctx)
	runtime.KeepAlive(held)
	if m.GoHeap == 0 || m.GoMapped < m.GoHeap || m.DuckDB == 0 || m.RSS < m.DuckDB {
		t.Errorf("Memory() = %+v, want a Go heap, DuckDB memory and an RSS above DuckDB's", m)
	}
	// Within 1 MiB: one run found the difference 288 bytes short of 16 MiB.
	if m.GoLive < 16<<20 || m.GoHeap < m.GoLive+15<<20 {
		t.Errorf("Memory() GoLive %d, GoHeap %d after a collection with 16 MiB held and 16 MiB of garbage since; "+
			"want GoLive at least 16 MiB and GoHeap at least 15 MiB above it", m.GoLive, m.GoHeap)
	}
}

// garbageForMemory is TestMemoryFigures' garbage (a package variable, so that it is allocated).
var garbageForMemory []byte
