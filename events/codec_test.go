package events

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func ptr[T any](v T) *T { return &v }

// samples holds one payload of every event type of the current schema version, as the golden
// files of testdata/v3 freeze them: those of version 2 with what version 3 added.
func samples() map[Type]Payload {
	s := samplesV2()
	server := ToolServer{Name: "dpa-review", Version: "1.0.0", Key: "dpa", Transport: "stdio"}
	called := s[TypeToolCalled].(ToolCalled)
	called.Server = server
	s[TypeToolCalled] = called
	returned := s[TypeToolReturned].(ToolReturned)
	returned.Server = server
	s[TypeToolReturned] = returned
	return s
}

// samplesV2 holds one payload of every event type as schema version 2 knows them, as the
// golden files of testdata/v2 freeze them: those of version 1 with what version 2 added.
func samplesV2() map[Type]Payload {
	s := samplesV1()
	started := s[TypeRunStarted].(RunStarted)
	started.InputKey, started.Input = "portfolio-a", MustCanonical(map[string]any{"portfolio": "a", "as_of": "2026-11-30"})
	s[TypeRunStarted] = started
	s[TypeRunFinished] = RunFinished{Status: StatusErrored, Error: "model: llm: chat failed after 1 attempt(s): 401 Unauthorized",
		Totals: Totals{ModelCalls: 1, LatencyMS: 4.5},
		Cause: Cause{Kind: CauseUnauthorized, Permanent: true, Endpoint: "openai", HTTPStatus: 401, Attempts: 1,
			Detail: "the endpoint refused the API key (HTTP 401 Unauthorized)"}}
	return s
}

