package events

import (
	"crypto/rand"
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

	var b [16]byte
	binary.BigEndian.PutUint16(b[0:2], uint16(ms>>32))
	binary.BigEndian.PutUint32(b[2:6], uint32(ms))
	copy(b[6:], rnd[:])
	return encodeBase32(b)
}

func encodeBase32(b [16]byte) string {
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
