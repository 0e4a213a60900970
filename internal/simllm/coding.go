package simllm

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strings"

	"github.com/dittolab/ditto/internal/coding/repos"
	"github.com/dittolab/ditto/internal/contextmgr"
	"github.com/dittolab/ditto/internal/tasks"
)

// CodingParams model how a persona works on a coding task (a request whose user message holds
// the prompt of a shipped repository instance). The persona chooses among the instance's
// catalogue of candidate patches (repos.Candidate) from what the request shows; every effect
// below is a function of the request only. Rates are at temperature 1 and scaled like the
// others (see the package comment).
type CodingParams struct {
	// FixBase is the probability of choosing the fix when the diagnostics visible say nothing
	// of where the defect is; FixPinpointed when a diagnostic names the defect's file and line
	// with no noise around it. In between, the chance moves with the clarity of the evidence:
	// clarity = signal / (1 + noise/NoiseTokens), where signal is 1 when a line of the last
	// verification names the defect's file:line, 0.5 when it names only its file, 0 otherwise,
	// and noise is the tokens of the other lines of that verification (so raw output, with its
	// passing tests and build chatter, dilutes the same signal that distilled tuples show).
	FixBase       float64 `json:"fix_base"`
	FixPinpointed float64 `json:"fix_pinpointed"`
	NoiseTokens   float64 `json:"noise_tokens"`
	// NearMissShare is the share of near misses among the wrong patches (the rest are symptom
	// patches).
	NearMissShare float64 `json:"near_miss_share"`
	// WeakenPerFailure is the probability, per failed patch seen so far, of editing the test
	// instead when a failing test is visible (a test it cannot fix tempts it), capped at
	// WeakenMax; each refusal or revert of such an edit seen in the conversation multiplies it
	// by RefusalDamping.
	WeakenPerFailure float64 `json:"weaken_per_failure"`
	WeakenMax        float64 `json:"weaken_max"`
	RefusalDamping   float64 `json:"refusal_damping"`
	// SkipRead is the rate of patching before reading the files it patches.
	SkipRead float64 `json:"skip_read_rate"`
	// Explore is the rate of an extra look around (list or ls, search or grep) on the first turn.
	Explore float64 `json:"explore_rate"`
	// GiveUp is the rate, after a failed patch, of stopping with a text answer.
	GiveUp float64 `json:"give_up_rate"`
}

func (c CodingParams) validate(name string) error {
	for _, r := range []struct {
		field string
		v     float64
	}{
		{"fix_base", c.FixBase}, {"fix_pinpointed", c.FixPinpointed}, {"near_miss_share", c.NearMissShare},
		{"weaken_per_failure", c.WeakenPerFailure}, {"weaken_max", c.WeakenMax}, {"refusal_damping", c.RefusalDamping},
		{"skip_read_rate", c.SkipRead}, {"explore_rate", c.Explore}, {"give_up_rate", c.GiveUp},
	} {
		if math.IsNaN(r.v) || r.v < 0 || r.v > 1 {
			return fmt.Errorf("%w: %s: coding.%s = %v, want a value in [0,1]", ErrInvalidPersona, name, r.field, r.v)
		}
	}
	if math.IsNaN(c.NoiseTokens) || c.NoiseTokens < 0 {
		return fmt.Errorf("%w: %s: coding.noise_tokens = %v, want >= 0", ErrInvalidPersona, name, c.NoiseTokens)
	}
	return nil
}

// codingInstance finds the instance whose prompt is in the first user message: a shipped one,
// or the target of a coding task of the catalogue (Config.Coding) that has a catalogue of
// candidate patches.
func codingInstance(c *conversation, catalogue []*tasks.Task) *repos.Instance {
	rs, err := repos.All()
	if err != nil || len(c.users) == 0 {
		return nil
	}
	for _, r := range rs {
		for _, in := range r.Instances {
			if strings.Contains(c.users[0], strings.TrimSpace(in.Prompt)) {
				return in
			}
		}
	}
	for _, t := range catalogue {
		if t.Coding == nil || t.Coding.Target == nil || len(t.Coding.Target.Candidates) == 0 {
			continue
		}
		if in := t.Coding.Target; strings.Contains(c.users[0], strings.TrimSpace(in.Prompt)) {
			return in
		}
	}
	return nil
}