// samplesV1 holds one payload of every event type as schema version 1 knows them; the golden
// files of testdata/ freeze them.
func samplesV1() map[Type]Payload {
	return map[Type]Payload{
		TypeStudyDefined: StudyDefined{Name: "s1", Cells: []Cell{{Task: "credit_ecl", Model: "sim-steady", Condition: "baseline", Runs: 2}},
			ExpectedRuns: 2, Paired: true, Simulated: []string{"sim-steady"}, Spec: MustCanonical(map[string]any{"name": "s1"})},
		TypeRunStarted: RunStarted{Task: "credit_ecl", Instance: "portfolio-a", InputIndex: 0, SeedIndex: 3, Model: "sim-steady",
			Condition: "harness", Components: []string{ComponentForcedTool, ComponentFSM}, Seed: ptr(int64(42)),
			Sampling: Sampling{Temperature: ptr(0.7), TopP: ptr(1.0), MaxTokens: 512}, Endpoint: "sim", Simulated: true,
			Start: "LOAD_DATA", Graph: map[string][]string{"LOAD_DATA": {"CALCULATE"}, "CALCULATE": nil}},
		TypeRunFinished: RunFinished{Status: StatusSucceeded, Output: MustCanonical(map[string]any{"ecl": 1234.5}), Success: true,
			Totals: Totals{PromptTokens: 100, CompletionTokens: 20, ModelCalls: 3, ToolCalls: 2, LatencyMS: 12.5}},
		TypePlanProposed:    PlanProposed{Text: "1. load\n2. calculate", Attempt: 1},
		TypePlanAccepted:    PlanAccepted{Steps: []PlanStep{{State: "LOAD_DATA", Tool: "load_portfolio"}}},
		TypePlanRejected:    PlanRejected{Errors: []string{"step 2: unknown state FOO"}, Attempt: 1},
		TypeStateEntered:    StateEntered{State: "CALCULATE", From: "LOAD_DATA"},
		TypeStateExited:     StateExited{State: "CALCULATE", Outcome: "ok"},
		TypeModelCalled:     ModelCalled{Model: "sim-steady", Purpose: "act", PromptTokens: 50, CompletionTokens: 10, LatencyMS: 3.25, FinishReason: "tool_calls", Fingerprint: "fp_1", Seed: ptr(int64(42))},
		TypeToolCalled:      ToolCalled{CallID: "call_1", Tool: "load_portfolio", Args: MustCanonical(map[string]any{"path": "data/a"}), State: "LOAD_DATA"},
		TypeToolRejected:    ToolRejected{CallID: "call_2", Tool: "delete_all", Reason: RejectUnauthorized, Detail: "not authorized in LOAD_DATA", State: "LOAD_DATA"},
		TypeToolReturned:    ToolReturned{CallID: "call_1", Tool: "load_portfolio", OK: true, Output: MustCanonical(map[string]any{"loans": 3}), DurationMS: 0.5},
		TypeOutputValidated: OutputValidated{State: "LOAD_DATA", Tool: "load_portfolio"},
		TypeOutputInvalid:   OutputInvalid{State: "CALCULATE", Tool: "calculate_ecl", Errors: []string{"ecl is negative"}},
		TypeRetryScheduled:  RetryScheduled{State: "CALCULATE", Attempt: 1, Reason: "output invalid"},
		TypeRunEscalated:    RunEscalated{Reason: "plan rejected 3 times", State: ""},
		TypeReportPublished: ReportPublished{Name: "s1-20261130", Path: "reports/s1/index.html", Formats: []string{"md", "html", "json"}, Studies: []string{"s1"}},
		TypeWorkspaceCreated: WorkspaceCreated{Repo: "inventory", Instance: "nil-map", Commit: "9f1c2e4b7a0d3c5e8f6a1b2c3d4e5f6a7b8c9d0e",
			Isolation: "network netns, timeout 2m0s, output cap 65536 bytes, CPU 120s per process"},
		TypeWorkspaceDiscarded: WorkspaceDiscarded{Repo: "inventory", Instance: "nil-map", Commit: "9f1c2e4b7a0d3c5e8f6a1b2c3d4e5f6a7b8c9d0e"},
		TypeVerificationRan: VerificationRan{Turn: 1, Command: "go build ./... && go vet ./... && go test -count=1 -v ./...", ExitCode: 1,
			DurationMS: 2150.5, FailingTests: 1, TestFilesChanged: []string{"stock_test.go"}, RawBytes: 912},
		TypeDiagnosticsDistilled: DiagnosticsDistilled{Turn: 1, Diagnostics: []Diagnostic{{File: "stock.go", Line: 21, Kind: "panic",
			Message: "panic: assignment to entry in nil map"}}, Total: 1, RawBytes: 912, DistilledBytes: 61, RawTokens: 228, DistilledTokens: 16, Distilled: true},
		TypeFileChanged:       FileChanged{CallID: "call_3", Path: "stock.go", Added: 1, Removed: 1, Repatch: true},
		TypeContextConfigured: ContextConfigured{Tier: "T4", Budget: 8000, Soft: 4800, Hard: 6800, Recent: 3, Bulky: 200, SummaryTokens: 800},
		TypeContextPrepared:   ContextPrepared{Turn: 4, Tokens: 5210, Budget: 8000, Messages: 11, Recent: 3},
		TypeContextElided:     ContextElided{Turn: 4, IDs: []string{"o2", "o3"}, Saved: 1830},
		TypeContextRecalled:   ContextRecalled{CallID: "call_7", ID: "o2", Tokens: 912},
		TypeContextSummarized: ContextSummarized{Turn: 6, Folded: []string{"m1", "o1", "m2", "o2"}, Steps: 2, Before: 7020, After: 4410, SummaryTokens: 230},
		TypeContextOverflowed: ContextOverflowed{Turn: 9, Tier: "T0", Needed: 8342, Budget: 8000},
		TypePlanUpdated: PlanUpdated{CallID: "call_1", Explanation: "start with the failing test",
			Steps: []PlanUpdate{{Step: "read the failing test", Status: "in_progress"}, {Step: "fix stock.go", Status: "pending"}}},
	}
}

func sampleEnvelope(t Type, p Payload) Envelope {
	return sampleEnvelopeV(SchemaVersion, t, p)
}

func sampleEnvelopeV(version int, t Type, p Payload) Envelope {
	run := "run-0001"
	if t == TypeStudyDefined || t == TypeReportPublished {
		run = StudyRun
	}
	return Envelope{
		Schema: version, ID: "01JDQ8Z7Y0000000000000000" + string(rune('A'+len(t)%20)), Type: t,
		Time: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC), Study: "s1", Run: run, Attempt: 1, Seq: 1,
		Source: Source{Kind: SourceHarness, ID: "worker-1"}, TraceID: "4bf92f3577b34da6a3ce929d0e0e4736", SpanID: "00f067aa0ba902b7",
		Payload: p,
	}
}

