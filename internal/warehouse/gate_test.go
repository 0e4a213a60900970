package warehouse_test

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/dittolab/ditto/internal/bus/bustest"
	"github.com/dittolab/ditto/internal/warehouse"
	"github.com/dittolab/ditto/internal/warehouse/warehousetest"
)

// The gate counts the connections of DB taken from the pool until they are put back, however
// they are used, and not the ingester's.
func TestGateCountsConnectionsOutOfThePool(t *testing.T) {
	ctx := warehousetest.Context(t, 30*time.Second)
	w := openWH(t, tempDB(t))
	db := w.DB()
	check := func(want int, what string) {
		t.Helper()
		if got := warehouse.ConnsOut(w); got != want {
			t.Errorf("%s: %d connections counted out of the pool, want %d", what, got, want)
		}
	}
	check(0, "after Open")
	var n int64
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM events").Scan(&n); err != nil {
		t.Fatal(err)
	}
	check(0, "after a QueryRow")
	rows, err := db.QueryContext(ctx, "SELECT 1 UNION ALL SELECT 2")
	if err != nil {
		t.Fatal(err)
	}
	check(1, "while a query's rows are open")
	_ = rows.Close()
	check(0, "after the rows are closed")
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	check(1, "in a transaction")
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	check(0, "after the commit")

	// A connection held, used through its raw driver connection, as the query API's guarded
	// queries and exports are: counted until it is closed.
	c, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ExecContext(ctx, "BEGIN TRANSACTION READ ONLY"); err != nil {
		t.Fatal(err)
	}
	if err := c.Raw(func(any) error { return nil }); err != nil {
		t.Fatal(err)
	}
	other, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	check(2, "two connections held")
	_, _ = c.ExecContext(ctx, "COMMIT")
	_ = c.Close()
	_ = other.Close()
	check(0, "after both are closed")

	// The ingester's: not counted, and a connection it gave back is counted for its next user.
	ex, err := db.Conn(warehouse.ExemptFromGate(ctx))
	if err != nil {
		t.Fatal(err)
	}
	check(0, "an exempt connection held")
	_ = ex.Close()
	for range 3 { // the pool keeps two idle connections: one of these is the exempt one again
		c, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		check(1, "a connection held after the exempt one went back")
		_ = c.Close()
	}

	// A connection discarded (ErrBadConn) is no longer counted.
	bad, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_ = bad.Raw(func(any) error { return driver.ErrBadConn })
	check(0, "after a connection was discarded")

	// A user whose context ends while it waits at the closed gate gets its context's error, and
	// no connection: neither a used one (ResetSession) nor a new one (Connect) is handed out
	// uncounted.
	open, ok := warehouse.CloseGate(w)
	if !ok {
		t.Fatal("the gate did not close with no connection out")
	}
	for range 3 {
		short, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
		_, err := db.Conn(short)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("a connection asked for at the closed gate: %v, want DeadlineExceeded", err)
		}
	}
	check(0, "after users gave up at the closed gate")
	open()
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM events").Scan(&n); err != nil {
		t.Fatal(err)
	}
	check(0, "after a query once the gate opened")

	// Many at once.
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 20 {
				var n int64
				if err := db.QueryRowContext(ctx, "SELECT count(*) FROM events").Scan(&n); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	check(0, "after 160 queries on 8 goroutines")
}

// A reattach waits for no user of the database for long: while one holds a connection, each is
// put off to the next transaction (one of them after closing the gate to new connections for
// gateFirmWait, in vain), and it comes once the connection is given back.
func TestReattachWaitsForTheDatabasesUsers(t *testing.T) {
	b := bustest.NewServer(t).Connect(t)
	defer warehouse.SetRowGroupRows(500)() // each full batch its own transaction
	first, second := chunkMsgs(t, 0, 3000), chunkMsgs(t, 1, 2000)
	warehousetest.PublishFast(t, b, first)
	ctx := warehousetest.Context(t, 2*time.Minute)
	w := openCheckpointingEveryCommit(t, ctx)
	cfg := warehouse.IngestConfig{BatchSize: 500, TxnBatches: 1, BatchWait: 50 * time.Millisecond, ReattachEvents: 1}

	user, err := w.DB().Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	catchUp(t, w, b, cfg)
	s := w.Stats()
	// Six transactions: a reattach due before each after the first, the fourth of them the
	// one that closes the gate and waits in vain.
	if s.Reattaches != 0 || s.ReattachesPutOff < 4 {
		t.Errorf("while a user held a connection: %d reattaches, %d put off; want none, and one put off before each transaction after the first",
			s.Reattaches, s.ReattachesPutOff)
	}
	countOn(t, ctx, user)
	_ = user.Close()

	warehousetest.PublishFast(t, b, second)
	catchUp(t, w, b, cfg)
	if s := w.Stats(); s.Reattaches == 0 {
		t.Errorf("no reattach once the user gave its connection back (%d put off)", s.ReattachesPutOff)
	}
	checkExact(t, w, append(first, second...))
}

