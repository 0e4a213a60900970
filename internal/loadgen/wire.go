package loadgen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/dittolab/ditto/events"
)

// wireEvent is one encoded event ready to publish.
type wireEvent struct {
	subject, id string
	data        []byte
}

// tplEvent is one event of a template run, encoded once, cut where the values that change per
// instance (its id, run id and time) go: data is head, value of fields[0], gaps[0], value of
// fields[1], gaps[1], value of fields[2], gaps[2].
type tplEvent struct {
	typ    events.Type
	size   int // of the template's encoding
	head   []byte
	gaps   [3][]byte
	fields [3]wireField
	offset time.Duration
}

// wireField is a value substituted in a template event's encoding.
type wireField int

const (
	fieldID wireField = iota
	fieldRun
	fieldTime
)

// cut splits data around the values of the three fields, each found as `"key":value`.
func (te *tplEvent) cut(data []byte, values [3][]byte) error {
	type span struct {
		at, end int
		f       wireField
	}
	var spans []span
	for f, key := range [3]string{`"id":`, `"run":`, `"time":`} {
		i := bytes.Index(data, append([]byte(key), values[f]...))
		if i < 0 {
			return fmt.Errorf("loadgen: template %s event: no %s%s in %s", te.typ, key, values[f], data)
		}
		at := i + len(key)
		spans = append(spans, span{at, at + len(values[f]), wireField(f)})
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].at < spans[j].at })
	te.size, te.head = len(data), data[:spans[0].at]
	for k, sp := range spans {
		end := len(data)
		if k+1 < len(spans) {
			end = spans[k+1].at
		}
		if sp.end > end {
			return fmt.Errorf("loadgen: template %s event: overlapping values in %s", te.typ, data)
		}
		te.fields[k], te.gaps[k] = sp.f, data[sp.end:end]
	}
	return nil
}

// wireRuns turns a fixed set of generated runs into an endless supply of new runs: each new
// run is a template's encoded events with a fresh run id, fresh event ids and current times,
// substituted in the bytes. Generating and canonicalising payloads costs far more than the
// analyzer's work per event (see BenchmarkGenerateEncode), and the generator shares the
// machine with what it measures, so it must be cheap. The analyzer sees what a real producer
// sends: distinct, valid events whose payloads vary across the template runs.
type wireRuns struct {
	study string
	tpls  [][]tplEvent
	n     int
}

func newWireRuns(study string, seed uint64, templates int) (*wireRuns, error) {
	g := newRuns(study, seed)
	w := &wireRuns{study: study}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < templates; i++ {
		var tpl []tplEvent
		for _, e := range g.next(t0) {
			data, err := events.Encode(e)
			if err != nil {
				return nil, err
			}
			stamp, _ := json.Marshal(e.Time.UTC())
			te := tplEvent{typ: e.Type, offset: e.Time.Sub(t0)}
			if err := te.cut(data, [3][]byte{quote(e.ID), quote(e.Run), stamp}); err != nil {
				return nil, err
			}
			tpl = append(tpl, te)
		}
		w.tpls = append(w.tpls, tpl)
	}
	return w, nil
}

func quote(s string) []byte { return []byte(`"` + s + `"`) }

// next returns the events of a new run starting at t. Each event's encoding is made with one
// allocation, by appending the template's pieces and the new values: the generator runs
// beside what it measures, and its CPU per event is counted against the rate it offers.
func (w *wireRuns) next(t time.Time) ([]wireEvent, error) {
	tpl := w.tpls[w.n%len(w.tpls)]
	run := fmt.Sprintf("run-%07d", w.n)
	w.n++
	out := make([]wireEvent, 0, len(tpl))
	for _, te := range tpl {
		at := t.Add(te.offset).UTC()
		id := events.NewID(at)
		// The new values are no longer than the template's (ids are of one length, run ids
		// are padded, times are RFC 3339 with up to 9 digits of fraction) but for runs past
		// 9,999,999 and times without a fraction in the template: leave room.
		data := append(make([]byte, 0, te.size+48), te.head...)
		for k, f := range te.fields {
			switch f {
			case fieldID:
				data = append(append(append(data, '"'), id...), '"')
			case fieldRun:
				data = append(append(append(data, '"'), run...), '"')
			case fieldTime:
				data = append(at.AppendFormat(append(data, '"'), time.RFC3339Nano), '"')
			}
			data = append(data, te.gaps[k]...)
		}
		subject, err := events.Subject(w.study, run, te.typ)
		if err != nil {
			return nil, err
		}
		out = append(out, wireEvent{subject: subject, id: id, data: data})
	}
	return out, nil
}
