package warehouse

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"sort"
	"testing"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/samples"
)

// sampleHistories returns the sample's run attempts, each history sorted by seq.
func sampleHistories(t *testing.T) map[attemptKey][]histEvent {
	t.Helper()
	out := map[attemptKey][]histEvent{}
	for i, line := range bytes.Split(bytes.TrimSpace(samples.Traces), []byte("\n")) {
		e, err := events.Decode(line)
		if err != nil {
			t.Fatal(err)
		}
		if e.Run == events.StudyRun {
			continue
		}
		k := attemptKey{e.Study, e.Run, e.Attempt}
		out[k] = append(out[k], histEvent{env: e, streamSeq: uint64(i + 1)})
	}
	for _, h := range out {
		sortHistory(h)
	}
	return out
}

// sortHistory orders a history as readHistories does: by seq, then by stream sequence.
func sortHistory(h []histEvent) {
	sort.SliceStable(h, func(i, j int) bool {
		if h[i].env.Seq != h[j].env.Seq {
			return h[i].env.Seq < h[j].env.Seq
		}
		return h[i].streamSeq < h[j].streamSeq
	})
}

// trackAll feeds h to a fresh tracker in the order given and returns the attempt's entry.
func trackAll(k attemptKey, h []histEvent, maxEvents int) (*tracker, *openAttempt) {
	tr := newTracker(maxEvents)
	for i := range h {
		tr.add(&item{env: h[i].env, streamSeq: h[i].streamSeq})
	}
	return tr, tr.open[k]
}

// The tracker folds an attempt as its events arrive, in any order, and its row is the one
// foldHistory gives for the sorted history; a history with a hole or a seq taken twice is
// not complete (its fold reads DuckDB).
func TestTrackerFoldsAsHistoryArrives(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	hists := sampleHistories(t)
	if len(hists) == 0 {
		t.Fatal("no run in the sample")
	}
	for k, h := range hists {
		// A second history with a fold error: one more event after run.finished.
		extra := h[len(h)-2]
		extra.env.Seq, extra.env.ID, extra.streamSeq = int64(len(h)+1), extra.env.ID+"X", 1e6
		withError := append(slices.Clone(h), extra)
		for name, h := range map[string][]histEvent{"": h, " with an event after run.finished": withError} {
			want, wantErr := foldHistory(k, h)
			if want == nil {
				t.Fatalf("%v%s: foldHistory gives no row", k, name)
			}
			if wantErr != (name != "") {
				t.Fatalf("%v%s: fold error %v", k, name, wantErr)
			}
			envs := make([]events.Envelope, len(h))
			for i := range h {
				envs[i] = h[i].env
			}
			wantRun, wantFoldErr := events.Fold(envs)
			for trial := 0; trial < 20; trial++ {
				order := slices.Clone(h)
				if trial > 0 {
					rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
				}
				tr, a := trackAll(k, order, 1000)
				if !a.complete() || tr.events != len(h) {
					t.Fatalf("%v%s, arrival %d: complete() = %v, %d events held; want true, %d", k, name, trial, a.complete(), tr.events, len(h))
				}
				if !reflect.DeepEqual(&a.fold.run, wantRun) || fmt.Sprint(a.fold.err) != fmt.Sprint(wantFoldErr) {
					t.Fatalf("%v%s, arrival %d: fold in memory = %+v, %v; events.Fold = %+v, %v", k, name, trial, a.fold.run, a.fold.err, *wantRun, wantFoldErr)
				}
				got, gotErr := a.fold.row(k)
				if !reflect.DeepEqual(got, want) || gotErr != wantErr {
					t.Fatalf("%v%s, arrival %d: row from memory\n%v (fold error %v)\nwant\n%v (%v)", k, name, trial, got, gotErr, want, wantErr)
				}
			}
		}
		for name, bad := range map[string][]histEvent{
			"a hole":          append(slices.Clone(h[:2]), h[3:]...),
			"a seq twice":     append(slices.Clone(h), histEvent{env: h[1].env, streamSeq: 1e6}),
			"no first events": slices.Clone(h[2:]),
		} {
			for trial := 0; trial < 5; trial++ {
				rng.Shuffle(len(bad), func(i, j int) { bad[i], bad[j] = bad[j], bad[i] })
				if _, a := trackAll(k, bad, 1000); a.complete() {
					t.Errorf("%v with %s: complete() = true", k, name)
				}
			}
		}
	}
}

// Beyond maxEvents the oldest entries let their state go and read DuckDB when they fold.
func TestTrackerBound(t *testing.T) {
	hists := sampleHistories(t)
	tr := newTracker(10)
	var keys []attemptKey
	for k, h := range hists {
		keys = append(keys, k)
		for i := range h[:len(h)-1] { // open: no run.finished
			tr.add(&item{env: h[i].env, streamSeq: h[i].streamSeq})
		}
		tr.endBatch(nil)
		if tr.events > 10 {
			t.Fatalf("%d events held, bound 10", tr.events)
		}
	}
	if len(keys) < 2 {
		t.Skip("the sample has one run")
	}
	if a := tr.open[keys[0]]; a == nil || !a.partial || a.complete() {
		t.Errorf("the oldest entry kept its state beyond the bound")
	}
}