// The database's users never see the reattach: queries, transactions and held connections,
// one after another all through an ingestion that reattaches after every transaction, get no
// error (a query between the DETACH and the ATTACH fails: the catalog does not exist).
func TestReattachKeepsQueriesWorking(t *testing.T) {
	b := bustest.NewServer(t).Connect(t)
	// Each full batch its own transaction: a backlog's full batches are otherwise held in one
	// transaction up to a row group, and the test would see one reattach or none.
	defer warehouse.SetRowGroupRows(500)()
	msgs := append(chunkMsgs(t, 0, 5000), chunkMsgs(t, 1, 5000)...)
	warehousetest.PublishFast(t, b, msgs)
	ctx := warehousetest.Context(t, 2*time.Minute)
	w := openCheckpointingEveryCommit(t, ctx)
	db := w.DB()

	done := make(chan struct{})
	var (
		mu      sync.Mutex
		errs    []error
		queries int
	)
	fail := func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	}
	users := map[string]func() error{
		"query": func() error {
			var n int64
			return db.QueryRowContext(ctx, "SELECT count(*) FROM events").Scan(&n)
		},
		"transaction": func() error {
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				return err
			}
			defer func() { _ = tx.Rollback() }()
			var n, m int64
			if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM events").Scan(&n); err != nil {
				return err
			}
			if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM run_fold_rows").Scan(&m); err != nil {
				return err
			}
			return tx.Commit()
		},
		"held connection": func() error { // as the query API's guarded queries run
			c, err := db.Conn(ctx)
			if err != nil {
				return err
			}
			defer c.Close()
			if _, err := c.ExecContext(ctx, "BEGIN TRANSACTION READ ONLY"); err != nil {
				return err
			}
			var n int64
			if err := c.QueryRowContext(ctx, "SELECT coalesce(max(stream_seq), 0) FROM events").Scan(&n); err != nil {
				_, _ = c.ExecContext(ctx, "ROLLBACK")
				return err
			}
			_, err = c.ExecContext(ctx, "COMMIT")
			return err
		},
	}
	var wg sync.WaitGroup
	for name, use := range users {
		wg.Go(func() {
			for { // one use after another: the gate is seldom idle, so most reattaches close it (gateFirmAfter)
				select {
				case <-done:
					return
				default:
				}
				if err := use(); err != nil {
					fail(fmt.Errorf("%s: %w", name, err))
				}
				mu.Lock()
				queries++
				mu.Unlock()
			}
		})
	}
	catchUp(t, w, b, warehouse.IngestConfig{BatchSize: 500, TxnBatches: 1, BatchWait: 50 * time.Millisecond, ReattachEvents: 1})
	close(done)
	wg.Wait()
	for i, err := range errs {
		if i == 5 {
			t.Errorf("… and %d more", len(errs)-5)
			break
		}
		t.Errorf("a user of the database during ingestion: %v", err)
	}
	s := w.Stats()
	// With the gate seldom idle, a reattach comes after three put off; how many transactions
	// the backlog makes depends on how the batches are cut, so one reattach is what is asked.
	if s.Reattaches < 1 {
		t.Errorf("%d reattaches (%d put off) among %d queries, want several: the test shows nothing", s.Reattaches, s.ReattachesPutOff, queries)
	}
	t.Logf("%d reattaches, %d put off, %d uses of the database", s.Reattaches, s.ReattachesPutOff, queries)
	checkExact(t, w, msgs)
}
