package otlpmap

import "strings"

// Kind is what a span means to ditto.
type Kind int

// Span kinds. KindOther spans produce no event; their children are still mapped.
const (
	KindOther     Kind = iota
	KindAgent          // invoke_agent, invoke_workflow, OpenInference AGENT, traceloop workflow/agent
	KindStep           // OpenInference CHAIN, traceloop task, a nested agent: a state of the run
	KindPlan           // plan
	KindTool           // execute_tool, OpenInference TOOL, traceloop tool
	KindInference      // chat, text_completion, generate_content, OpenInference LLM, OpenLLMetry llm.request.type
)

var kindNames = [...]string{"other", "agent", "step", "plan", "tool", "inference"}

func (k Kind) String() string {
	if k < 0 || int(k) >= len(kindNames) {
		return "kind(?)"
	}
	return kindNames[k]
}

// Attribute keys of the three vocabularies.
const (
	keyOperation      = "gen_ai.operation.name"
	keyOpenInference  = "openinference.span.kind"
	keyTraceloop      = "traceloop.span.kind"
	keyLLMRequestType = "llm.request.type"
)

// Classify says what a span is and why (the vocabulary and value that decided), or, for
// KindOther, why it is not mapped.
func Classify(s *Span) (Kind, string) {
	if op, ok := s.Attrs.Str(keyOperation); ok {
		if k, known := operationKind(op); known {
			return refineStep(s, k), keyOperation + "=" + op
		}
		return KindOther, keyOperation + "=" + op + " is not mapped"
	}
	if v, ok := s.Attrs.Str(keyOpenInference); ok {
		switch strings.ToUpper(v) {
		case "AGENT":
			return KindAgent, keyOpenInference + "=" + v
		case "CHAIN":
			return refineStep(s, KindStep), keyOpenInference + "=" + v
		case "LLM":
			return KindInference, keyOpenInference + "=" + v
		case "TOOL":
			return KindTool, keyOpenInference + "=" + v
		}
		return KindOther, keyOpenInference + "=" + v + " is not mapped"
	}
	if v, ok := s.Attrs.Str(keyTraceloop); ok {
		switch strings.ToLower(v) {
		case "workflow", "agent":
			return KindAgent, keyTraceloop + "=" + v
		case "task":
			return refineStep(s, KindStep), keyTraceloop + "=" + v
		case "tool":
			return KindTool, keyTraceloop + "=" + v
		}
		return KindOther, keyTraceloop + "=" + v + " is not mapped"
	}
	if v, ok := s.Attrs.Str(keyLLMRequestType); ok {
		switch strings.ToLower(v) {
		case "chat", "completion":
			return KindInference, keyLLMRequestType + "=" + v
		}
		return KindOther, keyLLMRequestType + "=" + v + " is not mapped"
	}
	// GenAI span names are "{operation} {target}"; some instrumentations set only the name.
	first, _, _ := strings.Cut(s.Name, " ")
	if k, known := operationKind(first); known {
		return refineStep(s, k), "span name " + first
	}
	return KindOther, "unknown span kind"
}

func operationKind(op string) (Kind, bool) {
	switch strings.ToLower(op) {
	case "invoke_agent", "invoke_workflow":
		return KindAgent, true
	case "plan":
		return KindPlan, true
	case "execute_tool":
		return KindTool, true
	case "chat", "text_completion", "generate_content":
		return KindInference, true
	}
	return KindOther, false
}

// refineStep treats a step named "plan" or "planning" (a common way for chain-based
// frameworks to mark their planning step) as a plan.
func refineStep(s *Span, k Kind) Kind {
	if k != KindStep {
		return k
	}
	name, _ := s.Attrs.Str("traceloop.entity.name")
	if name == "" {
		name = s.Name
	}
	switch strings.ToLower(name) {
	case "plan", "planning", "planner":
		return KindPlan
	}
	return k
}
