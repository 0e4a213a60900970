package coding_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/coding"
	"github.com/dittolab/ditto/internal/coding/repos"
	"github.com/dittolab/ditto/internal/coding/workspace"
	"github.com/dittolab/ditto/internal/condition"
	"github.com/dittolab/ditto/internal/harness"
	"github.com/dittolab/ditto/internal/llm"
	"github.com/dittolab/ditto/internal/tasks"
)

// script is a model that answers each turn with the next of its turns: tool calls (name and
// arguments) or, past its end, a text answer. It records every request.
type script struct {
	mu    sync.Mutex
	turns [][]llm.ToolCall
	reqs  []llm.Request
}

func (s *script) Chat(ctx context.Context, req llm.Request) (llm.Response, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs = append(s.reqs, req)
	n := len(s.reqs) - 1
	if n >= len(s.turns) {
		return llm.Response{Content: "done", FinishReason: "stop", Usage: llm.Usage{PromptTokens: 100, CompletionTokens: 5}}, nil
	}
	calls := slices.Clone(s.turns[n])
	for i := range calls {
		calls[i].ID = fmt.Sprintf("call_%d_%d", n, i)
	}
	return llm.Response{ToolCalls: calls, FinishReason: "tool_calls", Usage: llm.Usage{PromptTokens: 100, CompletionTokens: 20}}, nil
}

func call(name string, args map[string]string) llm.ToolCall {
	b, _ := json.Marshal(args)
	return llm.ToolCall{Name: name, Arguments: string(b)}
}

// editCalls turns a catalogue candidate into file-tool calls: a read of each file, then its edits.
func editCalls(c repos.Candidate) []llm.ToolCall {
	var out []llm.ToolCall
	seen := map[string]bool{}
	for _, e := range c.Edits {
		if !seen[e.Path] {
			seen[e.Path] = true
			out = append(out, call(coding.ToolRead, map[string]string{"path": e.Path}))
		}
	}
	for _, e := range c.Edits {
		out = append(out, call(coding.ToolEdit, map[string]string{"path": e.Path, "old": e.Old, "new": e.New}))
	}
	return out
}

func candidate(t *testing.T, in *repos.Instance, kind string) repos.Candidate {
	t.Helper()
	for _, c := range in.Candidates {
		if c.Kind == kind {
			return c
		}
	}
	t.Fatalf("%s has no %s candidate", in.ID, kind)
	return repos.Candidate{}
}

type recorder struct{ ps []events.Payload }

func (r *recorder) Emit(ctx context.Context, p events.Payload) error {
	r.ps = append(r.ps, p)
	return nil
}

func (r *recorder) of(typ events.Type) []events.Payload {
	var out []events.Payload
	for _, p := range r.ps {
		if p.EventType() == typ {
			out = append(out, p)
		}
	}
	return out
}

var (
	mgrOnce sync.Once
	mgr     *workspace.Manager
	mgrErr  error
)

func manager(t testing.TB) *workspace.Manager {
	t.Helper()
	mgrOnce.Do(func() {
		dir, err := os.MkdirTemp("", "coding-test-")
		if err != nil {
			mgrErr = err
			return
		}
		mgr, mgrErr = workspace.Open(context.Background(), workspace.Config{Root: dir})
	})
	if mgrErr != nil {
		t.Fatal(mgrErr)
	}
	return mgr
}

func TestMain(m *testing.M) {
	code := m.Run()
	if mgr != nil {
		mgr.Close()
		os.RemoveAll(mgr.Root())
	}
	os.Exit(code)
}

func run(t *testing.T, repo, id string, components []string, model llm.Model) (harness.Result, *recorder) {
	t.Helper()
	cond, err := condition.New("test", components)
	if err != nil {
		t.Fatal(err)
	}
	spec := harness.RunSpec{Task: tasks.CodingTaskName(repo, id), Condition: cond, Model: "scripted"}
	rec := &recorder{}
	res, err := coding.Run(context.Background(), spec, model, rec, coding.Env{Workspaces: manager(t)})
	if err != nil {
		t.Fatal(err)
	}
	// Every history the runner emits folds, and the worktree is gone.
	h := make([]events.Envelope, len(rec.ps))
	for i, p := range rec.ps {
		h[i] = events.New("s", "r", time.Unix(0, 0), p)
		h[i].Seq = int64(i + 1)
		h[i].Source = events.Source{Kind: events.SourceHarness, ID: "w"}
	}
	if _, err := events.Fold(h); err != nil {
		t.Fatalf("fold: %v", err)
	}
	if wts, _ := manager(t).Worktrees(); len(wts) != 0 {
		t.Fatalf("worktrees left after the run: %v", wts)
	}
	return res, rec
}

