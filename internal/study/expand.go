package study

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/condition"
)

// Plan is an expanded study: its jobs and the study.defined payload.
type Plan struct {
	Spec    *Spec
	Cells   []events.Cell
	Jobs    []Job
	Defined events.StudyDefined
}

// Expand validates s (normalizing a copy first) and expands it into jobs. The result depends
// only on the spec: expanding twice gives identical jobs.
func Expand(s *Spec) (*Plan, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	cells := s.cells()
	// Cell hashes must be distinct: they make the run ids.
	hashes := make([]string, len(cells))
	seen := map[string]int{}
	for i, c := range cells {
		h := cellHash(s.Name, c)
		if j, dup := seen[h]; dup { // 40-bit collision: astronomically unlikely, but never silent
			return nil, fmt.Errorf("study: cells %d and %d hash to the same run id prefix %s", j, i, h)
		}
		seen[h], hashes[i] = i, h
	}
	offsets := make([]int, len(cells))
	maxRuns, total := 0, 0
	for i, c := range cells {
		offsets[i] = total
		total += c.Runs
		maxRuns = max(maxRuns, c.Runs)
	}

	jobs := make([]Job, 0, total)
	for i := 0; i < maxRuns; i++ {
		for ci, c := range cells {
			if i >= c.Runs {
				continue
			}
			j, err := s.job(c, hashes[ci], i, offsets[ci])
			if err != nil {
				return nil, err
			}
			jobs = append(jobs, j)
		}
	}
	specJSON, err := s.Canonical()
	if err != nil {
		return nil, err
	}
	var simulated []string
	for _, m := range s.models() {
		if ep, ok := s.endpointOf(m); ok && s.Endpoints[ep].Sim {
			simulated = append(simulated, m)
		}
	}
	slices.Sort(simulated)
	def := events.StudyDefined{
		Name: s.Name, Cells: cells, ExpectedRuns: total, Paired: s.IsPaired(),
		Simulated: simulated, Spec: specJSON,
	}
	if err := def.Validate(); err != nil {
		return nil, fmt.Errorf("study: study.defined: %w", err)
	}
	return &Plan{Spec: s, Cells: cells, Jobs: jobs, Defined: def}, nil
}

// cells lists the matrix in spec order (task, then model, then condition), then the extra cells.
func (s *Spec) cells() []events.Cell {
	var out []events.Cell
	if s.Runs > 0 {
		for _, t := range s.Tasks {
			for _, m := range s.Models {
				for _, c := range s.Conditions {
					out = append(out, events.Cell{Task: t, Model: m, Condition: c, Runs: s.Runs})
				}
			}
		}
	}
	for _, c := range s.Cells {
		r := c.Runs
		if r == 0 {
			r = s.Runs
		}
		out = append(out, events.Cell{Task: c.Task, Model: c.Model, Condition: c.Condition, Runs: r})
	}
	return out
}

// models lists the distinct models of the study.
func (s *Spec) models() []string {
	var out []string
	for _, c := range s.cells() {
		if !slices.Contains(out, c.Model) {
			out = append(out, c.Model)
		}
	}
	return out
}

// cellHash is the run id prefix of a cell: 10 hex digits of SHA-256 over its identity.
func cellHash(study string, c events.Cell) string {
	h := sha256.New()
	for _, part := range []string{study, c.Task, c.Model, c.Condition} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:5])
}

// RunID returns the run id of run index i of a cell: "<cell hash>-<i, zero-padded>".
func RunID(study string, c events.Cell, i int) string {
	return runID(cellHash(study, c), c.Runs, i)
}

// runID pads the index to the width of the cell's largest index, at least 4 digits, so that
// run ids sort in index order within a cell.
func runID(hash string, runs, i int) string {
	return fmt.Sprintf("%s-%0*d", hash, max(len(fmt.Sprint(runs-1)), 4), i)
}

func (s *Spec) job(c events.Cell, hash string, i, offset int) (Job, error) {
	cond, err := s.conditionOf(c.Condition)
	if err != nil {
		return Job{}, fmt.Errorf("study: condition %s: %w", c.Condition, err)
	}
	epName, _ := s.endpointOf(c.Model)
	ep := s.Endpoints[epName]
	seedIndex := i
	if !s.IsPaired() {
		seedIndex = offset + i
	}
	inputs := s.inputsOf(c.Task)
	var seed *int64
	switch s.Seeds.Mode {
	case SeedPerRun, "":
		v := s.Seeds.Base + int64(seedIndex)
		seed = &v
	case SeedFixed:
		v := s.Seeds.Base
		seed = &v
	}
	j := Job{
		Version:    JobVersion,
		Study:      s.Name,
		Run:        runID(hash, c.Runs, i),
		Task:       c.Task,
		Model:      c.Model,
		Condition:  c.Condition,
		Components: cond.Components.Names(),
		Limits: Limits{
			MaxRetries: cond.Limits.MaxRetries, MaxPlanReprompts: cond.Limits.MaxPlanReprompts,
			MaxRepairTurns: cond.Limits.MaxRepairTurns, TokenBudget: cond.Limits.TokenBudget, MaxSteps: cond.Limits.MaxSteps,
		},
		Context: contextOf(cond.Context),
		Endpoint: JobEndpoint{
			Name: epName, Sim: ep.Sim, BaseURL: ep.BaseURL, APIKeyEnv: ep.APIKeyEnv,
			TimeoutSeconds: ep.TimeoutSeconds, MaxRetries: ep.MaxRetries, UseMaxCompletionTokens: ep.UseMaxCompletionTokens,
		},
		Sampling: events.Sampling{
			Temperature: s.Sampling.Temperature, TopP: s.Sampling.TopP, MaxTokens: s.Sampling.MaxTokens,
		},
		Seed:       seed,
		SeedIndex:  seedIndex,
		InputIndex: inputs[seedIndex%len(inputs)],
		Index:      i,
		TaskFile:   s.TaskFiles[c.Task],
	}
	if err := j.Validate(); err != nil {
		return Job{}, err
	}
	return j, nil
}

// contextOf is a job's context field: nil when unmanaged.
func contextOf(c condition.Context) *condition.Context {
	if !c.Managed() {
		return nil
	}
	return &c
}
