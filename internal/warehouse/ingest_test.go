package warehouse_test

import (
	"testing"
	"time"

	"github.com/dittolab/ditto/internal/bus/bustest"
	"github.com/dittolab/ditto/internal/warehouse"
)

func TestIngestSamples(t *testing.T) {
	srv := bustest.NewServer(t)
	b := srv.Connect(t)
	msgs := sampleMsgs(t)
	publish(t, b, msgs)
	w := openWH(t, tempDB(t))
	if err := w.CatchUp(ctxT(t, 30*time.Second), b, warehouse.IngestConfig{BatchSize: 100, BatchWait: 50 * time.Millisecond}); err != nil {
		t.Fatalf("CatchUp() = %v", err)
	}
	db := w.DB()
	if n := count(t, db, "SELECT count(*) FROM events"); n != int64(len(msgs)) {
		t.Errorf("events = %d, want %d", n, len(msgs))
	}
	if n := count(t, db, "SELECT count(*) FROM runs"); n != 24 {
		t.Errorf("runs = %d, want 24", n)
	}
	if n := count(t, db, "SELECT count(*) FROM anomalies"); n != 0 {
		t.Errorf("anomalies = %d, want 0: %v", n, dump(t, db, "anomalies"))
	}
	t.Log(w.Stats())
}
