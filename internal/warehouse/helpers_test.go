package warehouse_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/dittolab/ditto/internal/warehouse"
	"github.com/dittolab/ditto/internal/warehouse/warehousetest"
)

// msg is one message to publish; the short name keeps this package's many literals readable.
type msg = warehousetest.Msg

func openWH(t testing.TB, path string) *warehouse.Warehouse {
	t.Helper()
	w, err := warehouse.Open(warehousetest.Context(t, 30*time.Second), warehouse.Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close() })
	return w
}

// openCheckpointingEveryCommit opens a warehouse in a new file whose every commit checkpoints
// (CheckpointThreshold 1KB), so that with IngestConfig.ReattachEvents 1 a reattach is due
// before each transaction after the first. It is closed when the test ends.
func openCheckpointingEveryCommit(t testing.TB, ctx context.Context) *warehouse.Warehouse {
	t.Helper()
	w, err := warehouse.Open(ctx, warehouse.Config{Path: tempDB(t), CheckpointThreshold: "1KB"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close() })
	return w
}

func tempDB(t testing.TB) string { return filepath.Join(t.TempDir(), "ditto.duckdb") }
