package main

// What `producer summary` prints: DITTO_EVENTS read from the first message and summarised by
// study and event type (runs, finished runs, undecodable messages), without DuckDB.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"text/tabwriter"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/bus"
	"github.com/nats-io/nats.go/jetstream"
)

// StudySummary counts one study's events.
type StudySummary struct {
	Study    string
	Events   int
	ByType   map[events.Type]int
	Runs     int // distinct runs with a run.started
	Finished int // run.finished events
	Expected int // from study.defined, 0 if none
}

// Summary is what the events stream holds.
type Summary struct {
	Messages  uint64 // stream messages
	Bytes     uint64
	Undecoded int // messages that do not decode as events
	Studies   []StudySummary
}

// Summarize reads every message DITTO_EVENTS holds when it is called, in stream order.
func Summarize(ctx context.Context, b *bus.Bus) (Summary, error) {
	s, err := b.Stream(ctx, events.EventsStream)
	if err != nil {
		return Summary{}, fmt.Errorf("summary: %w", err)
	}
	state := s.CachedInfo().State
	sum := Summary{Messages: state.Msgs, Bytes: state.Bytes}
	studies := map[string]*StudySummary{}
	runs := map[string]bool{}
	err = s.Read(ctx, "", state.Msgs, func(msg jetstream.Msg) error {
		e, err := events.Decode(msg.Data())
		if err != nil {
			sum.Undecoded++
			return nil
		}
		st := studies[e.Study]
		if st == nil {
			st = &StudySummary{Study: e.Study, ByType: map[events.Type]int{}}
			studies[e.Study] = st
		}
		st.Events++
		st.ByType[e.Type]++
		switch p := e.Payload.(type) {
		case events.RunStarted:
			if key := e.Study + "/" + e.Run; !runs[key] {
				runs[key] = true
				st.Runs++
			}
		case events.RunFinished:
			st.Finished++
		case events.StudyDefined:
			st.Expected = p.ExpectedRuns
		}
		return nil
	})
	// A read cut short summarises what was delivered, as it always has.
	if err != nil && !errors.Is(err, bus.ErrShortRead) {
		return sum, fmt.Errorf("summary: %w", err)
	}
	for _, st := range studies {
		sum.Studies = append(sum.Studies, *st)
	}
	sort.Slice(sum.Studies, func(i, j int) bool { return sum.Studies[i].Study < sum.Studies[j].Study })
	return sum, nil
}

// Print writes the summary as aligned text.
func (s Summary) Print(w io.Writer) {
	fmt.Fprintf(w, "DITTO_EVENTS: %d messages, %d bytes, %d undecodable\n", s.Messages, s.Bytes, s.Undecoded)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "study\tevents\truns\tfinished\texpected\ttop event types")
	for _, st := range s.Studies {
		type kv struct {
			t events.Type
			n int
		}
		var kvs []kv
		for t, n := range st.ByType {
			kvs = append(kvs, kv{t, n})
		}
		sort.Slice(kvs, func(i, j int) bool { return kvs[i].n > kvs[j].n || kvs[i].n == kvs[j].n && kvs[i].t < kvs[j].t })
		top := ""
		for i, x := range kvs {
			if i == 4 {
				break
			}
			top += fmt.Sprintf("%s=%d ", x.t, x.n)
		}
		exp := "-"
		if st.Expected > 0 {
			exp = fmt.Sprint(st.Expected)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%s\n", st.Study, st.Events, st.Runs, st.Finished, exp, top)
	}
	tw.Flush()
}
