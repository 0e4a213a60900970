package warehouse

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"os"
	"strings"
	"time"
)

// DuckDB keeps in the process's heap, for every row group a process appends to a table, the
// objects that describe it (its columns' segments and their statistics): about 100 KB for a row
// group of events, 1.2 MiB per million events, 1.4 MiB a minute at 20,000 events/s. They stay
// for as long as the database stays attached: CHECKPOINT and FORCE CHECKPOINT return none of
// it, and neither does DuckDB's memory limit, which does not count it. Detaching the database
// frees them; attached again, DuckDB reads a row group's description back only when a query
// scans it (docs/benchmarks.md, "2026-12-05, twenty-fourth session"). With
// IngestConfig.ReattachEvents, ingestion does that between two transactions (ingester.reattach).

// standInDatabase is the in-memory database a connection uses while the warehouse's own is
// detached: DuckDB refuses to detach a connection's default database.
const standInDatabase = "ditto_standin"

// attachWait bounds how long reattach tries to attach the database again while another
// connection's transaction, begun before the detach, still holds the old one open (DuckDB then
// refuses a second attach of the file).
var attachWait = 30 * time.Second

// reattach detaches the warehouse's database and attaches it again, on the ingester's
// connection and between two transactions (the one that made it due committed and acknowledged,
// the next not begun). The event loader is made again by the next transaction: its prepared
// statements name the tables of the database detached.
func (ing *ingester) reattach(ctx context.Context) error {
	start := time.Now()
	ing.closeLoader()
	if err := ing.w.reattach(ctx, ing.conn); err != nil {
		// The connection may be left using the stand-in database: it must not go back to the
		// pool, where another user would find no tables. Ingest gives the next session a new one.
		_ = ing.conn.Raw(func(any) error { return driver.ErrBadConn })
		return err
	}
	ing.reattachDue, ing.sinceAttach = false, 0
	ing.w.stats.reattached()
	releaseFreeMemory()
	if traceOn {
		fmt.Fprintf(os.Stderr, "warehouse: reattach %v\n", time.Since(start).Round(time.Millisecond))
	}
	return nil
}

// reattach detaches the database, the one Open opened, and attaches it again under its name, on
// conn, which it leaves using it. Every other connection names the database by that name (its
// default), so that it finds the database attached again, but a query on one of them in the
// moment between the detach and the attach fails (the catalog does not exist), and one in a
// transaction begun before the detach keeps the detached database until that transaction ends.
// When the attach fails for longer than attachWait, the error says so and the warehouse stays
// detached until ensureAttached succeeds.
func (w *Warehouse) reattach(ctx context.Context, conn *sql.Conn) error {
	w.attachMu.Lock()
	defer w.attachMu.Unlock()
	if w.cfg.Path == "" || w.cfg.ReadOnly {
		return nil // an in-memory database cannot be attached again; a read-only one holds no appends
	}
	if !w.detached {
		for _, q := range []string{
			"ATTACH IF NOT EXISTS ':memory:' AS " + standInDatabase,
			"USE " + standInDatabase,
			"DETACH " + quoteIdent(w.home),
		} {
			if _, err := conn.ExecContext(ctx, q); err != nil {
				_, _ = conn.ExecContext(ctx, "USE "+quoteIdent(w.home))
				return fmt.Errorf("%w: reattach: %s: %v", ErrCommit, q, err)
			}
		}
		w.detached = true
	}
	return w.attach(ctx, conn)
}

// ensureAttached attaches the database again when a reattach detached it and could not.
func (w *Warehouse) ensureAttached(ctx context.Context, conn *sql.Conn) error {
	w.attachMu.Lock()
	defer w.attachMu.Unlock()
	if !w.detached {
		return nil
	}
	return w.attach(ctx, conn)
}

// attach attaches the detached database under its name and makes it conn's default, trying
// again while DuckDB refuses because a transaction still holds the old one. w.attachMu is held.
func (w *Warehouse) attach(ctx context.Context, conn *sql.Conn) error {
	q := "ATTACH '" + strings.ReplaceAll(w.cfg.Path, "'", "''") + "' AS " + quoteIdent(w.home)
	deadline := time.Now().Add(attachWait)
	for {
		_, err := conn.ExecContext(ctx, q)
		if err == nil {
			break
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			return fmt.Errorf("%w: reattach: attach %s again (detached; a transaction begun before may still hold it): %v", ErrCommit, w.cfg.Path, err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(10 * time.Millisecond):
		}
	}
	w.detached = false
	if _, err := conn.ExecContext(ctx, "USE "+quoteIdent(w.home)); err != nil {
		return fmt.Errorf("%w: reattach: use %s: %v", ErrCommit, w.home, err)
	}
	return nil
}

// quoteIdent quotes s as an SQL identifier.
func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
