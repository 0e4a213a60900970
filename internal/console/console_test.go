package console_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/bus/bustest"
	"github.com/dittolab/ditto/internal/console"
	"github.com/dittolab/ditto/internal/queryapi"
	"github.com/dittolab/ditto/internal/sqlguard"
	"github.com/dittolab/ditto/internal/sqlguard/sqlguardtest"
	"github.com/dittolab/ditto/internal/warehouse"
	"github.com/dittolab/ditto/internal/warehouse/warehousetest"
)

const testToken = "console-test-token-0123456789abcdef"

// site is a console over a database ingested through the real path (embedded nats-server,
// warehouse ingestion): the production samples, the synthetic study c1, the hostile study
// (tool arguments, tool results and final outputs holding markup) and study big (one run of
// longRunEvents events).
type site struct {
	url string
	con *console.Console
	db  *sql.DB
}

// longRunEvents is the length of study big's run "long": a run of 1,000 events renders.
const longRunEvents = 1000

// Hostile values: a script element and an attribute break-out.
const (
	hostileScript = `<script>alert(1)</script>`
	hostileImg    = `"><img src=x onerror=alert(2)>`
)

func newSite(t *testing.T) *site {
	t.Helper()
	msgs := append(warehousetest.SampleMsgs(t), warehousetest.EnvelopeMsgs(t, syntheticStudy())...)
	msgs = append(msgs, warehousetest.EnvelopeMsgs(t, hostileStudy())...)
	msgs = append(msgs, warehousetest.EnvelopeMsgs(t, longRun())...)
	b := bustest.NewServer(t).Connect(t)
	warehousetest.PublishFast(t, b, msgs)
	w := warehousetest.Ingest(t, b, warehouse.IngestConfig{BatchSize: 512, BatchWait: 20 * time.Millisecond})
	ctx := context.Background()
	spool := filepath.Join(t.TempDir(), "spool")
	if err := sqlguard.Harden(ctx, w.DB(), spool); err != nil {
		t.Fatal(err)
	}
	api, err := queryapi.NewServer(w.DB(), queryapi.Config{Token: testToken, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	con, err := console.New(w.DB(), console.Config{Token: testToken, ReportsDir: t.TempDir(),
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(con.Close)
	srv := httptest.NewServer(con.Handler(api))
	t.Cleanup(srv.Close)
	return &site{url: srv.URL, con: con, db: w.DB()}
}

// get fetches path with a bearer token (or none) and never follows redirects.
func get(t *testing.T, base, path string, hdr http.Header) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func bearer() http.Header { return http.Header{"Authorization": {"Bearer " + testToken}} }

// pages are the console's pages over the test data.
var pages = []string{
	"/",
	"/studies/c1",
	"/studies/sample-prod",
	"/studies/c1/cell?task=lookup&model=sim-a&condition=harness",
	"/studies/c1/cell?task=lookup&model=sim-a&condition=harness&group=" + "23946578051e0806bf1b49178f8a34f64a15d0e63e316401ccc56f70241d7165",
	"/studies/c1/runs/h-0",
	"/studies/c1/runs/h-0?attempt=1",
	"/compare?study=c1&a=h-1&b=h-2",
	"/sql",
}

// TestLoginRequired: with a token, every page but the login form redirects to it; the form
// sets an HttpOnly, SameSite=Strict cookie that does not hold the token, and with it every page
// answers; the API takes the header (or the cookie) and refuses neither.
func TestLoginRequired(t *testing.T) {
	sqlguardtest.NeedsQueries(t)
	s := newSite(t)
	for _, p := range append(pages, "/studies/progress", "/studies/nope") {
		resp, _ := get(t, s.url, p, nil)
		loc := resp.Header.Get("Location")
		if resp.StatusCode != http.StatusSeeOther || loc != "/login?next="+url.QueryEscape(p) {
			t.Errorf("GET %s without a session = %d Location %q, want 303 to the login form", p, resp.StatusCode, loc)
		}
	}
	// The reports redirect a browser; an API client gets the API's 401.
	if resp, _ := get(t, s.url, "/reports/", http.Header{"Accept": {"text/html"}}); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("GET /reports/ from a browser without a session = %d, want 303", resp.StatusCode)
	}
	// (The reports themselves are served by the analyzer's command in front of the API; the
	// browser walk reads them with the cookie.)
	for _, p := range []string{"/v1/sql?q=SELECT+1", "/v1/schema"} {
		if resp, _ := get(t, s.url, p, nil); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET %s without a token = %d, want 401", p, resp.StatusCode)
		}
		if resp, body := get(t, s.url, p, bearer()); resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s with the bearer header = %d, want 200: %s", p, resp.StatusCode, body)
		}
	}
	if resp, body := get(t, s.url, "/login", nil); resp.StatusCode != http.StatusOK || !strings.Contains(body, `id="token"`) {
		t.Errorf("GET /login = %d, want the form", resp.StatusCode)
	}

	post := func(token string) *http.Response {
		resp, err := noRedirect.PostForm(s.url+"/login", url.Values{"token": {token}, "next": {"/studies/c1"}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if resp := post("wrong"); resp.StatusCode != http.StatusUnauthorized || len(resp.Cookies()) != 0 {
		t.Errorf("POST /login with a wrong token = %d with %d cookies, want 401 and none", resp.StatusCode, len(resp.Cookies()))
	}
	resp := post(testToken)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/studies/c1" {
		t.Fatalf("POST /login = %d Location %q, want 303 to next", resp.StatusCode, resp.Header.Get("Location"))
	}
	var ck *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == console.SessionCookie {
			ck = c
		}
	}
	if ck == nil {
		t.Fatalf("POST /login set no %s cookie: %v", console.SessionCookie, resp.Header["Set-Cookie"])
	}
	if !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Path != "/" {
		t.Errorf("session cookie %q: HttpOnly %v, SameSite %v, Path %q; want HttpOnly, Strict, /", resp.Header.Get("Set-Cookie"),
			ck.HttpOnly, ck.SameSite, ck.Path)
	}
	if strings.Contains(ck.Value, testToken) {
		t.Errorf("the session cookie holds the token: %q", ck.Value)
	}
	withCookie := http.Header{"Cookie": {ck.Name + "=" + ck.Value}}
	for _, p := range append(pages, "/v1/schema", "/v1/sql?q=SELECT+1") {
		if resp, body := get(t, s.url, p, withCookie); resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s with the session = %d, want 200: %.300s", p, resp.StatusCode, body)
		}
	}
	// A forged or altered cookie is no session.
	forged := http.Header{"Cookie": {ck.Name + "=" + ck.Value[:len(ck.Value)-2] + "AA"}}
	if resp, _ := get(t, s.url, "/", forged); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("GET / with an altered cookie = %d, want 303", resp.StatusCode)
	}
	// A cookie-authorized request that changes something must come from this origin.
	req, _ := http.NewRequest(http.MethodPost, s.url+"/v1/sql", strings.NewReader(`{"sql":"SELECT 1"}`))
	req.Header.Set("Cookie", ck.Name+"="+ck.Value)
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	cross, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	cross.Body.Close()
	if cross.StatusCode != http.StatusForbidden {
		t.Errorf("a cross-site POST carrying the cookie = %d, want 403", cross.StatusCode)
	}
}

