package warehouse

import (
	"testing"

	"github.com/nats-io/nats.go/jetstream"
)

// The client's pull ahead is about pullAheadBytes of the stream's mean message, within a batch
// and at least 16 messages.
func TestPullAhead(t *testing.T) {
	for _, c := range []struct {
		msgs, bytes uint64
		batch, want int
	}{
		{0, 0, 10_000, 3072},                     // empty: 1 KiB a message
		{200_000, 200_000 * 400, 10_000, 7864},   // 400-byte events: 3 MiB of them
		{200_000, 200_000 * 300, 10_000, 10_000}, // 300-byte events: a batch
		{200_000, 200_000 * 400, 2_000, 2_000},
		{1_000, 1_000 * 2048, 10_000, 1536},
		{10, 10 << 20, 10_000, 16}, // 1 MiB a message: the least
	} {
		if got := pullAhead(jetstream.StreamState{Msgs: c.msgs, Bytes: c.bytes}, c.batch); got != c.want {
			t.Errorf("pullAhead(%d messages, %d bytes, batch %d) = %d, want %d", c.msgs, c.bytes, c.batch, got, c.want)
		}
	}
}
