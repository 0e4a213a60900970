package warehouse

import (
	"context"
	"path/filepath"
	"testing"
)

// TestRenewConnWhenNoneCanBeHad: when ingestion cannot have a new connection after a failed
// commit (its context ended: serve is stopping), it keeps the one it discarded, so that
// Ingest's deferred Close closes it again harmlessly instead of panicking on nil; a renewal
// that can have one replaces it.
func TestRenewConnWhenNoneCanBeHad(t *testing.T) {
	w, err := Open(t.Context(), Config{Path: filepath.Join(t.TempDir(), "w.duckdb")})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	conn, err := w.db.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	ing := &ingester{w: w, conn: conn}
	if err := ing.renewConn(t.Context()); err != nil {
		t.Fatal(err)
	}
	if ing.conn == nil || ing.conn == conn {
		t.Fatalf("renewed: conn %p, was %p; want a new one", ing.conn, conn)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	old := ing.conn
	if err := ing.renewConn(ctx); err == nil {
		t.Fatal("renewConn with its context ended succeeded")
	}
	if ing.conn != old {
		t.Fatalf("after a failed renewal, conn %p; want the discarded %p", ing.conn, old)
	}
	_ = ing.conn.Close() // what Ingest's defer does: no panic
}
