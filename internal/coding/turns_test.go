package coding_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/bus/bustest"
	"github.com/dittolab/ditto/internal/condition"
	"github.com/dittolab/ditto/internal/llm"
	"github.com/dittolab/ditto/internal/warehouse"
	"github.com/dittolab/ditto/internal/warehouse/warehousetest"
)

// TestCodingRunsTurnsAreTheAgents: a context-managed coding run (T3, whose summaries are
// model calls of purpose summarize) stored through NATS in DuckDB has as many turns in the
// coding_runs view as the agent made model calls; its summarization calls are not turns.
func TestCodingRunsTurnsAreTheAgents(t *testing.T) {
	m := &reader{turns: []func(llm.Request) []llm.ToolCall{reads(), reads(), reads(), reads(), reads(), reads()}}
	_, rec := runContext(t, condition.Context{Tier: "T3", Budget: 4000}, nil, m)
	acts, summaries := 0, 0
	for _, p := range rec.of(events.TypeModelCalled) {
		if p.(events.ModelCalled).Purpose == events.PurposeSummarize {
			summaries++
		} else {
			acts++
		}
	}
	if summaries == 0 || acts != len(m.reqs) {
		t.Fatalf("%d summarization calls and %d agent calls (%d agent requests); want summaries, and a call per request", summaries, acts, len(m.reqs))
	}
	clock := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	envs := make([]events.Envelope, len(rec.ps))
	for i, p := range rec.ps {
		envs[i] = events.New("turns", "r-0", clock.Add(time.Duration(i)*time.Millisecond), p)
		envs[i].ID = fmt.Sprintf("01TURNS%019d", i+1)
		envs[i].Seq = int64(i + 1)
		envs[i].Source = events.Source{Kind: events.SourceHarness, ID: "w"}
	}
	b := bustest.NewServer(t).Connect(t)
	warehousetest.Publish(t, b, warehousetest.EnvelopeMsgs(t, envs))
	db := warehousetest.Ingest(t, b, warehouse.IngestConfig{BatchSize: 64, BatchWait: 20 * time.Millisecond}).DB()
	if got := warehousetest.Count(t, db, "SELECT turns FROM coding_runs WHERE study = 'turns' AND run = 'r-0'"); got != int64(acts) {
		t.Errorf("coding_runs.turns = %d, want %d (the agent's calls; %d summarization calls left out)", got, acts, summaries)
	}
}
