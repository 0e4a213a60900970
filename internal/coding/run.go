package coding

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/coding/distill"
	"github.com/dittolab/ditto/internal/coding/repos"
	"github.com/dittolab/ditto/internal/coding/verify"
	"github.com/dittolab/ditto/internal/coding/workspace"
	"github.com/dittolab/ditto/internal/condition"
	"github.com/dittolab/ditto/internal/harness"
	"github.com/dittolab/ditto/internal/llm"
	"github.com/dittolab/ditto/internal/tasks"
)

var (
	// ErrNotCoding is returned by Run for a task that is not a coding task.
	ErrNotCoding = errors.New("coding: not a coding task")
	// ErrWorkspace is returned by Run when the worktree could not be created (nothing is
	// emitted then; the run can be tried again).
	ErrWorkspace = errors.New("coding: workspace")
)

// Escalation reasons.
const (
	EscalateRepairTurns = "repair turns exhausted"
	EscalateTokenBudget = "token budget exhausted"
)

// IsCoding reports whether the registered task name is a coding task.
func IsCoding(task string) bool {
	t, err := tasks.Get(task)
	return err == nil && t.Coding != nil
}

// IsCodingRun reports whether spec runs a coding task: its task file's (spec.TaskDef) or the
// registered task it names.
func IsCodingRun(spec harness.RunSpec) bool {
	if spec.TaskDef != nil {
		return spec.TaskDef.Coding != nil
	}
	return IsCoding(spec.Task)
}

// Env is what the coding runs of a process share.
type Env struct {
	// Workspaces creates the runs' worktrees; required.
	Workspaces *workspace.Manager
	// Memo, when set, reuses the commands' results of a tree verified before (verify.Memo):
	// a study verifies the same few trees again and again. Nil runs every verification.
	Memo *verify.Memo
}

// Run executes one coding run of spec (its task: spec.TaskDef, a task file's, or the registered
// task spec.Task) against model in a worktree of env.Workspaces and reports every step
// to em, in order (see the package comment). As with harness.Run, the run's own failures are
// outcomes in the Result and in run.finished; Run returns an error only when the spec is
// invalid or not a coding task, when the worktree cannot be created (ErrWorkspace; nothing
// emitted), or when em fails (harness.ErrEmit) or the fold refuses an event (harness.ErrHistory).
// The worktree is removed before Run returns, whatever happened.
func Run(ctx context.Context, spec harness.RunSpec, model llm.Model, em harness.Emitter, env Env) (harness.Result, error) {
	if err := spec.Validate(); err != nil {
		return harness.Result{}, err
	}
	task := spec.TaskDef
	if task == nil {
		var err error
		if task, err = tasks.Get(spec.Task); err != nil {
			return harness.Result{}, fmt.Errorf("%w: %w", harness.ErrSpec, err)
		}
	}
	if task.Coding == nil || task.Coding.Target == nil {
		return harness.Result{}, fmt.Errorf("%w: %s", ErrNotCoding, spec.Task)
	}
	if spec.Instance != 0 {
		return harness.Result{}, fmt.Errorf("%w: coding task %s has one instance, index %d asked", harness.ErrSpec, spec.Task, spec.Instance)
	}
	inst := task.Coding.Target
	if spec.Condition.Context.Managed() {
		if _, err := contextConfig(spec.Condition.Context); err != nil {
			return harness.Result{}, fmt.Errorf("%w: %w: %w", harness.ErrSpec, ErrContext, err)
		}
	}
	wm := env.Workspaces
	if wm == nil {
		return harness.Result{}, fmt.Errorf("%w: no workspace manager", ErrWorkspace)
	}
	r := &runner{ctx: ctx, spec: spec, comp: spec.Condition.Components, lim: spec.Condition.Limits.WithDefaults(),
		task: task, inst: inst, model: model, em: em, memo: env.Memo, read: map[string]bool{}, changed: map[string]bool{}}
	r.start = time.Now()
	var suffix [6]byte
	_, _ = rand.Read(suffix[:])
	var err error
	r.ws, err = wm.Create(ctx, spec.Task+"-"+hex.EncodeToString(suffix[:]), inst)
	if err != nil {
		return harness.Result{}, fmt.Errorf("%w: %w", ErrWorkspace, err)
	}
	r.iso = wm.Isolation().String()
	defer r.ws.Discard(ctx) // after a failed emit; a no-op once discarded
	err = r.run()
	return r.result(), err
}