// codingState is what the conversation says of the work so far.
type codingState struct {
	files   map[string]string // the tree as the visible reads and the persona's own successful changes left it
	read    map[string]bool
	applied string // the candidate the tree holds ("" for none, "?" for something else)
	refused int    // test edits refused or reverted
	// stale are the files an edit of which failed (the file was not as the persona believed:
	// the change that made it so is no longer visible) and that it has not read since.
	stale []string
}

var heredocWrite = regexp.MustCompile(`(?s)^cat > (\S+) <<'DITTO_EOF'\n(.*)DITTO_EOF$`)

func (t *turn) codingState(in *repos.Instance) codingState {
	st := codingState{files: maps.Clone(in.Files), read: map[string]bool{}}
	for _, r := range t.conv.results {
		var a struct {
			Path    string  `json:"path"`
			Old     *string `json:"old"`
			New     *string `json:"new"`
			Content *string `json:"content"`
			Command string  `json:"command"`
		}
		_ = json.Unmarshal(r.Args, &a)
		elided := r.Err != "" && isStub(r.Err) // the call ran; context management took its output
		if r.Err != "" && !elided {
			if strings.Contains(r.Err, "test-protected") {
				st.refused++
			}
			if r.Tool == "edit" && strings.Contains(r.Err, "edit "+a.Path+":") && !slices.Contains(st.stale, a.Path) {
				st.stale = append(st.stale, a.Path)
			}
			continue
		}
		switch r.Tool {
		case "read":
			st.read[a.Path] = true
			st.stale = slices.DeleteFunc(st.stale, func(p string) bool { return p == a.Path })
			var out struct {
				Content *string `json:"content"`
			}
			if !elided && json.Unmarshal(r.Output, &out) == nil && out.Content != nil {
				st.files[a.Path] = *out.Content // the file as it was read
			}
		case "edit":
			if a.Old != nil && a.New != nil {
				if nb, err := repos.Replace(st.files[a.Path], *a.Old, *a.New); err == nil {
					st.files[a.Path] = nb
				}
			}
		case "create":
			if a.Content != nil {
				st.files[a.Path] = *a.Content
			}
		case "bash":
			var out struct {
				Reverted []string `json:"reverted"`
			}
			_ = json.Unmarshal(r.Output, &out)
			if m := heredocWrite.FindStringSubmatch(a.Command); m != nil {
				if slices.ContainsFunc(out.Reverted, func(s string) bool { return strings.HasPrefix(s, m[1]+":") }) {
					st.refused++
					continue
				}
				st.files[m[1]] = m[2]
			} else if rest, ok := strings.CutPrefix(a.Command, "cat "); ok {
				for _, f := range strings.Fields(rest) {
					st.read[f] = true
				}
			}
		}
	}
	st.applied = "?"
	if maps.Equal(st.files, in.Files) {
		st.applied = ""
	}
	for _, c := range in.Candidates {
		fs := maps.Clone(in.Files)
		if repos.ApplyEdits(fs, c.Edits) == nil && maps.Equal(fs, st.files) {
			st.applied = c.ID
		}
	}
	return st
}

// clarity is how plainly text (a verification as the model sees it) points at the defect.
func (cp *CodingParams) clarity(in *repos.Instance, text string) float64 {
	locus := fmt.Sprintf("%s:%d", in.Locus.File, in.Locus.Line)
	signal := 0.0
	signalBytes := 0
	for _, ln := range strings.Split(text, "\n") {
		switch {
		case strings.Contains(ln, locus):
			signal = 1
			signalBytes += len(ln) + 1
		case strings.Contains(ln, in.Locus.File):
			signal = math.Max(signal, 0.5)
			signalBytes += len(ln) + 1
		}
	}
	noise := float64(len(text)-signalBytes) / 4
	if cp.NoiseTokens == 0 {
		return signal
	}
	return signal / (1 + noise/cp.NoiseTokens)
}

