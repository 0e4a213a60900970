package simllm

import (
	"context"
	"encoding/json"
	"math"
	"regexp"
	"strings"

	"github.com/dittolab/ditto/internal/tasks"
)

// toolChoice is the decoded tool_choice: "none", "auto", "required" or a named function.
type toolChoice struct {
	mode string // none, auto, required, named
	name string // for named
}

// parseToolChoice decodes tool_choice; absent means auto when tools are offered, else none.
func parseToolChoice(raw json.RawMessage, haveTools bool) (toolChoice, *apiError) {
	if len(raw) == 0 || string(raw) == "null" {
		if haveTools {
			return toolChoice{mode: "auto"}, nil
		}
		return toolChoice{mode: "none"}, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		switch s {
		case "none", "auto", "required":
			return toolChoice{mode: s}, nil
		}
		return toolChoice{}, badRequest("tool_choice", "invalid_value", "tool_choice = %q, want \"none\", \"auto\", \"required\" or {\"type\":\"function\",\"function\":{\"name\":...}}", s)
	}
	var obj struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil || obj.Type != "function" || obj.Function.Name == "" {
		return toolChoice{}, badRequest("tool_choice", "invalid_value", "tool_choice must be \"none\", \"auto\", \"required\" or {\"type\":\"function\",\"function\":{\"name\":...}}")
	}
	return toolChoice{mode: "named", name: obj.Function.Name}, nil
}

// answer is a persona's reply before encoding.
type answer struct {
	content string
	call    *functionCall
	more    []functionCall // further calls of the same response (coding personas patch several places at once)
	finish  string
}

// turn is everything one response is computed from. It is built from the decoded request
// alone (see the package comment).
type turn struct {
	p       *Persona
	req     *chatRequest
	conv    *conversation
	d       dice
	choice  toolChoice
	offered map[string]*functionDef
	order   []string // offered tool names in request order
	rec     recognition
	ag      *agent
	scale   float64 // temperature/top_p multiplier of the deviation rates
}

// scale is the multiplier of every deviation rate for the request's sampling parameters.
func (p *Persona) scale(req *chatRequest) float64 {
	t := 1.0
	if req.Temperature != nil {
		t = *req.Temperature
	}
	top := 1.0
	if req.TopP != nil {
		top = *req.TopP
	}
	g := func(x float64) float64 { return p.TemperatureFloor + (1-p.TemperatureFloor)*x }
	return g(t) * g(top)
}

func clamp01(x float64) float64 { return math.Max(0, math.Min(1, x)) }

// rate is a nominal persona rate scaled for the request.
func (t *turn) rate(nominal float64) float64 { return clamp01(nominal * t.scale) }

// errRate is an error rate scaled for the request and reduced by the persona's repair factor
// once per earlier failed attempt.
func (t *turn) errRate(nominal float64, attempts int) float64 {
	return clamp01(nominal * t.scale * math.Pow(t.p.RepairFactor, float64(attempts)))
}

// respond computes a persona's answer to a validated request; d is the request's randomness
// (newDice(req)).
func respond(ctx context.Context, catalogue []*tasks.Task, p *Persona, req *chatRequest, d dice) (answer, *apiError) {
	conv, aerr := parseConversation(req.Messages)
	if aerr != nil {
		return answer{}, aerr
	}
	choice, aerr := parseToolChoice(req.ToolChoice, len(req.Tools) > 0)
	if aerr != nil {
		return answer{}, aerr
	}
	t := &turn{p: p, req: req, conv: conv, d: d, choice: choice, offered: map[string]*functionDef{}, scale: p.scale(req)}
	names := append([]string(nil), conv.called...)
	for _, tool := range req.Tools {
		t.offered[tool.Function.Name] = tool.Function
		t.order = append(t.order, tool.Function.Name)
		names = append(names, tool.Function.Name)
	}
	if choice.mode == "named" {
		names = append(names, choice.name)
	}
	if isSummaryRequest(conv) && choice.mode == "none" {
		return t.summaryAnswer(), nil
	}
	if in := codingInstance(conv, catalogue); in != nil && choice.mode != "named" {
		a, err := t.codingAnswer(in)
		if err != nil {
			return answer{}, &apiError{Status: 500, Type: "server_error", Message: err.Error()}
		}
		return a, nil
	}
	t.rec = recognise(catalogue, conv, dedupe(names))
	if t.rec.task != nil {
		t.ag = &agent{ctx: ctx, task: t.rec.task, inst: t.rec.inst, prompt: t.rec.prompt}
	}
	a, err := t.decide()
	if err != nil {
		return answer{}, &apiError{Status: 500, Type: "server_error", Message: err.Error()}
	}
	return a, nil
}