type runner struct {
	ctx   context.Context
	spec  harness.RunSpec
	comp  condition.Components
	lim   condition.Limits
	task  *tasks.Task
	inst  *repos.Instance
	model llm.Model
	em    harness.Emitter
	ws    *workspace.Workspace
	iso   string
	memo  *verify.Memo

	books events.Run
	conv  conversation
	tools []llm.ToolDef
	acts  int // the agent's model calls so far (summarization calls apart)

	read    map[string]bool // files read (or written) by the agent: editable
	changed map[string]bool // files changed in the run: a later change is a re-patch
	turn    int             // patch turns so far
	last    *verify.Report
	callN   int

	start      time.Time
	latency    time.Duration
	verifyTime time.Duration
	status     string
	success    bool
	aborted    bool
	overflow   bool // a request did not fit the context window
	escalation string
	errText    string
	output     json.RawMessage
}

func (r *runner) run() error {
	if err := r.emit(r.started()); err != nil {
		return err
	}
	if err := r.emit(events.WorkspaceCreated{Repo: r.inst.Repo, Instance: r.inst.ID, Commit: r.ws.Commit, Isolation: r.iso}); err != nil {
		return err
	}
	r.tools = fileTools
	if r.comp.BashOnly {
		r.tools = bashTools
	}
	rep, err := r.verify()
	if err != nil {
		r.errText = "verification: " + err.Error()
		return r.finish()
	}
	if err := r.openConversation(llm.Message{Role: llm.RoleSystem, Content: r.task.Instructions + "\n\n" + r.toolGuide()},
		llm.Message{Role: llm.RoleUser, Content: strings.TrimSpace(r.inst.Prompt) + "\n\nThe verification of the working tree as it is now:\n\n" + r.feedback(rep)}); err != nil {
		return err
	}
	for step := 0; step < r.lim.MaxSteps; step++ {
		if r.ctx.Err() != nil {
			r.aborted, r.errText = true, "cancelled: "+r.ctx.Err().Error()
			break
		}
		if r.comp.CircuitBreaker && r.books.PromptTokens+r.books.CompletionTokens > r.lim.TokenBudget {
			if err := r.escalate(EscalateTokenBudget); err != nil {
				return err
			}
			break
		}
		resp, ok, err := r.call()
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		for i := range resp.ToolCalls {
			// A call without an id gets the one its result will answer (handle's), so that
			// the conversation pairs them as an endpoint expects.
			if resp.ToolCalls[i].ID == "" {
				resp.ToolCalls[i].ID = fmt.Sprintf("call_%d", r.callN+i+1)
			}
		}
		r.add(llm.Message{Role: llm.RoleAssistant, Content: resp.Content, ToolCalls: resp.ToolCalls}, "")
		if len(resp.ToolCalls) == 0 {
			break
		}
		patched := false
		for _, tc := range resp.ToolCalls {
			p, err := r.handle(tc)
			if err != nil {
				return err
			}
			patched = patched || p
		}
		if !patched {
			if step == r.lim.MaxSteps-1 {
				r.errText = fmt.Sprintf("step cap: %d model turns", r.lim.MaxSteps)
			}
			continue
		}
		r.turn++
		rep, err := r.verify()
		if err != nil {
			r.errText = "verification: " + err.Error()
			break
		}
		if rep.Success() {
			break
		}
		if r.comp.CircuitBreaker && r.books.Coding.RepairTurns >= r.lim.MaxRepairTurns {
			if err := r.escalate(EscalateRepairTurns); err != nil {
				return err
			}
			break
		}
		r.add(llm.Message{Role: llm.RoleUser, Content: "The verification after your change:\n\n" + r.feedback(rep)}, "")
		if step == r.lim.MaxSteps-1 {
			r.errText = fmt.Sprintf("step cap: %d model turns", r.lim.MaxSteps)
		}
	}
	return r.finish()
}

