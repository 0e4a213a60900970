package toolserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dittolab/ditto/internal/taskfile"
	"github.com/dittolab/ditto/internal/tasks"
)

var (
	serverOnce sync.Once
	serverBin  string
	serverErr  error
)

// exampleServer builds the example MCP server (examples/dpa-review/server) once.
func exampleServer(t testing.TB) string {
	t.Helper()
	serverOnce.Do(func() {
		dir, err := os.MkdirTemp("", "ditto-dpa-server-")
		if err != nil {
			serverErr = err
			return
		}
		serverBin = filepath.Join(dir, "dpa-review-server")
		out, err := exec.Command("go", "build", "-o", serverBin, "../../examples/dpa-review/server").CombinedOutput()
		if err != nil {
			serverErr = errors.New(string(out))
		}
	})
	if serverErr != nil {
		t.Fatalf("building the example server: %v", serverErr)
	}
	return serverBin
}

// exampleTask is the example task file, its server command replaced by command (YAML flow
// sequence), after edit.
func exampleTask(t testing.TB, command string, edit func(string) string) []byte {
	t.Helper()
	b, err := os.ReadFile("../../examples/dpa-review/task.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Replace(string(b), "command: [go, run, ./examples/dpa-review/server]", "command: "+command, 1)
	if edit != nil {
		s = edit(s)
	}
	return []byte(s)
}

func bindExample(t *testing.T, p *Pool, data []byte) (*tasks.Task, error) {
	t.Helper()
	f, err := tasks.ParseFile("task.yaml", data)
	if err != nil {
		t.Fatalf("ParseFile: %v", err)
	}
	return tasks.FromFile(f, p)
}

func TestBindExampleOverStdio(t *testing.T) {
	bin := exampleServer(t)
	p := &Pool{}
	defer p.Close()
	task, err := bindExample(t, p, exampleTask(t, "["+bin+"]", nil))
	if err != nil {
		t.Fatal(err)
	}
	fetch, _ := task.ToolByName("fetch_agreement")
	if o := fetch.Origin(); o != (tasks.Origin{Server: "dpa", Name: "dpa-review", Version: "1.0.0", Transport: "stdio"}) {
		t.Errorf("origin = %+v", o)
	}
	inst := &task.Instances[1]
	out, err := fetch.Exec(context.Background(), inst, json.RawMessage(`{"agreement_id":"DPA-2024-031"}`))
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Controller  string `json:"controller"`
		ClauseCount int    `json:"clause_count"`
	}
	if err := json.Unmarshal(out, &got); err != nil || got.Controller != "Harbor Mutual Insurance" || got.ClauseCount != 6 {
		t.Errorf("fetch_agreement = %s (%v)", out, err)
	}
	// The tool's own error is a failed call, not an unavailable server.
	_, err = fetch.Exec(context.Background(), inst, json.RawMessage(`{"agreement_id":"DPA-1999-000"}`))
	if err == nil || errors.Is(err, tasks.ErrToolUnavailable) || !strings.Contains(err.Error(), "no agreement") {
		t.Errorf("unknown agreement: err = %v, want the tool's error", err)
	}
	// The idempotency key reaches the server: a repeated key gets the first answer.
	amend, _ := task.ToolByName("request_amendment")
	ctx := tasks.WithIdempotencyKey(context.Background(), "run-1/call_3")
	first, err := amend.Exec(ctx, inst, json.RawMessage(`{"agreement_id":"DPA-2024-031","missing":["audits"]}`))
	if err != nil {
		t.Fatal(err)
	}
	again, err := amend.Exec(ctx, inst, json.RawMessage(`{"agreement_id":"DPA-2024-031","missing":["audits","security"],"due_days":5}`))
	if err != nil || string(again) != string(first) {
		t.Errorf("retry with the same key = %s, %v; want the first answer %s", again, err, first)
	}
	other, err := amend.Exec(tasks.WithIdempotencyKey(context.Background(), "run-1/call_4"), inst,
		json.RawMessage(`{"agreement_id":"DPA-2024-031","missing":["audits","security"],"due_days":5}`))
	if err != nil || string(other) == string(first) {
		t.Errorf("a new key = %s, %v; want a new answer", other, err)
	}
}

