package warehouse

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"
)

// insertEvents inserts n rows into events, i from 0 to n-1: event i is state.entered of study
// study(i), run run(i) (SQL expressions of i), attempt attempt(i), seq seq(i), with stream
// sequence and id from i.
func insertEvents(tb testing.TB, ctx context.Context, conn *sql.Conn, n int,
	study, run, attempt, seq string) {
	tb.Helper()
	q := fmt.Sprintf(`INSERT INTO events SELECT i + 1, '01KBX' || lpad(i::VARCHAR, 21, '0'), 'state.entered', 1,
		TIMESTAMPTZ '2026-12-07 09:00:00+00' + to_microseconds(i), %s, %s, %s, %s, 'harness', 'w', NULL, NULL,
		false, '{"state":"s' || i::VARCHAR || '"}' FROM range(%d) t(i)`, study, run, attempt, seq, n)
	if _, err := conn.ExecContext(ctx, q); err != nil {
		tb.Fatal(err)
	}
}

// absent are n attempts that have neither events nor run_folds rows: added to a few keys they
// make readHistories and deleteFolds take the join.
func absent(n int) []attemptKey {
	var out []attemptKey
	for i := range n {
		out = append(out, attemptKey{study: "none", run: fmt.Sprintf("zz-%d", i), attempt: 1})
	}
	return out
}

// TestAttemptListsExact: the lists' statements (a few attempts) and the joins (many) read and
// delete exactly the attempts asked for, though the lists test a row's run, and its
// study, run and attempt, each against the batch's: an attempt of the same run and another
// number, or of another study with the same run, is left alone. Each history comes sorted by
// seq, then stream sequence, whatever order DuckDB returns the rows in.
func TestAttemptListsExact(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, ing := testIngester(t, ctx, IngestConfig{})
	// 2 studies × 2 runs × 2 attempts × 5 events, inserted with their seqs descending: 5 to 1
	// in attempt 1, 3, 3, 2, 2, 1 in attempt 2 (re-sent events: two stream sequences).
	insertEvents(t, ctx, ing.conn, 40, "'s' || (i // 20)", "'r' || (i // 10 % 2)", "i // 5 % 2 + 1",
		"CASE WHEN i // 5 % 2 = 0 THEN 5 - i % 5 ELSE 3 - i % 5 // 2 END")
	insertFoldRows(t, ctx, ing.conn, 8, "'s' || (i // 4)", "'r' || (i // 2 % 2)", "i % 2 + 1")
	asked := []attemptKey{{"s0", "r0", 1}, {"s1", "r1", 2}, {"s0", "r1", 2}}
	for _, path := range []struct {
		name string
		keys []attemptKey
	}{{"lists", asked}, {"join", append(slices.Clone(asked), absent(attemptListFew)...)}} {
		hist, err := ing.readHistories(ctx, path.keys)
		if err != nil {
			t.Fatalf("%s: readHistories: %v", path.name, err)
		}
		if len(hist) != len(asked) {
			t.Errorf("%s: read %d attempts, want the %d asked for: %v",
				path.name, len(hist), len(asked), slices.Collect(maps.Keys(hist)))
		}
		for _, k := range asked {
			h := hist[k]
			var got []string
			for _, e := range h {
				got = append(got, fmt.Sprintf("%d/%d", e.env.Seq, e.streamSeq))
			}
			want := 5
			sorted := slices.IsSortedFunc(h, func(a, b histEvent) int {
				if a.env.Seq != b.env.Seq {
					return int(a.env.Seq - b.env.Seq)
				}
				return int(a.streamSeq) - int(b.streamSeq)
			})
			if len(h) != want || !sorted {
				t.Errorf("%s: attempt %v read (seq/stream sequence) %v, want %d events sorted", path.name, k, got, want)
			}
		}
	}
	count := func() (n int) {
		if err := ing.conn.QueryRowContext(ctx, "SELECT count(*) FROM run_fold_rows").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	has := func(k attemptKey) bool {
		var n int
		q := "SELECT count(*) FROM run_fold_rows WHERE study = ? AND run = ? AND attempt = ?"
		if err := ing.conn.QueryRowContext(ctx, q, k.study, k.run, int32(k.attempt)).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n > 0
	}
	if err := ing.deleteFolds(ctx, asked[:2]); err != nil {
		t.Fatalf("lists: deleteFolds: %v", err)
	}
	if err := ing.deleteFolds(ctx, append(asked[2:], absent(attemptListFew)...)); err != nil {
		t.Fatalf("join: deleteFolds: %v", err)
	}
	for _, k := range asked {
		if has(k) {
			t.Errorf("attempt %v still has its run_folds row", k)
		}
	}
	if n := count(); n != 8-len(asked) {
		t.Errorf("%d run_folds rows left, want %d: deleteFolds took another attempt's", n, 8-len(asked))
	}
}

// TestAttemptListsLeaveNoMemory: reading a few attempts' events and deleting their run_folds
// rows, as the committer does for a batch's late events, leaves nothing behind in DuckDB's
// heap. The joins of the attempts' strings (ingest_attempt_events, ingest_fold_delete) left a
// few KB a call in DuckDB 1.5.6 (2.1-2.2 and 1.4-1.6 MiB over 400 calls of 10 attempts, in
// two runs of the test with the joins); the lists, under 0.1 MiB. The bound catches the joins;
// an ORDER BY (0.6-0.9 KiB a call, 0.23-0.34 MiB over 400 in a probe on 2 million events) may
// not be caught.
func TestAttemptListsLeaveNoMemory(t *testing.T) {
	skipWithoutMalloc(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	w, ing := testIngester(t, ctx, IngestConfig{})
	run := "'01KBR' || lpad((i // 10)::VARCHAR, 21, '0')"
	insertEvents(t, ctx, ing.conn, 200_000, "'load'", run, "1", "i % 10 + 1")
	insertFoldRows(t, ctx, ing.conn, 20_000, "'load'", "'01KBR' || lpad(i::VARCHAR, 21, '0')", "1")
	checkpointAndReattach(t, ctx, w, ing)
	batch := func(n int) []attemptKey {
		keys := make([]attemptKey, 10)
		for i := range keys {
			keys[i] = attemptKey{study: "load", run: fmt.Sprintf("01KBR%021d", (n*10+i)%20_000), attempt: 1}
		}
		return keys
	}
	for _, c := range []struct {
		name string
		call func(n int) error
	}{
		{"reading 10 attempts' events", func(n int) error {
			h, err := ing.readHistories(ctx, batch(n))
			if err == nil && (len(h) != 10 || len(h[batch(n)[0]]) != 10) {
				err = fmt.Errorf("read %d attempts, %d events of the first, want 10 and 10", len(h), len(h[batch(n)[0]]))
			}
			return err
		}},
		{"deleting 10 attempts' run_folds rows", func(n int) error {
			return ing.deleteFolds(ctx, batch(n))
		}},
	} {
		grew := cHeapGrowth(t, 100, 100, 400, func(n int) error {
			if err := c.call(n); err != nil {
				return fmt.Errorf("%s: %w", c.name, err)
			}
			return nil
		})
		t.Logf("%s, 400 times: the C heap in use grew by %.3f MiB", c.name, grew/(1<<20))
		if grew > 0.25*(1<<20) {
			t.Errorf("%s, 400 times, grew the C heap in use by %.2f MiB, want under 0.25", c.name, grew/(1<<20))
		}
	}
}
