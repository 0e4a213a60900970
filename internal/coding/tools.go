package coding

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/coding/repos"
	"github.com/dittolab/ditto/internal/coding/workspace"
	"github.com/dittolab/ditto/internal/llm"
)

// Tool names.
const (
	ToolRead   = "read"
	ToolList   = "list"
	ToolSearch = "search"
	ToolEdit   = "edit"
	ToolCreate = "create"
	ToolBash   = "bash"
)

func schema(props string, required ...string) json.RawMessage {
	req, _ := json.Marshal(required)
	return json.RawMessage(`{"type":"object","properties":{` + props + `},"required":` + string(req) + `,"additionalProperties":false}`)
}

var fileTools = []llm.ToolDef{
	{Name: ToolRead, Description: "Read a file of the working tree. Returns its content.",
		Parameters: schema(`"path":{"type":"string","description":"path relative to the working tree"}`, "path")},
	{Name: ToolList, Description: "List the files of the working tree (or of one of its directories).",
		Parameters: schema(`"path":{"type":"string","description":"directory relative to the working tree; default the whole tree"}`)},
	{Name: ToolSearch, Description: "Search the working tree's files for a regular expression (RE2). Returns file:line: text lines.",
		Parameters: schema(`"pattern":{"type":"string"},"path":{"type":"string"}`, "pattern")},
	{Name: ToolEdit, Description: "Replace the one occurrence of old by new in a file you have read. Returns gofmt and go vet diagnostics.",
		Parameters: schema(`"path":{"type":"string"},"old":{"type":"string"},"new":{"type":"string"}`, "path", "old", "new")},
	{Name: ToolCreate, Description: "Create a new file with the given content. Returns gofmt and go vet diagnostics.",
		Parameters: schema(`"path":{"type":"string"},"content":{"type":"string"}`, "path", "content")},
}

var bashTools = []llm.ToolDef{
	{Name: ToolBash, Description: "Run one bash command in the working tree (no network). Returns its exit code and output.",
		Parameters: schema(`"command":{"type":"string"}`, "command")},
}

func (r *runner) toolGuide() string {
	if r.comp.BashOnly {
		return "You have one tool, bash, which runs a command in the working tree. Use it to read files, edit them " +
			"(for example by rewriting a file with cat > file <<'EOF'), and run go build, go vet or go test. After each " +
			"turn in which you change files, the verification runs and you get its result. Answer without a tool " +
			"call when you are done."
	}
	return "Your tools: read, list, search, edit (exact replacement of one occurrence of old by new in a file you " +
		"have read) and create. After each turn in which you change files, the verification runs and you get its " +
		"result. Answer without a tool call when you are done."
}

// callError is a refusal or failure told to the model and, for refusals, recorded in
// tool.rejected with reason.
type callError struct {
	reason string // an events.Reject* reason, or "" for a tool error after the call ran
	detail string
}

// handle gates, runs and records one tool call. patched reports whether it changed a file that
// stays changed.
func (r *runner) handle(tc llm.ToolCall) (patched bool, err error) {
	r.callN++
	id := tc.ID
	if id == "" || len(id) > 64 {
		id = fmt.Sprintf("call_%d", r.callN)
	}
	if handled, err := r.contextCall(tc, id); handled {
		return false, err
	}
	args, canon, cerr := r.parse(tc)
	if cerr == nil {
		cerr = r.gate(tc.Name, args)
	}
	if cerr != nil {
		rec := events.ToolRejected{CallID: id, Tool: clip(tc.Name, 128), Reason: cerr.reason, Detail: clip(cerr.detail, 4096), Args: canon}
		if rec.Tool == "" {
			rec.Tool = "<none>"
		}
		if err := r.emit(rec); err != nil {
			return false, err
		}
		r.reply(tc, id, failure(cerr.reason, cerr.detail))
		return false, nil
	}
	if err := r.emit(events.ToolCalled{CallID: id, Tool: tc.Name, Args: canon}); err != nil {
		return false, err
	}
	t0 := time.Now()
	out, changes, terr := r.exec(tc.Name, args)
	for _, c := range changes {
		if err := r.emit(c.event(id)); err != nil {
			return false, err
		}
		if !c.Reverted {
			patched = true
		}
	}
	ret := events.ToolReturned{CallID: id, Tool: tc.Name, OK: terr == nil, DurationMS: ms(time.Since(t0))}
	if terr != nil {
		ret.Error = clip(terr.Error(), 4096)
		r.reply(tc, id, failure("tool_error", terr.Error()))
	} else {
		ret.Output = outputValue(out)
		b, _ := json.Marshal(map[string]any{"ok": true, "output": out})
		r.reply(tc, id, string(b))
	}
	return patched, r.emit(ret)
}