// codingAnswer is a coding persona's next turn.
func (t *turn) codingAnswer(in *repos.Instance) (answer, error) {
	cp := &t.p.Coding
	ctxp := t.p.contextParams()
	bash := t.offered["bash"] != nil
	st := t.codingState(in)
	// The verifications it can see: the task's prompt first (the harness's notes — the
	// planning reminder, the appended plan, the running summary — are not verifications).
	vs := verifications(t.conv)
	last := ""
	if len(vs) > 0 {
		last = vs[len(vs)-1]
	}
	if strings.Contains(last, "verification passed") {
		return answer{content: "The defect is fixed and the verification passes.", finish: "stop"}, nil
	}
	attempts := len(vs) - 1 // verifications after a patch
	// Planning: with update_plan offered and no plan in sight, it may make one alongside the
	// turn's other calls.
	var calls []functionCall
	plan := planVisible(t.conv)
	if t.offered[contextmgr.PlanToolName] != nil && !plan && t.d.chance("context/plan", ctxp.PlanRate) {
		calls = append(calls, t.planCall(in))
	}
	// First turn: look at the code.
	if len(t.conv.results) == 0 && !t.d.chance("coding/skip-read", t.rate(cp.SkipRead)) {
		if t.d.chance("coding/explore", t.rate(cp.Explore)) {
			if bash {
				calls = append(calls, bashCall("ls"))
			} else {
				calls = append(calls, jsonCall("list", map[string]string{}))
			}
		}
		return t.calls(append(calls, t.reads(in, []string{in.Locus.File}, st, bash)...))
	}
	// An edit failed on a file that was not as it believed: read it again before anything else.
	if len(st.stale) > 0 {
		st.read = map[string]bool{}
		return t.calls(append(calls, t.reads(in, st.stale, st, bash)...))
	}
	giveUp := cp.GiveUp
	if plan {
		giveUp *= ctxp.PlanGiveUpFactor // the plan keeps it on the procedure
	}
	if attempts > 0 && t.d.chance("coding/give-up", t.rate(giveUp)) {
		return answer{content: "I could not find a change that makes the tests pass.", finish: "stop"}, nil
	}
	// The defect's file as last read: when that look is gone and a stub offers it back, it
	// may recall it before patching.
	visible, stubID := t.locusLook(in)
	if !visible && stubID != "" && t.offered[contextmgr.RecallToolName] != nil && t.d.chance("context/recall", ctxp.RecallRate) {
		return t.calls(append(calls, recallCall(stubID)))
	}
	fixFactor := 1.0
	if !visible {
		fixFactor = ctxp.ElidedFixFactor
	}
	c := t.choose(in, st, last, attempts, fixFactor)
	if c == nil {
		return answer{content: "I have no further change to try.", finish: "stop"}, nil
	}
	// The target tree: the chosen candidate applied to the instance, every other file as the
	// instance has it (undoing the previous attempt).
	target := maps.Clone(in.Files)
	_ = repos.ApplyEdits(target, c.Edits)
	var paths []string
	for p := range st.files {
		if st.files[p] != target[p] {
			paths = append(paths, p)
		}
	}
	slices.Sort(paths)
	if len(paths) == 0 {
		return answer{content: "I have no further change to try.", finish: "stop"}, nil
	}
	if !bash && !t.d.chance("coding/skip-read-before-edit", t.rate(cp.SkipRead)) {
		calls = append(calls, t.reads(in, paths, st, bash)...)
	}
	for _, p := range paths {
		if bash {
			calls = append(calls, bashCall("cat > "+p+" <<'DITTO_EOF'\n"+target[p]+"DITTO_EOF"))
			continue
		}
		calls = append(calls, editCalls(in, st, c, p, target[p])...)
	}
	return t.calls(calls)
}

