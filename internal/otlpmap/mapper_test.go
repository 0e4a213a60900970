package otlpmap

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dittolab/ditto/events"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// load decodes recorded OTLP/JSON payloads into spans written to study "prod".
func load(t testing.TB, files ...string) []Span {
	t.Helper()
	var all []Span
	for _, f := range files {
		raw, err := os.ReadFile(filepath.Join("testdata", f))
		if err != nil {
			t.Fatal(err)
		}
		req, err := DecodeJSON(raw)
		if err != nil {
			t.Fatalf("DecodeJSON(%s) = %v", f, err)
		}
		spans, rej := Spans(req)
		if len(rej) > 0 {
			t.Fatalf("Spans(%s) rejected %v", f, rej)
		}
		all = append(all, spans...)
	}
	for i := range all {
		all[i].Study = "prod"
	}
	return all
}

func TestMapTrace(t *testing.T) {
	tests := []struct {
		name          string
		files         []string
		cfg           Config
		wantRun       string
		wantTask      string
		wantModel     string
		wantCondition string
		wantTools     []string
		wantStates    []string
		wantPlan      string
		wantPrompt    int64
		wantComplete  int64
		wantCalls     int
		wantStatus    string
		wantOutput    string
		wantArgs      []string // canonical args of each executed call
		wantNotes     []string // substrings that must appear among the notes
	}{
		{
			name: "genai", files: []string{"genai.json"},
			wantRun: "d20251130-5b8efff798038103d269b633813fc60c", wantTask: "invoice-triage", wantModel: "gpt-4o-mini", wantCondition: "r7",
			wantTools: []string{"fetch_invoice", "route"}, wantPlan: "1. fetch 2. match 3. route",
			wantPrompt: 1220, wantComplete: 95, wantCalls: 3, wantStatus: events.StatusSucceeded, wantOutput: `{"queue":"ap-standard"}`,
			wantArgs: []string{`{"fields":["total","po"],"invoice_id":"INV-1000"}`, `{"queue":"ap-standard"}`},
		},
		{
			name: "split and out of order", files: []string{"split_part2.json", "split_part1.json"},
			wantRun: "d20251130-0af7651916cd43dd8448eb211c80319c", wantTask: "helper", wantModel: "m1", wantCondition: "production",
			wantTools: []string{"lookup"}, wantPrompt: 30, wantComplete: 12, wantCalls: 2, wantStatus: events.StatusSucceeded,
			wantArgs: []string{`{"q":"x"}`},
		},
		{
			name: "openinference", files: []string{"openinference.json"},
			wantTask: "research-agent", wantModel: "claude-3-5-sonnet", wantCondition: "2025.11",
			wantTools: []string{"calculator"}, wantStates: []string{"summarize"}, wantPrompt: 320, wantComplete: 83, wantCalls: 2,
			wantStatus: events.StatusSucceeded, wantOutput: `{"answer":4}`, wantArgs: []string{`{"expr":"2+2"}`},
			wantNotes: []string{"openinference.span.kind=RETRIEVER is not mapped"},
		},
		{
			name: "openllmetry", files: []string{"openllmetry.json"},
			wantTask: "support_flow", wantModel: "gpt-4o", wantCondition: "production",
			wantTools: []string{"close_ticket"}, wantStates: []string{"classify"}, wantPlan: "close then notify",
			wantPrompt: 90, wantComplete: 12, wantCalls: 1, wantStatus: events.StatusSucceeded,
			wantOutput: `{"status":"closed","ticket":"T-1"}`, wantArgs: []string{`{"args":[],"kwargs":{"ticket":"T-1"}}`},
		},
		{
			name: "missing attributes", files: []string{"missing_attrs.json"},
			wantTask: "invoke_agent", wantModel: "unknown", wantCondition: "production",
			wantTools: []string{"unknown", "unknown", "x"}, wantPrompt: 0, wantComplete: 0, wantCalls: 1,
			wantStatus: events.StatusSucceeded, wantArgs: []string{"null", "null", "null"},
			wantNotes: []string{"task from the span name", "model \"unknown\"", "without token counts", "no tool arguments",
				"call id \"dup\" already used", "plan span without plan text"},
		},
		{
			name: "unknown span kinds", files: []string{"unknown_kinds.json"},
			wantTask: "concierge_v2", wantModel: "gpt-4o", wantCondition: "production",
			wantTools: []string{"audit", "orphan"}, wantPrompt: 50, wantComplete: 10, wantCalls: 1,
			wantStatus: events.StatusSucceeded, wantArgs: []string{`"not json"`, `{}`},
			wantNotes: []string{"unknown span kind", "gen_ai.operation.name=embeddings is not mapped", "GUARDRAIL is not mapped", "parent span 0000000000000001 not received"},
		},
		{
			name: "nested agents", files: []string{"nested_agents.json"}, cfg: Config{Bucket: BucketWeek, BucketCondition: true},
			wantRun: "w2025W48-77777777777777776666666666666666", wantTask: "triage", wantModel: "m", wantCondition: "production@w2025W48",
			wantTools: []string{"search"}, wantStates: []string{"researcher", "writer"}, wantPrompt: 1, wantComplete: 1, wantCalls: 1,
			wantStatus: events.StatusSucceeded, wantArgs: []string{`{"q":1}`},
			wantNotes: []string{`step "sub" nested in state "researcher"`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := MapTrace(load(t, tt.files...), tt.cfg, true)
			if err != nil {
				t.Fatalf("MapTrace() = %v", err)
			}
			run, err := events.Fold(res.Events)
			if err != nil {
				t.Fatalf("Fold(mapped events) = %v", err)
			}
			if tt.wantRun != "" && res.Run != tt.wantRun {
				t.Errorf("Run = %q, want %q", res.Run, tt.wantRun)
			}
			s := run.Started
			if s.Task != tt.wantTask || s.Model != tt.wantModel || s.Condition != tt.wantCondition {
				t.Errorf("cell = (%q, %q, %q), want (%q, %q, %q)", s.Task, s.Model, s.Condition, tt.wantTask, tt.wantModel, tt.wantCondition)
			}
			if !slices.Equal(run.Tools, tt.wantTools) {
				t.Errorf("Tools = %q, want %q", run.Tools, tt.wantTools)
			}
			if !slices.Equal(run.States, tt.wantStates) {
				t.Errorf("States = %q, want %q", run.States, tt.wantStates)
			}
			if run.Plan != tt.wantPlan {
				t.Errorf("Plan = %q, want %q", run.Plan, tt.wantPlan)
			}
			if run.PromptTokens != tt.wantPrompt || run.CompletionTokens != tt.wantComplete || run.ModelCalls != tt.wantCalls {
				t.Errorf("tokens = %d/%d in %d calls, want %d/%d in %d", run.PromptTokens, run.CompletionTokens, run.ModelCalls, tt.wantPrompt, tt.wantComplete, tt.wantCalls)
			}
			if run.Finished.Status != tt.wantStatus {
				t.Errorf("Status = %q, want %q", run.Finished.Status, tt.wantStatus)
			}
			if string(run.Output) != tt.wantOutput {
				t.Errorf("Output = %s, want %s", run.Output, tt.wantOutput)
			}
			var args []string
			for _, c := range run.Calls {
				args = append(args, string(c.Args))
			}
			if !slices.Equal(args, tt.wantArgs) {
				t.Errorf("Args = %q, want %q", args, tt.wantArgs)
			}
			tot := run.Finished.Totals
			if tot.PromptTokens != run.PromptTokens || tot.ModelCalls != run.ModelCalls || tot.ToolCalls != len(run.Tools) {
				t.Errorf("Totals %+v disagree with the fold", tot)
			}
			notes := ""
			for _, n := range res.Notes {
				notes += n.Reason + "\n"
			}
			for _, want := range tt.wantNotes {
				if !strings.Contains(notes, want) {
					t.Errorf("notes lack %q; notes:\n%s", want, notes)
				}
			}
			checkGolden(t, strings.ReplaceAll(tt.name, " ", "_"), res)
		})
	}
}

