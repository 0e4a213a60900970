package coding_test

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/coding"
	"github.com/dittolab/ditto/internal/coding/codingtest"
	"github.com/dittolab/ditto/internal/coding/verify"
	"github.com/dittolab/ditto/internal/condition"
	"github.com/dittolab/ditto/internal/harness"
	"github.com/dittolab/ditto/internal/llm"
	"github.com/dittolab/ditto/internal/simllm"
	"github.com/dittolab/ditto/internal/tasks"
)

// TestAgainstSimulatedPersonas drives coding runs with the real model client over loopback
// HTTP against the simulated coding personas, in both action spaces: every run folds, leaves
// no worktree, patches something, and across the seeds at least one run succeeds. The runs
// share a verification memo: the defective tree every run starts from is verified once, its
// later verifications are recorded as cached.
func TestAgainstSimulatedPersonas(t *testing.T) {
	client := simClient(t, "sim-steady")
	memo := verify.NewMemo()
	cached := 0
	for _, comps := range [][]string{
		{"circuit_breaker", "distilled_diagnostics", "test_protection"},
		{"bash_only", "circuit_breaker", "test_protection"},
	} {
		succ := 0
		for seed := range 3 {
			cond, err := condition.New("sim", comps)
			if err != nil {
				t.Fatal(err)
			}
			sd := int64(seed)
			spec := harness.RunSpec{Task: tasks.CodingTaskName("textutil", "rename-slug"), Condition: cond, Model: "sim-steady",
				Simulated: true, Seed: &sd, SeedIndex: seed}
			rec := &recorder{}
			res, err := coding.Run(context.Background(), spec, client, rec, coding.Env{Workspaces: manager(t), Memo: memo})
			if err != nil {
				t.Fatal(err)
			}
			if len(rec.of(events.TypeFileChanged)) == 0 {
				t.Errorf("%v seed %d: no file changed (%s: %s)", comps, seed, res.Status, res.Error)
			}
			if res.Success {
				succ++
			}
			for _, p := range rec.of(events.TypeVerificationRan) {
				if p.(events.VerificationRan).Cached {
					cached++
				}
			}
			t.Logf("%v seed %d: %s, %d model calls, %d tool calls, %d verifications", comps, seed, res.Status,
				res.Totals.ModelCalls, res.Totals.ToolCalls, len(rec.of(events.TypeVerificationRan)))
		}
		if succ == 0 {
			t.Errorf("%v: no run succeeded", comps)
		}
	}
	if hits, _ := memo.Stats(); cached == 0 || int64(cached) != hits {
		t.Errorf("%d verifications recorded as cached, the memo answered %d; want the same, above 0", cached, hits)
	}
}

// simClient is the real model client, over loopback HTTP, of the simulated personas served
// for the test or benchmark (the server stops at its end).
func simClient(tb testing.TB, model string) llm.Model {
	tb.Helper()
	return simServed(tb, simllm.Config{}, model)
}

// simServed is simClient with the simulated models configured by cfg.
func simServed(tb testing.TB, cfg simllm.Config, model string) llm.Model {
	tb.Helper()
	srv, err := simllm.NewServer(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	tb.Cleanup(hs.Close)
	client, err := llm.NewOpenAI(llm.Config{BaseURL: hs.URL + "/v1", Model: model})
	if err != nil {
		tb.Fatal(err)
	}
	return client
}

// TestPersonasKnowATaskFileCatalogue: told a task file's coding task (simllm.Config.Coding),
// the simulated personas answer its prompt from its catalogue, in a worktree of its own tree:
// every run patches clamp.go or clamp_test.go with one of the catalogue's edits and some run
// succeeds. Not told, they do not recognise the prompt and patch nothing.
func TestPersonasKnowATaskFileCatalogue(t *testing.T) {
	task := codingtest.CatalogueTask(t)
	catalogue := map[string]bool{}
	for _, c := range task.Coding.Target.Candidates {
		catalogue[c.Edits[0].Path] = true
	}
	cond, err := condition.New("sim", []string{"circuit_breaker", "distilled_diagnostics", "test_protection"})
	if err != nil {
		t.Fatal(err)
	}
	runs := func(cfg simllm.Config, seeds int) (succ, patched int) {
		client := simServed(t, cfg, "sim-steady")
		for seed := range seeds {
			sd := int64(seed)
			spec := harness.RunSpec{Task: task.Name, TaskDef: task, Condition: cond, Model: "sim-steady", Simulated: true, Seed: &sd, SeedIndex: seed}
			rec := &recorder{}
			res, err := coding.Run(context.Background(), spec, client, rec, coding.Env{Workspaces: manager(t), Memo: verify.NewMemo()})
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range rec.of(events.TypeFileChanged) {
				if fc := p.(events.FileChanged); !catalogue[fc.Path] {
					t.Errorf("seed %d changed %s, a file no candidate edits", seed, fc.Path)
				}
				patched++
			}
			if res.Success {
				succ++
			}
		}
		return succ, patched
	}
	if succ, patched := runs(simllm.Config{Coding: []*tasks.Task{task}}, 3); succ == 0 || patched == 0 {
		t.Errorf("told the catalogue: %d of 3 runs succeeded, %d files changed; want some of each", succ, patched)
	}
	if _, patched := runs(simllm.Config{}, 1); patched != 0 {
		t.Errorf("not told the catalogue: %d files changed, want none", patched)
	}
}
