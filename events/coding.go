package events

import (
	"fmt"
	"slices"
)

// Event types of coding runs: a run that works on a repository in an ephemeral workspace.
const (
	TypeWorkspaceCreated     Type = "workspace.created"
	TypeWorkspaceDiscarded   Type = "workspace.discarded"
	TypeVerificationRan      Type = "verification.ran"
	TypeDiagnosticsDistilled Type = "diagnostics.distilled"
	TypeFileChanged          Type = "file.changed"
)

// Tool rejection reasons of coding runs.
const (
	RejectTestProtected = "test-protected" // a write to a test file (*_test.go, testdata/) while they are read-only
	RejectUnread        = "unread"         // an edit of a file not read before in the run (read-before-write)
)

// Component names of coding runs (RunStarted.Components).
const (
	ComponentBashOnly       = "bash_only"             // action space: one bash tool instead of the file tools
	ComponentDistilled      = "distilled_diagnostics" // diagnostics go back distilled, not raw
	ComponentTestProtection = "test_protection"       // test files are read-only to the agent
)

// WorkspaceCreated records the ephemeral worktree a coding run works in, created before its
// first step.
type WorkspaceCreated struct {
	Repo      string `json:"repo"`
	Instance  string `json:"instance"`
	Commit    string `json:"commit"`              // the instance's commit, checked out
	Isolation string `json:"isolation,omitempty"` // what isolation commands run under
}

// WorkspaceDiscarded records the removal of the run's worktree after its last step.
type WorkspaceDiscarded struct {
	Repo     string `json:"repo"`
	Instance string `json:"instance"`
	Commit   string `json:"commit"`
}

// VerificationRan records one run of the task's verification (build, vet, test) in the
// workspace. Turn 0 is the verification before any patch.
type VerificationRan struct {
	Turn             int      `json:"turn"`
	Command          string   `json:"command"` // the commands, joined by " && "
	ExitCode         int      `json:"exit_code"`
	DurationMS       float64  `json:"duration_ms"`
	Errors           int      `json:"errors"`        // compile and vet diagnostics
	FailingTests     int      `json:"failing_tests"` // tests reported as failing
	TestsPass        bool     `json:"tests_pass"`
	TestFilesChanged []string `json:"test_files_changed,omitempty"`
	RawBytes         int      `json:"raw_bytes"`
	// Cached is true when the commands' results were reused from an identical tree verified
	// before by the same worker (the commands did not run; DurationMS is the time it took to
	// recognise the tree).
	Cached bool `json:"cached,omitempty"`
}

// Diagnostic is one distilled finding: a file, line, column, kind and message.
type Diagnostic struct {
	File    string `json:"file,omitempty"`
	Line    int    `json:"line,omitempty"`
	Col     int    `json:"col,omitempty"`
	Kind    string `json:"kind"`
	Message string `json:"message"`
}

// DiagnosticsDistilled records the diagnostics of the verification before it: the tuples kept,
// how many there were, and the size of the raw output against the distilled one. Distilled
// says which of the two the model was given.
type DiagnosticsDistilled struct {
	Turn            int          `json:"turn"`
	Diagnostics     []Diagnostic `json:"diagnostics"`
	Total           int          `json:"total"` // before the cap
	RawBytes        int          `json:"raw_bytes"`
	DistilledBytes  int          `json:"distilled_bytes"`
	RawTokens       int          `json:"raw_tokens"`
	DistilledTokens int          `json:"distilled_tokens"`
	Distilled       bool         `json:"distilled"`
}

// FileChanged records a file the agent changed in the workspace. Repatch is true when the
// file had already been changed in the run. Protected marks a test file; Reverted a change the
// harness undid (a protected file changed by a bash command, or a symlink leading out).
type FileChanged struct {
	CallID    string `json:"call_id,omitempty"`
	Path      string `json:"path"`
	Added     int    `json:"added"`
	Removed   int    `json:"removed"`
	Repatch   bool   `json:"repatch,omitempty"`
	Protected bool   `json:"protected,omitempty"`
	Reverted  bool   `json:"reverted,omitempty"`
}

func (WorkspaceCreated) EventType() Type     { return TypeWorkspaceCreated }
func (WorkspaceDiscarded) EventType() Type   { return TypeWorkspaceDiscarded }
func (VerificationRan) EventType() Type      { return TypeVerificationRan }
func (DiagnosticsDistilled) EventType() Type { return TypeDiagnosticsDistilled }
func (FileChanged) EventType() Type          { return TypeFileChanged }

