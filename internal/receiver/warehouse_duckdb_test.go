//go:build cgo

package receiver_test

import (
	"context"
	"testing"

	"github.com/dittolab/ditto/internal/bus"
	"github.com/dittolab/ditto/internal/warehouse"
)

// caughtUp is an in-memory warehouse caught up with everything on b's events stream (as the
// analyzer's would be), closed when t ends.
func caughtUp(ctx context.Context, t *testing.T, b *bus.Bus) *warehouse.Warehouse {
	t.Helper()
	w, err := warehouse.Open(ctx, warehouse.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close() })
	if err := w.CatchUp(ctx, b, warehouse.IngestConfig{}); err != nil {
		t.Fatalf("CatchUp() = %v", err)
	}
	return w
}
