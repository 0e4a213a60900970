package tasks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/taskfile"
)

// Defaults of a tool read from a task file.
const (
	DefaultToolTimeout = 30 * time.Second
	defaultRetries     = 2 // for an idempotent tool
)

// Binding is what a Binder gives a tool served by a server: how to call it, who answers, and,
// for a tool whose file gives no argument schema, the server's.
type Binding struct {
	Exec   func(ctx context.Context, inst *Instance, args json.RawMessage) (json.RawMessage, error)
	Origin func() Origin
	Schema json.RawMessage
}

// Binder binds the tools of a task file that a server serves (an MCP server, HTTP endpoints)
// to their transport. Bind is called once per such tool, by FromFile; an error names what is
// wrong (a tool the server does not serve, an argument schema that contradicts the server's)
// and is reported with the tool's path in the file (a *taskfile.Error gives its own paths). An
// error wrapping ErrToolUnavailable (the server could not be reached) ends FromFile at once.
type Binder interface {
	Bind(file *taskfile.Task, tool int) (Binding, error)
}

// ParseFile reads a task file and checks it (taskfile.Parse), knowing ditto's builtin tools
// and shipped repositories.
func ParseFile(name string, data []byte) (*taskfile.Task, error) {
	return taskfile.Parse(name, data, parseOptions)
}

var parseOptions = taskfile.Options{Builtin: builtinKnown, Shipped: shippedInstances}

// LoadFile reads and checks the task file at path. A coding task whose repository is a path
// gets the tree read from that directory (relative to the file's) into its
// coding.repository.files, so that the task file carries the tree to a study's workers; its
// catalogue of candidate patches, when it has one, is checked against that tree.
func LoadFile(path string) (*taskfile.Task, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tasks: %w", err)
	}
	f, err := ParseFile(path, data)
	if err != nil || f.Coding == nil {
		return f, err
	}
	if rp := f.Coding.Repository.Path; rp != "" {
		dir := filepath.FromSlash(rp)
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(filepath.Dir(path), dir)
		}
		files, err := readTree(dir)
		if err != nil {
			return nil, problemAt(path, f, "coding.repository.path", err.Error())
		}
		orig := f
		if f, err = f.WithFiles(path, files, parseOptions); err != nil {
			return nil, err
		}
		// The file's own text places the problems the tree reveals.
		if _, err := codingTarget(f); err != nil {
			var te *taskfile.Error
			if errors.As(err, &te) && len(te.Problems) == 1 {
				return nil, problemAt(path, orig, te.Problems[0].Path, te.Problems[0].Msg)
			}
			return nil, err
		}
	}
	return f, nil
}

// problemAt is a *taskfile.Error of one problem at path in f, read from file.
func problemAt(file string, f *taskfile.Task, path, msg string) error {
	line, col := f.Position(path)
	return &taskfile.Error{File: file, Problems: []*taskfile.Problem{{Path: path, Line: line, Col: col, Msg: msg}}}
}