// outputValue is what tool.returned records of a tool's output: its canonical JSON, or its
// hash and size past 64 KiB.
func outputValue(out any) json.RawMessage {
	v, _ := events.CanonicalValue(out)
	if len(v) > 64<<10 {
		v, _ = events.CanonicalValue(map[string]any{"sha256": sha(string(v)), "bytes": len(v)})
	}
	return v
}

func failure(kind, detail string) string {
	b, _ := json.Marshal(map[string]any{"ok": false, "error": kind, "detail": detail})
	return string(b)
}

func (r *runner) reply(tc llm.ToolCall, id, content string) {
	callID := tc.ID
	if callID == "" {
		callID = id
	}
	r.add(llm.Message{Role: llm.RoleTool, ToolCallID: callID, Content: content}, tc.Name)
}

type toolArgs struct {
	Path    string  `json:"path"`
	Pattern string  `json:"pattern"`
	Old     *string `json:"old"`
	New     *string `json:"new"`
	Content *string `json:"content"`
	Command string  `json:"command"`
}

// parse reads a call's arguments: a JSON object of the tool's schema (schema refusal
// otherwise). canon is what tool.called and tool.rejected record.
func (r *runner) parse(tc llm.ToolCall) (toolArgs, json.RawMessage, *callError) {
	var a toolArgs
	canon, err := events.Canonical([]byte(tc.Arguments))
	if err != nil {
		canon, _ = events.CanonicalValue(clip(tc.Arguments, 64<<10))
		return a, canon, &callError{events.RejectSchema, "arguments are not JSON: " + err.Error()}
	}
	if !slices.ContainsFunc(r.tools, func(d llm.ToolDef) bool { return d.Name == tc.Name }) {
		return a, canon, &callError{events.RejectUnauthorized, fmt.Sprintf("no tool %q is offered", tc.Name)}
	}
	dec := json.NewDecoder(strings.NewReader(tc.Arguments))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return a, canon, &callError{events.RejectSchema, err.Error()}
	}
	missing := ""
	switch tc.Name {
	case ToolRead:
		if a.Path == "" {
			missing = "path"
		}
	case ToolSearch:
		if a.Pattern == "" {
			missing = "pattern"
		}
	case ToolEdit:
		if a.Path == "" || a.Old == nil || a.New == nil {
			missing = "path, old and new"
		}
	case ToolCreate:
		if a.Path == "" || a.Content == nil {
			missing = "path and content"
		}
	case ToolBash:
		if a.Command == "" {
			missing = "command"
		}
	}
	if missing != "" {
		return a, canon, &callError{events.RejectSchema, missing + " required"}
	}
	return a, canon, nil
}

// gate applies the permission gate (paths and commands stay in the worktree), test protection
// and read-before-write, before anything runs.
func (r *runner) gate(tool string, a toolArgs) *callError {
	if tool == ToolBash {
		if err := workspace.CheckCommand(a.Command); err != nil {
			return &callError{events.RejectPermission, err.Error()}
		}
		return nil
	}
	if tool == ToolList && a.Path == "" {
		return nil
	}
	_, rel, err := r.ws.Resolve(a.Path)
	if err != nil {
		return &callError{events.RejectPermission, err.Error()}
	}
	switch tool {
	case ToolEdit, ToolCreate:
		if r.comp.TestProtection && r.inst.Protects(rel) {
			return &callError{events.RejectTestProtected, rel + " is a test file; test files are read-only"}
		}
		if tool == ToolEdit && !r.read[rel] {
			return &callError{events.RejectUnread, "read " + rel + " before editing it"}
		}
	}
	return nil
}

