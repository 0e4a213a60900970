package schedule_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/report"
	"github.com/dittolab/ditto/internal/schedule"
	"github.com/jonboulle/clockwork"
)

// releases makes a production study whose release r2 regressed: n identical, successful runs
// of r1, then n runs of r2, each different and failing, spending twice the tokens; all of them
// of one input (INV-1), hours before base, outside any drift window.
func releases(study string, n int, base time.Time) []events.Envelope {
	var out []events.Envelope
	for i := range n {
		out = append(out, prodRun(study, fmt.Sprintf("r1-%03d", i), "r1", base.Add(-10*time.Hour+time.Duration(i)*time.Second), "INV-1", `{"id":"INV-1"}`, true, 1000)...)
		out = append(out, prodRun(study, fmt.Sprintf("r2-%03d", i), "r2", base.Add(-9*time.Hour+time.Duration(i)*time.Second),
			"INV-1", fmt.Sprintf(`{"id":"INV-1","page":%d}`, i), false, 2000)...)
	}
	return out
}

func (e *env) scheduler(t *testing.T, clock clockwork.Clock) *schedule.Scheduler {
	t.Helper()
	cfg := e.config("0 * * * *")
	cfg.Clock = clock
	s, err := schedule.New(e.w.DB(), nil, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func made(res *schedule.RunResult) []string {
	var out []string
	for _, g := range res.Reports {
		out = append(out, g.Name)
	}
	return out
}

// TestBackfillRegeneratesReport: runs back-filled with timestamps older than every stored event
// regenerate the study's report at the next run. The schedule compared event times and skipped
// the study until an unrelated newer event arrived.
func TestBackfillRegeneratesReport(t *testing.T) {
	e := setup(t)
	base := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	publish(t, e.b, good("svc", "a", 5, base.Add(-30*time.Minute)))
	e.waitRuns(t, "svc", 5)
	s := e.scheduler(t, clockwork.NewFakeClockAt(base))
	ctx := context.Background()
	if res, err := s.RunOnce(ctx); err != nil || !slices.Contains(made(res), "svc") {
		t.Fatalf("first run: %v, %v; want the report of svc", res, err)
	}
	if res, err := s.RunOnce(ctx); err != nil || slices.Contains(made(res), "svc") || !slices.Contains(res.Skipped, "svc") {
		t.Fatalf("run without new events: made %v, skipped %v, %v; want svc skipped", made(res), res.Skipped, err)
	}
	// A late import: runs of two days ago.
	publish(t, e.b, good("svc", "old", 3, base.Add(-48*time.Hour)))
	e.waitRuns(t, "svc", 8)
	res, err := s.RunOnce(ctx)
	if err != nil || !slices.Contains(made(res), "svc") {
		t.Fatalf("run after the back-fill: made %v, skipped %v, %v; want the report of svc again", made(res), res.Skipped, err)
	}
	if r := reportOf(t, e.reports, "svc"); r == nil || r.Basis.CountedRuns != 8 {
		t.Errorf("report of svc after the back-fill = %+v, want 8 runs", r)
	}
}

func badKeys(r *report.Report) []string {
	var out []string
	for _, f := range r.Findings {
		if f.Bad {
			out = append(out, f.Quantity+" "+f.Direction)
		}
	}
	return out
}

// TestAlertOnceAcrossRegenerationsAndRestart: a regression that stays bad through a run that
// skips the study (no new event), three regenerations (new runs arriving) and a restart of the
// scheduler alerts the webhook exactly once. A skipped study forgot its alerted findings, and
// the next regeneration alerted them again.
func TestAlertOnceAcrossRegenerationsAndRestart(t *testing.T) {
	e := setup(t)
	base := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	publish(t, e.b, releases("svc", 12, base))
	e.waitRuns(t, "svc", 24)
	clock := clockwork.NewFakeClockAt(base)
	s := e.scheduler(t, clock)
	ctx := context.Background()
	res, err := s.RunOnce(ctx)
	if err != nil || len(res.Reports) != 1 || len(res.Reports[0].Alerted) == 0 {
		t.Fatalf("first run: %+v, %v; want the report of svc alerting", res, err)
	}
	if got := badKeys(res.Reports[0].Report); len(got) == 0 {
		t.Fatal("no bad finding")
	}
	if e.hooks.count() != 1 {
		t.Fatalf("webhook received %d alerts after the first run, want 1", e.hooks.count())
	}
	clock.Advance(time.Hour)
	if res, err := s.RunOnce(ctx); err != nil || !slices.Contains(res.Skipped, "svc") {
		t.Fatalf("second run: skipped %v, %v; want svc skipped", res.Skipped, err)
	}
	for i := range 3 {
		if i == 2 { // a restart: a new scheduler over the same reports directory
			s = e.scheduler(t, clock)
		}
		publish(t, e.b, prodRun("svc", fmt.Sprintf("r2-late-%d", i), "r2", base.Add(-8*time.Hour+time.Duration(i)*time.Second),
			"INV-1", fmt.Sprintf(`{"id":"INV-1","page":%d}`, 100+i), false, 2000))
		e.waitRuns(t, "svc", 25+i)
		clock.Advance(time.Hour)
		res, err := s.RunOnce(ctx)
		if err != nil || !slices.Contains(made(res), "svc") {
			t.Fatalf("regeneration %d: made %v, %v; want the report of svc", i+1, made(res), err)
		}
		if got := badKeys(res.Reports[0].Report); len(got) == 0 {
			t.Fatalf("regeneration %d: the regression is no longer bad", i+1)
		}
		if len(res.Reports[0].Alerted) != 0 {
			t.Errorf("regeneration %d alerted %d findings again", i+1, len(res.Reports[0].Alerted))
		}
	}
	if got := e.hooks.count(); got != 1 {
		t.Errorf("webhook received %d alerts, want exactly 1", got)
	}
}

// TestNoAlertFromIncompleteRuns: a regressed release holding a run whose history has a gap
// (an event lost) is reported with the finding and says why it is not alerted; no webhook
// fires. When the missing event arrives the run is whole and the next run alerts.
func TestNoAlertFromIncompleteRuns(t *testing.T) {
	e := setup(t)
	base := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	envs := releases("svc", 12, base)
	gapped := prodRun("svc", "r2-gap", "r2", base.Add(-8*time.Hour), "INV-1", `{"id":"INV-1","page":-1}`, false, 2000)
	lost := gapped[2] // tool.called
	gapped = slices.Delete(gapped, 2, 3)
	publish(t, e.b, append(envs, gapped...))
	e.waitRuns(t, "svc", 25)
	clock := clockwork.NewFakeClockAt(base)
	s := e.scheduler(t, clock)
	ctx := context.Background()
	res, err := s.RunOnce(ctx)
	if err != nil || len(res.Reports) != 1 {
		t.Fatalf("first run: %+v, %v", res, err)
	}
	r := res.Reports[0].Report
	if len(badKeys(r)) == 0 {
		t.Fatal("no bad finding")
	}
	for _, f := range r.Findings {
		if f.Bad && f.IncompleteRuns != 1 {
			t.Errorf("finding %s %s: incomplete runs %d, want 1", f.Quantity, f.ConditionB, f.IncompleteRuns)
		}
	}
	if n := len(res.Reports[0].Alerted); n != 0 || e.hooks.count() != 0 {
		t.Errorf("%d findings alerted, webhook received %d; want none while a compared cell holds an incomplete run", n, e.hooks.count())
	}
	md, err := os.ReadFile(filepath.Join(e.reports, "svc", report.FileMarkdown))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "No alert: the compared cells hold 1 incomplete run") {
		t.Errorf("the report does not say why the finding is not alerted:\n%s", md)
	}

	publish(t, e.b, []events.Envelope{lost})
	waitFor(t, 30*time.Second, "the gapped run whole", func() bool {
		var n int
		_ = e.w.DB().QueryRow(`SELECT count(*) FROM run_folds WHERE study = 'svc' AND run = 'r2-gap' AND fold_error IS NULL`).Scan(&n)
		return n == 1
	})
	clock.Advance(time.Hour)
	res, err = s.RunOnce(ctx)
	if err != nil || len(res.Reports) != 1 || len(res.Reports[0].Alerted) == 0 {
		t.Fatalf("run after the gap was filled: %+v, %v; want an alert", res, err)
	}
	if got := e.hooks.count(); got != 1 {
		t.Errorf("webhook received %d alerts, want 1", got)
	}
}

// TestNoDriftAlertFromIncompleteRuns: a drift regression whose last window holds a run with a
// gap is reported, not alerted; the report's first section counts the incomplete run. Once the
// run is whole the next run alerts.
func TestNoDriftAlertFromIncompleteRuns(t *testing.T) {
	e := setup(t)
	base := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	gapped := prodRun("svc", "c-gap", "r1", base.Add(-10*time.Minute), "INV-1", `{"id":"INV-1","page":-1}`, false, 2000)
	lost := gapped[2]
	gapped = slices.Delete(gapped, 2, 3)
	publish(t, e.b, slices.Concat(good("svc", "a", 12, base.Add(-90*time.Minute)), bad("svc", "b", 12, base.Add(-30*time.Minute)), gapped))
	e.waitRuns(t, "svc", 25)
	clock := clockwork.NewFakeClockAt(base)
	s := e.scheduler(t, clock)
	ctx := context.Background()
	res, err := s.RunOnce(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dr := reportOf(t, e.reports, "svc.drift")
	if dr == nil || len(badKeys(dr)) == 0 {
		t.Fatalf("drift report %+v: want bad findings", dr)
	}
	for _, f := range dr.Findings {
		if f.Bad && f.IncompleteRuns != 1 {
			t.Errorf("drift finding %s: incomplete runs %d, want 1", f.Quantity, f.IncompleteRuns)
		}
	}
	if e.hooks.count() != 0 {
		t.Errorf("webhook received %d alerts while the last window holds an incomplete run (%v)", e.hooks.count(), made(res))
	}
	md, err := os.ReadFile(filepath.Join(e.reports, "svc.drift", report.FileMarkdown))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "## Runs not scored\n\n- 1 run of the compared windows has a gap") {
		t.Errorf("the drift report does not begin with the incomplete run:\n%s", md)
	}
	publish(t, e.b, []events.Envelope{lost})
	waitFor(t, 30*time.Second, "the gapped run whole", func() bool {
		var n int
		_ = e.w.DB().QueryRow(`SELECT count(*) FROM run_folds WHERE study = 'svc' AND run = 'c-gap' AND fold_error IS NULL`).Scan(&n)
		return n == 1
	})
	if _, err := s.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if got := e.hooks.count(); got != 1 {
		t.Errorf("webhook received %d alerts once the run is whole, want 1", got)
	}
}
