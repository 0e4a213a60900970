// Package verify runs a coding task's verification in a workspace — go build, go vet and go
// test of the task's packages — and reports it raw (each command's output as is) and distilled
// (package distill's tuples). Success is the tests passing with no test file changed.
package verify

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/dittolab/ditto/internal/coding/distill"
	"github.com/dittolab/ditto/internal/coding/workspace"
)

// Step names.
const (
	StepBuild = "build"
	StepVet   = "vet"
	StepTest  = "test"
)

// Step is one command of a verification.
type Step struct {
	Name     string
	Command  string
	ExitCode int
	TimedOut bool
	Duration time.Duration
	Output   string // as produced, up to the workspace's output cap
	Bytes    int    // output produced, including what the cap dropped
}

// Report is one verification.
type Report struct {
	Steps []Step
	// TestsPass is true when go test ran and exited 0.
	TestsPass bool
	// TestFilesChanged lists the protected files (repos.Instance.Protects) that differ from the
	// instance's commit.
	TestFilesChanged []string
	Diagnostics      []distill.Diagnostic // capped
	DiagnosticsTotal int                  // before the cap
	Errors           int                  // compile and vet diagnostics
	FailingTests     []string
	Duration         time.Duration
	// Cached is true when the commands' results were those of an identical tree verified
	// before (Memo); Duration is then the time it took to recognise the tree.
	Cached bool
}

// Success is the task's criterion: the tests pass and no test file changed.
func (r Report) Success() bool { return r.TestsPass && len(r.TestFilesChanged) == 0 }

// Run verifies the workspace: go build; go vet when it built; go test (with -race for an
// instance that needs it) when it built; each of the instance's packages
// (repos.Instance.VerifyPackages). Steps after a failed build are skipped, since they
// would report the same errors again.
func Run(ctx context.Context, ws *workspace.Workspace, opts distill.Options) (Report, error) {
	t0 := time.Now()
	steps, err := execute(ctx, ws)
	if err != nil {
		return Report{Steps: steps}, err
	}
	return assemble(ctx, ws, steps, opts, t0)
}

// execute runs the verification's commands in the workspace.
func execute(ctx context.Context, ws *workspace.Workspace) ([]Step, error) {
	pkgs := ws.Instance.VerifyPackages()
	test := []string{"go", "test", "-count=1", "-v"}
	if ws.Instance.Race {
		test = append(test, "-race")
	}
	plan := []struct {
		name string
		argv []string
	}{
		{StepBuild, append([]string{"go", "build"}, pkgs...)},
		{StepVet, append([]string{"go", "vet"}, pkgs...)},
		{StepTest, append(test, pkgs...)},
	}
	var steps []Step
	for _, p := range plan {
		res, err := ws.Exec(ctx, p.argv...)
		if err != nil {
			return steps, err
		}
		steps = append(steps, Step{Name: p.name, Command: strings.Join(p.argv, " "), ExitCode: res.ExitCode, TimedOut: res.TimedOut,
			Duration: res.Duration, Output: string(res.Output), Bytes: res.Bytes})
		if p.name == StepBuild && res.ExitCode != 0 {
			break
		}
	}
	return steps, nil
}

// assemble makes the report of the steps' results: the verdict, the diagnostics, and the
// test files changed since the instance's commit (read from the workspace now). t0 is when the
// verification began.
func assemble(ctx context.Context, ws *workspace.Workspace, steps []Step, opts distill.Options, t0 time.Time) (Report, error) {
	rep := Report{Steps: steps}
	var dsteps []distill.Step
	for _, st := range steps {
		kind := distill.KindCompile
		switch st.Name {
		case StepVet:
			kind = distill.KindVet
		case StepTest:
			kind = distill.KindTestFailure
			rep.TestsPass = st.ExitCode == 0 && !st.TimedOut
			rep.FailingTests = failingTests(st.Output)
		}
		dsteps = append(dsteps, distill.Step{Kind: kind, Output: st.Output, TimedOut: st.TimedOut})
	}
	rep.Diagnostics, rep.DiagnosticsTotal = distill.Distill(ws.Dir, dsteps, opts)
	all, _ := distill.Distill(ws.Dir, dsteps, distill.Options{MaxDiagnostics: 1 << 20})
	for _, d := range all {
		if d.Kind == distill.KindCompile || d.Kind == distill.KindVet {
			rep.Errors++
		}
	}
	changes, err := ws.Changes(ctx)
	if err != nil {
		return rep, err
	}
	for _, c := range changes {
		if ws.Instance.Protects(c.Path) {
			rep.TestFilesChanged = append(rep.TestFilesChanged, c.Path)
		}
	}
	rep.Duration = time.Since(t0)
	return rep, nil
}

func failingTests(out string) []string {
	var names []string
	for _, ln := range strings.Split(distill.StripANSI(out), "\n") {
		if f := strings.Fields(strings.TrimSpace(ln)); len(f) >= 3 && f[0] == "---" && f[1] == "FAIL:" {
			names = append(names, f[2])
		}
	}
	return names
}

// Raw renders the report as the commands printed it: each command line, its output, its exit
// status.
func (r Report) Raw() string {
	var b strings.Builder
	for _, s := range r.Steps {
		fmt.Fprintf(&b, "$ %s\n%s", s.Command, s.Output)
		if s.Output != "" && !strings.HasSuffix(s.Output, "\n") {
			b.WriteByte('\n')
		}
		if s.Bytes > len(s.Output) {
			fmt.Fprintf(&b, "[output cut at %d of %d bytes]\n", len(s.Output), s.Bytes)
		}
		switch {
		case s.TimedOut:
			b.WriteString("[timed out]\n")
		case s.ExitCode != 0:
			fmt.Fprintf(&b, "[exit status %d]\n", s.ExitCode)
		}
	}
	return b.String()
}

// Distilled renders the report's verdict and diagnostics, one tuple per line.
func (r Report) Distilled() string {
	var b strings.Builder
	switch {
	case r.Success():
		b.WriteString("verification passed\n")
	case r.TestsPass:
		fmt.Fprintf(&b, "tests pass, but test files changed: %s\n", strings.Join(r.TestFilesChanged, ", "))
	default:
		fmt.Fprintf(&b, "verification failed: %d error(s), %d failing test(s)", r.Errors, len(r.FailingTests))
		if len(r.FailingTests) > 0 {
			fmt.Fprintf(&b, " (%s)", strings.Join(r.FailingTests, ", "))
		}
		b.WriteString("\n")
	}
	b.WriteString(distill.Render(r.Diagnostics, r.DiagnosticsTotal))
	return b.String()
}