// TestBindProblems checks the problems only a server can reveal, each named with its path in
// the task file: a tool the server does not serve, and argument schemas that contradict the
// server's (an unknown argument, a different type, an argument the server requires).
func TestBindProblems(t *testing.T) {
	bin := exampleServer(t)
	tests := []struct {
		name     string
		old, new string
		wantPath string
		wantMsg  string
	}{
		{"tool not served", "  - name: fetch_agreement\n", "  - name: fetch_contract\n", "tools[0].name", `does not serve a tool "fetch_contract"`},
		{"remote not served", "    description: Fetch a data processing agreement, its parties and its clause headings.\n",
			"    description: Fetch.\n    remote: get_agreement\n", "tools[0].remote", `does not serve a tool "get_agreement"`},
		{"unknown argument", "        include_text: {type: boolean, description: quote the clause that meets each requirement}\n",
			"        include_text: {type: boolean}\n        jurisdiction: {type: string}\n", "tools[1].arguments.properties.jurisdiction", "has no argument"},
		{"type mismatch", `due_days: {type: integer, minimum: 1, maximum: 90, description: "days the processor has to sign (default 30)"}`,
			"due_days: {type: string}", "tools[2].arguments.properties.due_days.type", "type string, the server's is integer"},
		{"required by the server", "      required: [agreement_id, outcome, missing]\n", "      required: [agreement_id, outcome]\n",
			"tools[3].arguments.required", `the server requires "missing"`},
	}
	p := &Pool{}
	defer p.Close()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := exampleTask(t, "["+bin+"]", func(s string) string {
				if !strings.Contains(s, tt.old) {
					t.Fatalf("the example task has no %q", tt.old)
				}
				s = strings.Replace(s, tt.old, tt.new, 1)
				if tt.name == "tool not served" { // and the state that requires it
					s = strings.Replace(s, "    tool: fetch_agreement\n", "    tool: fetch_contract\n", 1)
				}
				return s
			})
			_, err := bindExample(t, p, data)
			var te *taskfile.Error
			if !errors.As(err, &te) {
				t.Fatalf("err = %v, want a *taskfile.Error", err)
			}
			if !te.Has(tt.wantPath) || !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("err = %v\nwant a problem at %s saying %q", err, tt.wantPath, tt.wantMsg)
			}
		})
	}
}

// TestServerDown: a server that cannot be started, that dies, or that does not answer in time
// makes calls fail with ErrToolUnavailable (infrastructure), never with a tool error.
func TestServerDown(t *testing.T) {
	bin := exampleServer(t)
	t.Run("cannot start", func(t *testing.T) {
		p := &Pool{}
		defer p.Close()
		_, err := bindExample(t, p, exampleTask(t, "["+filepath.Join(t.TempDir(), "no-such-server")+"]", nil))
		if !errors.Is(err, tasks.ErrToolUnavailable) {
			t.Errorf("err = %v, want ErrToolUnavailable", err)
		}
	})
	t.Run("killed", func(t *testing.T) {
		pidFile := filepath.Join(t.TempDir(), "pid")
		p := &Pool{}
		defer p.Close()
		task, err := bindExample(t, p, exampleTask(t, `[sh, -c, 'echo $$ > `+pidFile+`; exec `+bin+`']`, nil))
		if err != nil {
			t.Fatal(err)
		}
		fetch, _ := task.ToolByName("fetch_agreement")
		args := json.RawMessage(`{"agreement_id":"DPA-2024-017"}`)
		if _, err := fetch.Exec(context.Background(), &task.Instances[0], args); err != nil {
			t.Fatal(err)
		}
		killFromPidFile(t, pidFile)
		deadline := time.Now().Add(time.Minute)
		for {
			_, err = fetch.Exec(context.Background(), &task.Instances[0], args)
			if err != nil || time.Now().After(deadline) {
				break
			}
		}
		if !errors.Is(err, tasks.ErrToolUnavailable) {
			t.Errorf("after the kill: err = %v, want ErrToolUnavailable", err)
		}
	})
	t.Run("timeout", func(t *testing.T) {
		p := &Pool{}
		defer p.Close()
		task, err := bindExample(t, p, exampleTask(t, "["+bin+"]", nil))
		if err != nil {
			t.Fatal(err)
		}
		fetch, _ := task.ToolByName("fetch_agreement")
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err = fetch.Exec(ctx, &task.Instances[0], json.RawMessage(`{"agreement_id":"DPA-2024-017"}`))
		if !errors.Is(err, tasks.ErrToolUnavailable) {
			t.Errorf("err = %v, want ErrToolUnavailable", err)
		}
	})
}

func killFromPidFile(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var pid int
	if _, err := fmt.Sscan(strings.TrimSpace(string(b)), &pid); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
}