// goldenDirs are the golden files of each schema version. Those of a version, once written,
// never change: versions are added, never mutated.
var goldenDirs = map[int]string{1: "testdata", 2: filepath.Join("testdata", "v2"), 3: filepath.Join("testdata", "v3")}

// samplesOf are the sample payloads of each schema version.
var samplesOf = map[int]func() map[Type]Payload{1: samplesV1, 2: samplesV2, 3: samples}

// goldenFiles lists the golden events of every version.
func goldenFiles(t testing.TB) []string {
	var out []string
	for v := 1; v <= SchemaVersion; v++ {
		files, err := filepath.Glob(filepath.Join(goldenDirs[v], "*.json"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no golden files for version %d in %s: %v", v, goldenDirs[v], err)
		}
		out = append(out, files...)
	}
	return out
}

func TestGoldenRoundTrip(t *testing.T) {
	for v := 1; v <= SchemaVersion; v++ {
		s := samplesOf[v]()
		for _, typ := range Types() {
			p, ok := s[typ]
			if !ok {
				t.Fatalf("no sample for %s", typ)
			}
			t.Run(fmt.Sprintf("v%d/%s", v, typ), func(t *testing.T) {
				goldenRoundTrip(t, goldenDirs[v], sampleEnvelopeV(v, typ, p))
			})
		}
	}
}

func goldenRoundTrip(t *testing.T, dir string, env Envelope) {
	typ := env.Type
	got, err := Encode(&env)
	if err != nil {
		t.Fatalf("Encode(%s) error %v", typ, err)
	}
	path := filepath.Join(dir, string(typ)+".json")
	if *update {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, append(got, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden (run with -update to create): %v", err)
	}
	want = bytes.TrimSpace(want)
	if !bytes.Equal(got, want) {
		t.Errorf("Encode(%s) =\n%s\nwant\n%s", typ, got, want)
	}
	dec, err := Decode(want)
	if err != nil {
		t.Fatalf("Decode(golden %s) error %v", typ, err)
	}
	again, err := Encode(&dec)
	if err != nil || !bytes.Equal(again, want) {
		t.Errorf("round trip of %s = %s, %v", typ, again, err)
	}
}

func TestDecodeBadInput(t *testing.T) {
	good := sampleEnvelope(TypeToolCalled, samples()[TypeToolCalled])
	goodJSON, err := Encode(&good)
	if err != nil {
		t.Fatal(err)
	}
	replace := func(old, new string) []byte { return []byte(strings.Replace(string(goodJSON), old, new, 1)) }
	tests := []struct {
		name      string
		give      []byte
		wantErr   error
		wantField string
	}{
		{"malformed json", []byte(`{"schema":1,`), ErrMalformed, ""},
		{"trailing data", append(append([]byte{}, goodJSON...), []byte(` {}`)...), ErrMalformed, ""},
		{"trailing bracket", append(append([]byte{}, goodJSON...), []byte(`]`)...), ErrMalformed, ""},
		{"trailing brace", append(append([]byte{}, goodJSON...), []byte(" }\n")...), ErrMalformed, ""},
		{"unknown type", replace(`"type":"tool.called"`, `"type":"tool.exploded"`), ErrUnknownType, "type"},
		{"unknown version", replace(fmt.Sprintf(`"schema":%d`, SchemaVersion), `"schema":99`), ErrUnknownVersion, "schema"},
		{"server without name", replace(`"name":"dpa-review",`, ``), ErrMissingField, "payload.server.name"},
		{"missing payload field", replace(`"tool":"load_portfolio",`, ``), ErrMissingField, "payload.tool"},
		{"missing id", replace(`"id":"`, `"xid":"`), ErrMissingField, "id"},
		{"missing payload", replace(`"payload":`, `"xpayload":`), ErrMissingField, "payload"},
		{"unsafe study token", replace(`"study":"s1"`, `"study":"s1.x>"`), ErrUnsafeToken, "study"},
		{"unsafe run token", replace(`"run":"run-0001"`, `"run":"run 1"`), ErrUnsafeToken, "run"},
		{"bad source kind", replace(`"kind":"harness"`, `"kind":"robot"`), ErrInvalidField, "source.kind"},
		{"attempt beyond 32 bits", replace(`"attempt":1`, `"attempt":2147483648`), ErrInvalidField, "attempt"},
		{"attempt zero", replace(`"attempt":1`, `"attempt":0`), ErrInvalidField, "attempt"},
		{"non-canonical args", replace(`"args":{"path":"data/a"}`, `"args":{ "path" : "data/a"}`), ErrNotCanonical, "payload.args"},
		{"wrong payload type", replace(`"call_id":"call_1"`, `"call_id":7`), ErrMalformed, "payload"},
		{"oversized", append([]byte(`{"pad":"`+strings.Repeat("x", MaxEventSize)), []byte(`"}`)...), ErrTooLarge, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Decode(tt.give)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Decode() error = %v, want %v", err, tt.wantErr)
			}
			if tt.wantField != "" {
				var fe *FieldError
				if !errors.As(err, &fe) || fe.Field != tt.wantField {
					t.Errorf("Decode() error = %v, want a FieldError naming %q", err, tt.wantField)
				}
			}
		})
	}
}