// IsFileName reports whether a task named in a study is a task file's path rather than the
// name of a registered task: it has a path separator or a .yaml, .yml or .json extension.
func IsFileName(s string) bool {
	return strings.ContainsAny(s, `/\`) || strings.HasSuffix(s, ".yaml") || strings.HasSuffix(s, ".yml") || strings.HasSuffix(s, ".json")
}

// FromFile makes the Task of a checked task file. A coding task file (coding section) gives
// a coding task (Task.Coding): its repository's tree must be in the file (a shipped one, or one
// LoadFile read from its path). Builtin and fixture tools are bound here;
// tools of a server are bound by b. With b nil they are left unbound: their calls fail with
// ErrUnbound, which is enough to validate a study (the producer) but not to run it.
func FromFile(f *taskfile.Task, b Binder) (*Task, error) {
	if f.Coding != nil {
		return fromCodingFile(f)
	}
	t := &Task{Name: f.Name, Title: f.Title, Instructions: f.Instructions, Start: f.StartState(),
		FinalTool: f.FinalTool(), File: f}
	var errs []*taskfile.Problem
	for i, ft := range f.Tools {
		tool := Tool{Name: ft.Name, Description: ft.Description, Schema: ft.Arguments,
			Resources: resourcesOf(ft.Permission.Resources), Scope: ft.Permission.Scope, Idempotent: ft.Idempotent}
		if ft.Builtin == "" {
			tool.Timeout = DefaultToolTimeout
			if ft.TimeoutSeconds > 0 {
				tool.Timeout = time.Duration(ft.TimeoutSeconds * float64(time.Second))
			}
		}
		if ft.Retries != nil {
			tool.Retries = *ft.Retries
		} else if ft.Idempotent && ft.Builtin == "" {
			tool.Retries = defaultRetries
		}
		switch {
		case ft.Builtin != "":
			exec, ok := builtinExec(ft.Builtin)
			if !ok {
				errs = append(errs, &taskfile.Problem{Path: fmt.Sprintf("tools[%d].builtin", i), Msg: fmt.Sprintf("unknown builtin tool %q", ft.Builtin)})
				continue
			}
			tool.Exec = exec
		case len(ft.Fixtures) > 0:
			tool.Exec = fixtureExec(ft.Name, ft.Fixtures)
			digest := f.Digest()[:12]
			tool.Origin = func() Origin {
				return Origin{Server: "fixtures", Name: "fixtures", Version: digest, Transport: "fixtures"}
			}
		case b != nil:
			bd, err := b.Bind(f, i)
			if err != nil {
				var te *taskfile.Error
				switch {
				case errors.Is(err, ErrToolUnavailable):
					// Not the file's fault: the server is down. The runs error (infrastructure).
					return nil, fmt.Errorf("tasks: %s: tools[%d] (%s): %w", f.Name, i, ft.Name, err)
				case errors.As(err, &te):
					errs = append(errs, te.Problems...)
				default:
					errs = append(errs, &taskfile.Problem{Path: fmt.Sprintf("tools[%d]", i), Msg: err.Error()})
				}
				continue
			}
			tool.Exec, tool.Origin = bd.Exec, bd.Origin
			if len(tool.Schema) == 0 {
				tool.Schema = bd.Schema
			}
		default:
			name := ft.Name
			tool.Exec = func(context.Context, *Instance, json.RawMessage) (json.RawMessage, error) {
				return nil, fmt.Errorf("%w: %s", ErrUnbound, name)
			}
		}
		t.Tools = append(t.Tools, tool)
	}
	if len(errs) > 0 {
		return nil, &taskfile.Error{File: f.Name, Problems: errs}
	}
	for _, fs := range f.States {
		s := State{Name: fs.Name, Tool: fs.Tool, Next: fs.Next}
		name := fs.Name
		s.Validate = func(out json.RawMessage) []string { return f.StateProblems(name, out) }
		if len(fs.Routes) > 0 {
			s.Route = func(out json.RawMessage) (string, error) { return f.Route(name, out) }
		}
		t.States = append(t.States, s)
	}
	for _, fi := range f.Instances {
		inst := Instance{ID: fi.ID, Prompt: fi.Prompt, Scope: fi.Scope, Grants: fi.Grants}
		if len(fi.Input) > 0 {
			c, err := events.Canonical(fi.Input)
			if err != nil {
				return nil, fmt.Errorf("tasks: %s: instance %s: input: %w", f.Name, fi.ID, err)
			}
			inst.Input = c
			// The model is shown the input after the prompt: the data it works on.
			inst.Prompt += "\n\nInput:\n" + string(c)
		}
		if len(fi.Ideal) > 0 {
			inst.Ideal = fi.Ideal
		}
		t.Instances = append(t.Instances, inst)
	}
	t.Check = func(inst *Instance, out json.RawMessage) bool { return f.Judge(out, inst.Input, inst.Ideal) }
	return t, nil
}

// resourcesOf is the Resources function of a tool's declared resources (taskfile.Resource).
// Arguments that are not a JSON object, or whose resource arguments have the wrong type, touch
// only the empty resource, which is never in scope, so the permission gate rejects the call
// rather than letting it through.
func resourcesOf(decl []taskfile.Resource) func(args json.RawMessage) []string {
	return func(args json.RawMessage) []string {
		var obj map[string]any
		dec := json.NewDecoder(bytes.NewReader(args))
		if err := dec.Decode(&obj); err != nil || obj == nil {
			return []string{""}
		}
		var out []string
		for _, r := range decl {
			v, found := pointer(obj, r.Arg)
			if !found || isEmpty(v) {
				switch {
				case len(r.Default) > 0:
					var def any
					_ = json.Unmarshal(r.Default, &def) // checked by the file's schema
					v = def
				case r.Optional:
					continue
				default:
					out = append(out, "")
					continue
				}
			}
			switch x := v.(type) {
			case string:
				if r.List {
					return []string{""}
				}
				out = append(out, r.Prefix+x)
			case []any:
				if !r.List {
					return []string{""}
				}
				for _, e := range x {
					s, ok := e.(string)
					if !ok {
						return []string{""}
					}
					out = append(out, r.Prefix+s)
				}
			default:
				return []string{""}
			}
		}
		return out
	}
}

func isEmpty(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case string:
		return x == ""
	case []any:
		return len(x) == 0
	}
	return false
}

// pointer resolves a JSON Pointer (RFC 6901) in a decoded JSON value.
func pointer(doc any, ptr string) (any, bool) {
	if ptr == "" {
		return doc, true
	}
	cur := doc
	for _, tok := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch x := cur.(type) {
		case map[string]any:
			v, ok := x[tok]
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			var i int
			if _, err := fmt.Sscanf(tok, "%d", &i); err != nil || i < 0 || i >= len(x) {
				return nil, false
			}
			cur = x[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

// fixtureExec answers a call from a fixture table: the first row whose args all equal the
// call's answers; a call no row matches fails.
func fixtureExec(tool string, rows []taskfile.Fixture) func(context.Context, *Instance, json.RawMessage) (json.RawMessage, error) {
	type row struct {
		args   map[string][]byte // member → canonical JSON
		output json.RawMessage
		err    string
	}
	compiled := make([]row, 0, len(rows))
	for _, r := range rows {
		cr := row{args: map[string][]byte{}, err: r.Error}
		if len(r.Output) > 0 {
			cr.output, _ = events.Canonical(r.Output)
		}
		var m map[string]json.RawMessage
		_ = json.Unmarshal(r.Args, &m) // an object: checked by the file's schema
		for k, v := range m {
			cr.args[k], _ = events.Canonical(v)
		}
		compiled = append(compiled, cr)
	}
	return func(_ context.Context, _ *Instance, args json.RawMessage) (json.RawMessage, error) {
		var m map[string]json.RawMessage
		if err := decodeArgs(args, &m); err != nil {
			return nil, err
		}
		for _, r := range compiled {
			match := true
			for k, want := range r.args {
				got, ok := m[k]
				if !ok {
					match = false
					break
				}
				c, err := events.Canonical(got)
				if err != nil || !bytes.Equal(c, want) {
					match = false
					break
				}
			}
			if !match {
				continue
			}
			if r.err != "" {
				return nil, fmt.Errorf("%s: %s", tool, r.err)
			}
			return r.output, nil
		}
		return nil, fmt.Errorf("%w: no fixture of %s matches the arguments", ErrNotFound, tool)
	}
}

// WithServersDown returns a copy of t (read from a task file) whose tools served by a server
// all fail as unavailable (ErrToolUnavailable) with cause: the task of a file whose servers
// could not be bound, whose runs then end errored with that cause rather than failed. A tool
// that takes its argument schema from its server accepts any object.
func (t *Task) WithServersDown(cause error) *Task {
	c := *t
	c.Tools = append([]Tool(nil), t.Tools...)
	if t.File == nil {
		return &c
	}
	for i := range c.Tools {
		ft := t.File.Tools[i]
		if ft.Server == "" {
			continue
		}
		tl := &c.Tools[i]
		err := fmt.Errorf("%w: %s", ErrToolUnavailable, cause)
		tl.Exec = func(context.Context, *Instance, json.RawMessage) (json.RawMessage, error) { return nil, err }
		origin := Origin{Server: ft.Server}
		tl.Origin = func() Origin { return origin }
		tl.Retries = 0
		if len(tl.Schema) == 0 {
			tl.Schema = json.RawMessage(`{"type":"object"}`)
		}
	}
	return &c
}
