package metrics

import (
	"math/bits"
	"math/rand/v2"
)

// rng is the package's seeded generator: PCG (whose output sequence is
// fixed by its definition) with a bounded draw implemented here, so that a
// seed reproduces the same samples and permutations on every Go release.
type rng struct{ p *rand.PCG }

// Stream constants keep the draws of different consumers independent for
// the same user seed.
const (
	streamTSS         = 0x7453535f73616d70 // "tSS_samp"
	streamAC          = 0x41435f73616d706c
	streamPermutation = 0x7065726d75746174
)

func newRNG(seed, stream uint64) rng { return rng{rand.NewPCG(seed, stream)} }

// below returns a uniform integer in [0, n), n > 0 (Lemire's method).
func (r rng) below(n uint64) uint64 {
	hi, lo := bits.Mul64(r.p.Uint64(), n)
	if lo < n {
		thresh := -n % n
		for lo < thresh {
			hi, lo = bits.Mul64(r.p.Uint64(), n)
		}
	}
	return hi
}