// emit folds p into the books, then hands it to the Emitter (as package harness does).
func (r *runner) emit(p events.Payload) error {
	t := p.EventType()
	e := events.Envelope{Type: t, Seq: r.books.LastSeq + 1, Payload: p}
	if err := r.books.Apply(&e); err != nil {
		return fmt.Errorf("%w: %w", harness.ErrHistory, err)
	}
	ctx := r.ctx
	if t == events.TypeRunFinished || t == events.TypeWorkspaceDiscarded {
		ctx = context.WithoutCancel(ctx)
	}
	if err := r.em.Emit(ctx, p); err != nil {
		return fmt.Errorf("%w: %s: %w", harness.ErrEmit, t, err)
	}
	return nil
}

func (r *runner) started() events.RunStarted {
	return events.RunStarted{
		Task: r.task.Name, Instance: r.inst.ID, InputIndex: r.spec.Instance, SeedIndex: r.spec.SeedIndex,
		Model: r.spec.Model, Condition: r.spec.Condition.Name, Components: r.comp.Names(), Seed: r.spec.Seed,
		Sampling: r.spec.Sampling, Endpoint: r.spec.Endpoint, Simulated: r.spec.Simulated,
	}
}

func (r *runner) escalate(reason string) error {
	r.escalation = reason
	return r.emit(events.RunEscalated{Reason: reason})
}

// call sends the conversation (as context management prepares it) with the run's pinned
// parameters and records model.called. ok is false when the run ends here: the model failed,
// the context overflowed or its management failed.
func (r *runner) call() (llm.Response, bool, error) {
	r.acts++
	tools := r.offered()
	msgs, estimate, err := r.prepare(r.acts, tools)
	switch {
	case errors.Is(err, errOverflowed):
		r.overflow = true
		return llm.Response{}, false, nil
	case errors.Is(err, harness.ErrEmit) || errors.Is(err, harness.ErrHistory):
		return llm.Response{}, false, err
	case err != nil:
		if r.ctx.Err() != nil {
			r.aborted, r.errText = true, "cancelled: "+r.ctx.Err().Error()
		} else {
			r.errText = err.Error()
		}
		return llm.Response{}, false, nil
	}
	req := llm.Request{Model: r.spec.Model, Seed: r.spec.Seed, Messages: msgs, Tools: tools,
		ToolChoice: &llm.ToolChoice{Mode: llm.ToolChoiceAuto}, Temperature: r.spec.Sampling.Temperature,
		TopP: r.spec.Sampling.TopP, MaxTokens: r.spec.Sampling.MaxTokens}
	t0 := time.Now()
	resp, cerr := r.model.Chat(r.ctx, req)
	mc := events.ModelCalled{Model: r.spec.Model, Purpose: "act", PromptTokens: int64(resp.Usage.PromptTokens),
		CompletionTokens: int64(resp.Usage.CompletionTokens), LatencyMS: ms(time.Since(t0)), FinishReason: resp.FinishReason,
		Fingerprint: resp.SystemFingerprint, Seed: r.spec.Seed, TransportRetries: len(resp.Retries)}
	if cerr != nil {
		mc.Error = clip(cerr.Error(), 64<<10)
	}
	if err := r.emit(mc); err != nil {
		return llm.Response{}, false, err
	}
	if cerr == nil {
		r.observe(estimate, resp.Usage.PromptTokens)
	}
	if cerr != nil {
		if r.ctx.Err() != nil {
			r.aborted, r.errText = true, "cancelled: "+r.ctx.Err().Error()
		} else {
			r.errText = "model: " + cerr.Error()
		}
		return llm.Response{}, false, nil
	}
	return resp, true, nil
}

