package worker

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/dittolab/ditto/events"
)

// Redacted replaces an API key wherever it would be stored.
const Redacted = "[redacted]"

// redactor removes the worker's API keys from encoded events: an endpoint that echoes the
// request (its Authorization header in an error text, say) must not have the key stored in
// model.called.error, run.finished.error or anywhere else in an event. The keys are the values
// of every variable the worker's policy lets keys be read from (study.EndpointPolicy.Secrets),
// which covers every key a job can make it send.
type redactor struct {
	// needles are the forms a key takes in an event's JSON: as is, and JSON-escaped when that
	// differs (a key holding '"', '\\' or a control character).
	needles [][]byte
}

func newRedactor(secrets []string) *redactor {
	r := &redactor{}
	for _, s := range secrets {
		r.needles = append(r.needles, []byte(s))
		if esc, err := marshalNoHTMLEscape(s); err == nil {
			if esc = esc[1 : len(esc)-1]; !bytes.Equal(esc, []byte(s)) {
				r.needles = append(r.needles, esc)
			}
		}
	}
	return r
}

func marshalNoHTMLEscape(s string) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// redact returns the event data with every key replaced by Redacted, and the event decoded
// again from it; changed is false (and data returned as is) when it holds no key. A key found
// outside a string (where replacing it would break the JSON) is an error: the event is not
// stored rather than stored with the key.
func (r *redactor) redact(data []byte) (out []byte, e events.Envelope, changed bool, err error) {
	out = data
	for _, n := range r.needles {
		if bytes.Contains(out, n) {
			out = bytes.ReplaceAll(out, n, []byte(Redacted))
			changed = true
		}
	}
	if !changed {
		return data, e, false, nil
	}
	if e, err = events.Decode(out); err != nil {
		return nil, e, false, fmt.Errorf("worker: the event holds an API key that cannot be redacted: %w", err)
	}
	return out, e, true, nil
}