func TestCorrectPatchSucceeds(t *testing.T) {
	in, _ := repos.Get("inventory", "reserved-summary")
	res, rec := run(t, in.Repo, in.ID, []string{"circuit_breaker", "distilled_diagnostics", "test_protection"},
		&script{turns: [][]llm.ToolCall{editCalls(candidate(t, in, repos.KindFix))}})
	if res.Status != events.StatusSucceeded || !res.Success {
		t.Fatalf("status %s (%s), want succeeded", res.Status, res.Error)
	}
	vs := rec.of(events.TypeVerificationRan)
	if len(vs) != 2 || vs[0].(events.VerificationRan).TestsPass || !vs[1].(events.VerificationRan).TestsPass {
		t.Errorf("verifications %+v, want a failing one before the patch and a passing one after", vs)
	}
	fc := rec.of(events.TypeFileChanged)
	if len(fc) != 2 || fc[0].(events.FileChanged).Path != "stock.go" || fc[1].(events.FileChanged).Path != "report.go" {
		t.Errorf("file.changed %+v, want stock.go and report.go", fc)
	}
	if len(rec.of(events.TypeWorkspaceCreated)) != 1 || len(rec.of(events.TypeWorkspaceDiscarded)) != 1 {
		t.Error("want one workspace.created and one workspace.discarded")
	}
	var out map[string]string
	if err := json.Unmarshal(res.Output, &out); err != nil || !strings.Contains(out["patch"], "s.Available(sku)") {
		t.Errorf("output %s, want the patch", res.Output)
	}
}

func TestTestWeakeningRefusedWithFileTools(t *testing.T) {
	in, _ := repos.Get("ledger", "rounding")
	weaken := candidate(t, in, repos.KindWeakenTest)
	res, rec := run(t, in.Repo, in.ID, []string{"test_protection"}, &script{turns: [][]llm.ToolCall{editCalls(weaken)}})
	rej := rec.of(events.TypeToolRejected)
	if len(rej) != 1 || rej[0].(events.ToolRejected).Reason != events.RejectTestProtected {
		t.Fatalf("tool.rejected %+v, want one test-protected", rej)
	}
	if res.Success || len(rec.of(events.TypeFileChanged)) != 0 {
		t.Errorf("status %s, file changes %d: the weakening must not land", res.Status, len(rec.of(events.TypeFileChanged)))
	}
}

func TestTestWeakeningRevertedWithBash(t *testing.T) {
	in, _ := repos.Get("ledger", "rounding")
	cmd := `sed -i 's/}{{1.15, 115}, {0.29, 29}, {19.99, 1999}, {-1.15, -115}, {3, 300}} {/}{{3, 300}} {/' rounding_test.go`
	res, rec := run(t, in.Repo, in.ID, []string{"bash_only", "test_protection"},
		&script{turns: [][]llm.ToolCall{{call(coding.ToolBash, map[string]string{"command": cmd})}}})
	fc := rec.of(events.TypeFileChanged)
	if len(fc) != 1 {
		t.Fatalf("file.changed %+v, want one", fc)
	}
	if c := fc[0].(events.FileChanged); c.Path != "rounding_test.go" || !c.Protected || !c.Reverted || c.Removed != 1 || c.Added != 1 {
		t.Errorf("file.changed %+v, want rounding_test.go protected, reverted, one line changed", c)
	}
	if res.Success || len(rec.of(events.TypeVerificationRan)) != 1 {
		t.Errorf("status %s, %d verifications: a reverted change is not a patch", res.Status, len(rec.of(events.TypeVerificationRan)))
	}
}

// TestTestWeakeningUnprotected: without protection the weakened tests pass, and the run still
// fails, since a test file changed.
func TestTestWeakeningUnprotected(t *testing.T) {
	in, _ := repos.Get("ledger", "rounding")
	res, rec := run(t, in.Repo, in.ID, []string{"distilled_diagnostics"},
		&script{turns: [][]llm.ToolCall{editCalls(candidate(t, in, repos.KindWeakenTest))}})
	vs := rec.of(events.TypeVerificationRan)
	last := vs[len(vs)-1].(events.VerificationRan)
	if !last.TestsPass || !slices.Equal(last.TestFilesChanged, []string{"rounding_test.go"}) || res.Success || res.Status != events.StatusFailed {
		t.Errorf("last verification %+v, status %s: want tests passing with rounding_test.go changed, and a failed run", last, res.Status)
	}
}

