package loadgen

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/dittolab/ditto/events"
)

// Runs made from templates are new, valid runs: they decode, fold, carry fresh ids and the new
// run id, and sit on their own subjects.
func TestWireRuns(t *testing.T) {
	w, err := newWireRuns("load-wire", 3, 4)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for i := 0; i < 10; i++ {
		start := time.Now()
		wes, err := w.next(start)
		if err != nil {
			t.Fatal(err)
		}
		var history []events.Envelope
		for _, we := range wes {
			e, err := events.Decode(we.data)
			if err != nil {
				t.Fatalf("Decode = %v\n%s", err, we.data)
			}
			if e.ID != we.id || ids[e.ID] {
				t.Fatalf("id %s (wire %s) reused or not substituted", e.ID, we.id)
			}
			ids[e.ID] = true
			if subj, _ := events.SubjectOf(&e); subj != we.subject {
				t.Errorf("subject %s, envelope says %s", we.subject, subj)
			}
			if e.Time.Before(start.Add(-time.Millisecond)) {
				t.Errorf("time %v not restamped (start %v)", e.Time, start)
			}
			history = append(history, e)
		}
		if history[0].Run != wes[0].subject[len("ditto.events.load-wire."):len("ditto.events.load-wire.")+11] {
			t.Errorf("run %s not on subject %s", history[0].Run, wes[0].subject)
		}
		run, err := events.Fold(history)
		if err != nil || !run.Done() {
			t.Fatalf("Fold = %v, done %v", err, run != nil && run.Done())
		}
	}
}

// BenchmarkWireNext is the per-event cost of the templated generator that `producer load` uses.
func BenchmarkWireNext(b *testing.B) {
	w, err := newWireRuns("bench", 1, 64)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	t0 := time.Now()
	b.ResetTimer() // making the templates is not part of it
	for i := 0; i < b.N; i += EventsPerRun {
		if _, err := w.next(t0); err != nil {
			b.Fatal(err)
		}
	}
}

// An event made from a template is byte for byte what encoding the template's envelope with the
// new id, run id and time gives: nothing but those three values changes.
func TestWireRunsEncodeAsTheEvents(t *testing.T) {
	const study, seed = "load-wire", 5
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) // the templates' start (newWireRuns)
	tpl := newRuns(study, seed).next(t0)
	w, err := newWireRuns(study, seed, 1)
	if err != nil {
		t.Fatal(err)
	}
	starts := []time.Time{
		time.Date(2026, 12, 1, 21, 0, 0, 123456789, time.UTC),
		time.Date(2026, 12, 1, 21, 0, 0, 0, time.UTC),                             // no fraction
		time.Date(2026, 12, 1, 22, 0, 0, 5e8, time.FixedZone("CET", 3600)),        // not UTC
		time.Date(2026, 12, 1, 21, 59, 59, 999999999, time.FixedZone("X", -7200)), // the longest
	}
	for round, start := range starts {
		wes, err := w.next(start)
		if err != nil {
			t.Fatal(err)
		}
		if len(wes) != len(tpl) {
			t.Fatalf("next made %d events, the template has %d", len(wes), len(tpl))
		}
		for i, we := range wes {
			e := *tpl[i]
			e.ID, e.Run, e.Time = we.id, fmt.Sprintf("run-%07d", round), start.Add(tpl[i].Time.Sub(t0)).UTC()
			want, err := events.Encode(&e)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(we.data, want) {
				t.Errorf("round %d event %d (%s):\n got %s\nwant %s", round, i, e.Type, we.data, want)
			}
		}
	}
}
