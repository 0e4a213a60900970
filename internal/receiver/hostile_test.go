package receiver_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/bus/bustest"
	"github.com/dittolab/ditto/internal/receiver"
)

// reproSurrogate is the curl reproduction: valid JSON, a lone surrogate in the payload.
const reproSurrogate = `[{"schema":1,"id":"01REPROSURROGATE0000000001","type":"run.started","time":"2026-12-01T07:35:00Z","study":"s1","run":"r1","attempt":1,"seq":1,"source":{"kind":"production","id":"x"},"payload":{"task":"t","model":"m\ud800x","condition":"c"}}]`

// hostileLine returns an event line of study prod (run r, type run.started unless typ is set)
// with the given time, id and payload members.
func hostileLine(id, typ, at, payload string) string {
	if typ == "" {
		typ = "run.started"
	}
	return `{"schema":1,"id":"` + id + `","type":"` + typ + `","time":"` + at + `","study":"prod","run":"r","attempt":1,"seq":1,"source":{"kind":"production","id":"x"},"ignorable":true,"payload":{"task":"t","condition":"c",` + payload + `}}`
}

// hostileCases are events the issue found accepted, each with the sentinel its refusal wraps
// and the reason producer serve gives. Both entry points refuse each one alike.
func hostileCases() []struct {
	name, line, reason string
	err                error
} {
	now := time.Now().UTC()
	at := now.Format(time.RFC3339Nano)
	return []struct {
		name, line, reason string
		err                error
	}{
		{"lone surrogate", hostileLine("h1", "", at, `"model":"m\ud800x"`), "malformed", events.ErrInvalidText},
		{"bytes that are not UTF-8", hostileLine("h2", "", at, "\"model\":\"m\xff\""), "malformed", events.ErrInvalidText},
		{"duplicate key", hostileLine("h3", "", at, `"model":"a","model":"b"`), "malformed", events.ErrDuplicateKey},
		{"5,000-byte ignorable type", hostileLine("h4", strings.Repeat("t", 5000), at, `"model":"m"`), "unsafe_id", events.ErrUnsafeToken},
		{"wildcard in the type", hostileLine("h5", "agent.>", at, `"model":"m"`), "unsafe_id", events.ErrUnsafeToken},
		{"id with a trailing space", hostileLine("h6 ", "", at, `"model":"m"`), "unsafe_id", events.ErrUnsafeToken},
		{"id with CR LF", hostileLine(`h7\r\n`, "", at, `"model":"m"`), "unsafe_id", events.ErrUnsafeToken},
		{"id with NUL", hostileLine(`h8\u0000`, "", at, `"model":"m"`), "unsafe_id", events.ErrUnsafeToken},
		{"id not ASCII", hostileLine("h9é", "", at, `"model":"m"`), "unsafe_id", events.ErrUnsafeToken},
		{"dated 9999-12-31", hostileLine("h10", "", "9999-12-31T00:00:00Z", `"model":"m"`), "implausible_time", receiver.ErrImplausibleTime},
		{"dated two hours ahead", hostileLine("h11", "", now.Add(2*time.Hour).Format(time.RFC3339), `"model":"m"`), "implausible_time", receiver.ErrImplausibleTime},
		{"dated 1970", hostileLine("h12", "", "1970-01-01T00:00:01Z", `"model":"m"`), "implausible_time", receiver.ErrImplausibleTime},
	}
}

// TestServeRefusesHostileEvents: each event is refused with its reason and the field at fault,
// nothing of it reaches the stream, and the producer stays connected and ready: the 5,000-byte
// type used to reach NATS, which closed the connection for good (every later request 503).
func TestServeRefusesHostileEvents(t *testing.T) {
	e := newEnv(t, nil)
	resp, body := e.post(t, "/v1/events", tokAll, "application/json", []byte(reproSurrogate))
	r := decodeResp(t, body)
	if resp.StatusCode != http.StatusBadRequest || len(r.Rejected) != 1 || r.Rejected[0].Reason != "malformed" || r.Rejected[0].Field != "payload.model" ||
		!strings.Contains(r.Rejected[0].Detail, "surrogate") {
		t.Errorf("the issue's reproduction: %d %+v, want 400 rejecting payload.model as malformed (a lone surrogate)", resp.StatusCode, r)
	}
	for _, tt := range hostileCases() {
		resp, body := e.post(t, "/v1/events", tokAll, "application/x-ndjson", []byte(tt.line))
		r := decodeResp(t, body)
		if resp.StatusCode != http.StatusBadRequest || r.Accepted != 0 || len(r.Rejected) != 1 || r.Rejected[0].Reason != tt.reason {
			t.Errorf("%s: %d %+v, want 400 with reason %s", tt.name, resp.StatusCode, r, tt.reason)
		}
	}
	_, body = e.post(t, "/v1/events", tokAll, "application/x-ndjson", []byte(hostileCases()[9].line))
	if d := decodeResp(t, body).Rejected[0].Detail; !strings.Contains(d, "after its arrival") || !strings.Contains(d, "--max-clock-skew") {
		t.Errorf("refusal of an event dated 9999 says %q; want how far past its arrival and the setting", d)
	}
	if n := streamCount(t, e.bus); n != 0 {
		t.Errorf("stream holds %d messages, want 0", n)
	}
	if resp, _ := get(t, e.ts.URL+"/readyz"); resp != http.StatusOK || e.bus.Redials() != 0 {
		t.Errorf("/readyz = %d, redials %d; want 200 and 0 (the connection never closed)", resp, e.bus.Redials())
	}
	good := ndjson(t, runEvents(t, "prod", "after", 1))
	if resp, body := e.post(t, "/v1/events", tokAll, "application/x-ndjson", good); resp.StatusCode != http.StatusOK {
		t.Errorf("a good batch afterwards: %d %s", resp.StatusCode, body)
	}
}

