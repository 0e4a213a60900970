package demo

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/llm"
	"github.com/dittolab/ditto/internal/study"
	"github.com/dittolab/ditto/internal/warehouse"
)

// thirdPartyServer returns the command of @modelcontextprotocol/server-filesystem, an MCP
// server nobody here wrote, installed from npm at the version testdata/mcp-npm pins (npm ci).
// Without node or npm the test is skipped, with the reason, except under CI=true, where it
// fails: CI has node.
func thirdPartyServer(t *testing.T) string {
	t.Helper()
	unavailable := func(why string) {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true: %s", why)
		}
		t.Skipf("skipped: %s", why)
	}
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			unavailable(tool + " is not installed: the MCP server of this test is a Node.js package")
		}
	}
	dir, err := filepath.Abs("testdata/mcp-npm")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "node_modules", ".bin", "mcp-server-filesystem")
	if _, err := os.Stat(bin); err != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			unavailable("npm ci in testdata/mcp-npm failed (no registry?): " + err.Error() + "\n" + string(out))
		}
	}
	return bin
}

// fsTask is a task whose tools are the filesystem server's: read a client's contract, write a
// review note beside it. The permission gate keeps a run inside its client's directory.
const fsTask = `version: 1
name: fs_review
instructions: Read the contract of the client named by the user, then write a one-line review note in the client's directory.
servers:
  fs:
    mcp:
      command: [BIN, .]
      dir: ROOT
tools:
  - name: read_text_file
    description: Read a text file.
    server: fs
    idempotent: true
    permission: {scope: read, resources: [{arg: /path}]}
    arguments:
      type: object
      properties:
        path: {type: string}
        head: {type: integer, minimum: 1}
      required: [path]
      additionalProperties: false
  - name: write_file
    description: Write a text file.
    server: fs
    permission: {scope: write, resources: [{arg: /path}]}
    arguments:
      type: object
      properties:
        path: {type: string}
        content: {type: string, minLength: 1}
      required: [path, content]
      additionalProperties: false
states:
  - name: READ
    tool: read_text_file
    next: [NOTE]
    validate:
      rules:
        - {expr: 'output.content.contains("Contract")', message: not a contract}
  - name: NOTE
    tool: write_file
output:
  check: output.content.startsWith("Successfully wrote")
instances:
  - id: acme
    prompt: Review the contract of client acme.
    input: {path: clients/acme/contract.txt}
    scope: [clients/acme]
    ideal: {content: Successfully wrote}
`

// planted is a model that plants bad calls before doing the task: arguments that violate the
// schema, then a read outside the run's scope (another client's contract), then the task.
type planted struct {
	root string
	mu   sync.Mutex
	n    int
}

func (m *planted) Chat(_ context.Context, req llm.Request) (llm.Response, error) {
	m.mu.Lock()
	m.n++
	m.mu.Unlock()
	calls := 0
	for _, msg := range req.Messages {
		calls += len(msg.ToolCalls)
	}
	usage := llm.Usage{PromptTokens: 10, CompletionTokens: 5}
	if len(req.Tools) == 0 {
		return llm.Response{Content: "Plan: read the contract (READ), then write the note (NOTE).", FinishReason: "stop", Usage: usage}, nil
	}
	own := "clients/acme"
	call := func(tool, args string) (llm.Response, error) {
		return llm.Response{ToolCalls: []llm.ToolCall{{ID: "call_" + string(rune('a'+calls)), Name: tool, Arguments: args}},
			FinishReason: "tool_calls", Usage: usage}, nil
	}
	switch calls {
	case 0:
		return call("read_text_file", `{"path":"`+own+`/contract.txt","head":"ten"}`) // schema gate
	case 1:
		return call("read_text_file", `{"path":"clients/globex/contract.txt"}`) // permission gate
	case 2:
		return call("read_text_file", `{"path":"`+own+`/contract.txt"}`)
	case 3:
		return call("write_file", `{"path":"`+own+`/review.txt","content":"Reviewed: standard terms."}`)
	}
	return llm.Response{Content: "Done.", FinishReason: "stop", Usage: usage}, nil
}

