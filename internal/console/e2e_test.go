package console_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/events/client"
	"github.com/dittolab/ditto/internal/browsertest"
	"github.com/dittolab/ditto/internal/cli/clitest"
)

var (
	analyzerBin = &clitest.Binary{Pkg: "github.com/dittolab/ditto/cmd/analyzer", Tags: "duckdb_arrow", CGO: true}
	producerBin = &clitest.Binary{Pkg: "github.com/dittolab/ditto/cmd/producer"}
)

// Hostile values planted in a production study's tool arguments and final outputs: each must
// show on the Run, Compare and Cell pages as the text it is.
const (
	xssScript = `<script>window.__xss=1</script>`
	xssImg    = `"><img src=x onerror="window.__xss=2">`
)

// TestConsoleInBrowser runs a small demo study with the real binaries, plants hostile
// production runs through the producer, serves the console with a token and walks it in
// Debian's Chromium driven by Playwright (playwright-core, e2e/walk.mjs): login, Studies →
// Study → Cell → a group → Run → Compare with another run of the cell, a SQL query and its
// CSV download, the reports index, and the hostile runs' Run, Compare and Cell pages. Each
// page's figures are checked against what this test reads through the API; the walk fails on
// any console error, any request that leaves 127.0.0.1, and any script the hostile values
// manage to run. It saves a screenshot of each page (browsertest.ArtifactsDir).
func TestConsoleInBrowser(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	pw := browsertest.Setup(t, ctx)
	analyzer, producer := analyzerBin.Path(t), producerBin.Path(t)
	t.Cleanup(analyzerBin.Remove)
	t.Cleanup(producerBin.Remove)

	dir := filepath.Join(t.TempDir(), "demo")
	demoOut := run(t, ctx, nil, analyzer, "demo", "--spec", "small", "--latency-scale", "0", "--data-dir", dir, "--concurrency", "16")
	// The demo ends with the command that serves the console on its data (this test serves
	// it so, on a free port).
	if want := "The console on this data: " + analyzer + " serve --data-dir " + dir + "\n"; !strings.Contains(demoOut, want) {
		t.Errorf("analyzer demo does not end with %q:\n%s", want, demoOut)
	}
	hostile := filepath.Join(t.TempDir(), "hostile.jsonl")
	writeHostileRuns(t, hostile)
	run(t, ctx, nil, producer, "import", "--data-dir", dir, "--nats-port", "-1", hostile)

	const token = "console-e2e-token-0123456789"
	base := serveConsole(t, ctx, analyzer, dir, token)
	api := &apiClient{base: base, token: token}
	// The hostile runs were published before serve started; wait until they are ingested.
	waitFor(t, ctx, "the hostile runs ingested", func() bool {
		rows, err := api.query(ctx, "SELECT count(*) AS n FROM runs WHERE study = 'hostile' AND status <> 'incomplete'")
		return err == nil && len(rows) == 1 && num(rows[0]["n"]) == 2
	})

	expect := expectations(t, ctx, api)
	expectFile := filepath.Join(t.TempDir(), "expect.json")
	b, _ := json.MarshalIndent(expect, "", "  ")
	if err := os.WriteFile(expectFile, b, 0o644); err != nil {
		t.Fatal(err)
	}
	shots := browsertest.ArtifactsDir(t, "console")
	t.Logf("screenshots: %s", shots)
	pw.Run(t, ctx, filepath.Join("e2e", "walk.mjs"), "CONSOLE_URL="+base, "CONSOLE_TOKEN="+token, "CONSOLE_EXPECT="+expectFile,
		"CONSOLE_SHOTS="+shots)
	for _, page := range []string{"login", "studies", "study", "cell", "group", "run", "compare", "sql", "reports", "drift", "xss-run", "xss-compare", "xss-cell"} {
		if st, err := os.Stat(filepath.Join(shots, page+".png")); err != nil || st.Size() < 5000 {
			t.Errorf("screenshot %s.png: %v (size %d)", page, err, sizeOf(st))
		}
	}
}

func sizeOf(st os.FileInfo) int64 {
	if st == nil {
		return 0
	}
	return st.Size()
}

func run(t *testing.T, ctx context.Context, env []string, bin string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(bin), strings.Join(args, " "), err, out)
	}
	return string(out)
}