// change is one file changed by a call.
type change struct {
	Path            string
	Added, Removed  int
	Repatch         bool
	Protected       bool
	Reverted        bool
	RevertedBecause string
}

func (c change) event(id string) events.FileChanged {
	return events.FileChanged{CallID: id, Path: c.Path, Added: c.Added, Removed: c.Removed, Repatch: c.Repatch,
		Protected: c.Protected, Reverted: c.Reverted}
}

// exec runs a call that passed the gates.
func (r *runner) exec(tool string, a toolArgs) (any, []change, error) {
	switch tool {
	case ToolRead:
		abs, rel, _ := r.ws.Resolve(a.Path)
		b, err := os.ReadFile(abs)
		if err != nil {
			return nil, nil, fmt.Errorf("read %s: %w", rel, errors.Unwrap(err))
		}
		r.read[rel] = true
		return map[string]any{"path": rel, "content": string(b)}, nil, nil
	case ToolList:
		files, err := r.list(a.Path)
		return map[string]any{"files": files}, nil, err
	case ToolSearch:
		return r.search(a.Pattern, a.Path)
	case ToolEdit, ToolCreate:
		return r.write(tool, a)
	case ToolBash:
		return r.bash(a.Command)
	}
	return nil, nil, fmt.Errorf("unknown tool %s", tool)
}

func (r *runner) list(dir string) ([]string, error) {
	root, _, err := r.ws.Resolve(dir)
	if err != nil {
		return nil, err
	}
	var files []string
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if !d.IsDir() && d.Name() != ".git" {
			rel, _ := filepath.Rel(r.ws.Dir, p)
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	return files, err
}

func (r *runner) search(pattern, dir string) (any, []change, error) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, nil, fmt.Errorf("pattern: %w", err)
	}
	files, err := r.list(dir)
	if err != nil {
		return nil, nil, err
	}
	var hits []string
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(r.ws.Dir, filepath.FromSlash(f)))
		if err != nil {
			continue
		}
		for i, ln := range strings.Split(string(b), "\n") {
			if re.MatchString(ln) && len(hits) < 200 {
				hits = append(hits, fmt.Sprintf("%s:%d: %s", f, i+1, ln))
			}
		}
	}
	return map[string]any{"matches": hits}, nil, nil
}

// write runs edit and create, then gofmt -l and go vet.
func (r *runner) write(tool string, a toolArgs) (any, []change, error) {
	abs, rel, _ := r.ws.Resolve(a.Path)
	before, rerr := os.ReadFile(abs)
	var after string
	switch tool {
	case ToolEdit:
		if rerr != nil {
			return nil, nil, fmt.Errorf("edit %s: %w", rel, errors.Unwrap(rerr))
		}
		nb, err := repos.Replace(string(before), *a.Old, *a.New)
		if err != nil {
			return nil, nil, fmt.Errorf("edit %s: %w", rel, err)
		}
		after = nb
	case ToolCreate:
		if rerr == nil {
			return nil, nil, fmt.Errorf("create %s: the file exists; edit it instead", rel)
		}
		if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
			return nil, nil, err
		}
		after = *a.Content
	}
	if err := os.WriteFile(abs, []byte(after), 0o644); err != nil {
		return nil, nil, err
	}
	r.read[rel] = true
	c := r.recordChange(rel, string(before), after)
	out := map[string]any{"path": rel}
	if strings.HasSuffix(rel, ".go") {
		res, err := r.ws.Exec(r.ctx, "gofmt", "-l", rel)
		if err == nil {
			out["gofmt"] = strings.Fields(string(res.Output))
		}
		res, _, err = r.memo.Exec(r.ctx, r.ws, "go", "vet", "./...")
		if err == nil {
			out["vet"] = strings.TrimSpace(string(res.Output))
		}
	}
	return out, []change{c}, nil
}

func (r *runner) recordChange(rel, before, after string) change {
	add, del := lineDelta(before, after)
	c := change{Path: rel, Added: add, Removed: del, Repatch: r.changed[rel], Protected: r.inst.Protects(rel)}
	r.changed[rel] = true
	return c
}

