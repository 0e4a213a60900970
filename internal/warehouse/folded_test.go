package warehouse

import (
	"context"
	"database/sql"
	"fmt"
	"hash/maphash"
	"testing"
	"time"
)

// The filter of folded attempts never forgets an attempt it was given (a false negative would
// leave a late event's run unfolded) and says "maybe" for few others.
func TestFoldedFilter(t *testing.T) {
	var f foldedFilter
	f.reset(foldedMinKeys, maphash.MakeSeed())
	f.loaded = true
	key := func(i int) attemptKey { return attemptKey{study: "s", run: fmt.Sprintf("r-%d", i), attempt: 1 + i%3} }
	for i := 0; i < foldedMinKeys; i++ {
		f.add(key(i))
	}
	for i := 0; i < foldedMinKeys; i++ {
		if !f.mayHave(key(i)) {
			t.Fatalf("attempt %v added and not found", key(i))
		}
	}
	false_ := 0
	const others = 100_000
	for i := foldedMinKeys; i < foldedMinKeys+others; i++ {
		if f.mayHave(key(i)) {
			false_++
		}
	}
	if rate := float64(false_) / others; rate > 0.02 {
		t.Errorf("false positive rate %.4f at the filter's size, want under 0.02", rate)
	}
	if f.n != foldedMinKeys || f.n > f.limit {
		t.Errorf("filter counts %d attempts (limit %d), want %d", f.n, f.limit, foldedMinKeys)
	}
	f.add(key(-1))
	if f.n <= f.limit {
		t.Errorf("a filter beyond its size (%d > %d) must ask to be reloaded", f.n, f.limit)
	}
	var unloaded foldedFilter
	if !unloaded.mayHave(key(0)) {
		t.Error("a filter not loaded must say maybe")
	}
}

// TestFoldedReloadKeepsPendingAttempts: a filter that outgrew its size reloads from run_folds in
// the middle of a transaction; the attempts whose rows the transaction still holds in memory are
// not in run_folds yet, and must still be "maybe" after the reload, or a late event in a later
// transaction would leave their rows stale.
func TestFoldedReloadKeepsPendingAttempts(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, ing := testIngester(t, ctx, IngestConfig{})
	if err := ing.ensureFolded(ctx); err != nil { // the first load: run_folds is empty
		t.Fatal(err)
	}
	pending := attemptKey{study: "s", run: "pending", attempt: 1}
	ing.pending.put(pending, &foldRow{study: "a row"})
	ing.folded.add(pending)
	ing.folded.n = ing.folded.limit + 1 // outgrown: the next batch reloads it
	if err := ing.ensureFolded(ctx); err != nil {
		t.Fatal(err)
	}
	if ing.folded.n > ing.folded.limit {
		t.Fatalf("the filter was not reloaded (%d attempts, limit %d)", ing.folded.n, ing.folded.limit)
	}
	if !ing.folded.mayHave(pending) {
		t.Error("an attempt whose run_folds row the open transaction holds was dropped from the filter by its reload")
	}
}

// TestFoldedLoadSizedFromCount: a load counts run_folds' rows and sizes the filter for twice as
// many (more than foldedMinKeys here), and finds every row it read.
func TestFoldedLoadSizedFromCount(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, ing := testIngester(t, ctx, IngestConfig{})
	const rows = 100_000
	insertFoldRows(t, ctx, ing.conn, rows, "'s'", "'r-' || i", "1 + i % 3")
	reloaded, err := ing.folded.ensure(ctx, ing.conn)
	if err != nil || !reloaded {
		t.Fatalf("ensure() = %v, %v; want a load", reloaded, err)
	}
	if f := &ing.folded; f.n != rows || f.limit != 2*rows || len(f.bits) != (2*rows*foldedBitsPerKey+63)/64 {
		t.Errorf("the filter holds %d attempts, sized for %d in %d words; want %d, %d and %d",
			f.n, f.limit, len(f.bits), rows, 2*rows, (2*rows*foldedBitsPerKey+63)/64)
	}
	for i := 0; i < rows; i++ {
		if k := (attemptKey{study: "s", run: fmt.Sprintf("r-%d", i), attempt: 1 + i%3}); !ing.folded.mayHave(k) {
			t.Fatalf("attempt %v of run_folds not found after the load", k)
		}
	}
	if reloaded, err := ing.folded.ensure(ctx, ing.conn); err != nil || reloaded {
		t.Errorf("a second ensure() = %v, %v; want no load (the filter has room)", reloaded, err)
	}
}

// insertFoldRows inserts n rows into run_fold_rows, i from 0 to n-1, with study, run and attempt
// the SQL expressions given (of i) and constants in the other columns that must not be null.
func insertFoldRows(tb testing.TB, ctx context.Context, conn *sql.Conn, n int, study, run, attempt string) {
	tb.Helper()
	q := fmt.Sprintf(`INSERT INTO run_fold_rows (study, run, attempt, source_kind, source_id, status, success,
		prompt_tokens, completion_tokens, tokens, model_calls, tool_calls, retries, plan_reprompts,
		rejected_tool_calls, validations_failed, escalated, plan, states, tools, calls, output,
		sig_plan, sig_states, sig_tools, sig_calls, sig_output, sig_trace, events, finished_status)
		SELECT %s, %s, %s, 'k', 'x', 'ok', true, 0, 0, 0, 0, 0, 0, 0, 0, 0, false, '', '', '', '', '',
			''::BLOB, ''::BLOB, ''::BLOB, ''::BLOB, ''::BLOB, ''::BLOB, 1, 'ok' FROM range(%d) t(i)`,
		study, run, attempt, n)
	if _, err := conn.ExecContext(ctx, q); err != nil {
		tb.Fatal(err)
	}
}
