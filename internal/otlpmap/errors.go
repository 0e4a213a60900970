package otlpmap

import "errors"

// Sentinel errors.
var (
	ErrMalformed  = errors.New("otlpmap: malformed OTLP payload")
	ErrInvalidID  = errors.New("otlpmap: invalid trace or span id")
	ErrNoGenAI    = errors.New("otlpmap: trace has no GenAI span")
	ErrEmpty      = errors.New("otlpmap: no spans")
	ErrFull       = errors.New("otlpmap: span buffer full")
	ErrTooMany    = errors.New("otlpmap: trace has too many spans")
	ErrLate       = errors.New("otlpmap: late span for a trace already emitted")
	ErrUnsafeName = errors.New("otlpmap: unsafe study name")
)

// ErrNotGenAIEvent refuses a log record that is not a GenAI event of an agent span.
var ErrNotGenAIEvent = errors.New("otlpmap: not a GenAI event of a span")
