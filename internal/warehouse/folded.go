package warehouse

import (
	"context"
	"database/sql"
	"hash/maphash"
	"strconv"

	"github.com/dittolab/ditto/queries"
)

// foldedFilter remembers which run attempts have a run_folds row, so that a batch asks DuckDB
// only about the attempts that may have one: it is a Bloom filter (no false negatives; a false
// positive costs the query it saves). Asking about every attempt new in the ingester's memory
// (ingest_folded_keys) scanned run_folds once a batch, a cost growing with every run stored.
// The filter is loaded from run_folds when first used, and again when it holds more attempts
// than it was sized for (a doubling: amortised, one scan per doubling of the runs); the
// committer adds each attempt as it folds it, before the COMMIT (a transaction that fails leaves
// attempts without a row in it: false positives). Its memory is 10 bits for each of twice the
// attempts at the last load, 1.2 to 2.4 MiB a million attempts stored: it grows with the table,
// in steps (from an empty database, to 5.0 MiB at 2^21 runs and 10.0 MiB at 2^22). It is what
// the heap profiles of a long load show growing (docs/benchmarks.md, thirty-fourth session).
type foldedFilter struct {
	bits     []uint64
	n, limit int // attempts added, and how many the bits are sized for
	loaded   bool
	seed     maphash.Seed
}

// foldedBitsPerKey and foldedProbes give a false-positive rate below 1%.
const (
	foldedBitsPerKey = 10
	foldedProbes     = 7
	foldedMinKeys    = 1 << 16
)

// ensure loads the filter from run_folds if it is not loaded or has outgrown its size, and
// reports whether it did. A load sees the rows appended so far, not those an open transaction
// still holds in memory (ingester.ensureFolded adds them). It counts the rows first and sizes
// the filter for twice as many, then sets each row's bits as it reads it: keeping the rows'
// hashes until the count was known took 8 bytes a run in a slice grown by appending: at 2^21 runs
// 103 MB more allocated a load, and a Go heap's peak growth of 45-56 MiB against 11-12
// (BenchmarkFoldedLoad).
func (f *foldedFilter) ensure(ctx context.Context, conn *sql.Conn) (bool, error) {
	if f.loaded && f.n <= f.limit {
		return false, nil
	}
	var count int
	if err := conn.QueryRowContext(ctx, queries.IngestFoldedCount.SQL).Scan(&count); err != nil {
		return false, err
	}
	rows, err := conn.QueryContext(ctx, queries.IngestFoldedAll.SQL)
	if err != nil {
		return false, err
	}
	defer rows.Close()
	// Until every row is in, the filter is not loaded: it says "maybe" for every attempt.
	f.loaded = false
	f.reset(2*count, maphash.MakeSeed())
	var k attemptKey
	for rows.Next() {
		if err := rows.Scan(&k.study, &k.run, &k.attempt); err != nil {
			return false, err
		}
		f.set(keyHash(f.seed, k))
	}
	if err := rows.Err(); err != nil {
		return false, err
	}
	f.loaded = true
	return true, nil
}

// reset empties the filter and sizes it for limit attempts (at least foldedMinKeys).
func (f *foldedFilter) reset(limit int, seed maphash.Seed) {
	f.limit = max(limit, foldedMinKeys)
	f.bits = make([]uint64, (f.limit*foldedBitsPerKey+63)/64)
	f.n = 0
	f.seed = seed
}

// keyHash hashes an attempt key with seed.
func keyHash(seed maphash.Seed, k attemptKey) uint64 {
	var h maphash.Hash
	h.SetSeed(seed)
	h.WriteString(k.study)
	h.WriteByte(0)
	h.WriteString(k.run)
	h.WriteByte(0)
	var buf [20]byte
	h.Write(strconv.AppendInt(buf[:0], int64(k.attempt), 10))
	return h.Sum64()
}

// probe returns bit i of hash s's bits: h1 + i·h2 modulo the filter's size.
func (f *foldedFilter) probe(s, i uint64) uint64 {
	h1, h2 := s&0xffffffff, s>>32|1
	return (h1 + i*h2) % (uint64(len(f.bits)) * 64)
}

// set sets the bits of hash s.
func (f *foldedFilter) set(s uint64) {
	for i := uint64(0); i < foldedProbes; i++ {
		b := f.probe(s, i)
		f.bits[b/64] |= 1 << (b % 64)
	}
	f.n++
}

// add records that k has a run_folds row (folded, before the COMMIT; see foldedFilter).
func (f *foldedFilter) add(k attemptKey) {
	if !f.loaded {
		return // the next ensure reads run_folds, this attempt's row included
	}
	f.set(keyHash(f.seed, k))
}

// mayHave reports whether k may have a run_folds row; false means it has none.
func (f *foldedFilter) mayHave(k attemptKey) bool {
	if !f.loaded {
		return true
	}
	s := keyHash(f.seed, k)
	for i := uint64(0); i < foldedProbes; i++ {
		b := f.probe(s, i)
		if f.bits[b/64]&(1<<(b%64)) == 0 {
			return false
		}
	}
	return true
}