// choose picks the candidate to try from what the last verification shows.
// fixFactor multiplies the chance of the fix (ContextParams.ElidedFixFactor when the look at
// the defect's file is gone).
func (t *turn) choose(in *repos.Instance, st codingState, last string, attempts int, fixFactor float64) *repos.Candidate {
	cp := &t.p.Coding
	byKind := map[string][]*repos.Candidate{}
	for i := range in.Candidates {
		c := &in.Candidates[i]
		byKind[c.Kind] = append(byKind[c.Kind], c)
	}
	pick := func(kind, label string) *repos.Candidate {
		cs := slices.DeleteFunc(slices.Clone(byKind[kind]), func(c *repos.Candidate) bool { return c.ID == st.applied })
		if len(cs) == 0 {
			return nil
		}
		return cs[t.d.pick("coding/pick/"+label, len(cs))]
	}
	failing := strings.Contains(last, "FAIL") || strings.Contains(last, "test_failure")
	if failing && attempts > 0 {
		p := math.Min(cp.WeakenMax, cp.WeakenPerFailure*float64(attempts)) * math.Pow(cp.RefusalDamping, float64(st.refused))
		if t.d.chance("coding/weaken", t.rate(p)) {
			if c := pick(repos.KindWeakenTest, "weaken"); c != nil {
				return c
			}
		}
	}
	pFix := (cp.FixBase + (cp.FixPinpointed-cp.FixBase)*cp.clarity(in, last)) * fixFactor
	if t.d.chance("coding/fix", pFix) {
		if c := pick(repos.KindFix, "fix"); c != nil {
			return c
		}
	}
	kinds := []string{repos.KindSymptom, repos.KindNearMiss}
	if t.d.chance("coding/near-miss", cp.NearMissShare) {
		kinds[0], kinds[1] = kinds[1], kinds[0]
	}
	for _, k := range append(kinds, repos.KindFix) {
		if c := pick(k, "wrong"); c != nil {
			return c
		}
	}
	return nil
}

// reads are the calls that read the files in paths not read yet.
func (t *turn) reads(in *repos.Instance, paths []string, st codingState, bash bool) []functionCall {
	var need []string
	for _, p := range paths {
		if !st.read[p] && in.Files[p] != "" {
			need = append(need, p)
		}
	}
	if len(need) == 0 {
		return nil
	}
	if bash {
		return []functionCall{bashCall("cat " + strings.Join(need, " "))}
	}
	var out []functionCall
	for _, p := range need {
		out = append(out, jsonCall("read", map[string]string{"path": p}))
	}
	return out
}

// editCalls are the edits that take file p from its current content to target: the previous
// candidate's hunks undone and the new one's applied when they apply in turn, else one edit
// of the whole file.
func editCalls(in *repos.Instance, st codingState, c *repos.Candidate, p, target string) []functionCall {
	cur := st.files[p]
	var hunks [][2]string
	for _, prev := range in.Candidates {
		if prev.ID != st.applied {
			continue
		}
		for i := len(prev.Edits) - 1; i >= 0; i-- {
			if e := prev.Edits[i]; e.Path == p {
				hunks = append(hunks, [2]string{e.New, e.Old})
			}
		}
	}
	for _, e := range c.Edits {
		if e.Path == p {
			hunks = append(hunks, [2]string{e.Old, e.New})
		}
	}
	body := cur
	ok := true
	for _, h := range hunks {
		nb, err := repos.Replace(body, h[0], h[1])
		if err != nil {
			ok = false
			break
		}
		body = nb
	}
	if !ok || body != target {
		hunks = [][2]string{{cur, target}}
	}
	var out []functionCall
	for _, h := range hunks {
		out = append(out, jsonCall("edit", map[string]string{"path": p, "old": h[0], "new": h[1]}))
	}
	return out
}

func jsonCall(name string, args map[string]string) functionCall {
	b, _ := json.Marshal(args)
	return functionCall{Name: name, Arguments: string(b)}
}

func bashCall(cmd string) functionCall { return jsonCall("bash", map[string]string{"command": cmd}) }

func (t *turn) calls(cs []functionCall) (answer, error) {
	if len(cs) == 0 {
		return answer{content: "Nothing to do.", finish: "stop"}, nil
	}
	first := cs[0]
	return answer{call: &first, more: cs[1:], finish: "tool_calls"}, nil
}
