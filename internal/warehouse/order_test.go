package warehouse_test

import (
	"slices"
	"testing"
	"time"

	"github.com/dittolab/ditto/internal/bus"
	"github.com/dittolab/ditto/internal/bus/bustest"
	"github.com/dittolab/ditto/internal/warehouse"
	"github.com/dittolab/ditto/internal/warehouse/warehousetest"
)

// A run whose events arrive in reverse order, one batch each: its run.finished comes first
// (folded with an error), and every late event refolds it until the row is the fold of the
// whole history.
func TestLateEventsRefold(t *testing.T) {
	b := bustest.NewServer(t).Connect(t)
	s := newSynth(t, "late")
	s.run("r-0", 1, runOpts{condition: "harness"})
	reversed := slices.Clone(s.out)
	slices.Reverse(reversed)
	warehousetest.Publish(t, b, reversed)
	w := openWH(t, tempDB(t))
	catchUp(t, w, b, warehouse.IngestConfig{BatchSize: 1, BatchWait: 10 * time.Millisecond})
	checkExact(t, w, s.out)
	var status string
	var foldErr, sigTrace any
	if err := w.DB().QueryRow("SELECT status, fold_error, sig_trace FROM runs WHERE run = 'r-0'").Scan(&status, &foldErr, &sigTrace); err != nil {
		t.Fatal(err)
	}
	if status != "succeeded" || foldErr != nil || sigTrace == nil {
		t.Errorf("runs row = (%s, %v, %v), want succeeded without a fold error", status, foldErr, sigTrace)
	}
	if got := w.Stats().FoldErrors; got == 0 {
		t.Errorf("Stats().FoldErrors = 0, want the early folds counted")
	}
}

// A message removed from the stream leaves a hole the consumer can never fill: after a few
// consumer restarts the ingester steps over it.
func TestHoleInStream(t *testing.T) {
	srv := bustest.NewServer(t)
	ctx := warehousetest.Context(t, 30*time.Second)
	b, err := bus.Open(ctx, bus.Config{URL: srv.ClientURL()})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	// DITTO_EVENTS as an operator might have made it, allowing deletes (ditto's denies them).
	cfg := bus.EventsStreamConfig(1, time.Minute)
	cfg.DenyDelete = false
	s, err := bustest.JetStream(t, b).CreateStream(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	msgs := warehousetest.SampleMsgs(t)[:40]
	warehousetest.Publish(t, b, msgs)
	if err := s.DeleteMsg(ctx, 10); err != nil {
		t.Fatal(err)
	}
	w := openWH(t, tempDB(t))
	catchUp(t, w, b, warehouse.IngestConfig{BatchSize: 7, BatchWait: 10 * time.Millisecond})
	checkExact(t, w, append(slices.Clone(msgs[:9]), msgs[10:]...))
	if st := w.Stats(); st.Restarts < 3 {
		t.Errorf("Stats().Restarts = %d, want the consumer restarted before stepping over the hole", st.Restarts)
	}
}

// A run folded in one ingestion (one of its events missing: folded with an error) whose missing
// event arrives in a later one, from a new ingester and a reopened database: the ingester's
// filter of folded attempts starts from run_folds, so the late event still refolds the run.
// Two more runs fold between, so that the filter also holds attempts added while ingesting.
func TestLateEventRefoldsAfterRestart(t *testing.T) {
	b := bustest.NewServer(t).Connect(t)
	s := newSynth(t, "restart")
	s.run("r-0", 1, runOpts{condition: "harness"})
	first := slices.Clone(s.out)
	missing := first[2]
	first = slices.Delete(first, 2, 3)
	s.out = nil
	s.run("r-1", 1, runOpts{condition: "harness"})
	s.run("r-2", 1, runOpts{condition: "baseline"})
	path := tempDB(t)
	warehousetest.Publish(t, b, append(first, s.out...))
	cfg := warehouse.IngestConfig{BatchSize: 5, BatchWait: 10 * time.Millisecond}
	w := openWH(t, path)
	catchUp(t, w, b, cfg)
	foldError := func(w *warehouse.Warehouse, run string) any {
		var fe any
		if err := w.DB().QueryRow("SELECT fold_error FROM run_folds WHERE run = ?", run).Scan(&fe); err != nil {
			t.Fatalf("run_folds row of %s: %v", run, err)
		}
		return fe
	}
	if fe := foldError(w, "r-0"); fe == nil {
		t.Fatal("r-0 without its third event folded without an error; the test needs a fold the late event changes")
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	warehousetest.Publish(t, b, []msg{missing})
	w = openWH(t, path)
	catchUp(t, w, b, cfg)
	if fe := foldError(w, "r-0"); fe != nil {
		t.Errorf("after its late event, r-0's fold_error = %v, want none (refolded from its whole history)", fe)
	}
	checkExact(t, w, append(append(first, s.out...), missing))
}
