package schedule_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/analysis"
	"github.com/dittolab/ditto/internal/bus"
	"github.com/dittolab/ditto/internal/bus/bustest"
	"github.com/dittolab/ditto/internal/leaktest"
	"github.com/dittolab/ditto/internal/report"
	"github.com/dittolab/ditto/internal/schedule"
	"github.com/dittolab/ditto/internal/warehouse"
	"github.com/jonboulle/clockwork"
	"go.uber.org/goleak"
)

// prodRun is one production run of an agent: a model call and one tool call. Runs with equal
// args and success have identical traces.
// prodRun is a production run of release processing the input named input (its input key),
// calling one tool with args.
func prodRun(study, run, release string, start time.Time, input, args string, success bool, tokens int64) []events.Envelope {
	src := events.Source{Kind: events.SourceProduction, ID: "triage-agent"}
	status, output := events.StatusSucceeded, `{"queue":"standard"}`
	if !success {
		status, output = events.StatusFailed, `{"queue":"review"}`
	}
	payloads := []events.Payload{
		events.RunStarted{Task: "triage", Model: "prod-model", Condition: release, Components: []string{}, Endpoint: "production",
			InputKey: input},
		events.ModelCalled{Model: "prod-model", Purpose: "act", PromptTokens: tokens, LatencyMS: 100},
		events.ToolCalled{CallID: "c1", Tool: "lookup", Args: json.RawMessage(args)},
		events.ToolReturned{CallID: "c1", Tool: "lookup", OK: true, Output: json.RawMessage(`{"found":true}`), DurationMS: 5},
		events.RunFinished{Status: status, Output: json.RawMessage(output), Success: success,
			Totals: events.Totals{PromptTokens: tokens, ModelCalls: 1, ToolCalls: 1, LatencyMS: 400}},
	}
	out := make([]events.Envelope, len(payloads))
	for i, p := range payloads {
		at := start.Add(time.Duration(i) * 100 * time.Millisecond)
		e := events.New(study, run, at, p)
		e.Seq, e.Source = int64(i+1), src
		out[i] = e
	}
	return out
}

func publish(t *testing.T, b *bus.Bus, envs []events.Envelope) {
	t.Helper()
	pub, err := b.NewPublisher()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := range envs {
		if err := pub.PublishEvent(ctx, &envs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := pub.Wait(ctx); err != nil {
		t.Fatal(err)
	}
}

// good makes n identical, successful runs of one input (INV-1) starting at start; bad makes n
// runs of the same input with distinct arguments, failing, spending twice the tokens: a planted
// regression. Every run shares the input key, so determinism is measured within one input
// group, as production figures are.
func good(study, prefix string, n int, start time.Time) []events.Envelope {
	var out []events.Envelope
	for i := range n {
		out = append(out, prodRun(study, fmt.Sprintf("%s-%03d", prefix, i), "r1", start.Add(time.Duration(i)*time.Second), "INV-1", `{"id":"INV-1"}`, true, 1000)...)
	}
	return out
}

func bad(study, prefix string, n int, start time.Time) []events.Envelope {
	var out []events.Envelope
	for i := range n {
		out = append(out, prodRun(study, fmt.Sprintf("%s-%03d", prefix, i), "r1", start.Add(time.Duration(i)*time.Second),
			"INV-1", fmt.Sprintf(`{"id":"INV-1","page":%d}`, i), false, 2000)...)
	}
	return out
}

type env struct {
	b       *bus.Bus
	w       *warehouse.Warehouse
	hooks   *webhook
	reports string
}

// webhook records the alerts it receives.
type webhook struct {
	mu     sync.Mutex
	alerts []schedule.Alert
	srv    *httptest.Server
}

func newWebhook(t *testing.T) *webhook {
	h := &webhook{}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var a schedule.Alert
		if err := json.NewDecoder(r.Body).Decode(&a); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		h.mu.Lock()
		h.alerts = append(h.alerts, a)
		h.mu.Unlock()
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *webhook) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.alerts)
}

func setup(t *testing.T) *env {
	t.Helper()
	srv := bustest.NewServer(t)
	b := srv.Connect(t)
	ctx, cancel := context.WithCancel(context.Background())
	w, err := warehouse.Open(ctx, warehouse.Config{})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = w.Ingest(ctx, b, warehouse.IngestConfig{BatchWait: 20 * time.Millisecond})
	}()
	t.Cleanup(func() { cancel(); <-done; w.Close() })
	return &env{b: b, w: w, hooks: newWebhook(t), reports: t.TempDir()}
}

