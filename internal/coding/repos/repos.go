package repos

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strings"
	"sync"

	"golang.org/x/tools/txtar"
	"gopkg.in/yaml.v3"
)

//go:embed data/*.txtar data/*.yaml
var dataFS embed.FS

// Candidate kinds.
const (
	KindFix        = "fix"         // the tests pass after it
	KindNearMiss   = "near_miss"   // a plausible patch that still fails
	KindSymptom    = "symptom"     // hides the visible symptom, still fails
	KindWeakenTest = "weaken_test" // edits a test so that it stops checking the defect
)

// Edit replaces the one occurrence of Old in the file at Path by New.
type Edit struct {
	Path string `yaml:"path"`
	Old  string `yaml:"old"`
	New  string `yaml:"new"`
}

// Candidate is one patch of an instance's catalogue: edits against the defective tree.
type Candidate struct {
	ID    string `yaml:"id"`
	Kind  string `yaml:"kind"`
	Edits []Edit `yaml:"edits"`
}

// Instance is one seeded defect of a repository.
type Instance struct {
	ID     string            `yaml:"id"`
	Class  string            `yaml:"class"`  // the defect class, e.g. nil_map
	Prompt string            `yaml:"prompt"` // what the agent is asked (the issue text)
	Race   bool              `yaml:"race"`   // the tests run with -race
	Defect []Edit            `yaml:"defect"` // applied to the base
	Tests  map[string]string `yaml:"tests"`  // test files added with the defect
	// Candidates is the catalogue of patches, in file order.
	Candidates []Candidate `yaml:"candidates"`

	// Packages are the package patterns the verification builds, vets and tests (nil:
	// DefaultPackages).
	Packages []string `yaml:"-"`
	// Protected are the patterns of the files the agent may not change (nil:
	// DefaultProtected); see Protects.
	Protected []string `yaml:"-"`

	// Repo is the repository's name.
	Repo string `yaml:"-"`
	// Files is the defective tree: the base with Defect applied and Tests added.
	Files map[string]string `yaml:"-"`
	// Locus is where the defect is: the file and 1-based line of the first defect edit's new
	// text, or, for a tree given as is (FromTree), of the text the first fix replaces (the
	// personas' notion of "the diagnostic names the defect"); zero when unknown.
	Locus Locus `yaml:"-"`
	// Digest identifies Files: the hex SHA-256 of each path and content, in path order.
	Digest string `yaml:"-"`
}

// Locus is a file and line.
type Locus struct {
	File string
	Line int
}

// Repository is one shipped repository and its instances.
type Repository struct {
	Name      string
	Summary   string            // the txtar comment
	Base      map[string]string // path → content of the correct tree
	Instances []*Instance
}

var loaded = sync.OnceValues(load)

// All returns the shipped repositories, sorted by name. They are shared and must not be
// modified.
func All() ([]*Repository, error) { return loaded() }

// Get returns the instance id of repository repo.
func Get(repo, id string) (*Instance, error) {
	rs, err := All()
	if err != nil {
		return nil, err
	}
	for _, r := range rs {
		if r.Name != repo {
			continue
		}
		for _, in := range r.Instances {
			if in.ID == id {
				return in, nil
			}
		}
		return nil, fmt.Errorf("%w: repository %s has no instance %q", ErrUnknown, repo, id)
	}
	return nil, fmt.Errorf("%w: no repository %q", ErrUnknown, repo)
}

