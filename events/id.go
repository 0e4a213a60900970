package events

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"sync"
	"time"
)

// crockford is the Crockford base32 alphabet: ids sort lexically in time order.
const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

var idState struct {
	sync.Mutex
	lastMS  uint64
	lastRnd [10]byte
}

// NewID returns a 26-character ULID-style id: 48 bits of milliseconds since the Unix epoch
// then 80 random bits, Crockford base32. Ids made in one process are strictly increasing, even
// within one millisecond (the random part is incremented), so they sort in creation order.
func NewID(t time.Time) string {
	ms := uint64(t.UnixMilli())
	idState.Lock()
	var rnd [10]byte
	if ms <= idState.lastMS {
		ms = idState.lastMS
		rnd = idState.lastRnd
		for i := len(rnd) - 1; i >= 0; i-- { // increment as a big-endian integer
			rnd[i]++
			if rnd[i] != 0 {
				break
			}
		}
	} else {
		_, _ = rand.Read(rnd[:]) // crypto/rand.Read never fails on supported platforms
	}
	idState.lastMS, idState.lastRnd = ms, rnd
	idState.Unlock()
	return encodeID(ms, rnd)
}

// DerivedID returns the id of an event that must get the same id each time it is made: 26
// characters like NewID's, whose first 48 bits are t's Unix milliseconds (0 before 1970), so
// ids still sort by time, and whose other 80 bits are the first 80 bits of SHA-256 over parts,
// each part followed by a zero byte but the last. The same t and parts always give the same
// id, so an event made again from the same source (the span of a re-exported trace, say) has
// its first copy's id, and JetStream's deduplication, or the warehouse's, drops it.
func DerivedID(t time.Time, parts ...string) string {
	h := sha256.New()
	for i, p := range parts {
		if i > 0 {
			h.Write([]byte{0})
		}
		h.Write([]byte(p))
	}
	var tail [10]byte
	copy(tail[:], h.Sum(nil))
	return encodeID(uint64(max(t.UnixMilli(), 0)), tail)
}

// encodeID writes the low 48 bits of ms, then tail, as 26 Crockford base32 symbols.
func encodeID(ms uint64, tail [10]byte) string {
	var b [16]byte
	binary.BigEndian.PutUint16(b[0:2], uint16(ms>>32))
	binary.BigEndian.PutUint32(b[2:6], uint32(ms))
	copy(b[6:], tail[:])
	// 128 bits → 26 symbols of 5 bits; the first symbol carries the top 3 bits.
	hi := binary.BigEndian.Uint64(b[0:8])
	lo := binary.BigEndian.Uint64(b[8:16])
	var out [26]byte
	for i := 25; i >= 0; i-- {
		out[i] = crockford[lo&31]
		lo = lo>>5 | hi<<59
		hi >>= 5
	}
	return string(out[:])
}