func get(t *testing.T, url string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// TestImportAppliesServeChecks: producer import refuses every event producer serve refuses,
// for the same reason (one validation), each reported with its line; the good lines around
// them are published. Ids differing only by a trailing space were one Nats-Msg-Id, the second
// event lost although reported published.
func TestImportAppliesServeChecks(t *testing.T) {
	b := bustest.NewServer(t).Connect(t)
	ctx := ctxT(t, 30*time.Second)
	cases := hostileCases()
	at := time.Now().UTC().Format(time.RFC3339Nano)
	var lines []string
	for i, tt := range cases {
		lines = append(lines, hostileLine(fmt.Sprintf("good%d", i), "", at, `"model":"m"`), tt.line)
	}
	res, err := receiver.Import(ctx, b, strings.NewReader(strings.Join(lines, "\n")), receiver.ImportConfig{})
	if err != nil {
		t.Fatalf("Import() = %v", err)
	}
	if res.Published != len(cases) || len(res.Rejected) != len(cases) {
		t.Fatalf("Import() published %d, rejected %d; want %d and %d (%+v)", res.Published, len(res.Rejected), len(cases), len(cases), res.Rejected)
	}
	for i, r := range res.Rejected {
		if r.Line != 2*i+2 || !errors.Is(r.Err, cases[i].err) {
			t.Errorf("%s: rejected line %d: %v; want line %d and %v", cases[i].name, r.Line, r.Err, 2*i+2, cases[i].err)
		}
	}
	if n := streamCount(t, b); n != uint64(len(cases)) {
		t.Errorf("stream holds %d messages, want %d", n, len(cases))
	}
}

// TestImportReportsPublishFailureWithLine: a line JetStream refuses (here the stream's message
// size limit, lowered for the test) is reported with its line number, beside the lines stored.
func TestImportReportsPublishFailureWithLine(t *testing.T) {
	b := bustest.NewServer(t).Connect(t)
	ctx := ctxT(t, 30*time.Second)
	js := bustest.JetStream(t, b)
	s, err := js.Stream(ctx, events.EventsStream)
	if err != nil {
		t.Fatal(err)
	}
	cfg := s.CachedInfo().Config
	cfg.MaxMsgSize = 600
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	at := time.Now().UTC().Format(time.RFC3339Nano)
	lines := []string{
		hostileLine("small1", "", at, `"model":"m"`),
		hostileLine("big", "", at, `"model":"`+strings.Repeat("m", 700)+`"`),
		hostileLine("small2", "", at, `"model":"m"`),
	}
	res, err := receiver.Import(ctx, b, strings.NewReader(strings.Join(lines, "\n")), receiver.ImportConfig{})
	if !errors.Is(err, receiver.ErrNotStored) {
		t.Errorf("Import() error = %v, want ErrNotStored", err)
	}
	if res.Published != 2 || len(res.Rejected) != 1 || res.Rejected[0].Line != 2 || !errors.Is(res.Rejected[0].Err, receiver.ErrNotStored) {
		t.Errorf("Import() = %+v, want 2 published and line 2 not stored", res)
	}
}

// stallBody starts a POST /v1/events with token tok whose body starts and never ends until
// the returned writer is closed; the request's status arrives on the channel (0: no answer).
func stallBody(t *testing.T, e *env, tok string) (*io.PipeWriter, <-chan int) {
	t.Helper()
	pr, pw := io.Pipe()
	req, err := http.NewRequest(http.MethodPost, e.ts.URL+"/v1/events", pr)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	status := make(chan int, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			status <- 0
			return
		}
		resp.Body.Close()
		status <- resp.StatusCode
	}()
	if _, err := pw.Write([]byte(`{"schema":1,`)); err != nil { // the body starts and stalls
		t.Fatal(err)
	}
	t.Cleanup(func() { pw.Close() })
	return pw, status
}

