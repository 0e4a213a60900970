package tasks

import (
	"encoding/json"
)

// decodeLast decodes into v the output of the last successful call of tool in results, if any;
// a malformed output leaves v as it was decoded so far (the Ideal agent then sends what it has).
func decodeLast(results []ToolResult, tool string, v any) {
	if out, ok := lastOutput(results, tool); ok {
		_ = json.Unmarshal(out, v)
	}
}

// valueOr returns *p, or def when p is nil (an optional argument left out).
func valueOr[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}

// checksOr returns the checks a validation tool was asked to run, or all of them when none was
// named.
func checksOr(asked, all []string) []string {
	if len(asked) == 0 {
		return all
	}
	return asked
}

// finding is one issue a validation tool reports.
type finding struct {
	Check    string `json:"check"`
	Severity string `json:"severity"`
	Message  string `json:"message"`
}

func (f finding) severity() string { return f.Severity }

// passes reports whether a validation tool's findings let the data through: no error and,
// when strict, no finding at all.
func passes[F interface{ severity() string }](findings []F, strict bool) bool {
	for _, f := range findings {
		if f.severity() == "error" || strict {
			return false
		}
	}
	return true
}
