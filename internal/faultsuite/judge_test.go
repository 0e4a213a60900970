package faultsuite

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dittolab/ditto/internal/loadgen"
)

// The reattaches are read from the analyzer's stats lines: one release between each two lines
// whose count grew, none where it did not, and one since the analyzer began when the first line
// counts some already.
func TestReattachReleases(t *testing.T) {
	began := time.Date(2026, 12, 6, 3, 0, 0, 0, time.UTC)
	log := strings.Join([]string{
		`time=2026-12-06T02:59:58.000Z level=INFO msg=ingesting db=x nats=y`,
		`warehouse: batch of 10240: fetch=1ms`,
		`time=2026-12-06T03:00:03.000Z level=INFO msg=ingest watermark=0 events=0 reattaches=0 restarts=0 rss_mib=200.0`,
		`time=2026-12-06T03:00:08.000Z level=INFO msg=ingest watermark=5 events=5 reattaches=0 restarts=0 rss_mib=210.0`,
		`warehouse: reattach 25ms`,
		`time=2026-12-06T03:00:13.000Z level=INFO msg=ingest watermark=9 events=9 reattaches=1 restarts=0 rss_mib=100.0`,
		`time=2026-12-06T03:00:18.000Z level=WARN msg="something else" reattaches=7`,
		`time=2026-12-06T03:00:18.500Z level=INFO msg=ingest watermark=9 events=9 reattaches=1 restarts=0 rss_mib=150.0`,
		`time=2026-12-06T03:00:23.500Z level=INFO msg=ingest watermark=9 events=9 reattaches=3 restarts=0 rss_mib=90.0`,
	}, "\n")
	path := filepath.Join(t.TempDir(), "analyzer.log")
	if err := os.WriteFile(path, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := reattachReleases(path, began)
	if err != nil {
		t.Fatal(err)
	}
	// Each from the line before, less statsSkew.
	want := []loadgen.Release{{From: 3 * time.Second, To: 13 * time.Second}, {From: 13500 * time.Millisecond, To: 23500 * time.Millisecond}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("releases %v, want %v", got, want)
	}
	// A count at the first line: since whenever the analyzer began.
	first := strings.Replace(log, "events=0 reattaches=0", "events=0 reattaches=2", 1)
	if err := os.WriteFile(path, []byte(first), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := reattachReleases(path, began); err != nil || len(got) != 3 || got[0].To != 3*time.Second || got[0].From > -time.Hour {
		t.Errorf("with 2 reattaches at the first line: %v, %v", got, err)
	}
	// No stats line at all, or an unreadable time: an error, not an empty list.
	for _, bad := range []string{"warehouse: nothing here\n", "time=yesterday level=INFO msg=ingest reattaches=0\n"} {
		if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		if got, err := reattachReleases(path, began); err == nil {
			t.Errorf("log %q: releases %v and no error", bad, got)
		}
	}
}

// TestJudgeLoadAgain judges again the memory of a kept load run (make load with
// DITTO_FAULT_KEEP, then make load-judge KEPT=<its directory>): the analyzer's around the
// reattaches of its log, and prints the verdicts. A report written before load.json said when
// publishing began takes it as the report's last change less its end-to-end time. Given
// several directories (KEPT="<one> <another>"), runs of the same load at the same code, it
// also judges each process's memory over all of them together (loadgen.PoolMemory) and prints
// that verdict: the interval of the same half's slope, narrowed as more runs narrow it.
func TestJudgeLoadAgain(t *testing.T) {
	requireEnv(t, "DITTO_LOAD_JUDGE")
	var dirs []string
	for _, d := range strings.Fields(os.Getenv("DITTO_LOAD_JUDGE")) {
		if slices.Contains(dirs, filepath.Clean(d)) {
			t.Fatalf("%s given twice: a run is not pooled with itself", d)
		}
		dirs = append(dirs, filepath.Clean(d))
	}
	var reps []loadgen.Report
	for _, dir := range dirs {
		reps = append(reps, judgeKept(t, dir))
	}
	if len(reps) < 2 {
		return
	}
	for i, rep := range reps[1:] {
		if rep.Study != reps[0].Study || rep.Rate != reps[0].Rate || rep.Duration != reps[0].Duration {
			t.Fatalf("%s: %s at %g events/s for %s, %s: %s at %g for %s: not runs of the same load, not pooled",
				dirs[0], reps[0].Study, reps[0].Rate, reps[0].Duration, dirs[i+1], rep.Study, rep.Rate, rep.Duration)
		}
	}
	for _, m := range reps[0].Memory {
		var runs []loadgen.Memory
		for _, rep := range reps {
			for _, o := range rep.Memory {
				if o.Name == m.Name {
					runs = append(runs, o)
				}
			}
		}
		p, err := loadgen.PoolMemory(runs)
		if err != nil {
			t.Logf("%s over %d runs: not pooled: %v", m.Name, len(runs), err)
			continue
		}
		t.Logf("%s over %d runs pooled: peaks %+.2f, %+.2f ± %.2f (Q %.2f); floors %+.2f, %+.2f ± %.2f (Q %.2f) MiB/min; %s",
			m.Name, len(runs), p.FirstSlope, p.SecondSlope, p.SecondSlopeHalfWidth, p.PeaksQ, p.FirstFloorSlope, p.SecondFloorSlope,
			p.SecondFloorSlopeHalfWidth, p.FloorsQ, p.Verdict)
		for _, q := range []struct {
			series string
			q      float64
		}{{"peaks'", p.PeaksQ}, {"floors'", p.FloorsQ}} {
			if k := float64(len(runs) - 1); q.q > k {
				t.Logf("%s: the runs' %s slopes differ by more than their intervals allow (Q above %g): their interval was widened by the spread between them",
					m.Name, q.series, k)
			}
		}
	}
}

// judgeKept judges again the memory of the run kept in dir (TestJudgeLoadAgain), writes its
// load.json back and returns its report.
func judgeKept(t *testing.T, dir string) loadgen.Report {
	t.Helper()
	report := filepath.Join(dir, "load.json")
	raw, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	var rep loadgen.Report
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatalf("%s: %v", report, err)
	}
	if rep.Began.IsZero() {
		fi, err := os.Stat(report)
		if err != nil {
			t.Fatal(err)
		}
		rep.Began = fi.ModTime().Add(-rep.EndToEnd).UTC()
		t.Logf("%s does not say when publishing began: taken as its last change less the end-to-end time, %s", report, rep.Began.Format(time.RFC3339Nano))
	}
	before := map[string]loadgen.Memory{}
	for _, m := range rep.Memory {
		before[m.Name] = m
	}
	if err := judgeAroundReattaches(&rep, filepath.Join(dir, "analyzer.log"), report); err != nil {
		t.Fatal(err)
	}
	for _, m := range rep.Memory {
		b := before[m.Name]
		t.Logf("%s: %s: peaks %+.2f, %+.2f ± %.2f; floors %+.2f, %+.2f ± %.2f MiB/min; %s (before: floors %+.2f, %+.2f ± %.2f; %s)", dir, m.Name,
			m.FirstSlope, m.SecondSlope, m.SecondSlopeHalfWidth, m.FirstFloorSlope, m.SecondFloorSlope, m.SecondFloorSlopeHalfWidth, m.Verdict,
			b.FirstFloorSlope, b.SecondFloorSlope, b.SecondFloorSlopeHalfWidth, b.Verdict)
	}
	return rep
}
