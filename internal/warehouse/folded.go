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
// The filter is loaded from run_folds once, when first used (and again only if a load failed);
// the committer adds each attempt as it folds it, before the COMMIT (a transaction that fails
// leaves attempts without a row in it: false positives).
//
// It grows without reloading: it is a series of Bloom filters (levels), the first sized for
// twice the attempts at the load, each next one for twice as many as the one before, which is
// added when the one before is full; an attempt is added to the last level and looked for in
// all (a new attempt, the common case, is looked for in every level: a few more cache misses
// than one filter). Reloading one filter sized for twice the attempts each time the runs doubled
// read all of run_folds in the committer's time: at 2^21 runs 1.2-1.4 s of it and 190 MB
// allocated a load (BenchmarkFoldedLoad), and it was the RSS peak of a 30-minute load (625 and
// 637 MiB, against medians of 460 and 452; docs/benchmarks.md, thirty-fourth session). A level
// full at its size says "maybe" for under 1% of the attempts it does not hold, and a filter of L
// levels for under L%. Its memory is 10 bits for each attempt the levels are sized for, between
// one and three times the attempts added (from an empty database, under 2.4 times once past 2^17
// attempts): 1.2 to 3.6 MiB a million attempts. It grows with the table, in steps (from an empty
// database 4.9 MiB from about 2^21 runs, 9.9 MiB from about 2^22).
type foldedFilter struct {
	levels []bloomLevel
	loaded bool
	seed   maphash.Seed
}

// bloomLevel is one of a foldedFilter's Bloom filters, sized for limit attempts.
type bloomLevel struct {
	bits     []uint64
	n, limit int // attempts added, and how many the bits are sized for
}

// foldedBitsPerKey and foldedProbes give a false-positive rate below 1% for a full level.
const (
	foldedBitsPerKey = 10
	foldedProbes     = 7
	foldedMinKeys    = 1 << 16
)

// ensure loads the filter from run_folds if it is not loaded, and reports whether it did. A load
// sees the rows appended so far, not those an open transaction still holds in memory
// (ingester.ensureFolded adds them). It counts the rows first and sizes the first level for twice
// as many, then sets each row's bits as it reads it: keeping the rows' hashes until the count was
// known took 8 bytes a run in a slice grown by appending: at 2^21 runs 103 MB more allocated a
// load, and a Go heap's peak growth of 45-56 MiB against 11-12 (BenchmarkFoldedLoad).
func (f *foldedFilter) ensure(ctx context.Context, conn *sql.Conn) (bool, error) {
	if f.loaded {
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
	f.reset(2*count, maphash.MakeSeed())
	var k attemptKey
	for rows.Next() {
		if err := rows.Scan(&k.study, &k.run, &k.attempt); err != nil {
			return false, err
		}
		f.levels[0].set(keyHash(f.seed, k))
	}
	if err := rows.Err(); err != nil {
		return false, err
	}
	f.loaded = true
	return true, nil
}

// reset empties the filter, not loaded, with one level sized for limit attempts (at least
// foldedMinKeys).
func (f *foldedFilter) reset(limit int, seed maphash.Seed) {
	f.levels = []bloomLevel{newBloomLevel(max(limit, foldedMinKeys))}
	f.seed = seed
	f.loaded = false
}

// newBloomLevel returns an empty level sized for limit attempts.
func newBloomLevel(limit int) bloomLevel {
	return bloomLevel{bits: make([]uint64, (limit*foldedBitsPerKey+63)/64), limit: limit}
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

// probe returns bit i of hash s's bits: h1 + i·h2 modulo the level's size.
func (l *bloomLevel) probe(s, i uint64) uint64 {
	h1, h2 := s&0xffffffff, s>>32|1
	return (h1 + i*h2) % (uint64(len(l.bits)) * 64)
}

// set sets the bits of hash s.
func (l *bloomLevel) set(s uint64) {
	for i := uint64(0); i < foldedProbes; i++ {
		b := l.probe(s, i)
		l.bits[b/64] |= 1 << (b % 64)
	}
	l.n++
}

// has reports whether hash s's bits are all set.
func (l *bloomLevel) has(s uint64) bool {
	for i := uint64(0); i < foldedProbes; i++ {
		b := l.probe(s, i)
		if l.bits[b/64]&(1<<(b%64)) == 0 {
			return false
		}
	}
	return true
}

// add records that k has a run_folds row (folded, before the COMMIT; see foldedFilter), in the
// last level, or in a new one twice its size when it is full.
func (f *foldedFilter) add(k attemptKey) {
	if !f.loaded {
		return // the next ensure reads run_folds, this attempt's row included
	}
	last := &f.levels[len(f.levels)-1]
	if last.n >= last.limit {
		f.levels = append(f.levels, newBloomLevel(2*last.limit))
		last = &f.levels[len(f.levels)-1]
	}
	last.set(keyHash(f.seed, k))
}

// mayHave reports whether k may have a run_folds row; false means it has none.
func (f *foldedFilter) mayHave(k attemptKey) bool {
	if !f.loaded {
		return true
	}
	s := keyHash(f.seed, k)
	for i := range f.levels {
		if f.levels[i].has(s) {
			return true
		}
	}
	return false
}

// attempts returns how many attempts the filter holds, and how many its levels are sized for.
func (f *foldedFilter) attempts() (n, limit int) {
	for _, l := range f.levels {
		n += l.n
		limit += l.limit
	}
	return n, limit
}
