package receiver_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/dittolab/ditto/internal/receiver"
)

func decodeResp(t *testing.T, b []byte) receiver.EventsResponse {
	t.Helper()
	var r receiver.EventsResponse
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("response %q is not an EventsResponse: %v", b, err)
	}
	return r
}

func TestEventsJSONArrayStoredAndFolds(t *testing.T) {
	e := newEnv(t, nil)
	evs := runEvents(t, "prod", "run-1", 3)
	arr, _ := json.Marshal(json.RawMessage("[" + strings.Join(strings.Split(strings.TrimSpace(string(ndjson(t, evs))), "\n"), ",") + "]"))
	resp, body := e.post(t, "/v1/events", tokProd, "application/json", arr)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST = %d %s", resp.StatusCode, body)
	}
	if r := decodeResp(t, body); r.Accepted != len(evs) || len(r.Rejected) != 0 {
		t.Fatalf("response = %+v, want %d accepted", r, len(evs))
	}
	// The answer came after JetStream acknowledged: the events are there now, no polling.
	runs := folds(t, stored(t, e.bus))
	r := runs["prod/run-1"]
	if r == nil || !r.Done() || len(r.Tools) != 3 {
		t.Fatalf("stored run = %+v, want a finished run with 3 tool calls", r)
	}
	// Re-sending the batch stores nothing new.
	e.post(t, "/v1/events", tokProd, "application/json", arr)
	if n := streamCount(t, e.bus); n != uint64(len(evs)) {
		t.Errorf("stream holds %d events after a re-send, want %d", n, len(evs))
	}
}

func TestEventsMixedBatch(t *testing.T) {
	e := newEnv(t, nil)
	good := runEvents(t, "prod", "run-ok", 1) // 4 events
	lines := strings.Split(strings.TrimSpace(string(ndjson(t, good))), "\n")
	other := runEvents(t, "other", "run-x", 0)
	otherLine := strings.TrimSpace(string(ndjson(t, other[:1])))
	bad := []struct {
		line, reason string
	}{
		{`{"schema":1,"id":"x",`, "malformed"},
		{strings.Replace(lines[0], `"run":"run-ok"`, `"run":"run.ok"`, 1), "unsafe_id"},
		{strings.Replace(lines[0], `"type":"run.started"`, `"type":"run.exploded"`, 1), "unknown_type"},
		{strings.Replace(lines[1], `"args":{"i":0}`, `"args":{"i":1e400}`, 1), "not_canonical"}, // a repeated key is refused earlier, as malformed (TestServeRefusesHostileEvents)
		{strings.Replace(lines[0], `"seq":1`, `"seq":0`, 1), "invalid"},
		{strings.Replace(lines[0], `"id":"`, `"id":"bad id `, 1), "unsafe_id"},
		{otherLine, "forbidden"},
	}
	// Interleave good and bad lines, with blank lines (skipped, not counted) between.
	var body []string
	type want struct {
		index  int
		reason string
	}
	var wants []want
	n := 0
	for i := 0; i < len(bad) || i < len(lines); i++ {
		if i < len(lines) {
			body = append(body, lines[i])
			n++
		}
		if i < len(bad) {
			wants = append(wants, want{n, bad[i].reason})
			body = append(body, bad[i].line)
			n++
		}
		body = append(body, "")
	}
	resp, raw := e.post(t, "/v1/events", tokProd, "application/x-ndjson", []byte(strings.Join(body, "\n")))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST mixed batch = %d %s", resp.StatusCode, raw)
	}
	r := decodeResp(t, raw)
	if r.Accepted != len(good) {
		t.Errorf("Accepted = %d, want %d", r.Accepted, len(good))
	}
	if len(r.Rejected) != len(wants) {
		t.Fatalf("Rejected = %+v, want %d", r.Rejected, len(wants))
	}
	for i, rj := range r.Rejected {
		w := wants[i]
		if rj.Index != w.index || rj.Reason != w.reason || rj.Detail == "" || rj.Line == 0 {
			t.Errorf("Rejected[%d] = %+v, want index %d reason %s with a detail and line", i, rj, w.index, w.reason)
		}
	}
	// Only the other study's run lost an event the batch did not also carry valid.
	if want := []receiver.IncompleteRun{{Study: "other", Run: "run-x", Attempt: 1, Rejected: 1, MissingSeqs: []int64{1}}}; !reflect.DeepEqual(r.IncompleteRuns, want) {
		t.Errorf("IncompleteRuns = %+v, want %+v", r.IncompleteRuns, want)
	}
	// No good event lost: the good run is stored whole and folds.
	if run := folds(t, stored(t, e.bus))["prod/run-ok"]; run == nil || !run.Done() {
		t.Errorf("the good run is not stored whole")
	}
	if n := streamCount(t, e.bus); n != uint64(len(good)) {
		t.Errorf("stream holds %d events, want %d", n, len(good))
	}
	reg := e.srv.Registry()
	if got := counterSum(t, reg, "ditto_ingest_events_accepted_total"); got != float64(len(good)) {
		t.Errorf("ditto_ingest_events_accepted_total = %v, want %d", got, len(good))
	}
	if got := counterSum(t, reg, "ditto_ingest_events_rejected_total"); got != float64(len(bad)) {
		t.Errorf("ditto_ingest_events_rejected_total = %v, want %d", got, len(bad))
	}
}