// waitRuns polls until the study has n finished runs stored.
func (e *env) waitRuns(t *testing.T, study string, n int) {
	t.Helper()
	waitFor(t, 30*time.Second, fmt.Sprintf("%d runs of %s stored", n, study), func() bool {
		var got int
		_ = e.w.DB().QueryRow(`SELECT count(*) FROM run_folds WHERE study = ?`, study).Scan(&got)
		return got >= n
	})
}

func waitFor(t *testing.T, d time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func reportOf(t *testing.T, dir, name string) *report.Report {
	b, err := os.ReadFile(filepath.Join(dir, name, report.FileJSON))
	if err != nil {
		return nil
	}
	var r report.Report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil
	}
	return &r
}

func (e *env) config(cron string) schedule.Config {
	return schedule.Config{Cron: cron, ReportsDir: e.reports, WebhookURL: e.hooks.srv.URL, DriftWindow: time.Hour,
		Report: report.Options{Analysis: analysis.Options{Permutations: 300, Seed: 1}},
		Logger: nil}
}

// TestScheduledReports runs a seconds-level cron: the first report sees the runs stored before
// it; runs that arrive afterwards appear in a later report; a planted regression in the last
// hour alerts the webhook exactly once, and the runs before it (no regression) alert nothing.
func TestScheduledReports(t *testing.T) {
	if testing.Short() {
		t.Skip("seconds-level schedule")
	}
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { leaktest.VerifyNone(t, ignore) }) // after every other cleanup
	e := setup(t)
	now := time.Now()
	// The previous window [now-2h, now-1h) and the last one [now-1h, now) both hold 15
	// identical, successful runs: no drift.
	publish(t, e.b, append(good("prod", "a", 15, now.Add(-90*time.Minute)), good("prod", "b", 15, now.Add(-30*time.Minute))...))
	e.waitRuns(t, "prod", 30)

	s, err := schedule.New(e.w.DB(), e.b, e.config("* * * * * *"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	waitFor(t, 30*time.Second, "the first drift report", func() bool {
		r := reportOf(t, e.reports, "prod.drift")
		return r != nil && r.Basis.CountedRuns == 30
	})
	first := reportOf(t, e.reports, "prod.drift")
	if len(first.Findings) != 0 || e.hooks.count() != 0 {
		t.Fatalf("without a regression: %d findings, %d alerts; want none (%v)", len(first.Findings), e.hooks.count(), first.Findings)
	}
	if r := reportOf(t, e.reports, "prod"); r == nil || r.Metrics.Cells[0].Metrics.N != 30 {
		t.Fatalf("study report of prod: %+v, want 30 runs", r)
	}

	// The regression arrives: 15 more runs of the same input in the last hour, each different
	// and failing.
	publish(t, e.b, bad("prod", "c", 15, now.Add(-20*time.Minute)))
	e.waitRuns(t, "prod", 45)
	waitFor(t, 30*time.Second, "a report with the new runs", func() bool {
		r := reportOf(t, e.reports, "prod.drift")
		return r != nil && r.Basis.CountedRuns == 45
	})
	second := reportOf(t, e.reports, "prod.drift")
	if got := second.Drift[0].B.Metrics.N; got != 30 {
		t.Errorf("last window holds %d runs, want 30", got)
	}
	var bads []string
	for _, f := range second.Findings {
		if f.Bad {
			bads = append(bads, f.Quantity)
		}
	}
	for _, q := range []string{"rr", "success", "tokens"} {
		if !strings.Contains(strings.Join(bads, ","), q) {
			t.Errorf("bad findings %v lack %s", bads, q)
		}
	}
	waitFor(t, 10*time.Second, "the alert", func() bool { return e.hooks.count() >= 1 })
	// Later runs see the same regression and do not alert again.
	st := readState(t, e.reports)
	waitFor(t, 10*time.Second, "two more scheduled runs", func() bool { return readState(t, e.reports).After(st.Add(time.Second)) })
	if got := e.hooks.count(); got != 1 {
		t.Fatalf("webhook received %d alerts, want exactly 1", got)
	}
	a := e.hooks.alerts[0]
	if a.Report != "prod.drift" || len(a.Findings) == 0 || !strings.Contains(a.Text, "fell") {
		t.Errorf("alert = %+v", a)
	}
	// Each report was announced on NATS and ingested as report.published.
	waitFor(t, 10*time.Second, "report.published events", func() bool {
		var n int
		_ = e.w.DB().QueryRow(`SELECT count(*) FROM events WHERE study = 'prod' AND type = 'report.published'`).Scan(&n)
		return n >= 3
	})
}

func readState(t *testing.T, dir string) time.Time {
	b, err := os.ReadFile(filepath.Join(dir, schedule.StateFile))
	if err != nil {
		return time.Time{}
	}
	var st struct {
		LastRun time.Time `json:"last_run"`
	}
	_ = json.Unmarshal(b, &st)
	return st.LastRun
}

// TestMissedRunOnStart: with a fake clock, a schedule that fired while the analyzer was down
// runs once on Start; one that has not fired does not.
func TestMissedRunOnStart(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { leaktest.VerifyNone(t, ignore) }) // after every other cleanup
	e := setup(t)
	base := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	publish(t, e.b, good("svc", "a", 5, base.Add(-30*time.Minute)))
	e.waitRuns(t, "svc", 5)
	clock := clockwork.NewFakeClockAt(base)
	cfg := e.config("0 * * * *") // hourly, on the hour
	cfg.Clock = clock
	s, err := schedule.New(e.w.DB(), nil, cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Never run: nothing was missed.
	if missed, err := s.Missed(clock.Now()); err != nil || missed {
		t.Fatalf("Missed() with no state = %v, %v; want false", missed, err)
	}
	res, err := s.RunOnce(context.Background())
	if err != nil || len(res.Reports) != 2 {
		t.Fatalf("RunOnce() = %d reports, %v; want the study and its drift", len(res.Reports), err)
	}
	if missed, _ := s.Missed(base.Add(59 * time.Minute)); missed {
		t.Error("Missed() before the next hour = true")
	}
	// The analyzer was down over 11:00: Start makes the run at once.
	clock.Advance(3 * time.Hour)
	if missed, _ := s.Missed(clock.Now()); !missed {
		t.Fatal("Missed() after 3 hours down = false")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	if got := readState(t, e.reports); !got.Equal(base.Add(3 * time.Hour)) {
		t.Errorf("last run = %v after Start, want the missed run at %v", got, base.Add(3*time.Hour))
	}
	// No new event: the study report is skipped, the drift report is made again.
	if missed, _ := s.Missed(clock.Now()); missed {
		t.Error("Missed() right after the missed run = true")
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		give schedule.Config
		want error
	}{
		{"five fields", schedule.Config{Cron: "0 6 * * *", ReportsDir: "r"}, nil},
		{"seconds", schedule.Config{Cron: "*/10 * * * * *", ReportsDir: "r"}, nil},
		{"descriptor", schedule.Config{Cron: "@hourly", ReportsDir: "r"}, nil},
		{"bad cron", schedule.Config{Cron: "every day", ReportsDir: "r"}, schedule.ErrConfig},
		{"no dir", schedule.Config{Cron: "@daily"}, schedule.ErrConfig},
		{"bad webhook", schedule.Config{Cron: "@daily", ReportsDir: "r", WebhookURL: "ftp://x"}, schedule.ErrConfig},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.give.Validate(); !errors.Is(err, tc.want) {
				t.Errorf("Validate() = %v, want %v", err, tc.want)
			}
		})
	}
}

