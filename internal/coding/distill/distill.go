// Package distill turns the raw output of Go's build, vet and test commands into diagnostics:
// (file, line, column, kind, message) tuples, with ANSI escapes stripped, passing tests and
// progress noise dropped, and the list capped. It is pure: no I/O, no clock.
package distill

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// Kinds of diagnostics.
const (
	KindCompile     = "compile"      // a compiler error (go build, or go vet/test when the package does not build)
	KindVet         = "vet"          // a go vet finding
	KindTestFailure = "test_failure" // a line a failing test logged
	KindPanic       = "panic"        // a panic, located at the innermost frame in the tree
	KindRace        = "race"         // a data race report, located at its first frame in the tree
	KindTimeout     = "timeout"      // the command ran out of time
)

// Diagnostic is one distilled finding. File is relative to the tree when it could be placed
// in it; Line and Col are 0 when unknown.
type Diagnostic struct {
	File    string `json:"file"`
	Line    int    `json:"line"`
	Col     int    `json:"col"`
	Kind    string `json:"kind"`
	Message string `json:"message"`
}

// String renders d as "file:line:col: kind: message".
func (d Diagnostic) String() string {
	loc := d.File
	if d.Line > 0 {
		loc += ":" + strconv.Itoa(d.Line)
		if d.Col > 0 {
			loc += ":" + strconv.Itoa(d.Col)
		}
	}
	if loc == "" {
		return d.Kind + ": " + d.Message
	}
	return loc + ": " + d.Kind + ": " + d.Message
}

// Options bound the distillation. Zero fields take defaults.
type Options struct {
	MaxDiagnostics int // default 20
	MaxMessage     int // bytes per message; default 200
}

var (
	ansi       = regexp.MustCompile(`\x1b\[[0-9;?]*[ -/]*[@-~]`)
	compilerRe = regexp.MustCompile(`^(?:vet: )?((?:[A-Za-z]:)?[^\s:]+\.go):(\d+)(?::(\d+))?: (.+)$`)
	failRe     = regexp.MustCompile(`^\s*--- FAIL: (\S+)`)
	passRe     = regexp.MustCompile(`^\s*--- (?:PASS|SKIP): (\S+)`)
	runRe      = regexp.MustCompile(`^=== (?:RUN|CONT|PAUSE|NAME)\s+(\S+)`)
	logRe      = regexp.MustCompile(`^\s+([^\s:]+\.go):(\d+): (.*)$`)
	frameRe    = regexp.MustCompile(`^\s+(/\S+\.go):(\d+)(?: \+0x[0-9a-f]+)?$`)
	funcRe     = regexp.MustCompile(`^\s*([\w./*()-]+)\(.*\)$`)
)

// StripANSI removes ANSI escape sequences.
func StripANSI(s string) string { return ansi.ReplaceAllString(s, "") }

// Step is one command's output to distill: Kind tells how to read compiler-style lines
// (KindCompile for go build, KindVet for go vet, KindTestFailure for go test).
type Step struct {
	Kind     string
	Output   string
	TimedOut bool
}