// writeFSStudy writes the task file and a spec running it on the simulated models and on the
// planted model.
func writeFSStudy(t *testing.T, command string, root string) string {
	t.Helper()
	for _, c := range []string{"acme", "globex"} {
		if err := os.MkdirAll(filepath.Join(root, "clients", c), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, "clients", c, "contract.txt"), []byte("Contract between ditto and "+c+": standard terms.\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	task := strings.ReplaceAll(strings.ReplaceAll(fsTask, "BIN", command), "ROOT", root)
	if err := os.WriteFile(filepath.Join(dir, "fs_review.yaml"), []byte(task), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := map[string]any{
		"name": "fs-mcp", "tasks": []string{"fs_review.yaml"}, "models": []string{"sim-steady", "sim-wobbly", "planted-bad"},
		"conditions": []string{"harness"}, "runs": 4,
		"endpoints": map[string]any{
			"sim":     map[string]any{"sim": true, "models": []string{"sim-steady", "sim-wobbly"}},
			"planted": map[string]any{"base_url": "http://127.0.0.1:9/v1", "models": []string{"planted-bad"}},
		},
		"seeds": map[string]any{"base": 5},
	}
	b, _ := json.Marshal(spec)
	path := filepath.Join(dir, "study.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func models(root string) func(ep study.JobEndpoint, simBaseURL string) (llm.Model, error) {
	return func(ep study.JobEndpoint, simBaseURL string) (llm.Model, error) {
		if ep.Name == "planted" {
			return &planted{root: root}, nil
		}
		return llm.NewOpenAI(llm.Config{BaseURL: simBaseURL, BackoffBase: 50 * time.Millisecond, BackoffMax: time.Second})
	}
}

type cellJSON struct {
	Task, Model, Condition string
	Data                   struct {
		Runs        int `json:"runs"`
		CountedRuns int `json:"counted_runs"`
	}
	Metrics struct {
		N  int `json:"n"`
		DI struct {
			Value *float64 `json:"value"`
		} `json:"di"`
		Success struct {
			Successes int `json:"successes"`
		} `json:"success"`
		Harness struct {
			Rejected int `json:"rejected_tool_calls"`
		} `json:"harness"`
	}
}

// storedRows runs query on the warehouse a demo stored in dataDir; the rows and the warehouse
// are closed when t ends.
func storedRows(t *testing.T, dataDir, query string) *sql.Rows {
	t.Helper()
	w, err := warehouse.Open(context.Background(), warehouse.Config{Path: warehouse.DefaultPath(dataDir)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close() })
	rows, err := w.DB().Query(query)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rows.Close() })
	return rows
}

func reportCells(t *testing.T, res *Result) []cellJSON {
	t.Helper()
	b, err := json.Marshal(res.Report.Metrics)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Cells []cellJSON `json:"cells"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	return doc.Cells
}

// TestStudyOverThirdPartyMCPServer runs a study whose tools an MCP server nobody here wrote
// serves (@modelcontextprotocol/server-filesystem, from npm), started over stdio by the worker:
// every run is recorded and scored, the planted model's bad calls are refused by the schema
// and permission gates before reaching the server (two refusals per run) and its good calls
// really ran (the note is on disk), and the study's metrics compute for every cell.
func TestStudyOverThirdPartyMCPServer(t *testing.T) {
	bin := thirdPartyServer(t)
	root := t.TempDir()
	specPath := writeFSStudy(t, bin, root)
	scale := 0.0
	dataDir := t.TempDir()
	res, err := Run(context.Background(), Config{DataDir: dataDir, Spec: specPath, LatencyScale: &scale, Concurrency: 8,
		Permutations: 200, Models: models(root)})
	if err != nil {
		t.Fatal(err)
	}
	cells := reportCells(t, res)
	if len(cells) != 3 {
		t.Fatalf("%d cells, want 3", len(cells))
	}
	for _, c := range cells {
		if c.Task != "fs_review" || c.Data.Runs != 4 || c.Metrics.N != 4 || c.Metrics.DI.Value == nil {
			t.Errorf("cell %+v: want 4 runs of fs_review scored, with a Determinism Index", c)
		}
		if c.Model == "planted-bad" && (c.Metrics.Success.Successes != 4 || c.Metrics.Harness.Rejected != 8) {
			t.Errorf("planted model: %d of 4 runs succeeded, %d calls refused; want 4 (its good calls ran on the server) and 8 (the schema and permission gates, once each per run)",
				c.Metrics.Success.Successes, c.Metrics.Harness.Rejected)
		}
	}
	if b, err := os.ReadFile(filepath.Join(root, "clients", "acme", "review.txt")); err != nil || string(b) != "Reviewed: standard terms." {
		t.Errorf("the note the planted model wrote through the server: %q, %v", b, err)
	}
	// Every executed call names the server as it introduced itself: the pinned package's
	// server says secure-filesystem-server 0.2.0 (its dist/index.js).
	rows := storedRows(t, dataDir, `SELECT coalesce(server_name, 'NULL'), coalesce(server_version, 'NULL'), count(*)
		FROM tool_calls WHERE status = 'executed' GROUP BY ALL ORDER BY ALL`)
	var servers []string
	for rows.Next() {
		var name, version string
		var n int
		if err := rows.Scan(&name, &version, &n); err != nil {
			t.Fatal(err)
		}
		servers = append(servers, fmt.Sprintf("%s %s: %d calls", name, version, n))
	}
	if len(servers) != 1 || !strings.HasPrefix(servers[0], "secure-filesystem-server 0.2.0: ") {
		t.Errorf("the tool_calls view's servers of executed calls: %q, want every call on secure-filesystem-server 0.2.0", servers)
	}
}

// killer is the planted model that kills the tool server in the middle of its first run: after
// the run's first (refused) call, it sends the server SIGKILL, then carries on with the task.
type killer struct {
	planted
	pidFile string
	once    sync.Once
}

func (m *killer) Chat(ctx context.Context, req llm.Request) (llm.Response, error) {
	calls := 0
	for _, msg := range req.Messages {
		calls += len(msg.ToolCalls)
	}
	if calls == 1 {
		m.once.Do(func() {
			b, err := os.ReadFile(m.pidFile)
			if err == nil {
				var pid int
				if _, err := fmt.Sscan(strings.TrimSpace(string(b)), &pid); err == nil {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		})
	}
	return m.planted.Chat(ctx, req)
}

// TestToolServerKilledMidStudy: the tool server dies in the middle of a study (killed during
// the first run); every run that needed it ends errored with the cause (tool_server), none as
// failed.
func TestToolServerKilledMidStudy(t *testing.T) {
	bin := thirdPartyServer(t)
	root := t.TempDir()
	pidFile := filepath.Join(t.TempDir(), "server.pid")
	specPath := writeFSStudy(t, `sh, -c, 'echo $$ > `+pidFile+`; exec `+bin+` .'`, root)
	// Only the killing model: its runs all need the server.
	b, err := os.ReadFile(specPath)
	if err != nil {
		t.Fatal(err)
	}
	var spec map[string]any
	_ = json.Unmarshal(b, &spec)
	spec["name"], spec["models"] = "fs-killed", []string{"planted-bad"}
	b, _ = json.Marshal(spec)
	if err := os.WriteFile(specPath, b, 0o644); err != nil {
		t.Fatal(err)
	}
	k := &killer{planted: planted{root: root}, pidFile: pidFile}
	scale := 0.0
	dataDir := t.TempDir()
	res, err := Run(context.Background(), Config{DataDir: dataDir, Spec: specPath, LatencyScale: &scale, Concurrency: 1, Permutations: 200,
		Models: func(ep study.JobEndpoint, _ string) (llm.Model, error) { return k, nil }})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range reportCells(t, res) {
		if c.Data.Runs != 4 || c.Metrics.Success.Successes != 0 {
			t.Errorf("cell %+v: want 4 runs, none succeeded", c)
		}
	}
	rows := storedRows(t, dataDir, `SELECT json_extract_string(payload, '$.status'), coalesce(json_extract_string(payload, '$.cause.kind'), '')
		FROM events WHERE study = 'fs-killed' AND type = 'run.finished'`)
	n := 0
	for rows.Next() {
		var status, kind string
		if err := rows.Scan(&status, &kind); err != nil {
			t.Fatal(err)
		}
		n++
		if status != events.StatusErrored || kind != events.CauseToolServer {
			t.Errorf("run finished %s (cause %q), want errored with cause tool_server", status, kind)
		}
	}
	if n != 4 {
		t.Errorf("%d runs finished, want 4", n)
	}
}
