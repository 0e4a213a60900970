package receiver

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/dittolab/ditto/events"
)

// EventsResponse is the answer of POST /v1/events.
type EventsResponse struct {
	Accepted int             `json:"accepted"`
	Rejected []RejectedEvent `json:"rejected"`
	// Canonicalized counts the accepted events whose JSON values (arguments, outputs, input,
	// spec) were stored in their canonical form rather than as sent.
	Canonicalized int `json:"canonicalized,omitempty"`
	// IncompleteRuns names the runs that the rejections leave with a gap in their history:
	// they stay incomplete, out of every metric, until the missing events are sent again.
	IncompleteRuns []IncompleteRun `json:"incomplete_runs,omitempty"`
	Error          string          `json:"error,omitempty"` // a request-level failure (then nothing was accepted)
}

// IncompleteRun is a run attempt some of whose events in the batch were rejected.
type IncompleteRun struct {
	Study   string `json:"study"`
	Run     string `json:"run"`
	Attempt int    `json:"attempt"`
	// Rejected counts its events of the batch that were not stored, Accepted those that were.
	Rejected int `json:"rejected"`
	Accepted int `json:"accepted"`
	// MissingSeqs are the sequence numbers of its rejected events, where they could be read.
	MissingSeqs []int64 `json:"missing_seqs"`
}

// RejectedEvent is one event of a batch that was not stored.
type RejectedEvent struct {
	Index  int    `json:"index"`          // 0-based position in the batch
	Line   int    `json:"line,omitempty"` // 1-based line, for NDJSON
	ID     string `json:"id,omitempty"`   // the event id, when it could be read
	Reason string `json:"reason"`         // malformed, too_large, unknown_type, unknown_version, invalid, unsafe_id, not_canonical, forbidden, implausible_time, not_stored
	Field  string `json:"field,omitempty"`
	Detail string `json:"detail"`
}

// reason classifies an error for RejectedEvent.Reason and the metrics label.
func reason(err error) string {
	var fe *events.FieldError
	switch {
	case errors.Is(err, ErrForbidden):
		return "forbidden"
	case errors.Is(err, ErrNotStored):
		return "not_stored"
	case errors.Is(err, ErrImplausibleTime):
		return "implausible_time"
	case errors.Is(err, events.ErrTooLarge):
		return "too_large"
	case errors.Is(err, events.ErrUnsafeToken):
		return "unsafe_id"
	case errors.Is(err, events.ErrUnknownType):
		return "unknown_type"
	case errors.Is(err, events.ErrUnknownVersion):
		return "unknown_version"
	case errors.Is(err, events.ErrNotCanonical):
		return "not_canonical"
	case errors.Is(err, events.ErrMalformed):
		return "malformed"
	case errors.As(err, &fe):
		return "invalid"
	}
	return "invalid"
}

// item is one event of a batch as read.
type item struct {
	raw  []byte
	line int
}

// splitBatch reads a JSON array of events, or NDJSON (one event per line; blank lines are
// skipped). An array that is not valid JSON is refused whole: where one element ends and the
// next begins is then unknown. A bad NDJSON line is only that event's problem.
func splitBatch(body []byte) ([]item, error) {
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) == 0 {
		return nil, badRequest("empty body: send a JSON array of events or NDJSON")
	}
	if trimmed[0] == '[' {
		var raws []json.RawMessage
		if err := json.Unmarshal(trimmed, &raws); err != nil {
			return nil, badRequest("malformed JSON array: %v", err)
		}
		out := make([]item, len(raws))
		for i, r := range raws {
			out[i] = item{raw: r}
		}
		return out, nil
	}
	var out []item
	for n, line := range bytes.Split(body, []byte{'\n'}) {
		if line = bytes.TrimSpace(line); len(line) > 0 {
			out = append(out, item{raw: line, line: n + 1})
		}
	}
	return out, nil
}