// serveConsole starts `analyzer serve` on a free loopback port and returns its base URL once
// it answers; the process is stopped (SIGINT, then killed) at the test's end.
func serveConsole(t *testing.T, ctx context.Context, analyzer, dir, token string) string {
	t.Helper()
	cmd := exec.Command(analyzer, "serve", "--data-dir", dir, "--nats-port", "-1", "--listen", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), "DITTO_ANALYZER_TOKEN="+token)
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		t.Logf("analyzer serve:\n%s", logs.String())
	})
	var base string
	waitFor(t, ctx, "analyzer serve to write analyzer.url", func() bool {
		b, err := os.ReadFile(filepath.Join(dir, "analyzer.url"))
		if err != nil {
			return false
		}
		base = strings.TrimSpace(string(b))
		resp, err := http.Get(base + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return base
}

func waitFor(t *testing.T, ctx context.Context, what string, ok func() bool) {
	t.Helper()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for !ok() {
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v", what, ctx.Err())
		case <-tick.C:
		}
	}
}

// writeHostileRuns records two production runs of one cell with events/client, whose tool
// arguments, tool results and final outputs hold the hostile values, and writes them as the
// JSON lines `producer import` reads (the client's own wire form, captured).
func writeHostileRuns(t *testing.T, path string) {
	t.Helper()
	var lines bytes.Buffer
	hc := &http.Client{Transport: roundTrip(func(r *http.Request) (*http.Response, error) {
		body, _ := io.ReadAll(r.Body)
		lines.Write(body)
		if !bytes.HasSuffix(body, []byte("\n")) {
			lines.WriteByte('\n')
		}
		n := bytes.Count(bytes.TrimSpace(body), []byte("\n")) + 1
		resp := fmt.Sprintf(`{"accepted": %d, "rejected": []}`, n)
		return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
			Body: io.NopCloser(strings.NewReader(resp)), Request: r}, nil
	})}
	c, err := client.New("http://127.0.0.1:1", client.WithHTTPClient(hc), client.WithSource("e2e"))
	if err != nil {
		t.Fatal(err)
	}
	for i, extra := range []string{"a", "b"} {
		r, err := c.StartRun(client.RunSpec{Study: "hostile", Run: "xss-run-" + extra, Task: "triage", Model: "model-x", Condition: "r1"})
		if err != nil {
			t.Fatal(err)
		}
		must(t, r.EnterState("fetch"))
		call, err := r.CallTool("fetch_note", map[string]any{"note": xssScript, "title": xssImg, "n": i})
		must(t, err)
		must(t, call.Return(map[string]any{"text": xssImg + xssScript}))
		must(t, r.ExitState("ok"))
		must(t, r.ModelCalled(events.ModelCalled{Model: "model-x", Purpose: "act", PromptTokens: 100, CompletionTokens: 10, LatencyMS: 12}))
		must(t, r.Finish(context.Background(), client.Result{Output: map[string]any{"answer": xssScript, "why": xssImg + extra}}))
	}
	if err := os.WriteFile(path, lines.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// apiClient reads what the pages should show through the query API (GET /v1/sql, JSON
// records).
type apiClient struct{ base, token string }

func (a *apiClient) query(ctx context.Context, q string) ([]map[string]any, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, a.base+"/v1/sql?"+url.Values{"q": {q}, "format": {"json"}}.Encode(), nil)
	req.Header.Set("Authorization", "Bearer "+a.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", resp.Status, body)
	}
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	var rows []map[string]any
	return rows, d.Decode(&rows)
}

func (a *apiClient) mustQuery(t *testing.T, ctx context.Context, q string) []map[string]any {
	t.Helper()
	rows, err := a.query(ctx, q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return rows
}

func num(v any) int64 {
	switch x := v.(type) {
	case json.Number:
		n, _ := x.Int64()
		return n
	case string:
		n, _ := strconv.ParseInt(x, 10, 64)
		return n
	}
	return 0
}

// expectation is what the walk checks on each page, read here through the API.
type expectation struct {
	Study           string            `json:"study"`
	Progress        string            `json:"progress"`
	Succeeded       int64             `json:"succeeded"`
	Cells           int64             `json:"cells"`
	Cell            cellExpect        `json:"cell"`
	Runs            map[string]runFig `json:"runs"`
	SQL             string            `json:"sql"`
	SQLValue        string            `json:"sql_value"`
	Refused         string            `json:"refused"`
	ReportTitle     string            `json:"report_title"`
	Hostile         hostileExpect     `json:"hostile"`
	HostileValues   []string          `json:"hostile_values"`
	ForbiddenTables []string          `json:"forbidden_tables"`
}

type cellExpect struct {
	Task      string  `json:"task"`
	Model     string  `json:"model"`
	Condition string  `json:"condition"`
	N         int64   `json:"n"`
	Success   string  `json:"success"` // the rate as the report prints it, 2 decimals
	Groups    int64   `json:"groups"`
	Largest   int64   `json:"largest"`
	Sizes     []int64 `json:"sizes"`
}

type runFig struct {
	Tokens     int64     `json:"tokens"`
	ToolCalls  int64     `json:"tool_calls"`
	ModelCalls int64     `json:"model_calls"`
	Events     int64     `json:"events"`
	Calls      []callFig `json:"calls"`
	States     []string  `json:"states"`
}

type callFig struct {
	Tool string          `json:"tool"`
	Args json.RawMessage `json:"args"`
}

type hostileExpect struct {
	Study, Task, Model, Condition, RunA, RunB string
}

func expectations(t *testing.T, ctx context.Context, api *apiClient) expectation {
	t.Helper()
	e := expectation{Study: "small", ReportTitle: "Variance report: small",
		Hostile:         hostileExpect{Study: "hostile", Task: "triage", Model: "model-x", Condition: "r1", RunA: "xss-run-a", RunB: "xss-run-b"},
		HostileValues:   []string{xssScript, xssImg},
		ForbiddenTables: []string{"ingest_state", "run_folds"}}
	st := api.mustQuery(t, ctx, "SELECT expected_runs, finished_runs, succeeded_runs FROM studies WHERE study = 'small'")
	if len(st) != 1 {
		t.Fatalf("studies: %v", st)
	}
	e.Progress = fmt.Sprintf("%d / %d", num(st[0]["finished_runs"]), num(st[0]["expected_runs"]))
	e.Succeeded = num(st[0]["succeeded_runs"])
	e.Cells = num(api.mustQuery(t, ctx, "SELECT count(*) AS n FROM cells WHERE study = 'small'")[0]["n"])
	// The cell whose runs part ways the most.
	c := api.mustQuery(t, ctx, `SELECT task, model, condition, count(*) AS n, count(*) FILTER (WHERE success) AS ok,
		count(DISTINCT sig_trace) AS groups FROM runs WHERE study = 'small' AND last_attempt AND status <> 'incomplete'
		GROUP BY ALL ORDER BY groups DESC, task, model, condition LIMIT 1`)[0]
	e.Cell = cellExpect{Task: c["task"].(string), Model: c["model"].(string), Condition: c["condition"].(string), N: num(c["n"]), Groups: num(c["groups"])}
	e.Cell.Success = strconv.FormatFloat(float64(num(c["ok"]))/float64(e.Cell.N), 'f', 2, 64)
	where := fmt.Sprintf("study = 'small' AND task = '%s' AND model = '%s' AND condition = '%s' AND last_attempt", e.Cell.Task, e.Cell.Model, e.Cell.Condition)
	for _, g := range api.mustQuery(t, ctx, "SELECT count(*) AS n FROM runs WHERE "+where+" GROUP BY sig_trace ORDER BY n DESC") {
		e.Cell.Sizes = append(e.Cell.Sizes, num(g["n"]))
	}
	e.Cell.Largest = e.Cell.Sizes[0]
	e.Runs = map[string]runFig{}
	for _, r := range api.mustQuery(t, ctx, "SELECT run, tokens, tool_calls, model_calls, events, calls, states FROM runs WHERE "+where) {
		f := runFig{Tokens: num(r["tokens"]), ToolCalls: num(r["tool_calls"]), ModelCalls: num(r["model_calls"]), Events: num(r["events"])}
		if err := json.Unmarshal([]byte(r["calls"].(string)), &f.Calls); err != nil {
			t.Fatal(err)
		}
		for _, s := range r["states"].([]any) {
			f.States = append(f.States, s.(string))
		}
		e.Runs[r["run"].(string)] = f
	}
	e.SQL = "SELECT count(*) AS n FROM tool_calls WHERE study = 'small'"
	e.SQLValue = fmt.Sprint(num(api.mustQuery(t, ctx, e.SQL)[0]["n"]))
	e.Refused = "DELETE FROM events"
	return e
}
