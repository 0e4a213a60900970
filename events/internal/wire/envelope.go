// Package wire is the JSON shape of an event envelope and the events package's fast paths
// for it: Scan reads an encoded envelope and Append writes one, each by hand in one pass and
// each only for input it handles exactly as encoding/json does (ok false otherwise, and the
// caller uses encoding/json on the same Envelope). The payload member is carried as raw
// JSON; the events package decodes it by type and version. It is tested through events.Encode
// and events.Decode, against encoding/json on the same Envelope (TestDecodeMatchesReference,
// TestEncodeMatchesReference, FuzzDecodeFast, FuzzEncodeFast).
package wire

import (
	"encoding/json"
	"time"
)

// Envelope is the JSON shape of an event, as encoding/json reads and writes it.
type Envelope struct {
	Schema    int             `json:"schema"`
	ID        string          `json:"id"`
	Type      string          `json:"type"`
	Time      time.Time       `json:"time"`
	Study     string          `json:"study"`
	Run       string          `json:"run"`
	Attempt   int             `json:"attempt"`
	Seq       int64           `json:"seq"`
	Source    Source          `json:"source"`
	TraceID   string          `json:"trace_id,omitempty"`
	SpanID    string          `json:"span_id,omitempty"`
	Ignorable bool            `json:"ignorable,omitempty"`
	Payload   json.RawMessage `json:"payload"`
}

// Source is the JSON shape of an event's source.
type Source struct {
	Kind string `json:"kind"`
	ID   string `json:"id"`
}