func (p WorkspaceCreated) Validate() error {
	switch {
	case p.Repo == "":
		return missing("payload.repo")
	case p.Instance == "":
		return missing("payload.instance")
	case p.Commit == "":
		return missing("payload.commit")
	}
	return nil
}

func (p WorkspaceDiscarded) Validate() error {
	return WorkspaceCreated{Repo: p.Repo, Instance: p.Instance, Commit: p.Commit}.Validate()
}

func (p VerificationRan) Validate() error {
	switch {
	case p.Turn < 0:
		return invalid("payload.turn", "negative")
	case p.Command == "":
		return missing("payload.command")
	case p.DurationMS < 0:
		return invalid("payload.duration_ms", "negative")
	case p.Errors < 0 || p.FailingTests < 0 || p.RawBytes < 0:
		return invalid("payload", "negative count")
	case !slices.IsSorted(p.TestFilesChanged):
		return invalid("payload.test_files_changed", "not sorted")
	}
	return nil
}

func (p DiagnosticsDistilled) Validate() error {
	switch {
	case p.Turn < 0:
		return invalid("payload.turn", "negative")
	case p.Diagnostics == nil:
		return missing("payload.diagnostics")
	case p.Total < len(p.Diagnostics):
		return invalid("payload.total", "%d is less than the %d diagnostics kept", p.Total, len(p.Diagnostics))
	case p.RawBytes < 0 || p.DistilledBytes < 0 || p.RawTokens < 0 || p.DistilledTokens < 0:
		return invalid("payload", "negative size")
	}
	for i, d := range p.Diagnostics {
		if d.Kind == "" {
			return missing(fmt.Sprintf("payload.diagnostics[%d].kind", i))
		}
	}
	return nil
}

func (p FileChanged) Validate() error {
	switch {
	case p.Path == "":
		return missing("payload.path")
	case p.Added < 0 || p.Removed < 0:
		return invalid("payload", "negative line count")
	}
	return nil
}

// Coding is the fold of a coding run's workspace events.
type Coding struct {
	Workspace     *WorkspaceCreated // nil until workspace.created
	Discarded     bool
	Verifications int
	// VerificationMS is the time spent verifying.
	VerificationMS float64
	// PatchVerifications counts verifications after a patch (turn > 0); RepairTurns those
	// after the first, each a repair of a failed patch.
	PatchVerifications int
	RepairTurns        int
	FilesChanged       int
	Repatches          int
	// ProtectedAttempts counts writes to test files refused (tool.rejected test-protected)
	// or reverted (file.changed protected and reverted).
	ProtectedAttempts int
	DistilledBytes    int
	RawBytes          int
}

// applyCoding folds the workspace events: the workspace is created once, before any change or
// verification, and discarded once, after them.
func (r *Run) applyCoding(p Payload) error {
	open := r.Coding.Workspace != nil && !r.Coding.Discarded
	switch p := p.(type) {
	case WorkspaceCreated:
		if r.Coding.Workspace != nil {
			return fmt.Errorf("a workspace was already created")
		}
		r.Coding.Workspace = &p
	case WorkspaceDiscarded:
		if !open {
			return fmt.Errorf("no workspace is open")
		}
		w := r.Coding.Workspace
		if p.Repo != w.Repo || p.Instance != w.Instance || p.Commit != w.Commit {
			return fmt.Errorf("discarded %s/%s@%s, created %s/%s@%s", p.Repo, p.Instance, p.Commit, w.Repo, w.Instance, w.Commit)
		}
		r.Coding.Discarded = true
	case VerificationRan:
		if !open {
			return fmt.Errorf("verification outside an open workspace")
		}
		r.Coding.Verifications++
		r.Coding.VerificationMS += p.DurationMS
		if p.Turn > 0 {
			r.Coding.PatchVerifications++
			if r.Coding.PatchVerifications > 1 {
				r.Coding.RepairTurns++
			}
		}
	case DiagnosticsDistilled:
		if r.Coding.Verifications == 0 {
			return fmt.Errorf("diagnostics before any verification")
		}
		r.Coding.RawBytes += p.RawBytes
		r.Coding.DistilledBytes += p.DistilledBytes
	case FileChanged:
		if !open {
			return fmt.Errorf("file changed outside an open workspace")
		}
		r.Coding.FilesChanged++
		if p.Repatch {
			r.Coding.Repatches++
		}
		if p.Protected && p.Reverted {
			r.Coding.ProtectedAttempts++
		}
	}
	return nil
}