func dedupe(names []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, n := range names {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}

func (t *turn) decide() (answer, error) {
	rf := t.req.ResponseFormat
	jsonWanted := rf != nil && (rf.Type == "json_object" || rf.Type == "json_schema")
	switch {
	case t.choice.mode == "named":
		return t.callTool(t.choice.name)
	case jsonWanted:
		return t.jsonAnswer()
	case t.choice.mode != "required" && t.asksForPlan():
		return t.textPlanAnswer()
	case t.choice.mode == "auto" || t.choice.mode == "required":
		return t.act()
	}
	return t.textAnswer()
}

var planWordRE = regexp.MustCompile(`(?i)\bplan`)

// asksForPlan reports whether the final message is a user or system message asking for a plan
// that has not been answered yet. The task's own instructions and instance prompts do not count.
func (t *turn) asksForPlan() bool {
	if t.conv.textTurns > 0 {
		return false
	}
	switch t.conv.lastRole {
	case "user", "system", "developer":
	default:
		return false
	}
	text := t.conv.lastText
	if task := t.rec.task; task != nil {
		text = strings.ReplaceAll(text, task.Instructions, "")
		for _, inst := range task.Instances {
			if inst.Prompt != "" {
				text = strings.ReplaceAll(text, inst.Prompt, "")
			}
		}
	}
	return planWordRE.MatchString(text)
}

// planSteps is the ideal plan, or the offered tools in order when no task is recognised.
func (t *turn) planSteps() ([]step, error) {
	if t.ag != nil {
		return t.ag.planSteps()
	}
	if steps := t.workflowPlan(); len(steps) > 0 {
		return steps, nil
	}
	var out []step
	for _, n := range t.order {
		out = append(out, step{State: strings.ToUpper(n), Tool: n})
	}
	return out, nil
}

func (t *turn) jsonAnswer() (answer, error) {
	rf := t.req.ResponseFormat
	var schema schemaNode
	strict := false
	if rf.Type == "json_schema" {
		schema = parseSchema(rf.JSONSchema.Schema)
		strict = rf.JSONSchema.Strict != nil && *rf.JSONSchema.Strict
	}
	if t.ag == nil && !isPlanSchema(schema) && !t.asksForPlanIgnoringTurns() {
		return answer{content: genericJSON(schema), finish: "stop"}, nil
	}
	steps, err := t.planSteps()
	if err != nil {
		return answer{}, err
	}
	content := jsonPlan(t.d, t.rate(t.p.PlanWording), t.errRate(t.p.MalformedPlan, t.conv.textTurns), strict, steps, schema)
	return answer{content: content, finish: "stop"}, nil
}

func (t *turn) asksForPlanIgnoringTurns() bool { return planWordRE.MatchString(t.conv.lastText) }

func (t *turn) textPlanAnswer() (answer, error) {
	steps, err := t.planSteps()
	if err != nil {
		return answer{}, err
	}
	// A free-text plan explains its steps with what the model knows of each tool.
	for i := range steps {
		if f := t.offered[steps[i].Tool]; f != nil && f.Description != "" {
			steps[i].Desc = f.Description
		} else if t.ag != nil {
			if tool, ok := t.ag.task.ToolByName(steps[i].Tool); ok {
				steps[i].Desc = tool.Description
			}
		}
	}
	return answer{content: textPlan(t.d, t.rate(t.p.PlanWording), t.rate(t.p.Skip), steps), finish: "stop"}, nil
}

// textAnswer is the reply when no tool may be called.
func (t *turn) textAnswer() (answer, error) {
	if t.ag == nil {
		return answer{content: wording(t.d, "generic", t.rate(t.p.PlanWording), []string{
			"Understood.", "Okay.", "Noted.", "Understood; tell me how to proceed.",
		}), finish: "stop"}, nil
	}
	tool, args, done, err := t.ag.ideal(t.conv.results)
	if err != nil {
		return answer{}, err
	}
	if done {
		return t.final(false), nil
	}
	_, offered := t.offered[tool]
	return answer{content: nextStepText(t.d, t.rate(t.p.PlanWording), tool, string(args), offered || len(t.offered) == 0), finish: "stop"}, nil
}

// final is the closing text answer; early marks an unfinished task.
func (t *turn) final(early bool) answer {
	var lastTool string
	var lastOut json.RawMessage
	for i := len(t.conv.results) - 1; i >= 0; i-- {
		if r := t.conv.results[i]; r.Err == "" {
			lastTool, lastOut = r.Tool, r.Output
			break
		}
	}
	return answer{content: finalAnswer(t.d, t.rate(t.p.PlanWording), lastTool, lastOut, early), finish: "stop"}
}

// act is the free choice: tool_choice auto or required with tools offered.
func (t *turn) act() (answer, error) {
	if t.ag == nil {
		return t.genericAct()
	}
	results := t.conv.results
	tool, args, done, err := t.ag.ideal(results)
	if err != nil {
		return answer{}, err
	}
	// A step jumped over earlier stays skipped unless the persona decides to go back for it.
	// The decision is keyed by the run's seed and the conversation up to the jump, so it is
	// the same at every later turn of the run.
	for guard := 0; !done && guard < len(t.ag.task.States); guard++ {
		if !t.jumpedOver(results, tool) || t.backfill(tool) {
			break
		}
		next, ok := t.ag.advance(results, tool, args)
		if !ok {
			break
		}
		results = next
		if tool, args, done, err = t.ag.ideal(results); err != nil {
			return answer{}, err
		}
	}
	mayStop := t.choice.mode == "auto"
	if done {
		if mayStop {
			return t.final(false), nil
		}
		// tool_choice required after the task is done: a model must call something, and
		// calling the final tool again is the least harmful choice.
		if t.offered[t.ag.task.FinalTool] != nil {
			return t.callTool(t.ag.task.FinalTool)
		}
		return t.callTool(t.order[0])
	}
	if mayStop && len(t.conv.results) > 0 && t.d.chance("act/stop_early", t.rate(t.p.StopEarly)) {
		return t.final(true), nil
	}
	if t.d.chance("act/skip", t.rate(t.p.Skip)) {
		if next, ok := t.ag.advance(results, tool, args); ok {
			if t2, args2, done2, err := t.ag.ideal(next); err == nil && !done2 && t.offered[t2] != nil {
				return t.callToolWith(t2, args2)
			}
		}
	}
	if t.offered[tool] == nil {
		// The ideal tool is not on offer: take the next offered tool of the path, if any.
		p, err := t.ag.path(results)
		if err != nil {
			return answer{}, err
		}
		for _, s := range p {
			if t.offered[s.Tool] != nil {
				return t.callToolWith(s.Tool, s.Args)
			}
		}
		if t.choice.mode == "required" {
			return t.callTool(t.order[0])
		}
		return answer{content: nextStepText(t.d, t.rate(t.p.PlanWording), tool, string(args), false), finish: "stop"}, nil
	}
	return t.callToolWith(tool, args)
}

// jumpedOver reports whether tool, the ideal agent's next tool, was jumped over: a tool that is
// neither tool nor one of its prerequisites has already returned successfully.
func (t *turn) jumpedOver(results []tasks.ToolResult, tool string) bool {
	walked := t.ag.walkedTools(results)
	for _, r := range results {
		if r.Err == "" && r.Output != nil && r.Tool != tool && !walked[r.Tool] {
			return true
		}
	}
	return false
}

// backfill decides, once per run and jumped tool, whether the persona goes back for it.
func (t *turn) backfill(tool string) bool {
	if t.req.Seed == nil {
		return t.d.chance("act/backfill/"+tool, t.p.Backfill)
	}
	// Key: the seed and the conversation up to the first assistant message after the last
	// successful result of a prerequisite, i.e. the turn at which the jump was made.
	msgs := t.req.Messages
	cut := len(msgs)
	for i, m := range msgs {
		if m.Role == "assistant" && len(m.ToolCalls) > 0 {
			for _, tc := range m.ToolCalls {
				if tc.Function.Name != tool && !t.ag.walkedTools(t.conv.results)[tc.Function.Name] {
					cut = i + 1
					break
				}
			}
			if cut != len(msgs) {
				break
			}
		}
	}
	sub := &chatRequest{Model: t.req.Model, Messages: msgs[:cut], Seed: t.req.Seed}
	return newDice(sub).chance("act/backfill/"+tool, t.p.Backfill)
}

// callTool calls name with the ideal agent's arguments for it (or, when the task is unknown
// or the ideal agent would never call it, a minimal value of its schema).
func (t *turn) callTool(name string) (answer, error) {
	var args json.RawMessage
	ok := false
	if t.ag != nil {
		args, ok = t.ag.argsFor(t.conv.results, name)
	}
	if !ok && t.ag == nil {
		args = t.genericArgs(name)
	} else if !ok {
		args = json.RawMessage(genericJSON(t.toolSchemaNode(name)))
	}
	return t.callToolWith(name, args)
}

func (t *turn) toolSchema(name string) json.RawMessage {
	if f := t.offered[name]; f != nil && len(f.Parameters) > 0 {
		return f.Parameters
	}
	if t.ag != nil {
		if tool, ok := t.ag.task.ToolByName(name); ok {
			return tool.Schema
		}
	}
	return nil
}

func (t *turn) toolSchemaNode(name string) schemaNode { return parseSchema(t.toolSchema(name)) }

// callToolWith calls name with the ideal arguments after the persona's deviations: invalid
// arguments, an out-of-scope resource, or valid-but-different formatting.
func (t *turn) callToolWith(name string, ideal json.RawMessage) (answer, error) {
	d := t.d
	attempts := t.conv.failStreak
	obj, isObj := decodeObject(ideal)
	out := string(ideal)
	if isObj {
		raw := t.toolSchema(name)
		sn, sch := parseSchema(raw), validatorFor(raw)
		var tool *tasks.Tool
		var task *tasks.Task
		var inst *tasks.Instance
		if t.ag != nil {
			task, inst = t.ag.task, t.ag.inst
			if tl, ok := task.ToolByName(name); ok {
				tool = tl
			}
		}
		v, cosmetic := obj, false
		switch {
		case d.chance("args/invalid", t.errRate(t.p.InvalidArgs, attempts)):
			v, _ = applyMutators(d.rng("args/invalid/how"), invalidMutators, obj, sn, sch, false, 10)
		case d.chance("args/scope", t.errRate(t.p.OutOfScope, attempts)):
			v, _ = scopeVariant(d.rng("args/scope/how"), obj, tool, task, inst, sch)
		case d.chance("args/format", t.rate(t.p.ArgFormat)):
			v, _ = applyMutators(d.rng("args/format/how"), formatMutators, obj, sn, sch, true, 10)
			cosmetic = d.chance("args/format/cosmetic", 0.5)
		}
		if cosmetic {
			out = encodeArgs(v, d.rng("args/cosmetic"))
		} else {
			out = encodeArgs(v, nil)
		}
	}
	// OpenAI reports finish_reason "stop" when tool_choice forced the function, "tool_calls"
	// when the model chose to call it.
	finish := "tool_calls"
	if t.choice.mode == "named" {
		finish = "stop"
	}
	return answer{call: &functionCall{Name: name, Arguments: out}, finish: finish}, nil
}
