package otlpmap

import (
	"crypto/sha256"
	"encoding/binary"
	"time"
)

const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

// EventID returns the id of the event a span contributes in a role ("tool.called",
// "run.started", ...): 26 Crockford base32 characters like events.NewID (48 bits of the event's
// Unix milliseconds, so ids still sort by time) but with the other 80 bits taken from
// SHA-256(trace id, span id, role) instead of randomness. Mapping the same trace again gives
// the same ids, which is what makes a re-exported trace a no-op.
func EventID(t time.Time, traceID, spanID, role string) string {
	h := sha256.New()
	h.Write([]byte(traceID))
	h.Write([]byte{0})
	h.Write([]byte(spanID))
	h.Write([]byte{0})
	h.Write([]byte(role))
	sum := h.Sum(nil)
	ms := uint64(max(t.UnixMilli(), 0)) & (1<<48 - 1)
	var b [16]byte
	binary.BigEndian.PutUint16(b[0:2], uint16(ms>>32))
	binary.BigEndian.PutUint32(b[2:6], uint32(ms))
	copy(b[6:], sum[:10])
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