// Distill parses the steps' outputs into diagnostics for the tree rooted at root (absolute
// paths under it are made relative; frames outside it — the runtime, the testing package — are
// skipped when locating panics and races). Duplicates are dropped; the list keeps the first
// opts.MaxDiagnostics and reports how many there were in all.
func Distill(root string, steps []Step, opts Options) (ds []Diagnostic, total int) {
	if opts.MaxDiagnostics == 0 {
		opts.MaxDiagnostics = 20
	}
	if opts.MaxMessage == 0 {
		opts.MaxMessage = 200
	}
	seen := map[Diagnostic]bool{}
	add := func(d Diagnostic) {
		d.File = relative(root, d.File)
		d.Message = clip(strings.TrimSpace(d.Message), opts.MaxMessage)
		if seen[d] {
			return
		}
		seen[d] = true
		total++
		if len(ds) < opts.MaxDiagnostics {
			ds = append(ds, d)
		}
	}
	for _, st := range steps {
		lines := strings.Split(StripANSI(st.Output), "\n")
		// A test's log lines come before its verdict under -v and after it without -v: lines
		// are held per test until its verdict, kept when it failed, dropped when it passed.
		var test string
		held := map[string][]Diagnostic{}
		failed := map[string]bool{}
		for i := 0; i < len(lines); i++ {
			ln := strings.TrimRight(lines[i], "\r")
			switch {
			case strings.HasPrefix(ln, "panic: ") || strings.HasPrefix(ln, "fatal error: "):
				d := Diagnostic{Kind: KindPanic, Message: ln}
				d.File, d.Line, _ = firstFrame(root, lines[i+1:])
				add(d)
			case strings.HasPrefix(ln, "WARNING: DATA RACE"):
				d := Diagnostic{Kind: KindRace, Message: "data race"}
				var fn string
				d.File, d.Line, fn = firstFrame(root, lines[i+1:])
				if i+1 < len(lines) {
					access := strings.TrimSpace(strings.SplitN(lines[i+1], " at ", 2)[0])
					d.Message = "data race: " + strings.ToLower(access)
					if fn != "" {
						d.Message += " in " + fn
					}
				}
				add(d)
			case runRe.MatchString(ln):
				test = runRe.FindStringSubmatch(ln)[1]
			case failRe.MatchString(ln):
				test = failRe.FindStringSubmatch(ln)[1]
				failed[test] = true
				for _, d := range held[test] {
					add(d)
				}
				delete(held, test)
			case passRe.MatchString(ln):
				delete(held, passRe.FindStringSubmatch(ln)[1])
				test = ""
			case test != "" && logRe.MatchString(ln):
				m := logRe.FindStringSubmatch(ln)
				line, _ := strconv.Atoi(m[2])
				d := Diagnostic{File: m[1], Line: line, Kind: KindTestFailure, Message: test + ": " + m[3]}
				if failed[test] {
					add(d)
				} else {
					held[test] = append(held[test], d)
				}
			case compilerRe.MatchString(strings.TrimSpace(ln)) && !strings.HasPrefix(ln, "\t") && !strings.HasPrefix(ln, "    "):
				m := compilerRe.FindStringSubmatch(strings.TrimSpace(ln))
				line, _ := strconv.Atoi(m[2])
				col, _ := strconv.Atoi(m[3])
				kind := KindCompile
				if st.Kind == KindVet && !typeError(m[4]) {
					kind = KindVet
				}
				add(Diagnostic{File: m[1], Line: line, Col: col, Kind: kind, Message: m[4]})
			}
		}
		if st.TimedOut {
			add(Diagnostic{Kind: KindTimeout, Message: "the command ran out of time"})
		}
	}
	return ds, total
}

// typeError tells a compiler error reported by go vet (the package does not type-check) from
// a vet finding.
func typeError(msg string) bool {
	for _, p := range []string{"undefined: ", "cannot use ", "not enough arguments", "too many arguments",
		"declared and not used", "imported and not used", "missing return", "syntax error", "expected "} {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}

// firstFrame finds the first stack frame inside root in a trace, and the function it is in. A
// test file's frame is the answer only when no frame of the code under test is in the tree.
func firstFrame(root string, lines []string) (file string, line int, fn string) {
	var testFile string
	var testLine int
	for i, ln := range lines {
		m := frameRe.FindStringSubmatch(ln)
		if m == nil {
			continue
		}
		if root != "" && !strings.HasPrefix(m[1], root+"/") {
			continue
		}
		l, _ := strconv.Atoi(m[2])
		if strings.HasSuffix(m[1], "_test.go") {
			if testFile == "" {
				testFile, testLine = m[1], l
			}
			continue
		}
		if i > 0 {
			if fm := funcRe.FindStringSubmatch(lines[i-1]); fm != nil {
				fn = fm[1]
			}
		}
		return m[1], l, fn
	}
	return testFile, testLine, ""
}

func relative(root, f string) string {
	f = strings.TrimPrefix(f, "./")
	if root != "" && filepath.IsAbs(f) {
		if r, err := filepath.Rel(root, f); err == nil && !strings.HasPrefix(r, "..") {
			return filepath.ToSlash(r)
		}
	}
	return f
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}

// Render writes diagnostics one per line, with a note when the list was capped.
func Render(ds []Diagnostic, total int) string {
	var b strings.Builder
	for _, d := range ds {
		b.WriteString(d.String())
		b.WriteByte('\n')
	}
	if total > len(ds) {
		fmt.Fprintf(&b, "(%d more not shown)\n", total-len(ds))
	}
	return b.String()
}