// TestSecurityHeaders: every page forbids remote origins and inline script.
func TestSecurityHeaders(t *testing.T) {
	s := newSite(t)
	for _, p := range append(pages, "/login", "/assets/console.js") {
		resp, _ := get(t, s.url, p, bearer())
		csp := resp.Header.Get("Content-Security-Policy")
		for _, want := range []string{"default-src 'none'", "script-src 'self'", "connect-src 'self'", "frame-ancestors 'none'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("GET %s: Content-Security-Policy %q lacks %q", p, csp, want)
			}
		}
		if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "http") || strings.Contains(csp, "*") {
			t.Errorf("GET %s: Content-Security-Policy %q allows inline script or a remote origin", p, csp)
		}
		if resp.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s: no X-Content-Type-Options: nosniff", p)
		}
	}
	// Pages say their server time.
	resp, _ := get(t, s.url, "/studies/c1/runs/h-0", bearer())
	if !regexp.MustCompile(`^app;dur=\d+(\.\d)?$`).MatchString(resp.Header.Get("Server-Timing")) {
		t.Errorf("Server-Timing %q, want app;dur=<ms>", resp.Header.Get("Server-Timing"))
	}
}

// TestAssetsAreLocal: no page names a resource of another origin.
func TestAssetsAreLocal(t *testing.T) {
	s := newSite(t)
	ref := regexp.MustCompile(`(?i)(src|href|action)\s*=\s*"([^"]*)"`)
	for _, p := range append(pages, "/login") {
		_, body := get(t, s.url, p, bearer())
		for _, m := range ref.FindAllStringSubmatch(body, -1) {
			u := html.UnescapeString(m[2])
			if strings.HasPrefix(u, "//") || strings.Contains(u, "://") {
				t.Errorf("GET %s names a remote resource: %s", p, m[0])
			}
		}
	}
}

