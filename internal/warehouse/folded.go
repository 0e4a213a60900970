package warehouse

import (
	"context"
	"database/sql"
	"hash/maphash"
	"math"
	"runtime"
	"strconv"

	"github.com/dittolab/ditto/queries"
)

// foldedFilter remembers which run attempts have a run_folds row, so that a batch asks DuckDB
// only about the attempts that may have one: it is a Bloom filter (no false negatives; a false
// positive costs a query, ingest_folded_key, of about half a millisecond). Asking about every
// attempt new in the ingester's memory scanned run_folds once a batch, a cost growing with every
// run stored. The filter is loaded from run_folds once, when first used (and again only if a
// load failed); the committer adds each attempt as it folds it, before the COMMIT (a transaction
// that fails leaves attempts without a row in it: false positives).
//
// It grows without reloading: it is a series of Bloom filters (levels), the first sized for
// twice the attempts at the load, each next one for twice as many as the one before, which is
// added when the one before is full; an attempt is added to the last level and looked for in
// all (a new attempt, the common case, is looked for in every level: a few more cache misses
// than one filter). Reloading one filter sized for twice the attempts each time the runs doubled
// read all of run_folds in the committer's time: at 2^21 runs 1.2-1.4 s of it and 190 MB
// allocated a load (BenchmarkFoldedLoad), and it was the RSS peak of a 30-minute load (625 and
// 637 MiB, against medians of 460 and 452; docs/benchmarks.md, thirty-fourth session).
//
// Each level has more bits an attempt than the one before (foldedBitsPerKey and
// foldedBitsPerLevel), so that the filter's false positives stay under 0.24% however many
// levels it has: with 10 bits an attempt in every level, each full level added its 0.8%, and a
// 30-minute load's filter said "maybe" for 4% of the new attempts, 27 a batch (thirty-fifth
// session). Its memory, from an empty database: 9.9 MiB from about 2^21 runs (31 million events
// of the load's 15-event runs), 21.4 MiB from about 2^22, 208 MiB from about 2^25: 2.4 to 6.2
// MiB a million attempts stored between about 2^21 and 2^25, more beyond. It grows with the
// table, in steps; the levels' bits are kept outside the Go heap (bloomWords), so that the
// collector's headroom (at the default GOGC, as much again as is live) is not added to them.
type foldedFilter struct {
	levels []bloomLevel
	loaded bool
	seed   maphash.Seed
}

// bloomLevel is one of a foldedFilter's Bloom filters, sized for limit attempts.
type bloomLevel struct {
	bits     *bloomWords // outside the Go heap where the OS maps memory (bloomWords)
	n, limit int         // attempts added, and how many the bits are sized for
	probes   uint64      // bits set for each attempt
}

// The levels' sizes: the first has foldedBitsPerKey bits an attempt it is sized for, each next
// one foldedBitsPerLevel more, with probes bits set an attempt (the bits an attempt times ln 2,
// rounded), so that a full level says "maybe" for 0.12% of the attempts it does not hold and
// each next one for about half as many (0.6185 to the power of the bits an attempt): a filter of
// any number of full levels for under 0.24%.
const (
	foldedBitsPerKey   = 14
	foldedBitsPerLevel = 1.5
	foldedMinKeys      = 1 << 16
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
	f.levels = []bloomLevel{newBloomLevel(max(limit, foldedMinKeys), 0)}
	f.seed = seed
	f.loaded = false
}

// newBloomLevel returns an empty level sized for limit attempts, the level-th of its filter.
func newBloomLevel(limit, level int) bloomLevel {
	perKey := levelBitsPerKey(level)
	bits := int(math.Ceil(float64(limit) * perKey))
	return bloomLevel{bits: newBloomWords((bits + 63) / 64), limit: limit, probes: uint64(math.Round(perKey * math.Ln2))}
}

// levelBitsPerKey is the bits an attempt of the level-th level.
func levelBitsPerKey(level int) float64 {
	return foldedBitsPerKey + foldedBitsPerLevel*float64(level)
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
	return (h1 + i*h2) % (uint64(len(l.bits.w)) * 64)
}

// set sets the bits of hash s.
func (l *bloomLevel) set(s uint64) {
	for i := uint64(0); i < l.probes; i++ {
		b := l.probe(s, i)
		l.bits.w[b/64] |= 1 << (b % 64)
	}
	l.n++
	runtime.KeepAlive(l.bits) // its mapping is returned when it is unreachable
}

// has reports whether hash s's bits are all set.
func (l *bloomLevel) has(s uint64) bool {
	all := true
	for i := uint64(0); i < l.probes && all; i++ {
		b := l.probe(s, i)
		all = l.bits.w[b/64]&(1<<(b%64)) != 0
	}
	runtime.KeepAlive(l.bits) // as in set
	return all
}

// add records that k has a run_folds row (folded, before the COMMIT; see foldedFilter), in the
// last level, or in a new one twice its size when it is full.
func (f *foldedFilter) add(k attemptKey) {
	if !f.loaded {
		return // the next ensure reads run_folds, this attempt's row included
	}
	last := &f.levels[len(f.levels)-1]
	if last.n >= last.limit {
		f.levels = append(f.levels, newBloomLevel(2*last.limit, len(f.levels)))
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
