package events

import (
	"errors"
	"testing"
)

func codingHistory(tail ...Payload) []Envelope {
	ws := WorkspaceCreated{Repo: "inventory", Instance: "nil-map", Commit: "abc"}
	ps := []Payload{
		RunStarted{Task: "inventory-nil-map", Model: "m", Condition: "c", Components: []string{ComponentDistilled, ComponentTestProtection}},
		ws,
		VerificationRan{Turn: 0, Command: "go test", ExitCode: 1, FailingTests: 1, RawBytes: 100},
		DiagnosticsDistilled{Turn: 0, Diagnostics: []Diagnostic{{File: "stock.go", Line: 21, Kind: "panic", Message: "boom"}}, Total: 1, RawBytes: 100, DistilledBytes: 20, Distilled: true},
		ModelCalled{Model: "m", PromptTokens: 10, CompletionTokens: 2},
		ToolRejected{CallID: "1", Tool: "edit", Reason: RejectTestProtected},
		ToolCalled{CallID: "2", Tool: "edit", Args: MustCanonical(map[string]string{"path": "stock.go"})},
		FileChanged{CallID: "2", Path: "stock.go", Added: 1, Removed: 1},
		ToolReturned{CallID: "2", Tool: "edit", OK: true, Output: MustCanonical("ok")},
		VerificationRan{Turn: 1, Command: "go test", ExitCode: 1, DurationMS: 5},
		ToolCalled{CallID: "3", Tool: "bash", Args: MustCanonical(map[string]string{"command": "x"})},
		FileChanged{CallID: "3", Path: "stock.go", Added: 2, Removed: 1, Repatch: true},
		FileChanged{CallID: "3", Path: "stock_test.go", Added: 1, Protected: true, Reverted: true},
		ToolReturned{CallID: "3", Tool: "bash", OK: true, Output: MustCanonical("ok")},
		VerificationRan{Turn: 2, Command: "go test", ExitCode: 0, DurationMS: 7, TestsPass: true},
	}
	ps = append(ps, tail...)
	return history(ps...)
}

func TestFoldCoding(t *testing.T) {
	ws := WorkspaceDiscarded{Repo: "inventory", Instance: "nil-map", Commit: "abc"}
	r, err := Fold(codingHistory(ws, RunFinished{Status: StatusSucceeded, Success: true}))
	if err != nil {
		t.Fatal(err)
	}
	got := r.Coding
	want := Coding{Workspace: got.Workspace, Discarded: true, Verifications: 3, VerificationMS: 12, PatchVerifications: 2,
		RepairTurns: 1, FilesChanged: 3, Repatches: 1, ProtectedAttempts: 2, RawBytes: 100, DistilledBytes: 20}
	if got != want || got.Workspace == nil || got.Workspace.Repo != "inventory" {
		t.Errorf("Fold(coding).Coding = %+v, want %+v", got, want)
	}
}

func TestFoldCodingRejects(t *testing.T) {
	created := WorkspaceCreated{Repo: "inventory", Instance: "nil-map", Commit: "abc"}
	discarded := WorkspaceDiscarded{Repo: "inventory", Instance: "nil-map", Commit: "abc"}
	started := RunStarted{Task: "t", Model: "m", Condition: "c"}
	for _, tt := range []struct {
		name string
		give []Envelope
	}{
		{"created twice", codingHistory(created)},
		{"discarded twice", codingHistory(discarded, discarded)},
		{"discarded another commit", codingHistory(WorkspaceDiscarded{Repo: "inventory", Instance: "nil-map", Commit: "def"})},
		{"verification after discard", codingHistory(discarded, VerificationRan{Turn: 3, Command: "go test"})},
		{"file change after discard", codingHistory(discarded, FileChanged{Path: "a.go"})},
		{"verification without workspace", history(started, VerificationRan{Command: "go test"})},
		{"file change without workspace", history(started, FileChanged{Path: "a.go"})},
		{"diagnostics before verification", history(started, created, DiagnosticsDistilled{Diagnostics: []Diagnostic{}})},
		{"discard without workspace", history(started, discarded)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Fold(tt.give); !errors.Is(err, ErrIllegalTransition) {
				t.Errorf("Fold(%s) error %v, want ErrIllegalTransition", tt.name, err)
			}
		})
	}
}

func TestCodingValidate(t *testing.T) {
	for _, tt := range []struct {
		name string
		give Payload
	}{
		{"workspace without commit", WorkspaceCreated{Repo: "r", Instance: "i"}},
		{"verification without command", VerificationRan{}},
		{"verification with unsorted test files", VerificationRan{Command: "go test", TestFilesChanged: []string{"b_test.go", "a_test.go"}}},
		{"diagnostics without list", DiagnosticsDistilled{}},
		{"diagnostics total below kept", DiagnosticsDistilled{Diagnostics: []Diagnostic{{Kind: "vet"}}}},
		{"diagnostic without kind", DiagnosticsDistilled{Diagnostics: []Diagnostic{{File: "a.go"}}, Total: 1}},
		{"file change without path", FileChanged{}},
		{"file change with negative count", FileChanged{Path: "a.go", Added: -1}},
	} {
		if err := tt.give.Validate(); err == nil {
			t.Errorf("%s: Validate() = nil, want an error", tt.name)
		}
	}
}
