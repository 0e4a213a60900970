package analysis

import "errors"

// Sentinel errors, wrapped with context; test with errors.Is.
var (
	// ErrNoStudy reports a study the database does not know (no event names it).
	ErrNoStudy = errors.New("analysis: no such study")
	// ErrNoRuns reports a study (or a cell and window) without a single finished run.
	ErrNoRuns = errors.New("analysis: no finished runs")
	// ErrInvalidOptions reports Options, a CellFilter or a Window out of range.
	ErrInvalidOptions = errors.New("analysis: invalid options")
	// ErrChanged reports data that changed between the statements of one load (possible only
	// through the HTTP API, which has no snapshot across requests); the load is retried.
	ErrChanged = errors.New("analysis: data changed while loading")
	// ErrPairing reports runs of two conditions a paired comparison cannot tell apart: they
	// agree in task, input, seed index, components, context tier and budget.
	ErrPairing = errors.New("analysis: ambiguous pairing")
)
