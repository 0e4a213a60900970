package warehouse

import (
	"context"
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
