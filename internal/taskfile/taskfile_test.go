package taskfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
)

func readMinimal(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("testdata/minimal.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestParseMinimal(t *testing.T) {
	tf, err := Parse("minimal.yaml", []byte(readMinimal(t)), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if tf.StartState() != "FETCH" || tf.FinalTool() != "record_finding" {
		t.Errorf("start %s, final %s; want FETCH, record_finding", tf.StartState(), tf.FinalTool())
	}
	if got := tf.StateProblems("FETCH", []byte(`{"notice_days": 14}`)); len(got) != 1 || got[0] != "notice of 14 days is below the 30-day policy" {
		t.Errorf("StateProblems = %q", got)
	}
	in := tf.Instances[0]
	if !tf.Judge([]byte(`{"compliant":true,"status":"recorded"}`), in.Input, in.Ideal) {
		t.Error("Judge(ideal output) = false")
	}
	if tf.Judge([]byte(`{"compliant":false,"status":"recorded"}`), in.Input, in.Ideal) {
		t.Error("Judge(wrong output) = true")
	}
	if tf.Judge([]byte(`{"compliant":true}`), in.Input, nil) {
		t.Error("Judge(output failing the output schema) = true")
	}
	// The canonical JSON reads back to the same task.
	again, err := Parse("", tf.JSON(), Options{})
	if err != nil {
		t.Fatalf("Parse(JSON()) = %v", err)
	}
	if again.Digest() != tf.Digest() || !bytes.Equal(again.JSON(), tf.JSON()) {
		t.Error("the canonical JSON does not read back to the same task")
	}
}

// TestParseErrors breaks the minimal task file in one place at a time and checks that the
// problem is reported at its path (and line), for every class of error a task file can have.
func TestParseErrors(t *testing.T) {
	base := readMinimal(t)
	tests := []struct {
		name       string
		old, new   string // replace old by new in the minimal file
		wantPath   string
		wantInMsg  string
		wantLineOf string // the problem's line is the line holding this text
	}{
		{"bad schema: unknown field", "    description: Fetch a clause of a contract.\n", "    description: Fetch a clause of a contract.\n    timeout: 5\n",
			"tools[0]", `unknown field(s) "timeout"`, "  - name: fetch_clause"},
		{"bad schema: wrong type", "version: 1", "version: \"1\"", "version", "", "version:"},
		{"bad schema: two sources", "    fixtures:\n      - args: {contract_id: C-1", "    builtin: x.y\n    fixtures:\n      - args: {contract_id: C-1",
			"tools[0]", "exactly one of server, builtin, fixtures", "  - name: fetch_clause"},
		{"bad schema: no source", "    fixtures:\n      - args: {compliant: true}\n        output: {status: recorded, compliant: true}\n      - args: {compliant: false}\n        output: {status: recorded, compliant: false}\n", "",
			"tools[1]", "needs exactly one of builtin, fixtures, server", "  - name: record_finding"},
		{"unknown state", "    next: [RECORD]", "    next: [RECORDS]", "states[0].next[0]", `unknown state "RECORDS"`, "next: [RECORDS]"},
		{"unknown start", "states:\n", "start: BEGIN\nstates:\n", "start", `unknown state "BEGIN"`, "start: BEGIN"},
		{"unreachable state", "    tool: record_finding\n", "    tool: record_finding\n  - name: ARCHIVE\n    tool: archive\n",
			"states[2]", "state ARCHIVE is unreachable from the start state FETCH", "  - name: ARCHIVE"},
		{"no way out", "    tool: record_finding\n", "    tool: record_finding\n    next: [FETCH]\n",
			"states[0]", "no path to a terminal state", "  - name: FETCH"},
		{"unknown tool", "    tool: record_finding\n", "    tool: record_findings\n", "states[1].tool", `unknown tool "record_findings"`, "tool: record_findings"},
		{"tool in no state", "    tool: record_finding\n", "    tool: fetch_clause\n", "tools[1]", "required by no state", "  - name: record_finding"},
		{"bad argument schema", "        clause: {enum: [termination, liability]}", "        clause: {enum: 7}",
			"tools[0].arguments", "not a valid JSON Schema", "    arguments:\n      type: object\n      properties:\n        contract_id"},
		{"bad CEL", "output.notice_days >= 30", "output.notice_days >=", "states[0].validate.rules[0].expr", "does not compile", "- expr:"},
		{"CEL of the wrong type", "output.notice_days >= 30", "size(output.text)", "states[0].validate.rules[0].expr", "want bool", "- expr:"},
		{"input in a state rule", "output.notice_days >= 30", "input.contract_id != ''", "states[0].validate.rules[0].expr", "undeclared reference", "- expr:"},
		{"bad message part", `"notice of {{output.notice_days}} days`, `"notice of {{output.notice_days +}} days`, "states[0].validate.rules[0].message", "does not compile", "message:"},
		{"branch without routes", "    next: [RECORD]", "    next: [RECORD, FETCH]", "states[0].routes", "needs routes", "  - name: FETCH"},
		{"unknown server", "    fixtures:\n      - args: {contract_id: C-1", "    server: clauses\n    x-fixtures:\n      - args: {contract_id: C-1",
			"tools[0].server", `unknown server "clauses"`, "server: clauses"},
		{"fixture argument", "      - args: {contract_id: C-1, clause: termination}", "      - args: {contract: C-1, clause: termination}",
			"tools[0].fixtures[0].args.contract", "not an argument of fetch_clause", "- args:"},
		{"ideal against the output schema", "    ideal: {status: recorded, compliant: true}", "    ideal: {compliant: true}",
			"instances[0].ideal", "does not pass output.schema", "ideal:"},
		{"duplicate instance", "    ideal: {status: recorded, compliant: true}\n", "    ideal: {status: recorded, compliant: true}\n  - id: c1\n    prompt: again\n",
			"instances[1].id", `duplicate instance "c1"`, "  - id: c1\n    prompt: again"},
		{"not YAML", "version: 1", "version: [1", "", "not YAML or JSON", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !strings.Contains(base, tt.old) {
				t.Fatalf("the minimal file has no %q", tt.old)
			}
			src := strings.Replace(base, tt.old, tt.new, 1)
			_, err := Parse("task.yaml", []byte(src), Options{})
			var fe *Error
			if !errors.Is(err, ErrInvalid) || !errors.As(err, &fe) {
				t.Fatalf("Parse = %v, want an *Error wrapping ErrInvalid", err)
			}
			var found *Problem
			for _, p := range fe.Problems {
				if p.Path == tt.wantPath && strings.Contains(p.Msg, tt.wantInMsg) {
					found = p
				}
			}
			if found == nil {
				t.Fatalf("Parse problems = %v, want one at %q containing %q", err, tt.wantPath, tt.wantInMsg)
			}
			if tt.wantLineOf != "" {
				want := strings.Count(src[:strings.Index(src, tt.wantLineOf)], "\n") + 1
				if found.Line != want {
					t.Errorf("problem %v at line %d, want line %d", found, found.Line, want)
				}
			}
			if !strings.Contains(err.Error(), "task.yaml:") && tt.wantPath != "" {
				t.Errorf("Error() = %q, want it to name the file", err)
			}
		})
	}
}

// TestParseReportsEveryProblem checks that problems are not reported one at a time.
func TestParseReportsEveryProblem(t *testing.T) {
	src := strings.Replace(readMinimal(t), "    next: [RECORD]", "    next: [RECORDS]", 1)
	src = strings.Replace(src, "output.notice_days >= 30", "output.notice_days >=", 1)
	_, err := Parse("", []byte(src), Options{})
	var fe *Error
	if !errors.As(err, &fe) || !fe.Has("states[0].next[0]") || !fe.Has("states[0].validate.rules[0].expr") {
		t.Fatalf("Parse = %v, want both problems", err)
	}
}

func TestParseJSON(t *testing.T) {
	tf, err := Parse("m.yaml", []byte(readMinimal(t)), Options{})
	if err != nil {
		t.Fatal(err)
	}
	var pretty bytes.Buffer
	_ = json.Indent(&pretty, tf.JSON(), "", "  ")
	src := strings.Replace(pretty.String(), `"RECORD"`, `"RECORDS"`, 1)
	_, err = Parse("task.json", []byte(src), Options{})
	var fe *Error
	if !errors.As(err, &fe) || len(fe.Problems) == 0 || fe.Problems[0].Line == 0 {
		t.Fatalf("Parse(JSON) = %v, want a problem with its line", err)
	}
}

func TestBuiltinOption(t *testing.T) {
	src := strings.Replace(readMinimal(t), "    fixtures:\n      - args: {contract_id: C-1", "    builtin: clauses.fetch\n    x-fixtures:\n      - args: {contract_id: C-1", 1)
	_, err := Parse("", []byte(src), Options{Builtin: func(string) bool { return false }})
	var fe *Error
	if !errors.As(err, &fe) || !fe.Has("tools[0].builtin") {
		t.Fatalf("Parse = %v, want an unknown builtin at tools[0].builtin", err)
	}
}

// TestPublishedSchema keeps docs/task.schema.json, the schema users see, equal to the one Parse
// uses.
func TestPublishedSchema(t *testing.T) {
	b, err := os.ReadFile("../../docs/task.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, Schema) {
		t.Fatal("docs/task.schema.json differs from internal/taskfile/task.schema.json: copy the latter over the former")
	}
}
