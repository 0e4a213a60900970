package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/analysis"
	"github.com/dittolab/ditto/internal/bus/bustest"
	"github.com/dittolab/ditto/internal/queryapi"
	"github.com/dittolab/ditto/internal/report"
	"github.com/dittolab/ditto/internal/warehouse"
)

// mixedStudy is a study of one cell with 3 succeeded runs, 2 errored (missing key), 1
// finished run whose history has a gap (seq 2 never arrived) and 1 still running.
func mixedStudy() []events.Envelope {
	base := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	var out []events.Envelope
	emit := func(run string, seq int64, at time.Duration, p events.Payload) {
		e := events.New("mixed", run, base.Add(at), p)
		e.Seq, e.Source = seq, events.Source{Kind: events.SourceHarness, ID: "w1"}
		out = append(out, e)
	}
	start := events.RunStarted{Task: "credit_ecl", Model: "gpt-x", Condition: "baseline", Components: []string{}}
	for i := range 7 {
		run, at := fmt.Sprintf("r-%d", i), time.Duration(i)*time.Second
		emit(run, 1, at, start)
		switch {
		case i < 3:
			emit(run, 2, at+100*time.Millisecond, events.RunFinished{Status: events.StatusSucceeded, Success: true})
		case i < 5:
			emit(run, 2, at+100*time.Millisecond, events.RunFinished{Status: events.StatusErrored,
				Cause: events.Cause{Kind: events.CauseMissingKey, Permanent: true, Detail: "OPENAI_API_KEY is unset"}})
		case i == 5: // seq 2 lost: a gap
			emit(run, 3, at+100*time.Millisecond, events.RunFinished{Status: events.StatusSucceeded, Success: true})
		}
	}
	return out
}

// TestStatusHealthzReportAgree: analyzer status, /healthz and the report count the same runs of
// a study holding succeeded, errored, gapped and running runs (the issue: /healthz said 12 fold
// errors where the projection held 1); the report's first section is the runs not scored, with
// the errored runs' cause.
func TestStatusHealthzReportAgree(t *testing.T) {
	b := bustest.NewServer(t).Connect(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pub, err := b.NewPublisher()
	if err != nil {
		t.Fatal(err)
	}
	envs := mixedStudy()
	for i := range envs {
		if err := pub.PublishEvent(ctx, &envs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := pub.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	w, err := warehouse.Open(ctx, warehouse.Config{Path: filepath.Join(t.TempDir(), "ditto.duckdb")})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.CatchUp(ctx, b, warehouse.IngestConfig{BatchWait: 20 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	qs, err := queryapi.NewServer(w.DB(), queryapi.Config{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(qs)
	defer srv.Close()
	want := queryapi.RunCounts{Runs: 7, ScoredRuns: 3, ErroredRuns: 2, IncompleteRuns: 2, FoldErrors: 1}

	resp, err := http.Get(srv.URL + "/healthz?runs=1")
	if err != nil {
		t.Fatal(err)
	}
	var h queryapi.Health
	err = json.NewDecoder(resp.Body).Decode(&h)
	resp.Body.Close()
	if err != nil || h.Runs == nil || *h.Runs != want {
		t.Errorf("/healthz runs = %+v (decode: %v; error: %q), want %+v", h.Runs, err, h.Error, want)
	}

	var st bytes.Buffer
	if err := status(ctx, statusConfig{target: target{url: srv.URL}}, &st); err != nil {
		t.Fatal(err)
	}
	line := fmt.Sprintf("incomplete %d (%d with a gap or a refused event), succeeded %d, errored %d",
		want.IncompleteRuns, want.FoldErrors, want.ScoredRuns, want.ErroredRuns)
	if !strings.Contains(st.String(), line) {
		t.Errorf("analyzer status =\n%s\nlacks %q", st.String(), line)
	}

	r, err := report.Build(ctx, analysis.SQLQuerier(w.DB()), "mixed", report.Options{Analysis: analysis.Options{Permutations: 100, Seed: 1}})
	if err != nil {
		t.Fatal(err)
	}
	got := queryapi.RunCounts{Runs: r.Basis.Runs, ScoredRuns: r.Basis.CountedRuns, ErroredRuns: r.Basis.ErroredRuns,
		AbortedRuns: r.Basis.AbortedRuns, IncompleteRuns: r.Basis.IncompleteRuns, FoldErrors: r.Basis.FoldErrors}
	if got != want {
		t.Errorf("report basis counts = %+v, want %+v", got, want)
	}
	var md bytes.Buffer
	if err := report.WriteMarkdown(&md, r); err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(md.String(), "\n## ")
	first, _, _ := strings.Cut(rest, "\n## ")
	for _, s := range []string{"Runs not scored", "2 of the 7 runs errored", "2 × missing_key (permanent, not retried): OPENAI_API_KEY is unset",
		"2 runs are incomplete", "1 of them"} {
		if !strings.Contains(first, s) {
			t.Errorf("the report's first section lacks %q:\n## %s", s, first)
		}
	}
}

// TestHealthzIngestCarriesIDLookups: /healthz's ingest status carries the ingester's count of
// batches whose ids were looked up in DuckDB, as the stats line does.
func TestHealthzIngestCarriesIDLookups(t *testing.T) {
	raw, err := json.Marshal(ingestStatus(warehouse.Stats{Events: 10, Duplicates: 2, IDLookups: 3}))
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	if got["id_lookups"] != 3.0 || got["duplicates"] != 2.0 {
		t.Errorf("ingest status = %s, want id_lookups 3 and duplicates 2", raw)
	}
}
