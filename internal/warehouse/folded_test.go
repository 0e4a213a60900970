package warehouse

import (
	"fmt"
	"hash/maphash"
	"testing"
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
