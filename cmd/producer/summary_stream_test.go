package main

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/bus"
	"github.com/dittolab/ditto/internal/bus/bustest"
)

// publishEvents publishes the events of one run attempt, numbered from seq 1.
func publishEvents(t *testing.T, ctx context.Context, p *bus.Publisher, study, run string, attempt int, payloads ...events.Payload) {
	t.Helper()
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	for i, pl := range payloads {
		e := events.New(study, run, at.Add(time.Duration(i)*time.Second), pl)
		e.Seq, e.Attempt = int64(i+1), attempt
		e.Source = events.Source{Kind: events.SourceHarness, ID: "test"}
		if err := p.PublishEvent(ctx, &e); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSummarize: `producer summary` counts, per study, the events by type, the distinct runs
// started, the runs finished and the runs expected, and the messages that are not events; it
// reads the whole stream, over several fetches.
func TestSummarize(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b := bustest.NewServer(t).Connect(t)
	if sum, err := Summarize(ctx, b); err != nil || sum.Messages != 0 || len(sum.Studies) != 0 {
		t.Fatalf("Summarize(empty stream) = %+v, %v; want nothing", sum, err)
	}
	p, err := b.NewPublisher()
	if err != nil {
		t.Fatal(err)
	}
	started := events.RunStarted{Task: "renal_dosing", Model: "sim-steady", Condition: "harness", Components: []string{}}
	finished := events.RunFinished{Status: events.StatusSucceeded, Success: true, Output: events.MustCanonical("ok")}
	called := events.ToolCalled{CallID: "c1", Tool: "load", Args: events.MustCanonical(map[string]any{"path": "a"})}
	publishEvents(t, ctx, p, "alpha", events.StudyRun, 1, events.StudyDefined{Name: "alpha", ExpectedRuns: 3,
		Cells: []events.Cell{{Task: "renal_dosing", Model: "sim-steady", Condition: "harness", Runs: 3}}})
	publishEvents(t, ctx, p, "alpha", "r1", 1, started, called, finished)
	publishEvents(t, ctx, p, "alpha", "r2", 1, started)
	publishEvents(t, ctx, p, "alpha", "r2", 2, started, finished) // a second attempt: one run still

	const modelCalls = 1500 // more than one fetch of the read
	beta := []events.Payload{started}
	for i := 0; i < modelCalls; i++ {
		beta = append(beta, events.ModelCalled{Model: "sim-steady", PromptTokens: int64(i)})
	}
	publishEvents(t, ctx, p, "beta", "b1", 1, beta...)
	if err := p.Publish(ctx, "ditto.events.beta.b2.tool.called", "junk-1", []byte("{not an event")); err != nil {
		t.Fatal(err)
	}
	if err := p.Wait(ctx); err != nil {
		t.Fatal(err)
	}

	got, err := Summarize(ctx, b)
	if err != nil {
		t.Fatalf("Summarize = %v", err)
	}
	s, err := b.Stream(ctx, events.EventsStream)
	if err != nil {
		t.Fatal(err)
	}
	want := Summary{
		Messages: 1 + 3 + 1 + 2 + 1 + modelCalls + 1, Bytes: s.CachedInfo().State.Bytes, Undecoded: 1,
		Studies: []StudySummary{
			{Study: "alpha", Events: 7, Runs: 2, Finished: 2, Expected: 3, ByType: map[events.Type]int{
				events.TypeStudyDefined: 1, events.TypeRunStarted: 3, events.TypeToolCalled: 1, events.TypeRunFinished: 2}},
			{Study: "beta", Events: 1 + modelCalls, Runs: 1, ByType: map[events.Type]int{
				events.TypeRunStarted: 1, events.TypeModelCalled: modelCalls}},
		},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Summarize() = %+v\nwant %+v", got, want)
	}

	var out strings.Builder
	got.Print(&out)
	for _, line := range []string{
		"DITTO_EVENTS: 1509 messages, ",
		" bytes, 1 undecodable\n",
		"alpha  7       2     2         3         run.started=3 run.finished=2 study.defined=1 tool.called=1",
		"beta   1501    1     0         -         model.called=1500 run.started=1",
	} {
		if !strings.Contains(out.String(), line) {
			t.Errorf("Print() lacks %q:\n%s", line, out.String())
		}
	}
}
