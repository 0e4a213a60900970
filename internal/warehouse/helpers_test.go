package warehouse_test

import (
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

func tempDB(t testing.TB) string { return filepath.Join(t.TempDir(), "ditto.duckdb") }
