package taskfile

import (
	"errors"
	"fmt"
	"strings"
)

// ErrInvalid is wrapped by every error Parse returns for a file that is not a valid task file.
var ErrInvalid = errors.New("taskfile: invalid task file")

// Problem is one thing wrong in a task file: the path of the value at fault in the file's data
// ("states[2].next[0]", "tools[1].arguments", "" for the whole file) and, when the file was
// read from text, its line and column (1-based; 0 when unknown).
type Problem struct {
	Path string
	Line int
	Col  int
	Msg  string
}

func (p *Problem) Error() string {
	var b strings.Builder
	if p.Line > 0 {
		fmt.Fprintf(&b, "%d:%d: ", p.Line, p.Col)
	}
	if p.Path != "" {
		b.WriteString(p.Path)
		b.WriteString(": ")
	}
	b.WriteString(p.Msg)
	return b.String()
}

// Error lists every problem found in a task file, in the order of the file. It wraps ErrInvalid;
// errors.As(err, &*Problem) finds the first problem.
type Error struct {
	File     string // as given to Parse; "" when unnamed
	Problems []*Problem
}

func (e *Error) Error() string {
	var b strings.Builder
	name := e.File
	if name == "" {
		name = "task file"
	}
	fmt.Fprintf(&b, "%s: %d problem(s)", name, len(e.Problems))
	for _, p := range e.Problems {
		b.WriteString("\n  ")
		if e.File != "" && p.Line > 0 {
			b.WriteString(e.File)
			b.WriteString(":")
		}
		b.WriteString(p.Error())
	}
	return b.String()
}

// Unwrap returns ErrInvalid and the problems, so that errors.Is and errors.As see both.
func (e *Error) Unwrap() []error {
	out := []error{ErrInvalid}
	for _, p := range e.Problems {
		out = append(out, p)
	}
	return out
}

// Has reports whether a problem names path exactly.
func (e *Error) Has(path string) bool {
	for _, p := range e.Problems {
		if p.Path == path {
			return true
		}
	}
	return false
}

// problems accumulates Problems; positions, when set, places them in the file.
type problems struct {
	list []*Problem
	pos  positions
}

func (ps *problems) add(path, format string, args ...any) {
	p := &Problem{Path: path, Msg: fmt.Sprintf(format, args...)}
	p.Line, p.Col = ps.pos.of(path)
	ps.list = append(ps.list, p)
}

func (ps *problems) err(file string) error {
	if len(ps.list) == 0 {
		return nil
	}
	return &Error{File: file, Problems: ps.list}
}
