package simllm

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dittolab/ditto/internal/tasks"
)

// nodeClientDir installs the official openai npm package (v4) once into a cache directory and
// returns it with the client script copied in; it skips the test, saying why, when Node or
// npm is missing or the registry cannot be reached.
func nodeClientDir(t *testing.T) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: the second-client test needs Node.js 18+ and npm")
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Skip("npm is not installed: the second-client test needs it to fetch the openai package")
	}
	out, err := exec.Command(node, "--version").Output()
	major, _ := strconv.Atoi(strings.SplitN(strings.TrimPrefix(strings.TrimSpace(string(out)), "v"), ".", 2)[0])
	if err != nil || major < 18 {
		t.Skipf("node --version = %q (%v): the openai package needs Node.js 18+", strings.TrimSpace(string(out)), err)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "ditto", "simllm-openai-node")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "openai", "package.json")); err != nil {
		if testing.Short() {
			t.Skip("-short: not installing the openai npm package (run without -short once to cache it)")
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"name":"simllm-openai-client","private":true,"type":"module"}`), 0o644); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, npm, "install", "--no-audit", "--no-fund", "--loglevel=error", "openai@4")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Skipf("npm install openai@4 failed (registry unreachable?): %v\n%s", err, out)
		}
	}
	script, err := os.ReadFile(filepath.Join("testdata", "openai_client.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "openai_client.mjs"), script, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestOpenAINodeClient drives the server with the official openai npm package.
func TestOpenAINodeClient(t *testing.T) {
	dir := nodeClientDir(t)
	srv := httptest.NewServer(mustServer(t, Config{}))
	defer srv.Close()

	task, _ := tasks.Get("credit_ecl")
	tools, _ := json.Marshal(toolsOf(task))
	msgs, _ := json.Marshal([]map[string]string{
		{"role": "system", "content": task.Instructions},
		{"role": "user", "content": task.Instances[0].Prompt},
	})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "openai_client.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "BASE_URL="+srv.URL+"/v1", "TOOLS="+string(tools), "MESSAGES="+string(msgs), "PLAN_SCHEMA="+string(planSchema))
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("node client: %v\n%s\n%s", err, out, stderr)
	}
	var got struct {
		Models []struct {
			ID      string `json:"id"`
			OwnedBy string `json:"owned_by"`
		} `json:"models"`
		Forced struct {
			FinishReason string     `json:"finish_reason"`
			ToolCalls    []toolCall `json:"tool_calls"`
			Usage        usage      `json:"usage"`
			Fingerprint  string     `json:"system_fingerprint"`
		} `json:"forced"`
		RepeatIdentical bool   `json:"repeat_identical"`
		Plan            string `json:"plan"`
		Error           *struct {
			Status int    `json:"status"`
			Code   string `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("node output %s: %v", out, err)
	}
	if len(got.Models) != 2 || got.Models[0].OwnedBy != OwnedBy {
		t.Errorf("models = %+v", got.Models)
	}
	if tc := got.Forced.ToolCalls; len(tc) != 1 || tc[0].Function.Name != task.Tools[0].Name || tc[0].ID == "" || tc[0].Function.Arguments == "" {
		t.Errorf("forced tool call = %+v", got.Forced.ToolCalls)
	}
	if got.Forced.Usage.TotalTokens == 0 || got.Forced.Fingerprint == "" {
		t.Errorf("usage %+v fingerprint %q", got.Forced.Usage, got.Forced.Fingerprint)
	}
	if !got.RepeatIdentical {
		t.Error("two identical seeded requests from the node client got different responses")
	}
	var plan struct {
		Plan []map[string]string `json:"plan"`
	}
	if err := json.Unmarshal([]byte(got.Plan), &plan); err != nil || len(plan.Plan) != len(task.States) {
		t.Errorf("plan %q: %v", got.Plan, err)
	}
	if got.Error == nil || got.Error.Status != 400 || got.Error.Code != "model_not_found" {
		t.Errorf("unknown model error = %+v, want status 400 code model_not_found", got.Error)
	}
}
