package taskfile

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"

	"github.com/dittolab/ditto/events"
)

// Options adjust Parse.
type Options struct {
	// Builtin reports whether a builtin tool name is known to the caller; nil accepts every
	// name (the tools are then checked when they are bound).
	Builtin func(name string) bool
	// Shipped returns the instance ids of a repository shipped for coding tasks, and whether
	// there is one of that name; nil accepts every repository and instance.
	Shipped func(repo string) (instances []string, ok bool)
}

// Parse reads a task file (YAML or JSON; file names it in errors) and checks it: against the
// format's JSON Schema first and, when that passes, for consistency, compiling every JSON
// Schema and CEL expression it holds. It returns every problem at once in an *Error wrapping
// ErrInvalid. The returned Task is immutable and safe for concurrent use.
func Parse(file string, data []byte, opts Options) (*Task, error) {
	ps := &problems{}
	doc, pos, err := decodeText(data)
	if err != nil {
		ps.add("", "%v", err)
		return nil, ps.err(file)
	}
	ps.pos = pos
	checkSchema(doc, ps)
	if len(ps.list) > 0 {
		return nil, ps.err(file)
	}
	plain, err := json.Marshal(doc)
	if err != nil {
		ps.add("", "%v", err)
		return nil, ps.err(file)
	}
	var t Task
	dec := json.NewDecoder(bytes.NewReader(plain))
	if err := dec.Decode(&t); err != nil { // the schema admits only what Task holds
		ps.add("", "%v", err)
		return nil, ps.err(file)
	}
	t.pos = pos
	t.prog = check(&t, opts, ps)
	if err := ps.err(file); err != nil {
		return nil, err
	}
	if t.canon, err = events.Canonical(plain); err != nil {
		ps.add("", "%v", err)
		return nil, ps.err(file)
	}
	return &t, nil
}

// Load reads and parses the task file at path.
func Load(path string, opts Options) (*Task, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("taskfile: %w", err)
	}
	return Parse(path, data, opts)
}
