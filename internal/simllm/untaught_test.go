package simllm

import (
	"bytes"
	"strings"
	"testing"

	"github.com/dittolab/ditto/internal/tasks"
)

// untaughtTask is a task file the personas were never taught: nothing of it is in the
// catalogue, so they act from the request alone.
func untaughtTask(t testing.TB) *tasks.Task {
	t.Helper()
	f, err := tasks.LoadFile("testdata/ifrs9_staging.yaml")
	if err != nil {
		t.Fatal(err)
	}
	task, err := tasks.FromFile(f, nil)
	if err != nil {
		t.Fatal(err)
	}
	if task.Ideal != nil {
		t.Fatal("a task file has no ideal agent")
	}
	return task
}

// TestUntaughtTask: on a task they were never taught, the personas read the request — the
// offered tools in order, the instance's input, earlier outputs, the harness's answers — and
// act: they call the tools in order with arguments taken from what they have seen (the
// exposure id of the input) or drawn from the schemas (the stage, from its enum), vary with
// the seed, and replay a seed exactly.
func TestUntaughtTask(t *testing.T) {
	task := untaughtTask(t)
	s := mustServer(t, Config{})
	for _, model := range []string{"sim-steady", "sim-wobbly"} {
		t.Run(model, func(t *testing.T) {
			finals := map[string]bool{}
			complete, correct, named := 0, 0, 0
			const runs = 24
			for seed := int64(0); seed < runs; seed++ {
				inst := &task.Instances[seed%3]
				l := drive(t, s, model, task, inst, seed, runOpts{forced: true})
				if l.violations > 0 {
					t.Errorf("seed %d: %d calls of another tool than the forced one", seed, l.violations)
				}
				if len(l.calls) > 0 && strings.Contains(string(l.calls[0].Args), `"`+inst.ID+`"`) {
					named++ // taken from the input (a persona's deviation may drop or change it)
				}
				if l.final != nil {
					complete++
					finals[string(l.final)] = true
					if task.Check(inst, l.final) {
						correct++
					}
				}
				again := drive(t, s, model, task, inst, seed, runOpts{forced: true})
				if len(again.bodies) != len(l.bodies) {
					t.Fatalf("seed %d: %d responses, then %d for the same seed", seed, len(l.bodies), len(again.bodies))
				}
				for i := range l.bodies {
					if !bytes.Equal(l.bodies[i], again.bodies[i]) {
						t.Fatalf("seed %d: response %d differs for the same seed", seed, i)
					}
				}
			}
			if named < runs*2/3 {
				t.Errorf("%d of %d first calls named the input's exposure", named, runs)
			}
			if complete < runs/2 {
				t.Errorf("%d of %d runs reached the final tool under forced tools", complete, runs)
			}
			if correct == 0 || correct == complete {
				t.Errorf("%d of %d complete runs correct: the stage is drawn from the schema, so some should be right and some wrong", correct, complete)
			}
			if len(finals) < 2 {
				t.Errorf("every run recorded the same output %v: no variance across seeds", finals)
			}
		})
	}
}

// TestUntaughtFollowsHints: under free execution the persona calls the offered tools in
// order, moves to the tool a refusal names ("authorizes only ..."), and stops once every tool
// has succeeded.
func TestUntaughtFollowsHints(t *testing.T) {
	task := untaughtTask(t)
	s := mustServer(t, Config{})
	ordered := 0
	for seed := int64(0); seed < 12; seed++ {
		l := drive(t, s, "sim-steady", task, &task.Instances[1], seed, runOpts{})
		names := toolNames(l.calls)
		if len(names) >= 3 && names[0] == "load_exposure" && names[1] == "assess_sicr" && names[2] == "record_stage" {
			ordered++
		}
		if len(l.calls) >= 12 {
			t.Errorf("seed %d: %d calls: the persona never stopped", seed, len(l.calls))
		}
	}
	if ordered < 6 {
		t.Errorf("%d of 12 free runs called the tools in the offered order", ordered)
	}
	// A refusal naming the state's tool sends the persona there.
	p := DefaultPersonas()[0]
	tr := &turn{p: &p, offered: map[string]*functionDef{"load_exposure": {}, "assess_sicr": {}, "record_stage": {}},
		order: []string{"load_exposure", "assess_sicr", "record_stage"},
		conv:  &conversation{results: []tasks.ToolResult{{Tool: "record_stage", Err: "unauthorized: state LOAD authorizes only load_exposure"}}}}
	if next, done := tr.genericNext(); done || next != "load_exposure" {
		t.Errorf("after the refusal: next %q (done %v), want load_exposure", next, done)
	}
}

// TestUntaughtPlansTheListedWorkflow: asked for a structured plan, the persona plans the path
// of the workflow the request lists (the harness's prompt), taking the first successor where
// it branches.
func TestUntaughtPlansTheListedWorkflow(t *testing.T) {
	p := DefaultPersonas()[0]
	tr := &turn{p: &p, conv: &conversation{users: []string{"Review DPA-1.", "Before using any tool, return your plan ... " +
		"Workflow states (state: tool → next states): FETCH: fetch_agreement → ASSESS; ASSESS: assess_requirements → AMEND or FILE; " +
		"AMEND: request_amendment → FILE; FILE: file_review → final. Where the workflow branches ..."}}}
	steps, err := tr.planSteps()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range steps {
		got = append(got, s.State+":"+s.Tool)
	}
	want := "FETCH:fetch_agreement ASSESS:assess_requirements AMEND:request_amendment FILE:file_review"
	if strings.Join(got, " ") != want {
		t.Errorf("plan %v, want %s", got, want)
	}
}
