package warehouse

import (
	"context"
	"database/sql"
	"fmt"
	"hash/maphash"
	"math"
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"
	"time"
	"unsafe"
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
	checkFoldedFilter(t, &f, key, foldedMinKeys, 0.003)
	if n, limit := f.attempts(); n != foldedMinKeys || limit != foldedMinKeys || len(f.levels) != 1 {
		t.Errorf("filter counts %d attempts in %d levels sized for %d, want %d in one", n, len(f.levels), limit, foldedMinKeys)
	}
	var unloaded foldedFilter
	if !unloaded.mayHave(key(0)) {
		t.Error("a filter not loaded must say maybe")
	}
}

// checkFoldedFilter checks that f finds the attempts key(0) to key(added-1), and says "maybe" for
// at most maxRate of the 100,000 after them.
func checkFoldedFilter(t *testing.T, f *foldedFilter, key func(int) attemptKey, added int, maxRate float64) {
	t.Helper()
	for i := 0; i < added; i++ {
		if !f.mayHave(key(i)) {
			t.Fatalf("attempt %v added and not found", key(i))
		}
	}
	false_ := 0
	const others = 100_000
	for i := added; i < added+others; i++ {
		if f.mayHave(key(i)) {
			false_++
		}
	}
	if rate := float64(false_) / others; rate > maxRate {
		t.Errorf("false positive rate %.4f in %d levels, want under %v", rate, len(f.levels), maxRate)
	}
}

// TestFoldedFilterGrowsWithoutReload: a filter given more attempts than it was sized for adds a
// level twice the size of the last instead of asking to be reloaded from run_folds (a reload at
// 2^21 runs held the committer 1.2-1.4 s and was a long load's RSS peak), and still finds every
// attempt it was given.
func TestFoldedFilterGrowsWithoutReload(t *testing.T) {
	var f foldedFilter
	f.reset(0, maphash.MakeSeed())
	f.loaded = true
	key := func(i int) attemptKey { return attemptKey{study: "g", run: fmt.Sprintf("r-%d", i), attempt: 1} }
	// The attempts fill the levels of 1 and 2 × foldedMinKeys, and half of the one of 4.
	const added = 5 * foldedMinKeys
	for i := 0; i < added; i++ {
		f.add(key(i))
	}
	// With the filter loaded, ensure must not touch the database (a nil connection would panic).
	if reloaded, err := f.ensure(context.Background(), nil); reloaded || err != nil {
		t.Fatalf("ensure() = %v, %v after growing; want no reload", reloaded, err)
	}
	if n, limit := f.attempts(); n != added || limit != 7*foldedMinKeys || len(f.levels) != 3 || f.levels[2].n != 2*foldedMinKeys {
		t.Errorf("the filter holds %d attempts in %d levels sized for %d; want %d in 3 sized for %d, the last half full",
			n, len(f.levels), limit, added, 7*foldedMinKeys)
	}
	for i, want := range []int{1, 2, 4} {
		words := (int(math.Ceil(float64(want*foldedMinKeys)*levelBitsPerKey(i))) + 63) / 64
		if l := f.levels[i]; l.limit != want*foldedMinKeys || len(l.bits.w) != words {
			t.Errorf("level %d sized for %d in %d words, want %d in %d", i, l.limit, len(l.bits.w), want*foldedMinKeys, words)
		}
	}
	checkFoldedFilter(t, &f, key, added, 0.004)
}

// TestFoldedReloadKeepsPendingAttempts: a filter whose load failed (it says "maybe" for every
// attempt until loaded) loads from run_folds in the middle of a transaction; the attempts whose
// rows the transaction still holds in memory are not in run_folds yet, and must still be "maybe"
// after the reload, or a late event in a later transaction would leave their rows stale.
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
	ing.folded.loaded = false // as a load that failed leaves it: the next batch loads it
	if err := ing.ensureFolded(ctx); err != nil {
		t.Fatal(err)
	}
	if !ing.folded.loaded {
		t.Fatal("the filter was not loaded")
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
	if l := ing.folded.levels; len(l) != 1 || l[0].n != rows || l[0].limit != 2*rows || len(l[0].bits.w) != (2*rows*foldedBitsPerKey+63)/64 ||
		l[0].probes != 10 {
		t.Errorf("the filter holds %d levels (the first: %d attempts, sized for %d in %d words, %d probes); want one, %d, %d, %d and 10",
			len(l), l[0].n, l[0].limit, len(l[0].bits.w), l[0].probes, rows, 2*rows, (2*rows*foldedBitsPerKey+63)/64)
	}
	for i := 0; i < rows; i++ {
		if k := (attemptKey{study: "s", run: fmt.Sprintf("r-%d", i), attempt: 1 + i%3}); !ing.folded.mayHave(k) {
			t.Fatalf("attempt %v of run_folds not found after the load", k)
		}
	}
	if reloaded, err := ing.folded.ensure(ctx, ing.conn); err != nil || reloaded {
		t.Errorf("a second ensure() = %v, %v; want no load (the filter has room)", reloaded, err)
	}
	// The committer's attempts fill the first level, then start a second twice its size.
	for i := rows; i < 2*rows+1; i++ {
		ing.folded.add(attemptKey{study: "s", run: fmt.Sprintf("r-%d", i), attempt: 1 + i%3})
	}
	if l := ing.folded.levels; len(l) != 2 || l[0].n != 2*rows || l[1].n != 1 || l[1].limit != 4*rows {
		t.Errorf("after %d more attempts the filter holds %d levels; want 2, the second sized for %d holding 1",
			rows+1, len(l), 4*rows)
	}
	for i := 0; i < 2*rows+1; i++ {
		if k := (attemptKey{study: "s", run: fmt.Sprintf("r-%d", i), attempt: 1 + i%3}); !ing.folded.mayHave(k) {
			t.Fatalf("attempt %v not found after the filter grew", k)
		}
	}
}

