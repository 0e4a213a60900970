package taskfile

import (
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"
)

// Coding is the coding section of a task file: the run works on a Go repository in an
// ephemeral git worktree under the coding harness (internal/coding) instead of walking a state
// graph, and succeeds when the verification passes with no protected file changed. A file
// with a coding section has no tools, states, output or instances (its one instance is the
// section itself); its instructions default to the coding harness's.
type Coding struct {
	// Repository is the tree the run works on.
	Repository Repository `json:"repository"`
	// Instance identifies the defect: for a shipped repository one of its seeded instances
	// (its defect, failing tests and catalogue); otherwise any name, recorded with the run.
	Instance string `json:"instance"`
	Class    string `json:"class,omitempty"` // the defect class, e.g. wrong_boundary
	// Prompt is what the agent is asked (the issue text); required unless the repository is
	// shipped, whose instance has one.
	Prompt string `json:"prompt,omitempty"`
	// Verify is what the verification runs: go build, go vet and go test of Packages (default
	// ./...), go test with -race when Race.
	Verify *Verify `json:"verify,omitempty"`
	// Protected are the patterns of the files the agent may not change (default *_test.go and
	// testdata/): "dir/" names a directory at any depth, a pattern with "/" matches the whole
	// path, any other pattern matches a path element (path.Match syntax).
	Protected []string `json:"protected,omitempty"`
	// Candidates is the catalogue of patches the simulated personas choose among (optional:
	// only they need one; a shipped instance has its own).
	Candidates []Candidate `json:"candidates,omitempty"`
}

// Repository is where a coding task's tree comes from: exactly one of Shipped (a repository
// shipped with ditto, by name) and Path (a directory, relative to the task file, holding a Go
// module: its files, or the files git tracks and does not ignore when it is a git work tree).
// Files is the tree read from Path when the file is loaded from disk (path → content); it is
// what a study carries to its workers. A file may also give Files itself, without Path.
type Repository struct {
	Shipped string            `json:"shipped,omitempty"`
	Path    string            `json:"path,omitempty"`
	Files   map[string]string `json:"files,omitempty"`
}

// Verify is what a coding task's verification covers.
type Verify struct {
	Packages []string `json:"packages,omitempty"`
	Race     bool     `json:"race,omitempty"`
}

// Candidate is one patch of a catalogue: edits applied in order.
type Candidate struct {
	ID    string `json:"id"`
	Kind  string `json:"kind"` // fix, near_miss, symptom or weaken_test
	Edits []Edit `json:"edits"`
}

// Edit replaces the one occurrence of Old in the file at Path by New.
type Edit struct {
	Path string `json:"path"`
	Old  string `json:"old"`
	New  string `json:"new"`
}

// IsCoding reports whether the file is a coding task.
func (t *Task) IsCoding() bool { return t.Coding != nil }

// Position returns the line and column (1-based) where the value at path ("coding.prompt")
// starts in the text the file was parsed from, or of its nearest ancestor; 0, 0 when unknown.
func (t *Task) Position(path string) (line, col int) { return t.pos.of(path) }

// WithFiles returns the coding task file t with its repository's tree set to files (as read
// from its path), checked again; t is not modified. The result's JSON carries the tree.
func (t *Task) WithFiles(name string, files map[string]string, opts Options) (*Task, error) {
	if t.Coding == nil {
		return nil, fmt.Errorf("taskfile: %s is not a coding task", t.Name)
	}
	var doc map[string]any
	if err := json.Unmarshal(t.canon, &doc); err != nil {
		return nil, fmt.Errorf("taskfile: %w", err)
	}
	coding, _ := doc["coding"].(map[string]any)
	repo, _ := coding["repository"].(map[string]any)
	if repo == nil {
		return nil, fmt.Errorf("taskfile: %s: no coding.repository", t.Name)
	}
	repo["files"] = files
	data, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("taskfile: %w", err)
	}
	return Parse(name, data, opts)
}

// Candidate kinds.
var candidateKinds = []string{"fix", "near_miss", "symptom", "weaken_test"}

