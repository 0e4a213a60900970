package client_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/events/client"
)

func TestSendRetriesThrottledThenSucceeds(t *testing.T) {
	var calls atomic.Int32
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok-1234567890abcdef" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		if calls.Add(1) <= 2 {
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusTooManyRequests)
			fmt.Fprint(w, `{"accepted":0,"rejected":[],"error":"busy"}`)
			return
		}
		fmt.Fprint(w, `{"accepted":2,"rejected":[]}`)
	}))
	defer ts.Close()
	c, err := client.New(ts.URL, client.WithToken("tok-1234567890abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	run, _ := c.StartRun(client.RunSpec{Study: "s", Task: "t", Model: "m"})
	if err := run.Finish(context.Background(), client.Result{}); err != nil {
		t.Fatalf("Finish() = %v", err)
	}
	if calls.Load() != 3 || run.Pending() != 0 {
		t.Errorf("%d requests, %d pending; want 3 requests and nothing pending", calls.Load(), run.Pending())
	}
}

func TestSendErrors(t *testing.T) {
	tests := []struct {
		name    string
		handler http.HandlerFunc
		want    error
		pending int
	}{
		{"rejected", func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, `{"accepted":1,"rejected":[{"index":1,"reason":"forbidden","detail":"no"}]}`)
		}, client.ErrRejected, 0},
		{"unauthorized", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"accepted":0,"rejected":[],"error":"missing token"}`)
		}, client.ErrServer, 2},
		{"always busy", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusServiceUnavailable)
		}, client.ErrServer, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := httptest.NewServer(tt.handler)
			defer ts.Close()
			c, _ := client.New(ts.URL, client.WithRetries(2), client.WithMaxBackoff(time.Millisecond))
			run, _ := c.StartRun(client.RunSpec{Study: "s", Task: "t", Model: "m"})
			err := run.Finish(context.Background(), client.Result{})
			if !errors.Is(err, tt.want) {
				t.Errorf("Finish() = %v, want %v", err, tt.want)
			}
			if run.Pending() != tt.pending {
				t.Errorf("Pending() = %d, want %d (refused events are dropped, unsent ones kept)", run.Pending(), tt.pending)
			}
		})
	}
}

func TestRunMisuseIsAnErrorAtTheCall(t *testing.T) {
	c, _ := client.New("http://127.0.0.1:1")
	run, err := c.StartRun(client.RunSpec{Study: "s", Run: "r1", Task: "t", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	if err := run.ExitState("ok"); !errors.Is(err, events.ErrIllegalTransition) {
		t.Errorf("ExitState() without a state = %v, want ErrIllegalTransition", err)
	}
	call, err := run.CallTool("t", map[string]int{"a": 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := call.Return("x"); err != nil {
		t.Fatal(err)
	}
	if err := call.Return("again"); !errors.Is(err, events.ErrIllegalTransition) {
		t.Errorf("second Return() = %v, want ErrIllegalTransition", err)
	}
	if _, err := run.CallTool("t", func() {}); err == nil {
		t.Errorf("CallTool(unmarshalable args) = nil error")
	}
	if _, err := c.StartRun(client.RunSpec{Study: "bad.study", Task: "t", Model: "m"}); !errors.Is(err, events.ErrUnsafeToken) {
		t.Errorf("StartRun(unsafe study) = %v, want ErrUnsafeToken", err)
	}
	if n := run.Pending(); n != 3 {
		t.Errorf("Pending() = %d, want 3 (refused calls record nothing)", n)
	}
	if _, err := client.New("ftp://x"); !errors.Is(err, client.ErrConfig) {
		t.Errorf("New(ftp) = %v, want ErrConfig", err)
	}
}

// TestRunInputKey: a run carries the client's input key, or the key derived from its input;
// inputs equal as JSON (keys in another order) give the same key.
func TestRunInputKey(t *testing.T) {
	var got []events.Envelope
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		n := 0
		for _, line := range bytes.Split(bytes.TrimSpace(body), []byte("\n")) {
			e, err := events.Decode(line)
			if err != nil {
				t.Errorf("decode %s: %v", line, err)
				continue
			}
			got = append(got, e)
			n++
		}
		fmt.Fprintf(w, `{"accepted":%d,"rejected":[]}`, n)
	}))
	defer ts.Close()
	c, err := client.New(ts.URL)
	if err != nil {
		t.Fatal(err)
	}
	for _, spec := range []client.RunSpec{
		{Study: "s", Task: "t", Model: "m", InputKey: "INV-7"},
		{Study: "s", Task: "t", Model: "m", Input: map[string]any{"invoice": "INV-7", "lines": []int{1, 2}}},
		{Study: "s", Task: "t", Model: "m", Input: struct {
			Lines   []int  `json:"lines"`
			Invoice string `json:"invoice"`
		}{[]int{1, 2}, "INV-7"}},
	} {
		run, err := c.StartRun(spec)
		if err != nil {
			t.Fatal(err)
		}
		if err := run.Finish(context.Background(), client.Result{}); err != nil {
			t.Fatal(err)
		}
	}
	var keys []string
	for _, e := range got {
		if p, ok := e.Payload.(events.RunStarted); ok {
			if e.Schema < 2 {
				t.Errorf("run.started of schema %d carries an input key", e.Schema)
			}
			keys = append(keys, p.ResolvedInputKey())
		}
	}
	want, _ := events.InputKeyOf([]byte(`{"lines":[1,2],"invoice":"INV-7"}`))
	if len(keys) != 3 || keys[0] != "INV-7" || keys[1] != want || keys[2] != want {
		t.Errorf("input keys = %q, want INV-7 then %s twice", keys, want)
	}
	if _, err := c.StartRun(client.RunSpec{Study: "s", Task: "t", Model: "m", Input: func() {}}); err == nil {
		t.Error("StartRun with an input encoding/json cannot marshal = nil, want an error")
	}
}
