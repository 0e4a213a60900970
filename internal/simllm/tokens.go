package simllm

import (
	"math"
	"time"
)

// tokensOf estimates the tokens of a text at the persona's characters per token.
func (p *Persona) tokensOf(s string) int {
	if s == "" {
		return 0
	}
	return int(math.Ceil(float64(len([]rune(s))) / p.charsPerToken()))
}

// promptTokens estimates the prompt size as chat-format models count it: each message's text
// and tool calls plus a few tokens of framing, and each offered tool's name, description and
// parameter schema.
func (p *Persona) promptTokens(req *chatRequest) int {
	n := 3
	for _, m := range req.Messages {
		n += 4 + p.tokensOf(string(m.Content)) + p.tokensOf(m.Name)
		for _, tc := range m.ToolCalls {
			n += 3 + p.tokensOf(tc.Function.Name) + p.tokensOf(tc.Function.Arguments)
		}
	}
	for _, t := range req.Tools {
		if f := t.Function; f != nil {
			n += 8 + p.tokensOf(f.Name) + p.tokensOf(f.Description) + p.tokensOf(compactJSON(f.Parameters))
		}
	}
	if rf := req.ResponseFormat; rf != nil && rf.JSONSchema != nil {
		n += 8 + p.tokensOf(compactJSON(rf.JSONSchema.Schema))
	}
	return n
}

// compactJSON is raw JSON in its canonical compact form, so that the client's layout does not
// change a token count.
func compactJSON(raw []byte) string {
	if len(raw) == 0 {
		return ""
	}
	return string(canonicalJSON(raw))
}

// completionTokens estimates the size of an answer.
func (p *Persona) completionTokens(a answer) int {
	n := p.tokensOf(a.content)
	if a.call != nil {
		n += 3 + p.tokensOf(a.call.Name) + p.tokensOf(a.call.Arguments)
	}
	for _, c := range a.more {
		n += 3 + p.tokensOf(c.Name) + p.tokensOf(c.Arguments)
	}
	return max(n, 1)
}

// truncate cuts an answer to at most limit completion tokens, as a model stopped by max_tokens:
// the text (or the arguments) end mid-way and finish_reason is "length".
func (p *Persona) truncate(a answer, limit int) answer {
	if limit <= 0 || p.completionTokens(a) <= limit {
		return a
	}
	keep := int(float64(limit) * p.charsPerToken())
	cut := func(s string) string {
		r := []rune(s)
		if keep < len(r) {
			return string(r[:max(keep, 0)])
		}
		return s
	}
	if a.call != nil {
		c := *a.call
		keep -= len(c.Name) + 3
		c.Arguments = cut(c.Arguments)
		a.call = &c
	} else {
		a.content = cut(a.content)
	}
	a.finish = "length"
	return a
}

// latency is the modelled duration of a response, before Config.LatencyScale.
func (p *Persona) latency(d dice, prompt, completion int) time.Duration {
	ms := p.Latency.BaseMS + p.Latency.PerInputTokenMS*float64(prompt) + p.Latency.PerOutputTokenMS*float64(completion)
	if p.Latency.Jitter > 0 {
		ms *= math.Exp(p.Latency.Jitter * d.normal("latency"))
	}
	return time.Duration(ms * float64(time.Millisecond))
}