// TestHostileValuesAreText: markup in tool arguments, tool results and final outputs is
// escaped on the Run, Compare and Cell pages (the browser walk shows it renders as text).
func TestHostileValuesAreText(t *testing.T) {
	sqlguardtest.NeedsQueries(t)
	s := newSite(t)
	for _, p := range []string{
		"/studies/hostile/runs/x-0",
		"/compare?study=hostile&a=x-0&b=x-1",
		"/studies/hostile/cell?task=triage&model=model-x&condition=r1",
		"/studies/hostile/cell?task=triage&model=model-x&condition=r1&group=" + hostileGroup(t, s),
	} {
		resp, body := get(t, s.url, p, bearer())
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s = %d: %.300s", p, resp.StatusCode, body)
		}
		for _, bad := range []string{"<script>alert", "<img"} {
			if i := strings.Index(body, bad); i >= 0 {
				t.Errorf("GET %s: unescaped %q in the page: %s", p, bad, body[max(0, i-80):min(len(body), i+80)])
			}
		}
		if n := strings.Count(body, "<script"); n != 1 {
			t.Errorf("GET %s: %d script elements, want the page's own one", p, n)
		}
		if !strings.Contains(body, "&lt;script&gt;alert(1)&lt;/script&gt;") {
			t.Errorf("GET %s: the script value is not shown (escaped)", p)
		}
		if !strings.Contains(body, "&lt;img src=x onerror=alert(2)&gt;") {
			t.Errorf("GET %s: the img value is not shown (escaped)", p)
		}
	}
}

// hostileGroup returns the trace signature of the hostile cell's first group, read from its
// Cell page.
func hostileGroup(t *testing.T, s *site) string {
	_, body := get(t, s.url, "/studies/hostile/cell?task=triage&model=model-x&condition=r1", bearer())
	m := regexp.MustCompile(`group=([0-9a-f]{64})`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("the hostile cell's page links no group")
	}
	return m[1]
}

// TestLongRun: a run of 1,000 events renders, every event in the timeline.
func TestLongRun(t *testing.T) {
	sqlguardtest.NeedsQueries(t)
	s := newSite(t)
	resp, body := get(t, s.url, "/studies/big/runs/long", bearer())
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET the long run = %d: %.300s", resp.StatusCode, body)
	}
	if n := strings.Count(body, `<li class="ev `); n != longRunEvents {
		t.Errorf("the long run's timeline has %d events, want %d", n, longRunEvents)
	}
	if !strings.Contains(body, fmt.Sprintf(`<b id="run-events">%d</b>`, longRunEvents)) {
		t.Errorf("the long run's page does not say %d events", longRunEvents)
	}
}

