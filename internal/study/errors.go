package study

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors.
var (
	// ErrInvalidSpec is wrapped by every spec validation failure (*ValidationError).
	ErrInvalidSpec = errors.New("study: invalid spec")
	// ErrInvalidJob reports a job message that cannot be run (malformed or inconsistent).
	ErrInvalidJob = errors.New("study: invalid job")
	// ErrStudyExists reports a submission under a study name already defined with another spec.
	ErrStudyExists = errors.New("study: already defined with a different spec")
	// ErrNotSubmitted reports a study name with no study.defined event.
	ErrNotSubmitted = errors.New("study: no such study was submitted")
)

// FieldError is one problem of a spec, naming the field at fault as a JSON path
// ("tasks[2]", "endpoints.openai.base_url", "cells[0].runs").
type FieldError struct {
	Field string
	Msg   string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }

// ValidationError lists every problem found in a spec, in field order of discovery. It wraps
// ErrInvalidSpec; errors.As(err, &*FieldError) finds the first problem.
type ValidationError struct {
	Problems []*FieldError
}

func (e *ValidationError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%v: %d problem(s)", ErrInvalidSpec, len(e.Problems))
	for _, p := range e.Problems {
		b.WriteString("\n  ")
		b.WriteString(p.Error())
	}
	return b.String()
}

// Unwrap returns ErrInvalidSpec and the problems, so that errors.Is and errors.As see both.
func (e *ValidationError) Unwrap() []error {
	out := []error{ErrInvalidSpec}
	for _, p := range e.Problems {
		out = append(out, p)
	}
	return out
}

// Has reports whether a problem names field exactly.
func (e *ValidationError) Has(field string) bool {
	for _, p := range e.Problems {
		if p.Field == field {
			return true
		}
	}
	return false
}

// problems accumulates FieldErrors.
type problems []*FieldError

func (ps *problems) add(field, format string, args ...any) {
	*ps = append(*ps, &FieldError{Field: field, Msg: fmt.Sprintf(format, args...)})
}

func (ps problems) err() error {
	if len(ps) == 0 {
		return nil
	}
	return &ValidationError{Problems: ps}
}