// TestSlowBodiesOfOneTokenLeaveRoomForOthers: one token sending bodies that do not end holds
// at most MaxConcurrentPerToken slots (its next request gets 429 at once, naming the token)
// while another token's requests go through; once the bodies end, the slots come back. Any
// single-study token could hold all 16 slots and everyone else got 429.
func TestSlowBodiesOfOneTokenLeaveRoomForOthers(t *testing.T) {
	e := newEnv(t, func(c *receiver.Config) {
		c.MaxConcurrent, c.MaxConcurrentPerToken, c.BodyTimeout = 4, 2, time.Minute
	})
	var writers []*io.PipeWriter
	var statuses []<-chan int
	for i := 0; i < 2; i++ {
		pw, st := stallBody(t, e, tokAll)
		writers, statuses = append(writers, pw), append(statuses, st)
	}
	// Once both stalled requests hold their slots (the server says so: their bodies' first
	// bytes having left the client does not mean the server has admitted them, and a third
	// request sent meanwhile could take a slot first and leave a stalled one refused), the
	// token's third is refused.
	deadline := time.Now().Add(30 * time.Second)
	for gaugeOf(t, e.srv.Registry(), "ditto_ingest_requests_in_progress", "events") < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("the two stalled requests were not both admitted in 30s (%v in progress)", gaugeOf(t, e.srv.Registry(), "ditto_ingest_requests_in_progress", "events"))
		}
		time.Sleep(5 * time.Millisecond)
	}
	resp, body := e.post(t, "/v1/events", tokAll, "application/x-ndjson", ndjson(t, runEvents(t, "prod", "third", 1)))
	if resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(string(body), "token all") || resp.Header.Get("Retry-After") == "" {
		t.Errorf("the token's third request while two of its bodies stall: %d %s (Retry-After %q); want 429 naming the token", resp.StatusCode, body, resp.Header.Get("Retry-After"))
	}
	// Another token is served meanwhile.
	if resp, body := e.post(t, "/v1/events", tokProd, "application/x-ndjson", ndjson(t, runEvents(t, "prod", "other-token", 1))); resp.StatusCode != http.StatusOK {
		t.Errorf("another token's request while one token's bodies stall: %d %s, want 200", resp.StatusCode, body)
	}
	// The bodies end (malformed: 400) and give their slots back.
	for i, pw := range writers {
		pw.Close()
		if code := <-statuses[i]; code != http.StatusBadRequest {
			t.Errorf("a stalled body, ended, got %d; want 400", code)
		}
	}
	if resp, body := e.post(t, "/v1/events", tokAll, "application/x-ndjson", ndjson(t, runEvents(t, "prod", "after", 1))); resp.StatusCode != http.StatusOK {
		t.Errorf("the token's request after its stalled bodies ended: %d %s, want 200", resp.StatusCode, body)
	}
}

// TestStalledBodyIsCutAtItsDeadline: a body that stops arriving is cut at BodyTimeout (408)
// and its slots are given back: with one slot in all, the next request is served.
func TestStalledBodyIsCutAtItsDeadline(t *testing.T) {
	e := newEnv(t, func(c *receiver.Config) {
		c.MaxConcurrent, c.MaxConcurrentPerToken, c.BodyTimeout = 1, 1, 500*time.Millisecond
	})
	_, status := stallBody(t, e, tokAll)
	select {
	case code := <-status:
		if code != http.StatusRequestTimeout {
			t.Errorf("a stalled body ended with %d, want 408", code)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("a stalled body was never cut off")
	}
	if resp, body := e.post(t, "/v1/events", tokAll, "application/x-ndjson", ndjson(t, runEvents(t, "prod", "after-timeout", 1))); resp.StatusCode != http.StatusOK {
		t.Errorf("the next request after a stalled body was cut: %d %s, want 200", resp.StatusCode, body)
	}
}

// TestTracesRefuseImplausibleTimes: spans dated outside the window (here the year 2500) are
// refused (a partial success naming the reason), like events.
func TestTracesRefuseImplausibleTimes(t *testing.T) {
	e := newEnv(t, nil)
	body := []byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"4bf92f3577b34da6a3ce929d0e0e4736","spanId":"00f067aa0ba902b7","name":"invoke_agent","startTimeUnixNano":"16725225600000000000","endTimeUnixNano":"16725225600000000001"}]}]}]}`)
	resp, out := e.post(t, "/v1/traces", tokAll, "application/json", body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(out), "rejectedSpans") || !strings.Contains(string(out), "event time out of range") {
		t.Errorf("span dated 2500: %d %s; want a partial success refusing it for its time", resp.StatusCode, out)
	}
}
