package demo_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dittolab/ditto/internal/demo"
	"github.com/dittolab/ditto/internal/study"
	"go.uber.org/goleak"
)

// TestCodingStudy runs builtin:coding end to end on the embedded default (NATS, the simulated
// personas, a worker with real worktrees and real go test, the analyzer), reduced to keep
// `make test` short: the shipped spec's file-tool conditions with planning at the small budget
// — the five tiers, each cell as the full study runs it (same task, personas, seeds). T0
// overflows the small window; no managed tier (T1–T4) does — they elide the model's bulky
// call arguments and the verifications too, and drop or cut what is left, as docs/context.md
// says; every managed tier acted on the context (elided, cut or summarized) in at least one
// run. The full study (160 runs) is measured, not tested: docs/context.md.
func TestCodingStudy(t *testing.T) {
	if testing.Short() {
		t.Skip("coding runs build and test Go code in worktrees")
	}
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	raw, err := study.ShippedSpec("coding")
	if err != nil {
		t.Fatal(err)
	}
	spec, err := study.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	if len(spec.Conditions) != 40 || len(spec.Models) != 2 {
		t.Fatalf("builtin:coding has %d conditions and %d models, want 40 (T0–T4 × 2 budgets × planning × action space) and 2", len(spec.Conditions), len(spec.Models))
	}
	small := 0
	spec.Conditions = slices.DeleteFunc(spec.Conditions, func(c string) bool {
		cc := spec.CustomConditions[c]
		if cc.Context == nil {
			t.Fatalf("condition %s has no context", c)
		}
		if small == 0 || cc.Context.Budget < small {
			small = cc.Context.Budget
		}
		return !strings.HasPrefix(c, "files_") || !strings.HasSuffix(c, "_plan")
	})
	spec.Conditions = slices.DeleteFunc(spec.Conditions, func(c string) bool { return spec.CustomConditions[c].Context.Budget != small })
	if len(spec.Conditions) != 5 {
		t.Fatalf("reduced conditions %v, want the five tiers", spec.Conditions)
	}
	spec.Name = "coding-reduced"
	b, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "coding-reduced.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	scale := 0.0
	var out bytes.Buffer
	res, err := demo.Run(ctx, demo.Config{DataDir: filepath.Join(dir, "demo"), Fresh: true, Spec: path, LatencyScale: &scale,
		Permutations: 200, Out: &out})
	if err != nil {
		t.Fatalf("Run() = %v\n%s", err, out.String())
	}
	if want := 5 * 2 * len(spec.Tasks) * spec.Runs; res.Runs != want {
		t.Fatalf("Runs = %d, want %d", res.Runs, want)
	}
	cx := res.Report.Context
	if cx == nil {
		t.Fatal("the report has no context section")
	}
	type tally struct{ runs, overflows, acted int }
	by := map[string]*tally{}
	for _, g := range cx.Groups {
		if g.Budget != int64(small) {
			t.Errorf("group %s/%s at budget %d, want only %d", g.Model, g.Tier, g.Budget, small)
			continue
		}
		tl := by[g.Tier]
		if tl == nil {
			tl = &tally{}
			by[g.Tier] = tl
		}
		tl.runs += g.Runs
		tl.overflows += g.Overflows
		if g.Elisions > 0 || g.Summaries > 0 {
			tl.acted++
		}
		t.Logf("%s %s: %d runs, %d succeeded, %d overflowed, peak %.0f, elisions %.2f, summaries %.2f, recalls %.2f",
			g.Model, g.Tier, g.Runs, g.Successes, g.Overflows, g.PeakContext, g.Elisions, g.Summaries, g.Recalls)
	}
	for _, tier := range []string{"T0", "T1", "T2", "T3", "T4"} {
		tl := by[tier]
		switch {
		case tl == nil || tl.runs == 0:
			t.Errorf("%s: no runs in the context section", tier)
		case tier == "T0" && tl.overflows == 0:
			t.Errorf("T0 at %d tokens: no run overflowed, want the small window to overflow", small)
		case tier != "T0" && tl.overflows != 0:
			t.Errorf("%s at %d tokens: %d of %d runs overflowed, want none", tier, small, tl.overflows, tl.runs)
		case tier != "T0" && tl.acted == 0:
			t.Errorf("%s at %d tokens: no run elided or summarized anything", tier, small)
		}
	}
}