// TestDriftReportOwnName: the drift report of production study X and the reports of a study
// named X-drift (production as well, so it has a drift report too) are four reports in four
// directories. The drift report was named X-drift: the two studies wrote one directory and
// shared alert keys.
func TestDriftReportOwnName(t *testing.T) {
	e := setup(t)
	base := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	publish(t, e.b, append(good("svc", "a", 5, base.Add(-30*time.Minute)), good("svc-drift", "b", 4, base.Add(-20*time.Minute))...))
	e.waitRuns(t, "svc", 5)
	e.waitRuns(t, "svc-drift", 4)
	cfg := e.config("0 * * * *")
	cfg.Clock = clockwork.NewFakeClockAt(base)
	s, err := schedule.New(e.w.DB(), nil, cfg)
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.RunOnce(context.Background())
	if err != nil || len(res.Reports) != 4 {
		t.Fatalf("RunOnce() = %d reports, %v; want 4 (two studies, two drift reports)", len(res.Reports), err)
	}
	for _, want := range []struct {
		name, kind, study string
		runs              int64
	}{
		{"svc", report.KindStudy, "svc", 5},
		{"svc.drift", report.KindDrift, "svc", 5},
		{"svc-drift", report.KindStudy, "svc-drift", 4},
		{"svc-drift.drift", report.KindDrift, "svc-drift", 4},
	} {
		r := reportOf(t, e.reports, want.name)
		if r == nil || r.Name != want.name || r.Kind != want.kind || r.Study != want.study || r.Basis.CountedRuns != want.runs {
			t.Errorf("report %s = %+v; want a %s report of %s over %d runs", want.name, r, want.kind, want.study, want.runs)
		}
	}
}
