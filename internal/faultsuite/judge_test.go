package faultsuite

import (
	"encoding/json"
	"fmt"
	"math"
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
	// Every process of any run (a run judged from an older log has no analyzer-less-filter):
	// each is pooled over the runs that have it.
	var names []string
	for _, rep := range reps {
		for _, m := range rep.Memory {
			if !slices.Contains(names, m.Name) {
				names = append(names, m.Name)
			}
		}
	}
	for _, name := range names {
		m := loadgen.Memory{Name: name}
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
	rep := readReport(t, report)
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
		b, ok := before[m.Name]
		if !ok {
			t.Logf("%s: %s: peaks %+.2f, %+.2f ± %.2f; floors %+.2f, %+.2f ± %.2f MiB/min; %s (not in the report before)", dir, m.Name,
				m.FirstSlope, m.SecondSlope, m.SecondSlopeHalfWidth, m.FirstFloorSlope, m.SecondFloorSlope, m.SecondFloorSlopeHalfWidth, m.Verdict)
			continue
		}
		t.Logf("%s: %s: peaks %+.2f, %+.2f ± %.2f; floors %+.2f, %+.2f ± %.2f MiB/min; %s (before: floors %+.2f, %+.2f ± %.2f; %s)", dir, m.Name,
			m.FirstSlope, m.SecondSlope, m.SecondSlopeHalfWidth, m.FirstFloorSlope, m.SecondFloorSlope, m.SecondFloorSlopeHalfWidth, m.Verdict,
			b.FirstFloorSlope, b.SecondFloorSlope, b.SecondFloorSlopeHalfWidth, b.Verdict)
	}
	return rep
}

// readReport reads the load report at path.
func readReport(t *testing.T, path string) loadgen.Report {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rep loadgen.Report
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return rep
}