func TestEventsRequestErrors(t *testing.T) {
	e := newEnv(t, func(c *receiver.Config) { c.MaxBodyBytes = 1 << 20; c.MaxEvents = 10 })
	good := ndjson(t, runEvents(t, "prod", "r", 1))
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(bytes.Repeat([]byte(" "), 3<<20)) // a small body that inflates past the limit
	zw.Close()
	tests := []struct {
		name, token, ctype, encoding string
		body                         []byte
		want                         int
	}{
		{"no token", "", "application/json", "", good, http.StatusUnauthorized},
		{"wrong token", "not-a-token-of-this-server", "application/json", "", good, http.StatusUnauthorized},
		{"malformed array", tokAll, "application/json", "", []byte(`[{"schema":1},`), http.StatusBadRequest},
		{"empty", tokAll, "application/json", "", nil, http.StatusBadRequest},
		{"oversize", tokAll, "application/json", "", bytes.Repeat([]byte("x"), 2<<20), http.StatusRequestEntityTooLarge},
		{"gzip bomb", tokAll, "application/json", "gzip", gz.Bytes(), http.StatusRequestEntityTooLarge},
		{"too many events", tokAll, "application/x-ndjson", "", ndjson(t, runEvents(t, "prod", "r2", 5)), http.StatusRequestEntityTooLarge},
		{"all invalid", tokAll, "application/x-ndjson", "", []byte("{}\n{}\n"), http.StatusBadRequest},
		{"all forbidden", tokProd, "application/x-ndjson", "", ndjson(t, runEvents(t, "other", "r", 0)), http.StatusForbidden},
		{"bad encoding", tokAll, "application/json", "br", good, http.StatusUnsupportedMediaType},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, e.ts.URL+"/v1/events", bytes.NewReader(tt.body))
			req.Header.Set("Content-Type", tt.ctype)
			if tt.encoding != "" {
				req.Header.Set("Content-Encoding", tt.encoding)
			}
			if tt.token != "" {
				req.Header.Set("Authorization", "Bearer "+tt.token)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var r receiver.EventsResponse
			err = json.NewDecoder(resp.Body).Decode(&r)
			resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Fatalf("status = %d (%+v), want %d", resp.StatusCode, r, tt.want)
			}
			if err != nil || (r.Error == "" && len(r.Rejected) == 0) {
				t.Errorf("answer %+v (%v) does not say what is wrong", r, err)
			}
			if tt.want == http.StatusUnauthorized && resp.Header.Get("WWW-Authenticate") == "" {
				t.Errorf("401 without WWW-Authenticate")
			}
		})
	}
	// The server keeps serving, and nothing of the refused requests was stored.
	resp, body := e.post(t, "/v1/events", tokAll, "application/x-ndjson", good)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("good batch after the bad ones = %d %s", resp.StatusCode, body)
	}
	if n := streamCount(t, e.bus); n != 4 {
		t.Errorf("stream holds %d events, want the 4 of the good batch", n)
	}
}

func decodeRespT(t testing.TB, b []byte) receiver.EventsResponse {
	t.Helper()
	var r receiver.EventsResponse
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("response %q is not an EventsResponse: %v", b, err)
	}
	return r
}