// TestNotFound: an unknown study, run or cell is a 404 page, a malformed one a 400.
func TestNotFound(t *testing.T) {
	sqlguardtest.NeedsQueries(t)
	s := newSite(t)
	for _, tc := range []struct {
		path string
		want int
	}{
		{"/studies/nope", 404},
		{"/studies/c1/runs/nope", 404},
		{"/studies/c1/runs/h-0?attempt=7", 404},
		{"/studies/c1/runs/h-0?attempt=x", 400},
		{"/studies/c1/cell?task=lookup&model=sim-a&condition=nope", 404},
		{"/studies/c1/cell?task=lookup", 400},
		{"/compare?study=c1&a=h-1", 400},
		{"/compare?study=c1&a=h-1&b=nope", 404},
	} {
		if resp, body := get(t, s.url, tc.path, bearer()); resp.StatusCode != tc.want || !strings.Contains(body, `id="page-error"`) {
			t.Errorf("GET %s = %d, want %d and an error page", tc.path, resp.StatusCode, tc.want)
		}
	}
}

// hostileStudy is production study hostile: two runs of one cell whose tool arguments, tool
// results and final outputs hold markup.
func hostileStudy() []events.Envelope {
	var out []events.Envelope
	n := 0
	for i, run := range []string{"x-0", "x-1"} {
		seq := int64(0)
		at := goldenClock.Add(time.Duration(i) * time.Minute)
		emit := func(p events.Payload) {
			n++
			seq++
			at = at.Add(5 * time.Millisecond)
			out = append(out, events.Envelope{Schema: events.SchemaVersion, ID: fmt.Sprintf("01CNHOSTILE%09d", n), Type: p.EventType(),
				Time: at, Study: "hostile", Run: run, Attempt: 1, Seq: seq,
				Source: events.Source{Kind: events.SourceProduction, ID: "app"}, Payload: p})
		}
		args, _ := json.Marshal(map[string]any{"note": hostileScript, "title": hostileImg, "n": i})
		res, _ := json.Marshal(map[string]any{"text": hostileImg + hostileScript})
		outp, _ := json.Marshal(map[string]any{"answer": hostileScript, "why": hostileImg + run})
		emit(events.RunStarted{Task: "triage", Model: "model-x", Condition: "r1", Components: []string{}})
		emit(events.ToolCalled{CallID: "c", Tool: "fetch_note", Args: canonical(args)})
		emit(events.ToolReturned{CallID: "c", Tool: "fetch_note", OK: true, Output: canonical(res), DurationMS: 1})
		emit(events.RunFinished{Status: events.StatusSucceeded, Success: true, Output: canonical(outp), Totals: events.Totals{ToolCalls: 1}})
	}
	return out
}

func canonical(b []byte) json.RawMessage {
	c, err := events.Canonical(b)
	if err != nil {
		panic(err)
	}
	return c
}

// longRun is study big's run "long": run.started, then state visits with a tool call each,
// to longRunEvents events with run.finished.
func longRun() []events.Envelope {
	var out []events.Envelope
	at := goldenClock
	emit := func(p events.Payload) {
		at = at.Add(time.Millisecond)
		out = append(out, events.Envelope{Schema: events.SchemaVersion, ID: fmt.Sprintf("01CNLONG%012d", len(out)+1), Type: p.EventType(),
			Time: at, Study: "big", Run: "long", Attempt: 1, Seq: int64(len(out) + 1),
			Source: events.Source{Kind: events.SourceHarness, ID: "worker-1"}, Payload: p})
	}
	emit(events.RunStarted{Task: "lookup", Model: "sim-a", Condition: "baseline", Components: []string{}, Simulated: true})
	calls := 0
	// Each state visit is 4 events; model calls fill up to the last event.
	for i := 0; len(out) < longRunEvents-4; i++ {
		emit(events.StateEntered{State: fmt.Sprintf("s%d", i)})
		args, _ := json.Marshal(map[string]any{"i": i})
		id := fmt.Sprintf("c%d", i)
		emit(events.ToolCalled{CallID: id, Tool: "step", Args: canonical(args)})
		emit(events.ToolReturned{CallID: id, Tool: "step", OK: true, Output: json.RawMessage(`{}`), DurationMS: 0.5})
		emit(events.StateExited{State: fmt.Sprintf("s%d", i), Outcome: "ok"})
		calls++
	}
	for len(out) < longRunEvents-1 {
		emit(events.ModelCalled{Model: "sim-a", Purpose: "act", PromptTokens: 10, CompletionTokens: 2, LatencyMS: 1})
	}
	emit(events.RunFinished{Status: events.StatusSucceeded, Success: true, Totals: events.Totals{ToolCalls: calls,
		ModelCalls: longRunEvents - 2 - 4*calls, PromptTokens: int64(10 * (longRunEvents - 2 - 4*calls)),
		CompletionTokens: int64(2 * (longRunEvents - 2 - 4*calls))}})
	return out
}

