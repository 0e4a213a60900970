package harness_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/harness/harnesstest"
	"github.com/dittolab/ditto/internal/llm"
	"github.com/dittolab/ditto/internal/tasks"
)

// TestModelNeverAnswered: a call that failed for good ends the run as errored with the
// failure as its cause (the kind, whether it was permanent, the HTTP status, the attempts),
// except a context window exceeded, which is the agent's overflow.
func TestModelNeverAnswered(t *testing.T) {
	task, _ := tasks.Get("credit_ecl")
	tests := []struct {
		name       string
		give       *llm.CallError
		wantStatus string
		wantCause  events.Cause
	}{
		{"401 at the first call", &llm.CallError{Attempts: 1, StatusCode: 401, Kind: events.CauseUnauthorized,
			Detail: "the endpoint refused the API key (HTTP 401)", Err: errors.New("401")},
			events.StatusErrored, events.Cause{Kind: events.CauseUnauthorized, Permanent: true, HTTPStatus: 401,
				Attempts: 1, Detail: "the endpoint refused the API key (HTTP 401)"}},
		{"refused past the retries", &llm.CallError{Attempts: 4, Retryable: true, Kind: events.CauseUnreachable,
			Detail: "no answer: connection refused", Err: errors.New("dial tcp: connection refused")},
			events.StatusErrored, events.Cause{Kind: events.CauseUnreachable, Attempts: 4, Detail: "no answer: connection refused"}},
		{"context window", &llm.CallError{Attempts: 1, StatusCode: 400, Kind: llm.KindContextLength,
			Detail: "the conversation exceeds the model's context window (HTTP 400)", Err: errors.New("400")},
			events.StatusOverflow, events.Cause{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &harnesstest.Script{Turns: []harnesstest.Turn{harnesstest.Ideal(task), harnesstest.Ideal(task),
				func(llm.Request) (llm.Response, error) { return llm.Response{}, tt.give }}}
			res, rec := run(t, spec(t, "credit_ecl", "harness", 0), m)
			if res.Status != tt.wantStatus || res.Cause != tt.wantCause || res.Success {
				t.Fatalf("Run = status %s cause %#v, want %s %#v", res.Status, res.Cause, tt.wantStatus, tt.wantCause)
			}
			fin := rec.Payloads(events.TypeRunFinished)[0].(events.RunFinished)
			if fin.Status != tt.wantStatus || fin.Cause != tt.wantCause {
				t.Errorf("run.finished = %s %#v, want %s %#v", fin.Status, fin.Cause, tt.wantStatus, tt.wantCause)
			}
			checkFold(t, rec, res)
		})
	}
}

// TestToolServerDown: a tool whose server never answers (ErrToolUnavailable) ends the run as
// errored; a tool's own error is handed back to the model as before.
func TestToolServerDown(t *testing.T) {
	for _, tt := range []struct {
		name       string
		err        error
		wantStatus string
	}{
		{"server down", fmt.Errorf("mcp: dial 127.0.0.1:9: connection refused: %w", tasks.ErrToolUnavailable), events.StatusErrored},
		{"tool error", fmt.Errorf("%w: no such portfolio", tasks.ErrNotFound), events.StatusEscalated},
	} {
		t.Run(tt.name, func(t *testing.T) {
			task := brokenTool(t, tt.err)
			res, rec := run(t, spec(t, task.Name, "harness", 0), harnesstest.IdealModel(task))
			if res.Status != tt.wantStatus {
				t.Fatalf("Run = %s (%s), want %s", res.Status, res.Error, tt.wantStatus)
			}
			if tt.wantStatus == events.StatusErrored {
				want := events.Cause{Kind: events.CauseToolServer, Endpoint: task.Tools[0].Name, Attempts: 1, Detail: tt.err.Error()}
				if res.Cause != want {
					t.Errorf("Cause = %#v, want %#v", res.Cause, want)
				}
				if n := rec.Count(events.TypeToolReturned); n != 1 {
					t.Errorf("tool.returned events = %d, want 1 (the failed call, recorded)", n)
				}
			}
			checkFold(t, rec, res)
		})
	}
}

// brokenTool registers a copy of credit_ecl whose first tool fails with err.
func brokenTool(t *testing.T, err error) *tasks.Task {
	t.Helper()
	base, _ := tasks.Get("credit_ecl")
	task := *base
	task.Name = fmt.Sprintf("credit_ecl_broken_%p", t)
	task.Tools = append([]tasks.Tool(nil), base.Tools...)
	task.Tools[0].Exec = func(context.Context, *tasks.Instance, json.RawMessage) (json.RawMessage, error) { return nil, err }
	if rerr := tasks.Register(&task); rerr != nil {
		t.Fatal(rerr)
	}
	return &task
}