// checkGolden freezes the whole mapping (every event and note) of a case.
func checkGolden(t *testing.T, name string, res *Result) {
	t.Helper()
	var buf bytes.Buffer
	for i := range res.Events {
		b, err := events.Encode(&res.Events[i])
		if err != nil {
			t.Fatalf("Encode(event %d) = %v", i, err)
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	for _, n := range res.Notes {
		b, _ := json.Marshal(n)
		buf.WriteString("note ")
		buf.Write(b)
		buf.WriteByte('\n')
	}
	path := filepath.Join("testdata", "golden", name+".jsonl")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("golden %s: %v (run with -update)", path, err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("mapping of %s differs from %s (run with -update after checking):\n%s", name, path, buf.String())
	}
}

func TestMapTraceIsDeterministic(t *testing.T) {
	a, err := MapTrace(load(t, "genai.json"), Config{}, true)
	if err != nil {
		t.Fatal(err)
	}
	spans := load(t, "genai.json")
	slices.Reverse(spans)
	b, err := MapTrace(spans, Config{}, true)
	if err != nil {
		t.Fatal(err)
	}
	for i := range a.Events {
		ea, _ := events.Encode(&a.Events[i])
		eb, _ := events.Encode(&b.Events[i])
		if !bytes.Equal(ea, eb) {
			t.Fatalf("event %d differs between two mappings of one trace:\n%s\n%s", i, ea, eb)
		}
	}
}

func TestMapTraceToolErrorAndIncomplete(t *testing.T) {
	res, err := MapTrace(load(t, "genai.json"), Config{}, true)
	if err != nil {
		t.Fatal(err)
	}
	var ret *events.ToolReturned
	for _, e := range res.Events {
		if p, ok := e.Payload.(events.ToolReturned); ok && p.Tool == "route" {
			ret = &p
		}
	}
	if ret == nil || ret.OK || ret.Error != "queue unavailable" {
		t.Errorf("route's tool.returned = %+v, want OK false with the span status message", ret)
	}
	// Only the children arrived: an aborted run, still well-formed.
	inc, err := MapTrace(load(t, "split_part1.json"), Config{}, false)
	if err != nil {
		t.Fatal(err)
	}
	run, err := events.Fold(inc.Events)
	if err != nil {
		t.Fatalf("Fold(incomplete) = %v", err)
	}
	if run.Finished.Status != events.StatusAborted || run.Finished.Success {
		t.Errorf("incomplete trace finished %+v, want aborted", run.Finished)
	}
}

func TestMapTraceErrors(t *testing.T) {
	if _, err := MapTrace(nil, Config{}, true); !errors.Is(err, ErrEmpty) {
		t.Errorf("MapTrace(nil) = %v, want ErrEmpty", err)
	}
	if _, err := MapTrace(load(t, "no_genai.json"), Config{}, true); !errors.Is(err, ErrNoGenAI) {
		t.Errorf("MapTrace(http spans only) = %v, want ErrNoGenAI", err)
	}
	spans := load(t, "genai.json")
	for i := range spans {
		spans[i].Study = "prod.evil"
	}
	if _, err := MapTrace(spans, Config{}, true); !errors.Is(err, ErrUnsafeName) {
		t.Errorf("MapTrace(study with a dot) = %v, want ErrUnsafeName", err)
	}
}

func TestParentLoopDoesNotHang(t *testing.T) {
	spans := load(t, "genai.json")
	// Make two spans each other's parent.
	spans[0].ParentID, spans[1].ParentID = spans[1].SpanID, spans[0].SpanID
	res, err := MapTrace(spans, Config{}, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := events.Fold(res.Events); err != nil {
		t.Fatalf("Fold = %v", err)
	}
	found := false
	for _, n := range res.Notes {
		found = found || strings.Contains(n.Reason, "loops")
	}
	if !found {
		t.Errorf("notes %v do not mention the parent loop", res.Notes)
	}
}

// TestMapTraceInputKey: a run's input key is ditto.input_key on the agent span (or its
// resource) when set, else the hash of the agent span's input (input.value here): equal JSON
// inputs written in another key order share it, and a trace without either has none.
func TestMapTraceInputKey(t *testing.T) {
	key := func(mutate func(root *Span)) string {
		t.Helper()
		spans := load(t, "openinference.json")
		for i := range spans {
			if spans[i].ParentID == "" {
				mutate(&spans[i])
			}
		}
		res, err := MapTrace(spans, Config{}, true)
		if err != nil {
			t.Fatal(err)
		}
		p, ok := res.Events[0].Payload.(events.RunStarted)
		if !ok {
			t.Fatalf("first event %s, want run.started", res.Events[0].Type)
		}
		return p.InputKey
	}
	text, _ := events.InputKeyOf([]byte(`"what is 2+2"`))
	obj, _ := events.InputKeyOf([]byte(`{"a":1,"b":[2,3]}`))
	for _, tc := range []struct {
		name   string
		mutate func(root *Span)
		want   string
	}{
		{"text input", func(*Span) {}, text},
		{"client key", func(s *Span) { s.Attrs["ditto.input_key"] = "Q-1" }, "Q-1"},
		{"client key on the resource", func(s *Span) { s.Resource["ditto.input_key"] = "Q-2" }, "Q-2"},
		{"JSON input", func(s *Span) { s.Attrs["input.value"] = `{"b": [2, 3], "a": 1}` }, obj},
		{"JSON input, other order", func(s *Span) { s.Attrs["input.value"] = `{"a":1,"b":[2,3]}` }, obj},
		{"no input", func(s *Span) { delete(s.Attrs, "input.value") }, ""},
	} {
		if got := key(tc.mutate); got != tc.want {
			t.Errorf("%s: input key %q, want %q", tc.name, got, tc.want)
		}
	}
}