// verify runs the verification of the current turn and records it.
func (r *runner) verify() (verify.Report, error) {
	rep, err := r.memo.Run(r.ctx, r.ws, distill.Options{})
	if err != nil {
		return rep, err
	}
	r.verifyTime += rep.Duration
	r.last = &rep
	exit := 0
	var cmds []string
	for _, s := range rep.Steps {
		cmds = append(cmds, s.Command)
		if exit == 0 && s.ExitCode != 0 {
			exit = s.ExitCode
		}
	}
	raw := rep.Raw()
	if err := r.emit(events.VerificationRan{Turn: r.turn, Command: strings.Join(cmds, " && "), ExitCode: exit,
		DurationMS: ms(rep.Duration), Errors: rep.Errors, FailingTests: len(rep.FailingTests), TestsPass: rep.TestsPass,
		TestFilesChanged: rep.TestFilesChanged, RawBytes: len(raw), Cached: rep.Cached}); err != nil {
		return rep, err
	}
	ds := make([]events.Diagnostic, 0, len(rep.Diagnostics))
	for _, d := range rep.Diagnostics {
		ds = append(ds, events.Diagnostic{File: d.File, Line: d.Line, Col: d.Col, Kind: d.Kind, Message: d.Message})
	}
	dist := rep.Distilled()
	if err := r.emit(events.DiagnosticsDistilled{Turn: r.turn, Diagnostics: ds, Total: rep.DiagnosticsTotal,
		RawBytes: len(raw), DistilledBytes: len(dist), RawTokens: Tokens(raw), DistilledTokens: Tokens(dist),
		Distilled: r.comp.Distilled}); err != nil {
		return rep, err
	}
	return rep, nil
}

// feedback is what the model is told of a verification: distilled or raw.
func (r *runner) feedback(rep verify.Report) string {
	if r.comp.Distilled {
		return rep.Distilled()
	}
	raw := rep.Raw()
	if rep.Success() {
		raw += "verification passed\n"
	}
	return raw
}

// Tokens estimates the tokens of s as one per 4 bytes, rounded up: the size measure recorded
// in diagnostics.distilled (the model's own count is in model.called).
func Tokens(s string) int { return (len(s) + 3) / 4 }

func (r *runner) finish() error {
	switch {
	case r.escalation != "":
		r.status = events.StatusEscalated
	case r.aborted:
		r.status = events.StatusAborted
	case r.overflow:
		r.status = events.StatusOverflow
	case r.last != nil && r.turn > 0 && r.last.Success():
		r.status, r.success = events.StatusSucceeded, true
	default:
		r.status = events.StatusFailed
		if r.errText == "" {
			switch {
			case r.turn == 0:
				r.errText = "no patch"
			case r.last != nil && r.last.TestsPass:
				r.errText = "tests pass with test files changed: " + strings.Join(r.last.TestFilesChanged, ", ")
			default:
				r.errText = "verification failed"
			}
		}
	}
	diff, err := r.ws.Diff(r.ctx)
	if err == nil && diff != "" {
		r.output, _ = events.CanonicalValue(map[string]string{"patch": diff})
		if len(r.output) > 256<<10 {
			r.output, _ = events.CanonicalValue(map[string]string{"patch_sha256": sha(diff)})
		}
	}
	if err := r.ws.Discard(r.ctx); err != nil && r.errText == "" {
		r.errText = err.Error()
	}
	if err := r.emit(events.WorkspaceDiscarded{Repo: r.inst.Repo, Instance: r.inst.ID, Commit: r.ws.Commit}); err != nil {
		return err
	}
	r.latency = time.Since(r.start)
	totals := r.books.Totals()
	totals.LatencyMS = ms(r.latency)
	return r.emit(events.RunFinished{Status: r.status, Output: r.output, Success: r.success, Totals: totals, Error: clip(r.errText, 4096)})
}

func (r *runner) result() harness.Result {
	totals := r.books.Totals()
	totals.LatencyMS = ms(r.latency)
	return harness.Result{Status: r.status, Success: r.success, Output: r.books.Output, Tools: r.books.Tools,
		EscalationReason: r.escalation, Error: r.errText, Totals: totals, Latency: r.latency}
}

// VerificationTime is the time the run spent verifying (for Result consumers that measure it).
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("… [%d bytes cut]", len(s)-cut)
}
