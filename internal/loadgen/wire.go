package loadgen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/dittolab/ditto/events"
)

// wireEvent is one encoded event ready to publish.
type wireEvent struct {
	subject, id string
	data        []byte
}

// tplEvent is one event of a template run, encoded once, with the values that change per
// instance.
type tplEvent struct {
	typ            events.Type
	data           []byte
	id, run, stamp []byte // the quoted JSON values as they appear in data
	offset         time.Duration
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
			tpl = append(tpl, tplEvent{typ: e.Type, data: data, id: quote(e.ID), run: quote(e.Run), stamp: stamp,
				offset: e.Time.Sub(t0)})
		}
		w.tpls = append(w.tpls, tpl)
	}
	return w, nil
}

func quote(s string) []byte { return []byte(`"` + s + `"`) }

// next returns the events of a new run starting at t.
func (w *wireRuns) next(t time.Time) ([]wireEvent, error) {
	tpl := w.tpls[w.n%len(w.tpls)]
	run := fmt.Sprintf("run-%07d", w.n)
	w.n++
	out := make([]wireEvent, 0, len(tpl))
	for _, te := range tpl {
		at := t.Add(te.offset)
		id := events.NewID(at)
		stamp, _ := json.Marshal(at.UTC())
		data := bytes.Replace(te.data, append([]byte(`"id":`), te.id...), append([]byte(`"id":`), quote(id)...), 1)
		data = bytes.Replace(data, append([]byte(`"run":`), te.run...), append([]byte(`"run":`), quote(run)...), 1)
		data = bytes.Replace(data, append([]byte(`"time":`), te.stamp...), append([]byte(`"time":`), stamp...), 1)
		subject, err := events.Subject(w.study, run, te.typ)
		if err != nil {
			return nil, err
		}
		out = append(out, wireEvent{subject: subject, id: id, data: data})
	}
	return out, nil
}