func (s *Server) handleEvents(w http.ResponseWriter, r *http.Request, p *Principal, authErr error) int {
	const endpoint = "events"
	answer := func(code int, resp EventsResponse) int {
		if resp.Rejected == nil {
			resp.Rejected = []RejectedEvent{}
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(resp)
		return code
	}
	fail := func(err error) int {
		code := http.StatusBadRequest
		var he *httpError
		switch {
		case errors.Is(err, ErrUnauthorized):
			code = http.StatusUnauthorized
			w.Header().Set("WWW-Authenticate", `Bearer realm="ditto"`)
		case errors.Is(err, ErrTooLarge):
			code = http.StatusRequestEntityTooLarge
		case errors.As(err, &he):
			code = he.code
		}
		return answer(code, EventsResponse{Error: err.Error()})
	}
	if authErr != nil {
		return fail(authErr)
	}
	body, err := readBody(w, r, s.cfg.MaxBodyBytes)
	if err != nil {
		return fail(err)
	}
	batch, err := splitBatch(body)
	if err != nil {
		return fail(err)
	}
	if len(batch) > s.cfg.MaxEvents {
		return fail(fmt.Errorf("%w: %d events, at most %d per request", ErrTooLarge, len(batch), s.cfg.MaxEvents))
	}
	var (
		resp  EventsResponse
		msgs  []pubMsg
		index = map[string]int{} // event id → batch index, to report publish failures
		dups  int
		runs  = runTally{}
	)
	reject := func(i int, it item, id string, err error) {
		rj := RejectedEvent{Index: i, Line: it.line, ID: id, Reason: reason(err), Detail: err.Error()}
		var fe *events.FieldError
		if errors.As(err, &fe) {
			rj.Field = fe.Field
		}
		resp.Rejected = append(resp.Rejected, rj)
		s.m.rejected.WithLabelValues(endpoint, rj.Reason).Inc()
		runs.lost(it.raw)
	}
	arrival := s.now()
	for i, it := range batch {
		env, data, subject, canonicalized, err := checkEvent(it.raw, arrival, s.cfg.Times)
		if err == nil && !p.May(env.Study) {
			err = fmt.Errorf("%w: %q (token %s)", ErrForbidden, env.Study, p.Name)
		}
		if err != nil {
			reject(i, it, clipID(env.ID), err)
			continue
		}
		if _, dup := index[env.ID]; dup {
			// The same event twice in one batch is stored once, like a re-sent batch.
			dups++
			continue
		}
		index[env.ID] = i
		if canonicalized {
			resp.Canonicalized++
		}
		// Publish the bytes as sent when they were canonical (they decoded and validated):
		// the stream holds exactly what the producer wrote, or its canonical form.
		msgs = append(msgs, pubMsg{subject: subject, id: env.ID, data: data})
		runs.stored(&env)
	}
	failed, err := s.publish(r.Context(), msgs, s.cfg.AdmitWait)
	switch {
	case errors.Is(err, ErrThrottled):
		s.throttle(w, endpoint, http.StatusTooManyRequests)
		resp.Error = fmt.Sprintf("%v: retry after %s; nothing of this request was stored", err, w.Header().Get("Retry-After")+"s")
		return answer(http.StatusTooManyRequests, EventsResponse{Error: resp.Error, Rejected: resp.Rejected})
	case err != nil:
		s.throttle(w, endpoint, http.StatusServiceUnavailable)
		return answer(http.StatusServiceUnavailable, EventsResponse{Error: err.Error(), Rejected: resp.Rejected})
	}
	resp.Accepted = len(msgs) - len(failed) + dups
	for id, ferr := range failed {
		reject(index[id], batch[index[id]], id, fmt.Errorf("%w: %v", ErrNotStored, ferr))
		runs.unstore(batch[index[id]].raw)
	}
	resp.IncompleteRuns = runs.incomplete()
	s.m.accepted.WithLabelValues(endpoint).Add(float64(resp.Accepted))
	sortRejected(resp.Rejected)
	switch {
	case len(failed) > 0:
		s.throttle(w, endpoint, http.StatusServiceUnavailable)
		resp.Error = "some events were not acknowledged by JetStream; re-send the batch (events are idempotent on their id)"
		return answer(http.StatusServiceUnavailable, resp)
	case resp.Accepted == 0 && len(resp.Rejected) > 0 && allReason(resp.Rejected, "forbidden"):
		return answer(http.StatusForbidden, resp)
	case resp.Accepted == 0 && len(resp.Rejected) > 0:
		return answer(http.StatusBadRequest, resp)
	}
	return answer(http.StatusOK, resp)
}

// sortRejected puts publish failures, appended last, in batch order with the others.
func sortRejected(r []RejectedEvent) {
	slices.SortStableFunc(r, func(a, b RejectedEvent) int { return a.Index - b.Index })
}

func allReason(r []RejectedEvent, reason string) bool {
	for _, x := range r {
		if x.Reason != reason {
			return false
		}
	}
	return true
}

func clipID(id string) string {
	if len(id) > 128 {
		return id[:128]
	}
	return id
}

// runTally follows the runs of a batch: which of their events were stored and which were lost,
// so that the answer names the runs a rejection leaves with a gap.
type runTally map[runKey]*runEntry

type runKey struct {
	study, run string
	attempt    int
}

// runEntry is one run's tally: the answer's entry and the sequence numbers stored.
type runEntry struct {
	IncompleteRun
	storedSeqs map[int64]bool
}

// ident is what can be read of a rejected event: the run it belongs to and its place in it.
type ident struct {
	Study   string `json:"study"`
	Run     string `json:"run"`
	Attempt int    `json:"attempt"`
	Seq     int64  `json:"seq"`
}

// identify reads the run of an event that was not stored, as far as its JSON allows.
func identify(raw []byte) (ident, bool) {
	var id ident
	if json.Unmarshal(raw, &id) != nil && id.Run == "" {
		return id, false
	}
	if events.ValidateToken("study", id.Study) != nil || events.ValidateToken("run", id.Run) != nil || id.Run == events.StudyRun {
		return id, false
	}
	return id, true
}

func (t runTally) entry(study, run string, attempt int) *runEntry {
	k := runKey{study, run, attempt}
	r := t[k]
	if r == nil {
		r = &runEntry{IncompleteRun: IncompleteRun{Study: study, Run: run, Attempt: attempt, MissingSeqs: []int64{}},
			storedSeqs: map[int64]bool{}}
		t[k] = r
	}
	return r
}

func (t runTally) stored(e *events.Envelope) {
	if e.Run != events.StudyRun {
		r := t.entry(e.Study, e.Run, e.Attempt)
		r.Accepted++
		r.storedSeqs[e.Seq] = true
	}
}

// unstore moves an event accepted from the batch, then not acknowledged by JetStream, to lost.
func (t runTally) unstore(raw []byte) {
	if id, ok := identify(raw); ok {
		r := t.entry(id.Study, id.Run, id.Attempt)
		r.Accepted--
		delete(r.storedSeqs, id.Seq)
	}
	t.lost(raw)
}

func (t runTally) lost(raw []byte) {
	if id, ok := identify(raw); ok {
		r := t.entry(id.Study, id.Run, id.Attempt)
		r.Rejected++
		if id.Seq > 0 {
			r.MissingSeqs = append(r.MissingSeqs, id.Seq)
		}
	}
}

// incomplete lists the runs that a rejection leaves with a gap: a rejected event whose
// sequence number no stored event of the batch carries (a rejected copy of an event that was
// also sent valid leaves none; neither does one whose sequence number could not be read or is
// not valid). Earlier batches may have stored the missing events; the analyzer shows the run
// as incomplete only while its stored history has a gap. Sorted by study, run and attempt;
// nil when none.
func (t runTally) incomplete() []IncompleteRun {
	var out []IncompleteRun
	for _, r := range t {
		missing := r.MissingSeqs[:0]
		for _, seq := range r.MissingSeqs {
			if !r.storedSeqs[seq] && !slices.Contains(missing, seq) {
				missing = append(missing, seq)
			}
		}
		if len(missing) > 0 {
			slices.Sort(missing)
			r.MissingSeqs = missing
			out = append(out, r.IncompleteRun)
		}
	}
	slices.SortFunc(out, func(a, b IncompleteRun) int {
		return cmp.Or(strings.Compare(a.Study, b.Study), strings.Compare(a.Run, b.Run), a.Attempt-b.Attempt)
	})
	return out
}
