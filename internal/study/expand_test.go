package study

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/condition"
)

func TestExpandIsDeterministicAndPaired(t *testing.T) {
	m := base()
	m["inputs"] = []any{0, 1, 2}
	s, err := parseMap(t, m)
	if err != nil {
		t.Fatal(err)
	}
	p1, err := Expand(s)
	if err != nil {
		t.Fatal(err)
	}
	p2, _ := Expand(s)
	if !reflect.DeepEqual(p1.Jobs, p2.Jobs) {
		t.Fatal("Expand twice gave different jobs")
	}
	if want := 2 * 2 * 3 * 5; len(p1.Jobs) != want || p1.Defined.ExpectedRuns != want || len(p1.Defined.Cells) != 12 {
		t.Fatalf("jobs %d, expected_runs %d, cells %d; want %d, %d, 12", len(p1.Jobs), p1.Defined.ExpectedRuns, len(p1.Defined.Cells), want, want)
	}
	runs := map[string]bool{}
	type pairKey struct {
		task, model string
		index       int
	}
	pairs := map[pairKey]Job{}
	for _, j := range p1.Jobs {
		if runs[j.Run] {
			t.Fatalf("run id %s twice", j.Run)
		}
		runs[j.Run] = true
		if err := events.ValidateToken("run", j.Run); err != nil {
			t.Errorf("run id %q is not subject-safe: %v", j.Run, err)
		}
		if j.MsgID() != "s1/"+j.Run {
			t.Errorf("MsgID() = %q", j.MsgID())
		}
		k := pairKey{j.Task, j.Model, j.Index}
		if other, ok := pairs[k]; ok {
			if other.InputIndex != j.InputIndex || *other.Seed != *j.Seed || other.SeedIndex != j.SeedIndex {
				t.Errorf("paired runs %s and %s differ in input or seed", other.Run, j.Run)
			}
		}
		pairs[k] = j
		if *j.Seed != 100+int64(j.Index) || j.InputIndex != []int{0, 1, 2}[j.Index%3] {
			t.Errorf("run %s index %d: seed %d input %d", j.Run, j.Index, *j.Seed, j.InputIndex)
		}
	}
	// Index-major order: the first 12 jobs are run 0 of every cell.
	for i := 0; i < 12; i++ {
		if p1.Jobs[i].Index != 0 {
			t.Fatalf("job %d has index %d, want run 0 of every cell first", i, p1.Jobs[i].Index)
		}
	}
	if got := RunID("s1", p1.Defined.Cells[0], 3); got != p1.Jobs[36].Run {
		t.Errorf("RunID(cell 0, 3) = %s, want %s", got, p1.Jobs[36].Run)
	}
}

func TestExpandUnpairedSeedsAreUnique(t *testing.T) {
	m := base()
	m["paired"] = false
	s, err := parseMap(t, m)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := Expand(s)
	seeds := map[int64]bool{}
	for _, j := range p.Jobs {
		if seeds[*j.Seed] {
			t.Fatalf("seed %d used twice in an unpaired study", *j.Seed)
		}
		seeds[*j.Seed] = true
	}
	if p.Defined.Paired {
		t.Error("study.defined says paired")
	}
}

func TestJobsAndEventCarryNoSecretButTheVariableName(t *testing.T) {
	m := base()
	m["tasks"] = []any{"credit_ecl"}
	m["models"] = []any{"org/model-x"}
	s, err := parseMap(t, m)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("REMOTE_KEY", "sk-secret-value-123")
	p, _ := Expand(s)
	def, _ := json.Marshal(p.Defined)
	job, _ := p.Jobs[0].Encode()
	for _, b := range [][]byte{def, job} {
		if strings.Contains(string(b), "sk-secret") || !strings.Contains(string(b), "REMOTE_KEY") {
			t.Errorf("%s: want the variable name and never its value", b)
		}
	}
	if p.Jobs[0].Endpoint.BaseURL != "https://example.invalid/v1" || p.Jobs[0].Endpoint.Sim {
		t.Errorf("job endpoint = %+v", p.Jobs[0].Endpoint)
	}
	if len(p.Defined.Simulated) != 0 {
		t.Errorf("simulated = %v, want none", p.Defined.Simulated)
	}
}

func TestDecodeJobRejects(t *testing.T) {
	s, _ := parseMap(t, base())
	p, _ := Expand(s)
	good := p.Jobs[0]
	tests := []struct {
		name   string
		mutate func(j *Job)
		want   string
	}{
		{"version", func(j *Job) { j.Version = 9 }, "version"},
		{"unsafe run", func(j *Job) { j.Run = "a.b" }, "run"},
		{"unknown task", func(j *Job) { j.Task = "nope" }, "unknown task"},
		{"input range", func(j *Job) { j.InputIndex = 99 }, "input_index"},
		{"component", func(j *Job) { j.Components = []string{"zzz"} }, "component"},
		{"no endpoint", func(j *Job) { j.Endpoint = JobEndpoint{Name: "x"} }, "neither sim nor base_url"},
	}
	for _, tt := range tests {
		j := good
		tt.mutate(&j)
		b, _ := json.Marshal(j)
		if _, err := DecodeJob(b); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: DecodeJob = %v, want an ErrInvalidJob mentioning %q", tt.name, err, tt.want)
		}
	}
	if _, err := DecodeJob([]byte("{not json")); err == nil {
		t.Error("DecodeJob(garbage) = nil")
	}
	b, _ := good.Encode()
	if j, err := DecodeJob(b); err != nil || !reflect.DeepEqual(j, good) {
		t.Errorf("DecodeJob(Encode(job)) = %+v, %v", j, err)
	}
}

// TestJobsCarryContext: a custom condition's context and an expression's context term reach
// the jobs, survive encoding, and come back from HarnessCondition; a bad one names its field.
func TestJobsCarryContext(t *testing.T) {
	m := base()
	m["conditions"] = []any{"t4_small", "t0_8k", "baseline"}
	m["custom_conditions"] = map[string]any{"t4_small": map[string]any{"components": []any{"distilled_diagnostics"},
		"context": map[string]any{"tier": "T4", "budget": 6000, "recent": 2}}}
	s, err := parseMap(t, m)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Expand(s)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]condition.Context{
		"t4_small": {Tier: "T4", Budget: 6000, Recent: 2},
		"t0_8k":    {Tier: "T0", Budget: 8000},
		"baseline": {},
	}
	for _, j := range p.Jobs {
		b, err := j.Encode()
		if err != nil {
			t.Fatal(err)
		}
		back, err := DecodeJob(b)
		if err != nil {
			t.Fatal(err)
		}
		c, err := back.HarnessCondition()
		if err != nil || c.Context != want[j.Condition] {
			t.Errorf("job of %s: HarnessCondition().Context = %+v, %v; want %+v", j.Condition, c.Context, err, want[j.Condition])
		}
		if j.Condition == "baseline" && strings.Contains(string(b), `"context"`) {
			t.Errorf("job of an unmanaged condition carries a context: %s", b)
		}
	}
	m["custom_conditions"] = map[string]any{"t4_small": map[string]any{"components": []any{}, "context": map[string]any{"tier": "T9", "budget": 6000}}}
	if _, err := parseMap(t, m); err == nil || !strings.Contains(err.Error(), "custom_conditions.t4_small.context") {
		t.Errorf("Parse(tier T9) error = %v, want one naming custom_conditions.t4_small.context", err)
	}
}