// TestDriftChart: a production study's page draws its drift over consecutive windows of run
// start times once its metrics are computed; each window's run count and success rate are
// those the runs view gives for the window's bounds.
func TestDriftChart(t *testing.T) {
	sqlguardtest.NeedsQueries(t)
	s := newSite(t)
	var body string
	deadline := time.Now().Add(3 * time.Minute)
	for {
		var resp *http.Response
		resp, body = get(t, s.url, "/studies/sample-prod", bearer())
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /studies/sample-prod = %d: %.300s", resp.StatusCode, body)
		}
		if strings.Contains(body, `id="drift"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the drift chart did not appear: %.2000s", body)
		}
		time.Sleep(100 * time.Millisecond) // polling the background computation, with a deadline
	}
	section := regexp.MustCompile(`(?s)<section class="drift-series" data-task="invoice_triage" data-model="gpt-4o-mini">.*?</section>`).FindString(body)
	if section == "" {
		t.Fatalf("no drift series for invoice_triage · gpt-4o-mini")
	}
	if n := strings.Count(section, "<polyline"); n != 3 {
		t.Errorf("the chart has %d lines, want 3 (success rate, RR, DI)", n)
	}
	bounds := regexp.MustCompile(`data-from="([^"]+)" data-to="([^"]+)"`).FindAllStringSubmatch(section, -1)
	row := func(class string) []string {
		tr := regexp.MustCompile(`(?s)<tr class="` + class + `">(.*?)</tr>`).FindStringSubmatch(section)
		if tr == nil {
			t.Fatalf("no %s row in the drift table", class)
		}
		var out []string
		for _, m := range regexp.MustCompile(`<td class="num">([^<]*)</td>`).FindAllStringSubmatch(tr[1], -1) {
			out = append(out, m[1])
		}
		return out
	}
	ns, succ := row("n"), row("success")
	if len(bounds) < 2 || len(ns) != len(bounds) || len(succ) != len(bounds) {
		t.Fatalf("%d windows, %d counts, %d success rates", len(bounds), len(ns), len(succ))
	}
	total := 0
	for i, b := range bounds {
		q := fmt.Sprintf(`SELECT count(*) AS n, count(*) FILTER (WHERE success) AS ok FROM runs
			WHERE study = 'sample-prod' AND last_attempt AND status <> 'incomplete'
			AND started_at >= TIMESTAMPTZ '%s' AND started_at < TIMESTAMPTZ '%s'`, b[1], b[2])
		var n, ok int
		if err := s.db.QueryRow(q).Scan(&n, &ok); err != nil {
			t.Fatal(err)
		}
		total += n
		wantRate := "—"
		if n > 0 {
			wantRate = fmt.Sprintf("%.2f", float64(ok)/float64(n))
		}
		if ns[i] != fmt.Sprint(n) || succ[i] != wantRate {
			t.Errorf("window %d [%s, %s): N %s, success %s; the runs view says %d runs, %s", i, b[1], b[2], ns[i], succ[i], n, wantRate)
		}
	}
	if total != 24 {
		t.Errorf("the windows hold %d runs, want the study's 24", total)
	}
	// A harness study has no drift chart.
	if _, body := get(t, s.url, "/studies/c1", bearer()); strings.Contains(body, `id="drift"`) {
		t.Errorf("the harness study c1 shows a drift chart")
	}
}
