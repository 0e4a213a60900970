package tasks

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/dittolab/ditto/internal/coding/repos"
	"github.com/dittolab/ditto/internal/taskfile"
)

// Coding marks a coding task: its run works on a Go repository in an ephemeral workspace,
// under the coding harness (internal/coding), instead of walking a state graph. A coding task
// has one instance, the defect; its States, Tools, FinalTool, Check and Ideal are unused. It is
// read from a task file's coding section (the shipped ones are embedded task files naming a
// shipped repository's instances).
type Coding struct {
	Repo     string // the repository's name: a shipped one's, or the task file's directory's
	Instance string
	Class    string // the defect class
	// Target is what the run works on: the tree with its defect, the verification's packages,
	// the protected files and the catalogue of candidate patches. Shared; must not be modified.
	Target *repos.Instance
}

// CodingTaskName is the name of the shipped coding task of a repository instance.
func CodingTaskName(repo, instance string) string { return "coding-" + repo + "-" + instance }

// CodingInstructions is the system prompt of a coding task whose file gives none; the coding
// harness adds how its tools are used.
const CodingInstructions = "You are a software engineer fixing a defect in a small Go module checked out in your " +
	"working directory. Read the code, change what is wrong, and keep the tests as they are: the change is " +
	"accepted when go build, go vet and go test pass with no test file changed."

// shippedInstances lists the instances of a shipped repository (taskfile.Options.Shipped).
func shippedInstances(repo string) ([]string, bool) {
	rs, err := repos.All()
	if err != nil {
		return nil, false
	}
	for _, r := range rs {
		if r.Name == repo {
			ids := make([]string, len(r.Instances))
			for i, in := range r.Instances {
				ids[i] = in.ID
			}
			return ids, true
		}
	}
	return nil, false
}

// fromCodingFile makes the Task of a checked coding task file. A file naming its repository by
// path must have been loaded from disk (LoadFile reads the tree into it).
func fromCodingFile(f *taskfile.Task) (*Task, error) {
	target, err := codingTarget(f)
	if err != nil {
		return nil, err
	}
	t := &Task{Name: f.Name, Title: f.Title, Instructions: f.Instructions, File: f,
		Instances: []Instance{{ID: target.ID, Prompt: target.Prompt}},
		Coding:    &Coding{Repo: target.Repo, Instance: target.ID, Class: target.Class, Target: target}}
	if t.Instructions == "" {
		t.Instructions = CodingInstructions
	}
	if t.Title == "" {
		t.Title = fmt.Sprintf("%s: %s", target.Repo, target.ID)
		if target.Class != "" {
			t.Title += " (" + target.Class + ")"
		}
	}
	return t, nil
}

// codingTarget is the instance a coding task file names: a shipped one (with the file's
// prompt, packages and protection where it gives them) or its own tree. Problems are reported
// as a *taskfile.Error at the field at fault.
func codingTarget(f *taskfile.Task) (*repos.Instance, error) {
	c := f.Coding
	var pkgs []string
	race := false
	if c.Verify != nil {
		pkgs, race = c.Verify.Packages, c.Verify.Race
	}
	if c.Repository.Shipped != "" {
		in, err := repos.Get(c.Repository.Shipped, c.Instance)
		if err != nil {
			return nil, problem(f, "coding.instance", err.Error())
		}
		out := in.With(c.Prompt, pkgs, c.Protected)
		if c.Class != "" {
			out.Class = c.Class
		}
		out.Race = out.Race || race
		return out, nil
	}
	if len(c.Repository.Files) == 0 {
		return nil, problem(f, "coding.repository.path", fmt.Sprintf("the tree of %s is not read: load the task file from disk, which reads the directory into coding.repository.files", c.Repository.Path))
	}
	var cands []repos.Candidate
	for _, cd := range c.Candidates {
		rc := repos.Candidate{ID: cd.ID, Kind: cd.Kind}
		for _, e := range cd.Edits {
			rc.Edits = append(rc.Edits, repos.Edit{Path: e.Path, Old: e.Old, New: e.New})
		}
		cands = append(cands, rc)
	}
	repo := f.Name
	if c.Repository.Path != "" {
		repo = filepath.Base(filepath.FromSlash(c.Repository.Path))
		if !validToken(repo) {
			repo = f.Name
		}
	}
	files := make(map[string]string, len(c.Repository.Files))
	for p, body := range c.Repository.Files {
		files[p] = body
	}
	in, err := repos.FromTree(repo, c.Instance, c.Class, c.Prompt, files, cands, c.Protected)
	if err != nil {
		var ce *repos.CandidateError
		if errors.As(err, &ce) {
			return nil, problem(f, fmt.Sprintf("coding.candidates[%d]", ce.Index), fmt.Sprintf("%s: %v", ce.ID, ce.Err))
		}
		return nil, problem(f, "coding.repository", strings.TrimPrefix(err.Error(), "repos: "))
	}
	in.Packages, in.Race = pkgs, race
	return in, nil
}

// problem is a *taskfile.Error of one problem at path in f.
func problem(f *taskfile.Task, path, msg string) error { return problemAt(f.Name, f, path, msg) }

func validToken(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for _, r := range s {
		if !(r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return true
}

func (t *Task) validateCoding() error {
	if t.Name == "" || len(t.Instances) != 1 || t.Coding.Repo == "" || t.Coding.Instance == "" || t.Coding.Target == nil {
		return fmt.Errorf("tasks: %s: a coding task needs a name, one instance, a repository, an instance id and its target", t.Name)
	}
	return nil
}