func TestEscapesRefused(t *testing.T) {
	in, _ := repos.Get("textutil", "truncate-runes")
	for _, tt := range []struct {
		name       string
		components []string
		calls      []llm.ToolCall
	}{
		{"file tools", nil, []llm.ToolCall{
			call(coding.ToolRead, map[string]string{"path": "../../../etc/passwd"}),
			call(coding.ToolRead, map[string]string{"path": "/etc/passwd"}),
			call(coding.ToolCreate, map[string]string{"path": "../escape.go", "content": "package x"}),
			call(coding.ToolRead, map[string]string{"path": ".git/config"}),
		}},
		{"bash", []string{"bash_only"}, []llm.ToolCall{
			call(coding.ToolBash, map[string]string{"command": "cat ../../etc/passwd"}),
			call(coding.ToolBash, map[string]string{"command": "cat /etc/passwd"}),
			call(coding.ToolBash, map[string]string{"command": "echo x > ~/x"}),
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, rec := run(t, in.Repo, in.ID, tt.components, &script{turns: [][]llm.ToolCall{tt.calls}})
			rej := rec.of(events.TypeToolRejected)
			if len(rej) != len(tt.calls) || len(rec.of(events.TypeToolCalled)) != 0 {
				t.Fatalf("%d of %d calls rejected, %d executed", len(rej), len(tt.calls), len(rec.of(events.TypeToolCalled)))
			}
			for _, p := range rej {
				if r := p.(events.ToolRejected); r.Reason != events.RejectPermission {
					t.Errorf("rejected %s with %s (%s), want permission", r.Args, r.Reason, r.Detail)
				}
			}
		})
	}
}

// TestSymlinkOutRefused: a symlink a bash command makes to outside the tree is removed, and the
// file tools refuse a path through one.
func TestSymlinkOutRefused(t *testing.T) {
	in, _ := repos.Get("textutil", "truncate-runes")
	// The lexical check refuses a command naming /etc; this one builds the path at run time.
	_, rec := run(t, in.Repo, in.ID, []string{"bash_only"}, &script{turns: [][]llm.ToolCall{
		{call(coding.ToolBash, map[string]string{"command": `d=$(printf '\x2fetc'); ln -s "$d" leak`})},
	}})
	fc := rec.of(events.TypeFileChanged)
	if len(fc) != 1 || fc[0].(events.FileChanged).Path != "leak" || !fc[0].(events.FileChanged).Reverted {
		t.Fatalf("file.changed %+v, want the symlink leak reverted", fc)
	}
	m := manager(t)
	ws, err := m.Create(context.Background(), "symlink-probe", in)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Discard(context.Background())
	if err := os.Symlink("/etc", filepath.Join(ws.Dir, "leak")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ws.Resolve("leak/passwd"); err == nil {
		t.Error("Resolve through a symlink out succeeded")
	}
}

// TestRepairTurnsEscalate: a model that keeps making near-miss patches escalates after three
// repair turns under the circuit breaker.
func TestRepairTurnsEscalate(t *testing.T) {
	in, _ := repos.Get("inventory", "low-stock-boundary")
	near := candidate(t, in, repos.KindNearMiss).Edits[0]
	symptom := candidate(t, in, repos.KindSymptom).Edits[0]
	turns := [][]llm.ToolCall{
		{call(coding.ToolRead, map[string]string{"path": "report.go"}), call(coding.ToolEdit, map[string]string{"path": "report.go", "old": near.Old, "new": near.New})},
	}
	// Flip between the two wrong patches: each turn is a patch that still fails.
	cur := near.New
	for i := 0; i < 6; i++ {
		next := symptom.New
		if i%2 == 1 {
			next = near.New
		}
		turns = append(turns, []llm.ToolCall{call(coding.ToolEdit, map[string]string{"path": "report.go", "old": cur, "new": next})})
		cur = next
	}
	res, rec := run(t, in.Repo, in.ID, []string{"circuit_breaker", "distilled_diagnostics"}, &script{turns: turns})
	if res.Status != events.StatusEscalated || res.EscalationReason != coding.EscalateRepairTurns {
		t.Fatalf("status %s (%s), want escalated after the repair turns", res.Status, res.EscalationReason)
	}
	if n := len(rec.of(events.TypeVerificationRan)); n != 5 {
		t.Errorf("%d verifications, want 5: before any patch, the first patch and 3 repairs", n)
	}
	re := 0
	for _, p := range rec.of(events.TypeFileChanged) {
		if p.(events.FileChanged).Repatch {
			re++
		}
	}
	if re != 3 {
		t.Errorf("%d re-patches, want 3", re)
	}
}

func TestReadBeforeWrite(t *testing.T) {
	in, _ := repos.Get("inventory", "nil-map")
	fix := candidate(t, in, repos.KindFix).Edits[0]
	_, rec := run(t, in.Repo, in.ID, nil, &script{turns: [][]llm.ToolCall{
		{call(coding.ToolEdit, map[string]string{"path": fix.Path, "old": fix.Old, "new": fix.New})},
	}})
	rej := rec.of(events.TypeToolRejected)
	if len(rej) != 1 || rej[0].(events.ToolRejected).Reason != events.RejectUnread {
		t.Fatalf("tool.rejected %+v, want one unread", rej)
	}
}