// TestStreamableHTTP binds the example task to the same server served over Streamable HTTP.
func TestStreamableHTTP(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "echo", Version: "0.1"}, nil)
	type in struct {
		AgreementID string `json:"agreement_id"`
	}
	type out struct {
		AgreementID string `json:"agreement_id"`
		ClauseCount int    `json:"clause_count"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "fetch_agreement"}, func(_ context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, out, error) {
		return nil, out{a.AgreementID, 1}, nil
	})
	var auth string
	var mu sync.Mutex
	h := mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		mu.Lock()
		auth = r.Header.Get("Authorization")
		mu.Unlock()
		return srv
	}, nil)
	ts := httptest.NewServer(h)
	defer ts.Close()
	data := []byte(`{"version":1,"name":"remote_fetch","instructions":"Fetch.",
 "servers":{"r":{"mcp":{"url":"` + ts.URL + `","headers_env":{"Authorization":"REMOTE_AUTH"}}}},
 "tools":[{"name":"fetch_agreement","server":"r"}],
 "states":[{"name":"FETCH","tool":"fetch_agreement"}],
 "instances":[{"id":"a","prompt":"Fetch DPA-1."}]}`)
	p := &Pool{Getenv: func(k string) string {
		if k == "REMOTE_AUTH" {
			return "Bearer t0ken"
		}
		return ""
	}}
	defer p.Close()
	f, err := tasks.ParseFile("remote.json", data)
	if err != nil {
		t.Fatal(err)
	}
	task, err := tasks.FromFile(f, p)
	if err != nil {
		t.Fatal(err)
	}
	tl, _ := task.ToolByName("fetch_agreement")
	if !strings.Contains(string(tl.Schema), "agreement_id") {
		t.Errorf("a tool without arguments takes the server's schema; got %s", tl.Schema)
	}
	got, err := tl.Exec(context.Background(), &task.Instances[0], json.RawMessage(`{"agreement_id":"DPA-1"}`))
	if err != nil || string(got) != `{"agreement_id":"DPA-1","clause_count":1}` {
		t.Errorf("Exec = %s, %v", got, err)
	}
	if o := tl.Origin(); o.Transport != "streamable_http" || o.Name != "echo" || o.Version != "0.1" {
		t.Errorf("origin = %+v", o)
	}
	mu.Lock()
	defer mu.Unlock()
	if auth != "Bearer t0ken" {
		t.Errorf("Authorization = %q, want the value of headers_env's variable", auth)
	}
}

// TestHTTPEndpoint: a tool at an HTTP endpoint gets its arguments and idempotency key; a 4xx
// is the tool's error, a 5xx or no answer is the server unavailable.
func TestHTTPEndpoint(t *testing.T) {
	var mu sync.Mutex
	var keys []string
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		keys = append(keys, r.Header.Get("Idempotency-Key"))
		mu.Unlock()
		var a map[string]any
		_ = json.NewDecoder(r.Body).Decode(&a)
		switch a["code"] {
		case "bad":
			http.Error(w, "code is not known", http.StatusUnprocessableEntity)
		case "down":
			http.Error(w, "overloaded", http.StatusServiceUnavailable)
		default:
			_ = json.NewEncoder(w).Encode(map[string]any{"path": r.URL.Path, "code": a["code"]})
		}
	}))
	data := []byte(`{"version":1,"name":"lookup","instructions":"Look up.",
 "servers":{"h":{"http":{"base_url":"` + ts.URL + `/v1/"}}},
 "tools":[{"name":"lookup_code","server":"h","endpoint":"/codes/lookup","arguments":{"type":"object","properties":{"code":{"type":"string"}}}}],
 "states":[{"name":"LOOKUP","tool":"lookup_code"}],
 "instances":[{"id":"a","prompt":"Look up X."}]}`)
	f, err := tasks.ParseFile("lookup.json", data)
	if err != nil {
		t.Fatal(err)
	}
	task, err := tasks.FromFile(f, &Pool{})
	if err != nil {
		t.Fatal(err)
	}
	tl, _ := task.ToolByName("lookup_code")
	ctx := tasks.WithIdempotencyKey(context.Background(), "k1")
	got, err := tl.Exec(ctx, &task.Instances[0], json.RawMessage(`{"code":"X"}`))
	if err != nil || string(got) != "{\"code\":\"X\",\"path\":\"/v1/codes/lookup\"}\n" {
		t.Errorf("Exec = %q, %v", got, err)
	}
	if _, err := tl.Exec(ctx, &task.Instances[0], json.RawMessage(`{"code":"bad"}`)); err == nil || errors.Is(err, tasks.ErrToolUnavailable) {
		t.Errorf("4xx: err = %v, want the tool's error", err)
	}
	if _, err := tl.Exec(ctx, &task.Instances[0], json.RawMessage(`{"code":"down"}`)); !errors.Is(err, tasks.ErrToolUnavailable) {
		t.Errorf("5xx: err = %v, want ErrToolUnavailable", err)
	}
	ts.Close()
	if _, err := tl.Exec(ctx, &task.Instances[0], json.RawMessage(`{"code":"X"}`)); !errors.Is(err, tasks.ErrToolUnavailable) {
		t.Errorf("server closed: err = %v, want ErrToolUnavailable", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(keys) == 0 || keys[0] != "k1" {
		t.Errorf("Idempotency-Key headers = %q", keys)
	}
}