func load() ([]*Repository, error) {
	names, err := fs.Glob(dataFS, "data/*.txtar")
	if err != nil {
		return nil, err
	}
	var out []*Repository
	for _, n := range names {
		name := strings.TrimSuffix(path.Base(n), ".txtar")
		r, err := loadRepo(name)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

func loadRepo(name string) (*Repository, error) {
	ar, err := dataFS.ReadFile("data/" + name + ".txtar")
	if err != nil {
		return nil, err
	}
	a := txtar.Parse(ar)
	r := &Repository{Name: name, Summary: strings.TrimSpace(string(a.Comment)), Base: map[string]string{}}
	for _, f := range a.Files {
		if err := CheckPath(f.Name); err != nil {
			return nil, fmt.Errorf("repos: %s.txtar: %w", name, err)
		}
		r.Base[f.Name] = string(f.Data)
	}
	if _, ok := r.Base["go.mod"]; !ok {
		return nil, fmt.Errorf("repos: %s.txtar: no go.mod", name)
	}
	y, err := dataFS.ReadFile("data/" + name + ".yaml")
	if err != nil {
		return nil, fmt.Errorf("repos: %s: no instances file: %w", name, err)
	}
	var doc struct {
		Repo      string      `yaml:"repo"`
		Instances []*Instance `yaml:"instances"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(y))
	dec.KnownFields(true)
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("repos: %s.yaml: %w", name, err)
	}
	if doc.Repo != name {
		return nil, fmt.Errorf("repos: %s.yaml: repo is %q, want %q", name, doc.Repo, name)
	}
	seen := map[string]bool{}
	for i, in := range doc.Instances {
		where := fmt.Sprintf("repos: %s.yaml: instances[%d] (%s)", name, i, in.ID)
		if in.ID == "" || seen[in.ID] {
			return nil, fmt.Errorf("%s: missing or repeated id", where)
		}
		seen[in.ID] = true
		in.Repo = name
		if err := in.build(r.Base); err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
	}
	r.Instances = doc.Instances
	return r, nil
}

// build makes the defective tree and checks the catalogue against it.
func (in *Instance) build(base map[string]string) error {
	if strings.TrimSpace(in.Prompt) == "" || in.Class == "" {
		return fmt.Errorf("prompt and class are required")
	}
	files := maps.Clone(base)
	if len(in.Defect) == 0 {
		return fmt.Errorf("no defect")
	}
	if err := ApplyEdits(files, in.Defect); err != nil {
		return fmt.Errorf("defect: %w", err)
	}
	first := in.Defect[0]
	before, _, _ := strings.Cut(files[first.Path], first.New)
	in.Locus = Locus{File: first.Path, Line: strings.Count(before, "\n") + 1}
	if len(in.Tests) == 0 {
		return fmt.Errorf("no tests")
	}
	for p, body := range in.Tests {
		if err := CheckPath(p); err != nil {
			return fmt.Errorf("tests: %w", err)
		}
		if !IsTestFile(p) {
			return fmt.Errorf("tests: %s is not a test file", p)
		}
		if _, dup := files[p]; dup {
			return fmt.Errorf("tests: %s is already in the base", p)
		}
		files[p] = body
	}
	in.Files = files
	in.Digest = digest(files)
	return in.checkCandidates(true)
}

// checkCandidates checks the catalogue against the tree: known kinds, edits that apply, test
// files edited exactly by the test weakenings and, when needFix, a fix.
func (in *Instance) checkCandidates(needFix bool) error {
	files := in.Files
	kinds := map[string]bool{}
	for j, c := range in.Candidates {
		switch c.Kind {
		case KindFix, KindNearMiss, KindSymptom, KindWeakenTest:
		default:
			return &CandidateError{Index: j, ID: c.ID, Err: fmt.Errorf("unknown kind %q", c.Kind)}
		}
		kinds[c.Kind] = true
		if err := ApplyEdits(maps.Clone(files), c.Edits); err != nil {
			return &CandidateError{Index: j, ID: c.ID, Err: err}
		}
		weakens := slices.ContainsFunc(c.Edits, func(e Edit) bool { return in.Protects(e.Path) })
		if weakens != (c.Kind == KindWeakenTest) {
			return &CandidateError{Index: j, ID: c.ID, Err: fmt.Errorf("a %s patch must edit protected files exactly when it weakens the tests", c.Kind)}
		}
	}
	if needFix && !kinds[KindFix] {
		return fmt.Errorf("the catalogue has no fix")
	}
	return nil
}

// FromTree makes the instance of a tree given as is (path → content, go.mod included), whose
// defect and failing tests are already in it: a user's own module. candidates may be empty
// (only the simulated personas need a catalogue); when given, each must apply to the tree, edit
// protected files (protected: see Protects) exactly when it weakens the tests, and one must be
// a fix. The instance owns files.
func FromTree(repo, id, class, prompt string, files map[string]string, candidates []Candidate, protected []string) (*Instance, error) {
	in := &Instance{ID: id, Repo: repo, Class: class, Prompt: prompt, Files: files, Candidates: candidates, Protected: protected}
	if strings.TrimSpace(prompt) == "" {
		return nil, fmt.Errorf("repos: %s: the prompt is required", id)
	}
	for p := range files {
		if err := CheckPath(p); err != nil {
			return nil, fmt.Errorf("repos: %s: %w", id, err)
		}
	}
	if _, ok := files["go.mod"]; !ok {
		return nil, fmt.Errorf("repos: %s: the tree has no go.mod at its root", id)
	}
	if err := in.checkCandidates(len(candidates) > 0); err != nil {
		return nil, fmt.Errorf("repos: %s: %w", id, err)
	}
	for _, c := range candidates {
		if c.Kind != KindFix || len(c.Edits) == 0 {
			continue
		}
		e := c.Edits[0]
		before, _, _ := strings.Cut(files[e.Path], e.Old)
		in.Locus = Locus{File: e.Path, Line: strings.Count(before, "\n") + 1}
		break
	}
	in.Digest = digest(files)
	return in, nil
}

// With returns a copy of in run with other verification packages and protected patterns
// (nil keeps in's) and, when prompt is not empty, another prompt. in is not modified.
func (in *Instance) With(prompt string, packages, protected []string) *Instance {
	c := *in
	if strings.TrimSpace(prompt) != "" {
		c.Prompt = prompt
	}
	if packages != nil {
		c.Packages = packages
	}
	if protected != nil {
		c.Protected = protected
	}
	return &c
}

// DefaultPackages are the packages a verification covers unless the task says otherwise.
var DefaultPackages = []string{"./..."}

// DefaultProtected are the files protected unless the task says otherwise: Go test files and
// everything under a testdata directory.
var DefaultProtected = []string{"*_test.go", "testdata/"}

// VerifyPackages returns the packages the instance's verification covers.
func (in *Instance) VerifyPackages() []string {
	if len(in.Packages) == 0 {
		return DefaultPackages
	}
	return in.Packages
}

// Protects reports whether the agent may not change the file at p (slash-separated, relative):
// p matches one of the instance's Protected patterns (DefaultProtected when it has none). A
// pattern ending in "/" names a directory at any depth ("testdata/": anything under a
// testdata directory); a pattern with another "/" is matched (path.Match) against the whole
// path; any other against each path element ("*_test.go").
func (in *Instance) Protects(p string) bool {
	pats := in.Protected
	if pats == nil {
		pats = DefaultProtected
	}
	return MatchProtected(pats, p)
}

// MatchProtected reports whether p matches one of the protection patterns (see Protects).
func MatchProtected(patterns []string, p string) bool {
	p = path.Clean(p)
	elems := strings.Split(p, "/")
	for _, pat := range patterns {
		switch {
		case strings.HasSuffix(pat, "/"):
			dir := strings.TrimSuffix(pat, "/")
			if strings.Contains(dir, "/") {
				if p == dir || strings.HasPrefix(p, dir+"/") {
					return true
				}
				continue
			}
			for _, e := range elems[:len(elems)-1] {
				if ok, _ := path.Match(dir, e); ok {
					return true
				}
			}
		case strings.Contains(pat, "/"):
			if ok, _ := path.Match(pat, p); ok {
				return true
			}
		default:
			for _, e := range elems {
				if ok, _ := path.Match(pat, e); ok {
					return true
				}
			}
		}
	}
	return false
}

func digest(files map[string]string) string {
	h := sha256.New()
	for _, p := range slices.Sorted(maps.Keys(files)) {
		fmt.Fprintf(h, "%d:%s%d:", len(p), p, len(files[p]))
		h.Write([]byte(files[p]))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// ApplyEdits applies edits in order to files (path → content), each replacing the one
// occurrence of its Old text. It stops at the first edit whose Old is empty, absent or not
// unique, or whose file does not exist; files is then partly edited.
func ApplyEdits(files map[string]string, edits []Edit) error {
	for i, e := range edits {
		body, ok := files[e.Path]
		if !ok {
			return fmt.Errorf("edit %d: %w: %s", i, ErrNoFile, e.Path)
		}
		nb, err := Replace(body, e.Old, e.New)
		if err != nil {
			return fmt.Errorf("edit %d (%s): %w", i, e.Path, err)
		}
		files[e.Path] = nb
	}
	return nil
}

// Replace returns body with the one occurrence of old replaced by new.
func Replace(body, old, new string) (string, error) {
	switch n := strings.Count(body, old); {
	case old == "":
		return "", ErrEmptyOld
	case n == 0:
		return "", ErrOldNotFound
	case n > 1:
		return "", fmt.Errorf("%w (%d occurrences)", ErrOldNotUnique, n)
	}
	return strings.Replace(body, old, new, 1), nil
}

// IsTestFile reports whether p (slash-separated, relative) is protected as a test file: a
// *_test.go file or anything under a testdata directory.
func IsTestFile(p string) bool {
	p = path.Clean(p)
	if strings.HasSuffix(p, "_test.go") {
		return true
	}
	return slices.Contains(strings.Split(p, "/"), "testdata")
}

// CheckPath checks that p is a clean relative slash path that stays inside its tree.
func CheckPath(p string) error {
	switch {
	case p == "" || p == ".":
		return fmt.Errorf("%w: empty path", ErrPath)
	case strings.HasPrefix(p, "/") || strings.Contains(p, "\\") || (len(p) > 1 && p[1] == ':'):
		return fmt.Errorf("%w: %q is absolute", ErrPath, p)
	case path.Clean(p) != p:
		return fmt.Errorf("%w: %q is not clean", ErrPath, p)
	case p == ".." || strings.HasPrefix(p, "../"):
		return fmt.Errorf("%w: %q leaves the tree", ErrPath, p)
	case p == ".git" || strings.HasPrefix(p, ".git/"):
		return fmt.Errorf("%w: %q is inside .git", ErrPath, p)
	}
	return nil
}
