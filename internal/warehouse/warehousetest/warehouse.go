package warehousetest

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/dittolab/ditto/internal/bus"
	"github.com/dittolab/ditto/internal/warehouse"
)

// Context returns a context that ends after d or when the test ends.
func Context(t testing.TB, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// Ingest opens a new DuckDB file in t.TempDir() and stores everything b's events stream holds,
// with cfg, through warehouse.CatchUp. The warehouse is closed when the test ends.
func Ingest(t testing.TB, b *bus.Bus, cfg warehouse.IngestConfig) *warehouse.Warehouse {
	t.Helper()
	w, err := warehouse.Open(Context(t, 30*time.Second), warehouse.Config{Path: filepath.Join(t.TempDir(), "ditto.duckdb")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close() })
	if err := w.CatchUp(Context(t, 60*time.Second), b, cfg); err != nil {
		t.Fatalf("CatchUp() = %v", err)
	}
	return w
}