func TestDecodeIgnorableUnknownType(t *testing.T) {
	raw := []byte(`{"schema":1,"id":"x1","type":"agent.mood","time":"2026-11-30T09:00:00Z","study":"s1","run":"r1","attempt":1,"seq":2,"source":{"kind":"production","id":"a"},"ignorable":true,"payload":{"mood":"calm"}}`)
	env, err := Decode(raw)
	if err != nil {
		t.Fatalf("Decode(ignorable unknown) error %v", err)
	}
	u, ok := env.Payload.(Unknown)
	if !ok || string(u.Raw) != `{"mood":"calm"}` {
		t.Errorf("Decode(ignorable unknown) payload = %#v, want Unknown with raw payload", env.Payload)
	}
	again, err := Encode(&env)
	if err != nil || !bytes.Equal(again, raw) {
		t.Errorf("re-encode = %s, %v; want %s", again, err, raw)
	}
}

func TestEncodeTooLarge(t *testing.T) {
	env := sampleEnvelope(TypePlanProposed, PlanProposed{Text: strings.Repeat("x", MaxEventSize), Attempt: 1})
	if _, err := Encode(&env); !errors.Is(err, ErrTooLarge) {
		t.Errorf("Encode(oversized) error = %v, want ErrTooLarge", err)
	}
}

func TestSubjects(t *testing.T) {
	got, err := Subject("study-1", "run_7", TypeToolCalled)
	if err != nil || got != "ditto.events.study-1.run_7.tool.called" {
		t.Errorf("Subject() = %q, %v", got, err)
	}
	s, r, typ, err := ParseSubject(got)
	if err != nil || s != "study-1" || r != "run_7" || typ != TypeToolCalled {
		t.Errorf("ParseSubject(%q) = %q %q %q %v", got, s, r, typ, err)
	}
	for _, bad := range []string{"", "a.b", "a b", "a*", "a>", strings.Repeat("x", 129), "é"} {
		if _, err := Subject(bad, "r", TypeRunStarted); !errors.Is(err, ErrUnsafeToken) {
			t.Errorf("Subject(%q) error = %v, want ErrUnsafeToken", bad, err)
		}
	}
	if _, _, _, err := ParseSubject("other.x"); err == nil {
		t.Error("ParseSubject(other.x) = nil error")
	}
}

func TestRejectedJobSubject(t *testing.T) {
	tests := []struct{ give, want string }{
		{"study-1", "ditto.rejected.jobs.study-1"},
		{"", "ditto.rejected.jobs._unknown"},
		{"a.b", "ditto.rejected.jobs._unknown"},
		{"a>", "ditto.rejected.jobs._unknown"},
	}
	for _, tt := range tests {
		if got := RejectedJobSubject(tt.give); got != tt.want {
			t.Errorf("RejectedJobSubject(%q) = %q, want %q", tt.give, got, tt.want)
		}
	}
}