// The analyzer less its filter: each sample between two stats lines that give the filter the
// same size less that size, the samples between two that differ left out; judged, a process
// whose only growth is the filter's steps is flat once they are taken out, while the analyzer's
// own RSS grows by them.
func TestAddLessFilter(t *testing.T) {
	rep, lines, restKiB := filterLoad()
	path := filepath.Join(t.TempDir(), "analyzer.log")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for pass := 0; pass < 2; pass++ { // a second call (a kept run judged again) gives the same
		if err := addLessFilter(&rep, path); err != nil {
			t.Fatal(err)
		}
		// Left out: the samples before the first line (2.5 s), and those between the lines
		// before and after each step (597.5 and 602.5 s, 1497.5 and 1502.5 s).
		leftOut := func(d time.Duration) bool {
			s := d.Seconds()
			return s < 2.5 || (s > 597.5 && s < 602.5) || (s > 1497.5 && s < 1502.5)
		}
		left := 0
		for _, s := range rep.Samples {
			v, ok := s.RSS[lessFilterName]
			switch {
			case ok == leftOut(s.At):
				t.Errorf("pass %d: at %s: kept %v, want %v", pass, s.At, ok, !leftOut(s.At))
			case !ok:
				left++
			case v != restKiB(s.At):
				t.Errorf("pass %d: at %s: %d KiB less the filter, want %d", pass, s.At, v, restKiB(s.At))
			}
		}
		if left != 2+5+5 {
			t.Errorf("pass %d: %d samples left out, want 12", pass, left)
		}
		if n := len(rep.Memory); n != 2 || rep.Memory[1].Name != lessFilterName || rep.Memory[1].PID != 7 ||
			rep.Memory[1].PeakKiB != 400<<10+19*(2<<10) {
			t.Errorf("pass %d: memory %+v, want the analyzer's and %s's with the rest's peak", pass, rep.Memory, lessFilterName)
		}
	}
	for _, name := range []string{"analyzer", lessFilterName} {
		if err := rep.JudgeMemory(name, nil); err != nil {
			t.Fatal(err)
		}
	}
	whole, less := rep.Memory[0], rep.Memory[1]
	if whole.SecondSlope < 1 || whole.Verdict == loadgen.MemBounded {
		t.Errorf("the analyzer with a 24 MiB step at 25 minutes: peaks' second slope %+.2f, %s; want more than 1 MiB/min, not bounded",
			whole.SecondSlope, whole.Verdict)
	}
	if math.Abs(less.FirstSlope) > 0.05 || math.Abs(less.SecondSlope) > 0.05 || less.Verdict != loadgen.MemBounded {
		t.Errorf("less the filter: peaks' slopes %+.2f, %+.2f, %s; want flat and bounded", less.FirstSlope, less.SecondSlope, less.Verdict)
	}

	// A log without the filter's size, or an analyzer not watched: an error, nothing added.
	bare := loadgen.Report{Began: rep.Began, Duration: rep.Duration, Samples: rep.Samples[:10], Memory: []loadgen.Memory{{Name: "analyzer"}}}
	if err := os.WriteFile(path, []byte(`time=2026-12-07T03:00:05Z level=INFO msg=ingest reattaches=0 rss_mib=1.0`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := addLessFilter(&bare, path); err == nil || len(bare.Memory) != 1 {
		t.Errorf("a log without folded_mib: %v, memory %+v; want an error and nothing added", err, bare.Memory)
	}
	bare.Memory = []loadgen.Memory{{Name: "producer"}}
	if err := addLessFilter(&bare, path); err == nil {
		t.Error("no analyzer watched: no error")
	}
}

// filterLoad is a 30-minute load report of an analyzer whose memory is a bounded swing plus
// a filter of folded attempts that grows in two steps, and its stats lines every 5 s. restKiB
// is its memory less the filter at a time.
func filterLoad() (rep loadgen.Report, lines []string, restKiB func(time.Duration) int64) {
	began := time.Date(2026, 12, 7, 3, 0, 0, 0, time.UTC)
	dur := 30 * time.Minute
	// The filter's size when read at d: a level of 4 MiB added at 10 minutes 2 s, one of 24 at
	// 25 minutes 1 s (after the stats line of 24:57.5, before that of 25:02.5).
	filterKiB := func(d time.Duration) int64 {
		switch {
		case d >= 25*time.Minute+time.Second:
			return 29 << 10
		case d >= 10*time.Minute+2*time.Second:
			return 5 << 10
		}
		return 1 << 10
	}
	// The rest swings by 38 MiB in 20-second cycles above a constant.
	restKiB = func(d time.Duration) int64 { return 400<<10 + int64(d/time.Second%20)*(2<<10) }
	rep = loadgen.Report{Began: began, Duration: dur, Memory: []loadgen.Memory{{Name: "analyzer", PID: 7}}}
	for d := time.Second; d <= dur; d += time.Second {
		rep.Samples = append(rep.Samples, loadgen.Sample{At: d, Published: int(d / time.Millisecond), Stored: int(d / time.Millisecond),
			RSS: map[string]int64{"analyzer": restKiB(d) + filterKiB(d)}})
	}
	for d := 2500 * time.Millisecond; d <= dur+5*time.Second; d += 5 * time.Second {
		lines = append(lines, fmt.Sprintf("time=%s level=INFO msg=ingest events=1 reattaches=0 folded_mib=%.1f rss_mib=1.0",
			began.Add(d).Format(time.RFC3339Nano), float64(filterKiB(d))/1024))
	}
	return rep, lines, restKiB
}

// The load's judge (judgeAroundReattaches) judges the analyzer less its filter beside it, with
// the same releases, and writes it into load.json; from a log that does not give the filter's
// size it judges the rest as before, says why, and leaves nothing of an earlier judging's.
func TestJudgeLessFilter(t *testing.T) {
	rep, lines, _ := filterLoad()
	dir := t.TempDir()
	logPath, reportPath := filepath.Join(dir, "analyzer.log"), filepath.Join(dir, "load.json")
	if err := os.WriteFile(logPath, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := judgeAroundReattaches(&rep, logPath, reportPath); err != nil {
		t.Fatal(err)
	}
	written := readReport(t, reportPath)
	if n := len(written.Memory); n != 2 || written.Memory[1].Name != lessFilterName || written.Memory[1].Verdict != loadgen.MemBounded ||
		written.Memory[0].Verdict == loadgen.MemBounded {
		t.Errorf("load.json's memory %+v, want the analyzer's (not bounded: the filter's steps) and %s's (bounded)", written.Memory, lessFilterName)
	}

	// The same report judged again from a log without folded_mib (an older analyzer's).
	var old []string
	for _, l := range lines {
		old = append(old, strings.Replace(l, " folded_mib=", " other_mib=", 1))
	}
	if err := os.WriteFile(logPath, []byte(strings.Join(old, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := judgeAroundReattaches(&written, logPath, reportPath); err != nil {
		t.Fatalf("a log without folded_mib: %v; want the others judged", err)
	}
	for _, m := range written.Memory {
		if m.Name == lessFilterName {
			t.Errorf("a log without folded_mib: %s judged again from an earlier judging's samples: %+v", lessFilterName, m)
		}
	}
	for _, s := range written.Samples {
		if _, ok := s.RSS[lessFilterName]; ok {
			t.Fatalf("a log without folded_mib: a sample at %s keeps %s's RSS", s.At, lessFilterName)
		}
	}
	if len(written.Memory) != 1 || written.Memory[0].Verdict == "" {
		t.Errorf("a log without folded_mib: memory %+v, want the analyzer's judged", written.Memory)
	}
}

// The analyzer's memory by part: each stats line's parts, and its RSS less them, on the
// sample nearest the line; judged, the part that grows is told from those that swing or step
// and level off, and the load's judge writes them into load.json.
func TestAddParts(t *testing.T) {
	began := time.Date(2026, 12, 7, 3, 0, 0, 0, time.UTC)
	dur := 30 * time.Minute
	const mib = 1 << 10 // KiB
	// Each part at d, in KiB: multiples of half a MiB, which the lines' one decimal gives exactly.
	part := func(name string, d time.Duration) int64 {
		s := int64(d / time.Second)
		switch name {
		case "go": // swings by 10 MiB in 20-second cycles
			return 80*mib + s%20*mib/2
		case "duckdb": // a sawtooth of 30 s, 100 to 245 MiB
			return 100*mib + s%30*5*mib
		case "malloc": // grows by 3 MiB a minute
			return 30*mib + s/10*mib/2
		case "folded": // a step at 10 minutes
			if d >= 10*time.Minute {
				return 5 * mib
			}
			return mib
		}
		return 70 * mib // rest
	}
	names := []string{"go", "duckdb", "malloc", "folded", "rest"}
	rss := func(d time.Duration) int64 {
		var sum int64
		for _, n := range names {
			sum += part(n, d)
		}
		return sum
	}
	rep := loadgen.Report{Began: began, Duration: dur, Rate: 20000, PublishRate: 20000, Memory: []loadgen.Memory{{Name: "analyzer", PID: 7}}}
	for d := time.Second; d <= dur; d += time.Second {
		rep.Samples = append(rep.Samples, loadgen.Sample{At: d, Published: int(d / time.Millisecond), Stored: int(d / time.Millisecond),
			RSS: map[string]int64{"analyzer": rss(d)}})
	}
	// A line every 5 s, 400 ms after a sample (read at that sample's second); the one at
	// 602.4 s lacks malloc_inuse (a part it could not read) and is left out, as are those
	// before the first sample and after the last (the analyzer logs before publishing begins
	// and after it ends).
	var lines []string
	for d := -7600 * time.Millisecond; d <= dur+8*time.Second; d += 5 * time.Second {
		at := d.Truncate(time.Second)
		malloc := fmt.Sprintf(" malloc_held_mib=99.0 malloc_inuse_mib=%.1f", float64(part("malloc", at))/mib)
		if d == 602400*time.Millisecond {
			malloc = ""
		}
		lines = append(lines, fmt.Sprintf("time=%s level=INFO msg=ingest events=1 reattaches=0 go_heap_mib=1.0 go_mapped_mib=%.1f duckdb_mib=1.0 duckdb_resident_mib=%.1f%s folded_mib=%.1f rss_mib=%.1f",
			began.Add(d).Format(time.RFC3339Nano), float64(part("go", at))/mib, float64(part("duckdb", at))/mib, malloc,
			float64(part("folded", at))/mib, float64(rss(at))/mib))
	}
	dir := t.TempDir()
	logPath, reportPath := filepath.Join(dir, "analyzer.log"), filepath.Join(dir, "load.json")
	if err := os.WriteFile(logPath, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for pass := 0; pass < 2; pass++ { // a second call (a kept run judged again) gives the same
		got, err := addParts(&rep, logPath)
		if err != nil {
			t.Fatal(err)
		}
		if got != (partLines{used: 360 - 1, incomplete: 1, outside: 2 + 2}) {
			t.Errorf("pass %d: lines %+v, want 359 used, 1 incomplete and 4 outside the samples", pass, got)
		}
		for _, s := range rep.Samples {
			line := s.At%(5*time.Second) == 2*time.Second && s.At != 602*time.Second
			for _, n := range names {
				v, ok := s.RSS[partPrefix+n]
				if ok != line || (ok && v != part(n, s.At)) {
					t.Fatalf("pass %d: at %s: %s %d (%v), want %d (%v)", pass, s.At, n, v, ok, part(n, s.At), line)
				}
			}
		}
		var got5 []string
		for _, m := range rep.Memory[1:] {
			got5 = append(got5, m.Name)
		}
		if want := []string{"analyzer/go", "analyzer/duckdb", "analyzer/malloc", "analyzer/folded", "analyzer/rest"}; !slices.Equal(got5, want) ||
			rep.Memory[3].PeakKiB != part("malloc", dur-3*time.Second) || rep.Memory[3].PID != 7 {
			t.Errorf("pass %d: memory %+v, want the analyzer's and %v, malloc's peak its last line's", pass, rep.Memory, want)
		}
	}
	if err := judgeAroundReattaches(&rep, logPath, reportPath); err != nil {
		t.Fatal(err)
	}
	written := readReport(t, reportPath)
	verdicts := map[string]string{}
	for _, m := range written.Memory {
		verdicts[m.Name] = m.Verdict
	}
	for n, want := range map[string]string{"analyzer": loadgen.MemGrowing, "analyzer/malloc": loadgen.MemGrowing, "analyzer/go": loadgen.MemBounded,
		"analyzer/duckdb": loadgen.MemBounded, "analyzer/folded": loadgen.MemBounded, "analyzer/rest": loadgen.MemBounded} {
		if verdicts[n] != want {
			t.Errorf("load.json: %s %q, want %q (all: %v)", n, verdicts[n], want, verdicts)
		}
	}

	// Lines without a part, or no analyzer watched: an error, and nothing of an earlier
	// call's left.
	var old []string
	for _, l := range lines {
		old = append(old, strings.Replace(l, " duckdb_resident_mib=", " other_mib=", 1))
	}
	if err := os.WriteFile(logPath, []byte(strings.Join(old, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := addParts(&written, logPath); err == nil || !strings.Contains(err.Error(), "duckdb_resident_mib") {
		t.Errorf("lines without duckdb_resident_mib: %v, want an error that names it", err)
	}
	for _, m := range written.Memory {
		if strings.HasPrefix(m.Name, partPrefix) {
			t.Errorf("lines without a part: %s left from the call before", m.Name)
		}
	}
	if left := partLeft(written); left != "" {
		t.Fatalf("lines without a part: %s", left)
	}
	// A good line, then one whose time cannot be read: the error names the line, and the
	// first line's figures are not left on its sample.
	if err := os.WriteFile(logPath, []byte(lines[3]+"\ntime=yesterday level=INFO msg=ingest reattaches=0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := addParts(&written, logPath); err == nil || !strings.Contains(err.Error(), "analyzer.log:2:") {
		t.Errorf("a line with a bad time: %v, want its error at line 2", err)
	}
	if left := partLeft(written); left != "" {
		t.Fatalf("a line with a bad time: %s from the line before", left)
	}
	written.Memory = []loadgen.Memory{{Name: "producer"}}
	if _, err := addParts(&written, logPath); err == nil {
		t.Error("no analyzer watched: no error")
	}
}

// partLeft names the first sample of rep that keeps a part of the analyzer's memory, and the
// part ("" when none does).
func partLeft(rep loadgen.Report) string {
	for _, s := range rep.Samples {
		for n := range s.RSS {
			if strings.HasPrefix(n, partPrefix) {
				return fmt.Sprintf("the sample at %s keeps %s", s.At, n)
			}
		}
	}
	return ""
}
