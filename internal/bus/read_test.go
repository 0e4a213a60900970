package bus_test

import (
	"context"
	"errors"
	"testing"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/bus"
	"github.com/dittolab/ditto/internal/bus/bustest"
	"github.com/nats-io/nats.go/jetstream"
)

// twoRuns publishes events 1…n of study1's run-1 and run-2, interleaved (run-1's at the odd
// stream sequences), to a new server's events stream, and returns the stream.
func twoRuns(ctx context.Context, t *testing.T, n int64) *bus.Stream {
	t.Helper()
	b := bustest.NewServer(t).Connect(t)
	p, _ := b.NewPublisher()
	for i := int64(1); i <= n; i++ {
		for _, run := range []string{"run-1", "run-2"} {
			if err := p.PublishEvent(ctx, testEvent(t, run, i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := p.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	s, err := b.Stream(ctx, events.EventsStream)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestStreamReads(t *testing.T) {
	ctx := ctxT(t)
	const n = 1203 // more than one fetch
	s := twoRuns(ctx, t, n)
	if s.Name() != events.EventsStream || s.CachedInfo().State.Msgs != 2*n {
		t.Errorf("Stream() = %s holding %d, want %s holding %d", s.Name(), s.CachedInfo().State.Msgs, events.EventsStream, 2*n)
	}
	filter, _ := events.Subject("study1", "run-2", ">")
	if got, err := s.Count(ctx, filter); err != nil || got != n {
		t.Errorf("Count(%s) = %d, %v; want %d", filter, got, err, n)
	}
	if got, err := s.Count(ctx, ""); err != nil || got != 2*n {
		t.Errorf("Count(\"\") = %d, %v; want %d", got, err, 2*n)
	}
	counts, err := s.SubjectCounts(ctx, filter)
	if err != nil || len(counts) != 1 || counts["ditto.events.study1.run-2.tool.called"] != n {
		t.Errorf("SubjectCounts(%s) = %v, %v", filter, counts, err)
	}

	// Read delivers the run's events in stream order, and only them.
	var seqs []int64
	var last uint64
	err = s.Read(ctx, filter, n, func(m jetstream.Msg) error {
		meta, err := m.Metadata()
		if err != nil {
			return err
		}
		if meta.Sequence.Stream <= last {
			t.Errorf("stream sequence %d after %d", meta.Sequence.Stream, last)
		}
		last = meta.Sequence.Stream
		e, err := events.Decode(m.Data())
		if err != nil {
			return err
		}
		if e.Run != "run-2" {
			t.Errorf("Read(%s) delivered an event of %s", filter, e.Run)
		}
		seqs = append(seqs, e.Seq)
		return nil
	})
	if err != nil || len(seqs) != n || seqs[0] != 1 || seqs[n-1] != n {
		t.Fatalf("Read(%s, %d) = %v, read %d events", filter, n, err, len(seqs))
	}
	stop := errors.New("enough")
	k := 0
	if err := s.Read(ctx, "", 2*n, func(jetstream.Msg) error {
		if k++; k == 10 {
			return stop
		}
		return nil
	}); !errors.Is(err, stop) || k != 10 {
		t.Errorf("Read stopped by its function after %d = %v, want its error after 10", k, err)
	}
	if err := s.Read(ctx, filter, n+1, func(jetstream.Msg) error { return nil }); !errors.Is(err, bus.ErrShortRead) {
		t.Errorf("Read(one more than stored) = %v, want ErrShortRead", err)
	}

	m, err := s.LastMsg(ctx, "ditto.events.study1.run-1.tool.called")
	if err != nil {
		t.Fatal(err)
	}
	if e, err := events.Decode(m.Data); err != nil || e.Seq != n {
		t.Errorf("LastMsg() holds seq %d (%v), want %d", e.Seq, err, n)
	}
	if _, err := s.LastMsg(ctx, "ditto.events.study1.nobody.tool.called"); !errors.Is(err, jetstream.ErrMsgNotFound) {
		t.Errorf("LastMsg(no such subject) = %v, want ErrMsgNotFound", err)
	}
	if m, err := s.Msg(ctx, 2); err != nil || m.Sequence != 2 {
		t.Errorf("Msg(2) = %v, %v", m, err)
	}
	if _, err := s.Msg(ctx, 10*n); !errors.Is(err, jetstream.ErrMsgNotFound) {
		t.Errorf("Msg(beyond the end) = %v, want ErrMsgNotFound", err)
	}
}

// TestReadThrough: ReadThrough delivers a subject's messages in stream order up to and
// including a given sequence, more than one fetch's worth, and none after it.
func TestReadThrough(t *testing.T) {
	ctx := ctxT(t)
	const n = 1500 // more than one fetch
	s := twoRuns(ctx, t, n)
	filter, _ := events.Subject("study1", "run-2", ">")
	// run-2's messages are the even stream sequences; read through its 1,200th.
	const through = 2 * 1200
	var got int
	var last uint64
	err := s.ReadThrough(ctx, filter, through, func(m jetstream.Msg) error {
		meta, err := m.Metadata()
		if err != nil {
			return err
		}
		if meta.Sequence.Stream <= last || meta.Sequence.Stream%2 != 0 {
			t.Errorf("stream sequence %d after %d, want the next even one", meta.Sequence.Stream, last)
		}
		last = meta.Sequence.Stream
		got++
		return nil
	})
	if err != nil || got != 1200 || last != through {
		t.Errorf("ReadThrough(%s, %d) = %v after %d messages, last %d; want 1200 ending at %d", filter, through, err, got, last, through)
	}
	// A sequence the filter never reaches: the read ends short, with ErrShortRead.
	other, _ := events.Subject("study1", "run-3", ">")
	if err := s.ReadThrough(ctx, other, 10, func(jetstream.Msg) error { return nil }); !errors.Is(err, bus.ErrShortRead) {
		t.Errorf("ReadThrough(%s) = %v, want ErrShortRead", other, err)
	}
}