func TestNewIDSortable(t *testing.T) {
	now := time.Now()
	prev := NewID(now)
	for i := 0; i < 10000; i++ {
		id := NewID(now) // same millisecond: still strictly increasing
		if len(id) != 26 || id <= prev {
			t.Fatalf("NewID() = %q after %q: want 26 chars, increasing", id, prev)
		}
		prev = id
	}
	if later := NewID(now.Add(time.Second)); later <= prev {
		t.Errorf("NewID(later) = %q, not after %q", later, prev)
	}
}

func TestDecodeCanonicalizing(t *testing.T) {
	good := sampleEnvelope(TypeToolCalled, samples()[TypeToolCalled])
	goodJSON, err := Encode(&good)
	if err != nil {
		t.Fatal(err)
	}
	replace := func(old, new string) []byte {
		if !bytes.Contains(goodJSON, []byte(old)) {
			t.Fatalf("%s not in %s", old, goodJSON)
		}
		return bytes.Replace(goodJSON, []byte(old), []byte(new), 1)
	}
	tests := []struct {
		name      string
		give      []byte
		wantArgs  string
		wantCanon bool
		wantErr   error
	}{
		{"canonical already", goodJSON, `{"path":"data/a"}`, false, nil},
		{"keys out of order, spaces, 1.0", replace(`"args":{"path":"data/a"}`, `"args":{ "z": 1.0, "path" : "data/a" }`), `{"path":"data/a","z":1}`, true, nil},
		{"escaped string", replace(`"args":{"path":"data/a"}`, `"args":{"path":"data\/\u0061"}`), `{"path":"data/a"}`, true, nil},
		{"not JSON", replace(`"args":{"path":"data/a"}`, `"args":{"path":}`), "", false, ErrMalformed},
		{"duplicate keys", replace(`"args":{"path":"data/a"}`, `"args":{"path":"a","path":"b"}`), "", false, ErrDuplicateKey}, // refused before canonicalizing, as Decode refuses them
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, canon, err := DecodeCanonicalizing(tt.give)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("DecodeCanonicalizing() error = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("DecodeCanonicalizing() error = %v", err)
			}
			if got := string(e.Payload.(ToolCalled).Args); got != tt.wantArgs || canon != tt.wantCanon {
				t.Errorf("DecodeCanonicalizing() args = %s (canonicalized %v), want %s (%v)", got, canon, tt.wantArgs, tt.wantCanon)
			}
			if _, err := Decode(tt.give); tt.wantCanon && !errors.Is(err, ErrNotCanonical) {
				t.Errorf("Decode() of the same event = %v, want ErrNotCanonical (Decode stays strict)", err)
			}
			again, err := Encode(&e)
			if err != nil {
				t.Fatalf("Encode() = %v", err)
			}
			if _, err := Decode(again); err != nil {
				t.Errorf("Decode(Encode(canonicalized)) = %v", err)
			}
		})
	}
	// Every payload with a JSON value is canonicalized: run.started's input, run.finished's and
	// tool.returned's output, a study's spec.
	for _, typ := range []Type{TypeRunStarted, TypeRunFinished, TypeToolReturned, TypeToolRejected, TypeStudyDefined} {
		env := sampleEnvelope(typ, samples()[typ])
		b, _ := Encode(&env)
		field := map[Type]string{TypeRunStarted: `"input":{`, TypeRunFinished: `"output":{`, TypeToolReturned: `"output":{`,
			TypeToolRejected: `"args":{`, TypeStudyDefined: `"spec":{`}[typ]
		if typ == TypeRunFinished {
			env = sampleEnvelope(typ, samplesV1()[typ])
			b, _ = Encode(&env)
		}
		if typ == TypeToolRejected {
			p := samples()[typ].(ToolRejected)
			p.Args = MustCanonical(map[string]any{"b": 1})
			env = sampleEnvelope(typ, p)
			b, _ = Encode(&env)
		}
		messy := bytes.Replace(b, []byte(field), []byte(field+`"zz": [ 1.50 ], `), 1)
		e, canon, err := DecodeCanonicalizing(messy)
		if err != nil || !canon {
			t.Errorf("%s: DecodeCanonicalizing(%s) = %v, canonicalized %v", typ, messy, err, canon)
			continue
		}
		out, _ := Encode(&e)
		if !bytes.Contains(out, []byte(`"zz":[1.5]}`)) {
			t.Errorf("%s: re-encoded %s, want the value canonical", typ, out)
		}
	}
}