// checkCoding checks a coding section: the repository's form, the shipped instance (through
// opts.Shipped), the packages, the protection patterns and the catalogue's form (whether its
// edits apply is checked against the tree, by the caller that has it).
func checkCoding(t *Task, opts Options, ps *problems) {
	for _, f := range []struct {
		name string
		set  bool
	}{{"tools", len(t.Tools) > 0}, {"states", len(t.States) > 0}, {"instances", len(t.Instances) > 0},
		{"start", t.Start != ""}, {"servers", len(t.Servers) > 0},
		{"output", len(t.Output.Schema) > 0 || len(t.Output.Rules) > 0 || t.Output.Tool != "" || t.Output.Check != ""}} {
		if f.set {
			ps.add(f.name, "a coding task (coding) has no %s: the coding harness gives the agent its tools and the verification judges the run", f.name)
		}
	}
	c := t.Coding
	r := c.Repository
	switch {
	case r.Shipped != "" && (r.Path != "" || len(r.Files) > 0):
		ps.add("coding.repository", "give either shipped (a repository shipped with ditto) or path (your own module), not both")
	case r.Shipped == "" && r.Path == "" && len(r.Files) == 0:
		ps.add("coding.repository", "needs shipped (a repository shipped with ditto, by name) or path (a directory holding a Go module, relative to the task file)")
	case r.Shipped != "":
		if opts.Shipped != nil {
			switch ids, ok := opts.Shipped(r.Shipped); {
			case !ok:
				ps.add("coding.repository.shipped", "no shipped repository %q", r.Shipped)
			case !slices.Contains(ids, c.Instance):
				ps.add("coding.instance", "the shipped repository %s has no instance %q (instances: %s)", r.Shipped, c.Instance, strings.Join(ids, ", "))
			}
		}
		if len(c.Candidates) > 0 {
			ps.add("coding.candidates", "a shipped instance has its own catalogue of candidate patches")
		}
	default:
		if strings.TrimSpace(c.Prompt) == "" {
			ps.add("coding.prompt", "required: what the agent is asked to fix (only a shipped instance has one of its own)")
		}
		for _, p := range sortedKeys(r.Files) {
			if err := checkTreePath(p); err != nil {
				ps.add(childPath("coding.repository.files", p), "%v", err)
			}
		}
		if len(r.Files) > 0 {
			if _, ok := r.Files["go.mod"]; !ok {
				ps.add("coding.repository.files", "the tree has no go.mod at its root: the repository must be a Go module")
			}
		}
	}
	if c.Verify != nil {
		for i, p := range c.Verify.Packages {
			if err := checkPackagePattern(p); err != nil {
				ps.add(indexPath("coding.verify.packages", i), "%v", err)
			}
		}
	}
	for i, p := range c.Protected {
		if err := checkProtectedPattern(p); err != nil {
			ps.add(indexPath("coding.protected", i), "%v", err)
		}
	}
	ids := map[string]int{}
	for i, cd := range c.Candidates {
		cp := indexPath("coding.candidates", i)
		if j, dup := ids[cd.ID]; dup {
			ps.add(cp+".id", "duplicate candidate %q (also coding.candidates[%d])", cd.ID, j)
		}
		ids[cd.ID] = i
		for j, e := range cd.Edits {
			if err := checkTreePath(e.Path); err != nil {
				ps.add(indexPath(cp+".edits", j)+".path", "%v", err)
			}
		}
	}
	if len(c.Candidates) > 0 && !slices.ContainsFunc(c.Candidates, func(cd Candidate) bool { return cd.Kind == "fix" }) {
		ps.add("coding.candidates", "a catalogue needs a fix (a candidate of kind fix) among its patches")
	}
}

// checkTreePath checks a path of the tree: a clean relative slash path that stays inside it
// and out of .git.
func checkTreePath(p string) error {
	switch {
	case p == "" || p == ".":
		return fmt.Errorf("empty path")
	case strings.HasPrefix(p, "/") || strings.Contains(p, `\`) || (len(p) > 1 && p[1] == ':'):
		return fmt.Errorf("%q is absolute: paths are relative to the repository's root", p)
	case path.Clean(p) != p:
		return fmt.Errorf("%q is not a clean path (write %q)", p, path.Clean(p))
	case p == ".." || strings.HasPrefix(p, "../"):
		return fmt.Errorf("%q leaves the repository", p)
	case p == ".git" || strings.HasPrefix(p, ".git/"):
		return fmt.Errorf("%q is inside .git", p)
	}
	return nil
}

// checkPackagePattern checks a package pattern of the verification: a relative pattern inside
// the module ("./...", "./pkg", "."), never a flag or a path out of it.
func checkPackagePattern(p string) error {
	if p != "." && !strings.HasPrefix(p, "./") {
		return fmt.Errorf("%q: a package pattern relative to the module's root, such as ./... or ./internal/pkg", p)
	}
	rest := strings.TrimPrefix(strings.TrimPrefix(p, "."), "/")
	for _, e := range strings.Split(rest, "/") {
		if e == ".." {
			return fmt.Errorf("%q leaves the module", p)
		}
	}
	return nil
}

// checkProtectedPattern checks a protection pattern: relative, and well-formed for path.Match.
func checkProtectedPattern(p string) error {
	body := strings.TrimSuffix(p, "/")
	switch {
	case body == "":
		return fmt.Errorf("empty pattern")
	case strings.HasPrefix(p, "/") || strings.Contains(p, `\`):
		return fmt.Errorf("%q is absolute: patterns are relative to the repository's root", p)
	}
	if _, err := path.Match(body, ""); err != nil {
		return fmt.Errorf("%q: %v", p, err)
	}
	return nil
}