// bash runs a command, then compares the tree with its state before the command: each
// changed file is recorded; under test protection a changed test file is reverted; a symlink
// leading out of the worktree is always removed.
func (r *runner) bash(command string) (any, []change, error) {
	before, err := r.snapshot()
	if err != nil {
		return nil, nil, err
	}
	res, err := r.ws.Bash(r.ctx, command)
	if err != nil {
		return nil, nil, err
	}
	after, err := r.snapshot()
	if err != nil {
		return nil, nil, err
	}
	escapes := map[string]bool{}
	if cs, err := r.ws.Changes(r.ctx); err == nil {
		for _, c := range cs {
			if c.Symlink != "" {
				escapes[c.Path] = true
			}
		}
	}
	var paths []string
	for p := range after {
		if before[p] != after[p] {
			paths = append(paths, p)
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok {
			paths = append(paths, p)
		}
	}
	slices.Sort(paths)
	var changes []change
	var notes []string
	for _, p := range paths {
		c := r.recordChange(p, before[p], after[p])
		switch {
		case escapes[p]:
			c.Reverted, c.RevertedBecause = true, "a symlink leading out of the working tree"
		case r.comp.TestProtection && c.Protected:
			c.Reverted, c.RevertedBecause = true, "test files are read-only"
		}
		if c.Reverted {
			if err := r.restore(p, before); err != nil {
				return nil, nil, err
			}
			notes = append(notes, fmt.Sprintf("%s: change reverted (%s)", p, c.RevertedBecause))
		}
		changes = append(changes, c)
	}
	out := map[string]any{"exit_code": res.ExitCode, "output": string(res.Output)}
	if res.Truncated {
		out["output_bytes"] = res.Bytes
	}
	if res.TimedOut {
		out["timed_out"] = true
	}
	if len(notes) > 0 {
		out["reverted"] = notes
	}
	return out, changes, nil
}

// snapshot maps each file of the worktree (not .git) to its content; a symlink maps to its
// target.
func (r *runner) snapshot() (map[string]string, error) {
	m := map[string]string{}
	err := filepath.WalkDir(r.ws.Dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Name() == ".git" && p != r.ws.Dir {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(r.ws.Dir, p)
		rel = filepath.ToSlash(rel)
		if d.Type()&fs.ModeSymlink != 0 {
			t, _ := os.Readlink(p)
			m[rel] = "symlink → " + t
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil
		}
		m[rel] = string(b)
		return nil
	})
	return m, err
}

// restore puts p back as it was before a command.
func (r *runner) restore(p string, before map[string]string) error {
	abs := filepath.Join(r.ws.Dir, filepath.FromSlash(p))
	if err := os.RemoveAll(abs); err != nil {
		return err
	}
	body, ok := before[p]
	if !ok {
		return nil
	}
	if t, isLink := strings.CutPrefix(body, "symlink → "); isLink {
		return os.Symlink(t, abs)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		return err
	}
	return os.WriteFile(abs, []byte(body), 0o644)
}

// lineDelta counts the lines added and removed between two texts (by a longest common
// subsequence of lines; the files here are small).
func lineDelta(a, b string) (added, removed int) {
	x, y := splitLines(a), splitLines(b)
	// Trim the common prefix and suffix first: edits are local.
	for len(x) > 0 && len(y) > 0 && x[0] == y[0] {
		x, y = x[1:], y[1:]
	}
	for len(x) > 0 && len(y) > 0 && x[len(x)-1] == y[len(y)-1] {
		x, y = x[:len(x)-1], y[:len(y)-1]
	}
	if len(x)*len(y) > 4_000_000 {
		return len(y), len(x)
	}
	prev := make([]int, len(y)+1)
	cur := make([]int, len(y)+1)
	for i := range x {
		for j := range y {
			if x[i] == y[j] {
				cur[j+1] = prev[j] + 1
			} else {
				cur[j+1] = max(cur[j], prev[j+1])
			}
		}
		prev, cur = cur, prev
	}
	common := prev[len(y)]
	return len(y) - common, len(x) - common
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

func sha(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}
