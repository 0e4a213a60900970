package harness_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/harness"
	"github.com/dittolab/ditto/internal/harness/harnesstest"
	"github.com/dittolab/ditto/internal/tasks"
)

// stagingTask is a task file of fixture tools (the simulated models' untaught task) whose
// first tool, load_exposure, is replaced by exec, as a tool served by a server (Origin) with
// the given timeout and retries.
func stagingTask(t *testing.T, timeout time.Duration, retries int,
	exec func(ctx context.Context, inst *tasks.Instance, args json.RawMessage) (json.RawMessage, error)) *tasks.Task {
	t.Helper()
	f, err := tasks.LoadFile("../simllm/testdata/ifrs9_staging.yaml")
	if err != nil {
		t.Fatal(err)
	}
	task, err := tasks.FromFile(f, nil)
	if err != nil {
		t.Fatal(err)
	}
	tl := &task.Tools[0]
	tl.Exec, tl.Timeout, tl.Retries = exec, timeout, retries
	tl.Origin = func() tasks.Origin {
		return tasks.Origin{Server: "s", Name: "test-server", Version: "9", Transport: "stdio"}
	}
	return task
}

// TestToolRetriesCarryTheKey: a call whose server does not answer is made again, up to the
// tool's retries, every attempt with the same idempotency key; another call gets another key.
func TestToolRetriesCarryTheKey(t *testing.T) {
	var mu sync.Mutex
	var keys []string
	task := stagingTask(t, 0, 2, func(ctx context.Context, _ *tasks.Instance, args json.RawMessage) (json.RawMessage, error) {
		mu.Lock()
		defer mu.Unlock()
		keys = append(keys, tasks.IdempotencyKey(ctx))
		if len(keys)%3 != 0 { // two failures, then an answer
			return nil, fmt.Errorf("%w: connection refused", tasks.ErrToolUnavailable)
		}
		return json.RawMessage(`{"exposure_id":"E-1","days_past_due":0}`), nil
	})
	s := harness.RunSpec{Task: task.Name, TaskDef: task, Condition: cond(t, "baseline"), Model: "scripted"}
	m := &harnesstest.Script{Turns: []harnesstest.Turn{
		harnesstest.Text("plan"),
		harnesstest.Call("load_exposure", `{"exposure_id":"E-1"}`),
		harnesstest.Call("load_exposure", `{"exposure_id":"E-1"}`),
		harnesstest.Text("done"),
	}}
	_, rec := run(t, s, m)
	mu.Lock()
	defer mu.Unlock()
	if len(keys) != 6 {
		t.Fatalf("%d attempts, want 3 per call", len(keys))
	}
	if keys[0] == "" || keys[0] != keys[1] || keys[1] != keys[2] || keys[3] != keys[4] || keys[4] != keys[5] || keys[0] == keys[3] {
		t.Errorf("keys %q: want one key per call, the same for its attempts", keys)
	}
	for _, p := range rec.Payloads(events.TypeToolReturned) {
		if !p.(events.ToolReturned).OK {
			t.Errorf("a call that succeeded at its third attempt returned %+v", p)
		}
	}
}

// TestToolTimeout: an attempt past the tool's timeout counts as the server not answering.
func TestToolTimeout(t *testing.T) {
	task := stagingTask(t, 50*time.Millisecond, 0, func(ctx context.Context, _ *tasks.Instance, _ json.RawMessage) (json.RawMessage, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	s := harness.RunSpec{Task: task.Name, TaskDef: task, Condition: cond(t, "baseline"), Model: "scripted"}
	m := &harnesstest.Script{Turns: []harnesstest.Turn{harnesstest.Text("plan"), harnesstest.Call("load_exposure", `{"exposure_id":"E-1"}`), harnesstest.Text("done")}}
	res, rec := run(t, s, m)
	rets := rec.Payloads(events.TypeToolReturned)
	if len(rets) != 1 || rets[0].(events.ToolReturned).OK {
		t.Fatalf("tool.returned %v, want one failed return", rets)
	}
	if res.Status == events.StatusSucceeded {
		t.Errorf("status %s", res.Status)
	}
}

// TestTaskDefMustMatch: a RunSpec's TaskDef is the task it names.
func TestTaskDefMustMatch(t *testing.T) {
	task := stagingTask(t, 0, 0, nil)
	s := harness.RunSpec{Task: "credit_ecl", TaskDef: task, Condition: cond(t, "baseline"), Model: "scripted"}
	if _, err := harness.Run(context.Background(), s, &harnesstest.Script{}, harnesstest.NewRecorder()); err == nil {
		t.Error("Run accepted a TaskDef of another task")
	}
}

// TestToolServerDownErrors: a call whose server never answers, retries included, ends the run
// errored with the cause (tool_server, the attempts made), not failed.
func TestToolServerDownErrors(t *testing.T) {
	task := stagingTask(t, 0, 2, func(context.Context, *tasks.Instance, json.RawMessage) (json.RawMessage, error) {
		return nil, fmt.Errorf("%w: mcp server s: connection closed", tasks.ErrToolUnavailable)
	})
	s := harness.RunSpec{Task: task.Name, TaskDef: task, Condition: cond(t, "harness"), Model: "scripted"}
	m := &harnesstest.Script{Turns: []harnesstest.Turn{harnesstest.Text(harnesstest.IdealPlan(task)), harnesstest.Call("load_exposure", `{"exposure_id":"E-1"}`), harnesstest.Text("done")}}
	res, _ := run(t, s, m)
	if res.Status != events.StatusErrored || res.Cause.Kind != events.CauseToolServer || res.Cause.Attempts != 3 {
		t.Errorf("status %s, cause %+v; want errored, tool_server after 3 attempts", res.Status, res.Cause)
	}
	if events.Scored(res.Status) {
		t.Error("an errored run is scored")
	}
}

// TestToolEventsNameTheirServer: the calls of a task whose tools a real MCP server serves over
// stdio (the example's, examples/dpa-review/server, which introduces itself as dpa-review
// 1.0.0) are recorded with that name and version, the server's key in the task file and the
// transport, on tool.called and tool.returned alike, in events that decode as schema version 3.
func TestToolEventsNameTheirServer(t *testing.T) {
	task := dpaTask(t)
	s := harness.RunSpec{Task: task.Name, TaskDef: task, Condition: cond(t, "harness"), Model: "scripted"}
	res, rec := run(t, s, &gapModel{turn: dpaTurn})
	if !res.Success {
		t.Fatalf("run %s: %s", res.Status, res.Error)
	}
	want := events.ToolServer{Name: "dpa-review", Version: "1.0.0", Key: "dpa", Transport: "stdio"}
	calls := 0
	for _, b := range rec.Encoded {
		e, err := events.Decode(b)
		if err != nil {
			t.Fatalf("Decode(%s): %v", b, err)
		}
		var got events.ToolServer
		switch p := e.Payload.(type) {
		case events.ToolCalled:
			got = p.Server
			calls++
		case events.ToolReturned:
			got = p.Server
		default:
			continue
		}
		if e.Schema != 3 || got != want {
			t.Errorf("%s of seq %d: schema %d, server %+v; want schema 3, server %+v", e.Type, e.Seq, e.Schema, got, want)
		}
	}
	if calls != 3 {
		t.Errorf("%d tool calls recorded, want fetch, assess and file", calls)
	}
}
