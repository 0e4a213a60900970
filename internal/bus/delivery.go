package bus

import (
	"fmt"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
)

// Delivery is what a consumer's message says of its delivery, read from its reply subject.
type Delivery struct {
	StreamSeq uint64 // the message's sequence in the stream
	Pending   uint64 // messages the consumer had left to deliver after this one
}

// DeliveryOf reads m's stream sequence and the consumer's pending count from its reply
// subject, the fields of m.Metadata() that a reader of a stream needs for every message,
// without building the whole metadata (an allocation and seven number parses per message on
// the ingest path). The subject is
//
//	$JS.ACK.<stream>.<consumer>.<delivered>.<stream seq>.<consumer seq>.<time>.<pending>
//
// or, from newer servers, $JS.ACK.<domain>.<account hash>.… with the same fields and
// possibly a last token; Metadata accepts both, and so does DeliveryOf.
func DeliveryOf(m jetstream.Msg) (Delivery, error) {
	return parseDelivery(m.Reply())
}

func parseDelivery(reply string) (Delivery, error) {
	rest, ok := strings.CutPrefix(reply, "$JS.ACK.")
	if !ok {
		return Delivery{}, fmt.Errorf("%w: reply subject %q", ErrNotDelivery, reply)
	}
	// The tokens after $JS.ACK: 7 (old form) or at least 9 (domain and account hash first).
	var tok [12]string
	n := 0
	for n < len(tok) {
		var more bool
		tok[n], rest, more = strings.Cut(rest, ".")
		n++
		if !more {
			break
		}
	}
	var seq, pending string
	switch {
	case n == 7:
		seq, pending = tok[3], tok[6]
	case n >= 9:
		seq, pending = tok[5], tok[8]
	default:
		return Delivery{}, fmt.Errorf("%w: reply subject %q has %d tokens", ErrNotDelivery, reply, n+2)
	}
	d := Delivery{}
	var err error
	if d.StreamSeq, err = parseUint(seq); err != nil {
		return Delivery{}, fmt.Errorf("%w: reply subject %q: stream sequence: %v", ErrNotDelivery, reply, err)
	}
	if d.Pending, err = parseUint(pending); err != nil {
		return Delivery{}, fmt.Errorf("%w: reply subject %q: pending: %v", ErrNotDelivery, reply, err)
	}
	return d, nil
}

// parseUint parses a decimal number of at most 19 digits (no sign, no overflow).
func parseUint(s string) (uint64, error) {
	if s == "" || len(s) > 19 {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	var v uint64
	for i := 0; i < len(s); i++ {
		c := s[i] - '0'
		if c > 9 {
			return 0, fmt.Errorf("%q is not a number", s)
		}
		v = v*10 + uint64(c)
	}
	return v, nil
}

// Ack acknowledges the consumer's message whose reply subject is reply, as jetstream.Msg.Ack
// does: it publishes the acknowledgement protocol's "+ACK" to reply (with an ack-all consumer,
// every message delivered before it too). Like Terminate, it lets a reader keep a delivered
// message's reply subject instead of the message.
func (b *Bus) Ack(reply string) error {
	if _, err := parseDelivery(reply); err != nil {
		return err
	}
	if err := b.Conn().Publish(reply, []byte("+ACK")); err != nil {
		return fmt.Errorf("bus: ack %s: %w", reply, err)
	}
	return nil
}

// Terminate tells the server to stop delivering the consumer's message whose reply subject is
// reply, with reason, as jetstream.Msg.TermWithReason does: it publishes the acknowledgement
// protocol's "+TERM <reason>" to reply. It is for readers that keep a delivered message's reply
// subject instead of the message (its headers, its client state), to terminate it later.
func (b *Bus) Terminate(reply, reason string) error {
	if _, err := parseDelivery(reply); err != nil {
		return err
	}
	body := "+TERM"
	if reason != "" {
		body += " " + reason
	}
	if err := b.Conn().Publish(reply, []byte(body)); err != nil {
		return fmt.Errorf("bus: terminate %s: %w", reply, err)
	}
	return nil
}
