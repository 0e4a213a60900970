package warehousetest

import (
	"bytes"
	"testing"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/bus"
	"github.com/dittolab/ditto/internal/samples"
)

// Msg is one message to publish: a subject, a Nats-Msg-Id and the body.
type Msg struct {
	Subject, ID string
	Data        []byte
}

// SampleMsgs returns the bundled production traces (samples.Traces) as messages, in file order,
// each with the bytes of its line.
func SampleMsgs(t testing.TB) []Msg {
	t.Helper()
	var out []Msg
	for _, line := range bytes.Split(bytes.TrimSpace(samples.Traces), []byte("\n")) {
		e, err := events.Decode(line)
		if err != nil {
			t.Fatalf("sample: %v", err)
		}
		subj, err := events.SubjectOf(&e)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, Msg{subj, e.ID, append([]byte(nil), line...)})
	}
	return out
}

// EnvelopeMsg encodes e as the message a publisher sends for it (bus.Publisher.PublishEvent).
func EnvelopeMsg(t testing.TB, e *events.Envelope) Msg {
	t.Helper()
	data, err := events.Encode(e)
	if err != nil {
		t.Fatalf("encode %s: %v", e.Type, err)
	}
	subj, err := events.SubjectOf(e)
	if err != nil {
		t.Fatal(err)
	}
	return Msg{subj, e.ID, data}
}

// EnvelopeMsgs is EnvelopeMsg of each envelope, in order.
func EnvelopeMsgs(t testing.TB, envs []events.Envelope) []Msg {
	t.Helper()
	out := make([]Msg, len(envs))
	for i := range envs {
		out[i] = EnvelopeMsg(t, &envs[i])
	}
	return out
}

// Publish publishes msgs in order, one in flight, and waits for every acknowledgement, so the
// stream holds them in msgs order.
func Publish(t testing.TB, b *bus.Bus, msgs []Msg) {
	t.Helper()
	publish(t, b, msgs, 60*time.Second, bus.WithMaxInFlight(1))
}

// PublishFast publishes msgs with many in flight and waits for every acknowledgement; the stream
// may hold them in another order than msgs.
func PublishFast(t testing.TB, b *bus.Bus, msgs []Msg) {
	t.Helper()
	publish(t, b, msgs, 120*time.Second)
}

func publish(t testing.TB, b *bus.Bus, msgs []Msg, timeout time.Duration, opts ...bus.PublisherOption) {
	t.Helper()
	ctx := Context(t, timeout)
	p, err := b.NewPublisher(opts...)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		if err := p.Publish(ctx, m.Subject, m.ID, m.Data); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Wait(ctx); err != nil {
		t.Fatal(err)
	}
}
