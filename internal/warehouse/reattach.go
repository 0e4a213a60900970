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
// group of events. Under the 20,000 events/s load, with the run_folds rows, glibc's heap grew
// about 1.2 MiB per million events, 1.4 MiB a minute. It stays for as long as the database
// stays attached: CHECKPOINT and FORCE CHECKPOINT return none of it, and DuckDB's memory limit
// does not count it. Detaching the database frees it; attached again, DuckDB reads back at
// once only what says where each row group is stored (a fifth of it or less), and the rest
// when a query scans the row group (docs/benchmarks.md, "2026-12-05, twenty-fourth session").
// With IngestConfig.ReattachEvents, ingestion does that between two transactions
// (ingester.reattach).

// standInDatabase is the in-memory database a connection uses while the warehouse's own is
// detached: DuckDB refuses to detach a connection's default database.
const standInDatabase = "ditto_standin"

// attachWait bounds how long reattach tries to attach the database again while another
// connection's transaction, begun before the detach, still holds the old one open (DuckDB then
// refuses a second attach of the file).
var attachWait = 30 * time.Second

// gateWait bounds how long a reattach waits for the database's other users (the query API,
// the console, reports) to give back their connections before it is put off.
var gateWait = 100 * time.Millisecond

// gateFirmAfter is how many reattaches put off in a row make the next one close the gate to
// new connections while it waits, for at most gateFirmWait, for those in use. After such a
// wait in vain (a connection held for long: an export, a slow query), the next is tried no
// sooner than gateFirmEvery later, and meanwhile a reattach looks whether the database is idle
// without waiting, so that neither ingestion nor the queries are held up again and again.
var (
	gateFirmAfter = 3
	gateFirmWait  = 2 * time.Second
	gateFirmEvery = time.Minute
)

// reattach detaches the warehouse's database and attaches it again, on the ingester's
// connection and between two transactions (the one that made it due committed and acknowledged,
// the next not begun). The event loader is made again by the next transaction: its prepared
// statements name the tables of the database detached.
//
// It begins only when the gate (gate.go) finds no other user of the database holding a
// connection, waiting gateWait for that; otherwise the reattach is put off to the next
// transaction's start (Stats.ReattachesPutOff), and the database's users are not kept waiting.
// After gateFirmAfter put off in a row (the console recomputing the report of a study that
// keeps moving can hold a connection most of the time), the gate is closed to new connections
// while it waits gateFirmWait for those in use: a query then waits that long at most, and
// after a wait in vain, the next such wait comes gateFirmEvery later at the soonest.
func (ing *ingester) reattach(ctx context.Context) error {
	start := time.Now()
	sinceFirm := time.Since(ing.firmFailed)
	firm := ing.putOff >= gateFirmAfter && sinceFirm >= gateFirmEvery
	wait := gateWait
	switch {
	case firm:
		wait = gateFirmWait
	case sinceFirm < gateFirmEvery:
		// A connection held for long: look, but do not hold ingestion up for it.
		wait = 0
	}
	if !ing.w.gate.tryClose(ctx, wait, firm) {
		if firm {
			ing.firmFailed = time.Now()
		}
		ing.putOff++
		ing.w.stats.reattachPutOff()
		if traceOn {
			fmt.Fprintf(os.Stderr, "warehouse: reattach put off (%d in a row): %d of the database's connections were still in use after %v\n",
				ing.putOff, ing.w.gate.outOfPool(), wait)
		}
		return nil
	}
	ing.putOff = 0
	defer ing.w.gate.open()
	ing.closeLoader()
	if err := ing.w.reattach(ctx, ing.conn); err != nil {
		// The connection may be left using the stand-in database: it must not go back to the
		// pool, where another user would find no tables. Ingest gives the next session a new one.
		discard(ing.conn)
		return err
	}
	ing.reattached()
	if traceOn {
		fmt.Fprintf(os.Stderr, "warehouse: reattach %v\n", time.Since(start).Round(time.Millisecond))
	}
	return nil
}

// reattached records a reattach done, by reattach or, after one that failed, by the session's
// ensureAttached.
func (ing *ingester) reattached() {
	ing.reattachDue, ing.sinceAttach = false, 0
	ing.w.stats.reattached()
	releaseFreeMemory()
}

// reattach detaches the database, the one Open opened, and attaches it again under its name, on
// conn, which it leaves using it. Every other connection names the database by that name (its
// default), so that it finds the database attached again, but a query on one of them in the
// moment between the detach and the attach would fail (the catalog does not exist: the
// ingester closes the gate first, gate.go, so that none runs then), and one in a
// transaction begun before the detach keeps the detached database until that transaction ends.
// When the attach fails for longer than attachWait, the error (errDetached) says so and the
// warehouse stays detached until ensureAttached succeeds. The detach also lets go of DuckDB's
// lock of the file: a process that opens the file in that moment (analyzer status, which reads
// the file when no API answers) holds it until it ends.
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

// ensureAttached attaches the database again when a reattach detached it and could not, and
// reports whether it did.
func (w *Warehouse) ensureAttached(ctx context.Context, conn *sql.Conn) (bool, error) {
	w.attachMu.Lock()
	defer w.attachMu.Unlock()
	if !w.detached {
		return false, nil
	}
	return true, w.attach(ctx, conn)
}

// attach attaches the detached database under its name and makes it conn's default, trying
// again while DuckDB refuses because a transaction still holds the old one. w.attachMu is held.
func (w *Warehouse) attach(ctx context.Context, conn *sql.Conn) error {
	q := "ATTACH '" + strings.ReplaceAll(w.cfg.Path, "'", "''") + "' AS " + quoteIdent(w.home)
	deadline := time.Now().Add(attachWait)
	for {
		// Not ctx's cancellation: a warehouse left detached has no tables for DB's users.
		_, err := conn.ExecContext(context.WithoutCancel(ctx), q)
		if err == nil {
			break
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			return fmt.Errorf("%w: attach %s again: another process may hold the file, or a transaction the database detached: %v", errDetached, w.cfg.Path, err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(10 * time.Millisecond):
		}
	}
	w.detached = false
	if _, err := conn.ExecContext(context.WithoutCancel(ctx), "USE "+quoteIdent(w.home)); err != nil {
		return fmt.Errorf("%w: reattach: use %s: %v", ErrCommit, w.home, err)
	}
	return nil
}

// errDetached: a reattach detached the database and could not attach it again. Ingest waits
// and tries again for as long as it takes (it counts no commit failure).
var errDetached = fmt.Errorf("%w: the database is detached", ErrCommit)

// renewConn gives ingestion a new connection in place of its own, which it discards. When none
// can be had (ctx ended, as when serve stops, or the database closed), ing.conn stays the
// discarded one, which Ingest's deferred Close then closes again, harmlessly: a nil one would
// panic there.
func (ing *ingester) renewConn(ctx context.Context) error {
	discard(ing.conn)
	conn, err := ing.w.db.Conn(exemptFromGate(ctx))
	if err != nil {
		return fmt.Errorf("warehouse: connection: %w", err)
	}
	ing.conn = conn
	return nil
}

// discard closes conn for good: its DuckDB connection is closed, not put back in the pool,
// where one left inside a transaction (a failed commit) or using the stand-in database (a
// failed reattach) would hold the database detached or find no tables. A closed conn is left
// as it is.
func discard(conn *sql.Conn) {
	_ = conn.Raw(func(any) error { return driver.ErrBadConn })
}

// quoteIdent quotes s as an SQL identifier.
func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