// The envelope's fast path bounds the payload by its brackets and leaves its reading to the
// payload's decoder: a payload whose brackets balance around invalid JSON is still malformed,
// for DecodeCanonicalizing as for Decode, an ignorable one of an unknown type included.
func TestDecodeReadsBoundedPayload(t *testing.T) {
	const head = `{"schema":1,"id":"x","type":"agent.mood","time":"2026-11-30T09:00:00Z","study":"s","run":"r","attempt":1,"seq":1,"source":{"kind":"production","id":"a"},"ignorable":true,"payload":`
	for _, payload := range []string{`{"mood":}`, `{"mood" "calm"}`, `[1 2]`, `{"mood":"calm",}`, `{"a":[1,]}`} {
		b := []byte(head + payload + `}`)
		if _, err := Decode(b); !errors.Is(err, ErrMalformed) {
			t.Errorf("Decode(%s) error = %v, want ErrMalformed", b, err)
		}
		if _, _, err := DecodeCanonicalizing(b); !errors.Is(err, ErrMalformed) {
			t.Errorf("DecodeCanonicalizing(%s) error = %v, want ErrMalformed", b, err)
		}
	}
	b := []byte(head + `{"mood":"]}[{\""}}`)
	e, err := Decode(b)
	if err != nil {
		t.Fatalf("Decode(%s) error = %v", b, err)
	}
	if got := string(e.Payload.(Unknown).Raw); got != `{"mood":"]}[{\""}` {
		t.Errorf("Decode(%s) payload = %s", b, got)
	}
}

// TestCountsFitThirtyTwoBits: the integers the warehouse stores as 32-bit ones or sums (an
// envelope's attempt, a plan's attempt, a run's input and seed index, a model call's transport
// retries and tokens; a retry's attempt is bounded alike) are valid up to MaxCount and refused
// beyond it, naming the field; below their least value too.
func TestCountsFitThirtyTwoBits(t *testing.T) {
	tests := []struct {
		field    string
		least    int
		validate func(n int) error
	}{
		{"attempt", 1, func(n int) error {
			e := sampleEnvelope(TypeStateEntered, StateEntered{State: "A"})
			e.Attempt = n
			return e.Validate()
		}},
		{"payload.attempt", 1, func(n int) error { return PlanProposed{Text: "1. a", Attempt: n}.Validate() }},
		{"payload.attempt", 1, func(n int) error { return PlanRejected{Errors: []string{"e"}, Attempt: n}.Validate() }},
		{"payload.attempt", 1, func(n int) error { return RetryScheduled{Attempt: n, Reason: "r"}.Validate() }},
		{"payload.transport_retries", 0, func(n int) error { return ModelCalled{Model: "m", TransportRetries: n}.Validate() }},
		{"payload.prompt_tokens", 0, func(n int) error { return ModelCalled{Model: "m", PromptTokens: int64(n)}.Validate() }},
		{"payload.completion_tokens", 0, func(n int) error {
			return ModelCalled{Model: "m", CompletionTokens: int64(n)}.Validate()
		}},
		{"payload.input_index", 0, func(n int) error {
			return RunStarted{Task: "t", Model: "m", Condition: "c", InputIndex: n}.Validate()
		}},
		{"payload.seed_index", 0, func(n int) error {
			return RunStarted{Task: "t", Model: "m", Condition: "c", SeedIndex: n}.Validate()
		}},
	}
	for i, tt := range tests {
		for _, n := range []int64{int64(tt.least), MaxCount} {
			if err := tt.validate(int(n)); err != nil {
				t.Errorf("%d: %s = %d: %v, want valid", i, tt.field, n, err)
			}
		}
		for _, n := range []int64{int64(tt.least) - 1, MaxCount + 1} {
			var fe *FieldError
			if err := tt.validate(int(n)); !errors.As(err, &fe) || fe.Field != tt.field || !errors.Is(err, ErrInvalidField) {
				t.Errorf("%d: %s = %d: %v, want an invalid-field error naming %s", i, tt.field, n, err, tt.field)
			}
		}
	}
}