// TestFoldedLoadFailedSaysMaybe: a load that fails partway through run_folds (here at a row it
// cannot read) leaves the filter not loaded, saying "maybe" for every attempt, and the next
// ensure loads it again: a filter marked loaded with only part of run_folds in it would say "no"
// for attempts that have a row.
func TestFoldedLoadFailedSaysMaybe(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, ing := testIngester(t, ctx, IngestConfig{})
	const rows = 10_000
	insertFoldRows(t, ctx, ing.conn, rows, "'s'", "'r-' || i", "1")
	// A row whose attempt database/sql cannot scan into an int, after the others.
	for _, q := range []string{
		`ALTER TABLE run_fold_rows ALTER COLUMN attempt DROP NOT NULL`,
		`INSERT INTO run_fold_rows BY NAME SELECT * REPLACE ('bad' AS run, NULL AS attempt) FROM run_fold_rows LIMIT 1`,
	} {
		if _, err := ing.conn.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if reloaded, err := ing.folded.ensure(ctx, ing.conn); err == nil {
		t.Fatalf("ensure() = %v, nil over a row with a NULL attempt; want an error", reloaded)
	}
	if ing.folded.loaded {
		t.Error("a load that failed left the filter loaded")
	}
	for _, k := range []attemptKey{{study: "s", run: "r-9999", attempt: 1}, {study: "s", run: "never", attempt: 1}} {
		if !ing.folded.mayHave(k) {
			t.Errorf("a filter whose load failed says no for %v", k)
		}
	}
	if _, err := ing.conn.ExecContext(ctx, `DELETE FROM run_fold_rows WHERE run = 'bad'`); err != nil {
		t.Fatal(err)
	}
	if reloaded, err := ing.folded.ensure(ctx, ing.conn); err != nil || !reloaded {
		t.Fatalf("ensure() = %v, %v after the bad row went; want a load", reloaded, err)
	}
	if !ing.folded.mayHave(attemptKey{study: "s", run: "r-9999", attempt: 1}) {
		t.Error("the load after a failed one missed a row")
	}
}

// skipWithoutMalloc skips a test that reads glibc's heap where it cannot be read.
func skipWithoutMalloc(t *testing.T) {
	if _, _, _, ok := readMalloc(); !ok {
		t.Skip("the C heap cannot be read here")
	}
}

// checkpointAndReattach checkpoints the database and reattaches it, so that the tables' row
// groups are read back from the file, as after a reattach under load.
func checkpointAndReattach(t *testing.T, ctx context.Context, w *Warehouse, ing *ingester) {
	t.Helper()
	if _, err := ing.conn.ExecContext(ctx, "CHECKPOINT"); err != nil {
		t.Fatal(err)
	}
	if err := w.reattach(ctx, ing.conn); err != nil {
		t.Fatal(err)
	}
}

// cHeapGrowth calls call(n) for n from 0 to warm-1 (what the first calls load once), then for n
// from from to from+times-1 between two readings of glibc's heap in use (its free memory
// released before each), and returns how many bytes it grew by. An error fails the test.
func cHeapGrowth(t *testing.T, warm, from, times int, call func(n int) error) float64 {
	t.Helper()
	for n := range warm {
		if err := call(n); err != nil {
			t.Fatal(err)
		}
	}
	releaseFreeMemory()
	_, before, _, _ := readMalloc()
	for n := from; n < from+times; n++ {
		if err := call(n); err != nil {
			t.Fatal(err)
		}
	}
	releaseFreeMemory()
	_, after, _, _ := readMalloc()
	return float64(after) - float64(before)
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

// TestFoldedKeysLeaveNoMemory: asking DuckDB which attempts have a run_folds row leaves nothing
// behind in its heap. A join of the attempts' strings with run_fold_rows, as one query a batch,
// left 220-260 bytes an attempt at every query in DuckDB 1.5.6, which no reattach gave back
// (a 30-minute load's glibc heap grew 18 MiB). 400 batches of 10 attempts grew it by 1.67 MiB
// that way (one run); one query an attempt, by equality, 0.07-0.11 (three runs).
func TestFoldedKeysLeaveNoMemory(t *testing.T) {
	skipWithoutMalloc(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	w, ing := testIngester(t, ctx, IngestConfig{})
	insertFoldRows(t, ctx, ing.conn, 20_000, "'load'", "'01KBX' || lpad(i::VARCHAR, 21, '0')", "1")
	checkpointAndReattach(t, ctx, w, ing)
	batch := func(n int) []attemptKey {
		keys := make([]attemptKey, 10)
		for i := range keys {
			keys[i] = attemptKey{study: "load", run: fmt.Sprintf("01KBY%021d", n*10+i), attempt: 1}
		}
		keys[0].run = fmt.Sprintf("01KBX%021d", n) // one that has a row
		return keys
	}
	grew := cHeapGrowth(t, 100, 0, 400, func(n int) error {
		found, err := ing.foldedKeys(ctx, batch(n))
		if _, ok := found[batch(n)[0]]; err == nil && (len(found) != 1 || !ok) {
			err = fmt.Errorf("batch %d: found %v, want only %v", n, found, batch(n)[0])
		}
		return err
	})
	t.Logf("400 batches of 10 attempts: the C heap in use grew by %.3f MiB", grew/(1<<20))
	if grew > 0.25*(1<<20) {
		t.Errorf("400 batches of 10 attempts asked about grew the C heap in use by %.2f MiB, want under 0.25", grew/(1<<20))
	}
}

// TestFoldedFilterOutsideGoHeap: where the OS maps memory, the filter's levels are outside the
// Go heap (each byte of them in it raised the heap's peaks by about two at the default GOGC),
// work as levels in it do, are counted in Memory.Folded, and are returned to the OS when the
// filter is dropped.
func TestFoldedFilterOutsideGoHeap(t *testing.T) {
	if w, ok := mapWords(1); !ok {
		t.Skip("no memory mapped outside the Go heap here")
	} else {
		unmapWords(w)
	}
	var mu sync.Mutex
	unmapped := map[uintptr]bool{}
	record := func(addr uintptr) {
		mu.Lock()
		defer mu.Unlock()
		unmapped[addr] = true
	}
	bloomUnmapped.Store(&record)
	defer bloomUnmapped.Store(nil)
	live := func() int64 {
		runtime.GC()
		s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		metrics.Read(s)
		return int64(s[0].Value.Uint64())
	}
	liveBefore := live()
	f := &foldedFilter{}
	f.reset(1<<20, maphash.MakeSeed())
	f.loaded = true
	key := func(i int) attemptKey { return attemptKey{study: "s", run: fmt.Sprintf("r-%d", i), attempt: 1} }
	const added = 1<<20 + 1 // a second level, of 2^21 attempts
	for i := range added {
		f.add(key(i))
	}
	checkFoldedFilter(t, f, key, added, 0.003)
	var words int64
	var addrs []uintptr
	for _, l := range f.levels {
		words += int64(len(l.bits.w))
		addrs = append(addrs, uintptr(unsafe.Pointer(unsafe.SliceData(l.bits.w))))
	}
	grew := live() - liveBefore
	t.Logf("%d levels of %.1f MiB: the live Go heap grew %.2f MiB", len(f.levels), float64(words*8)/(1<<20),
		float64(grew)/(1<<20))
	if len(f.levels) != 2 {
		t.Errorf("%d levels, want 2", len(f.levels))
	}
	if grew > words*8/4 {
		t.Errorf("the live Go heap grew by %d bytes with levels of %d: they are in it", grew, words*8)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w, _ := testIngester(t, ctx, IngestConfig{})
	// Other filters' levels may be mapped as well, never fewer than these while they are live.
	if m := w.Memory(ctx); int64(m.Folded) < words*8 {
		t.Errorf("Memory.Folded %d, want at least the levels' %d bytes", m.Folded, words*8)
	}
	runtime.KeepAlive(f)
	f = nil
	released := func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, a := range addrs {
			if !unmapped[a] {
				return false
			}
		}
		return true
	}
	deadline := time.Now().Add(10 * time.Second)
	for !released() && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if !released() {
		t.Errorf("the dropped filter's levels still mapped after 10 s")
	}
}
