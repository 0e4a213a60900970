package harness_test

import (
	"context"
	"sync"
	"testing"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/condition"
	"github.com/dittolab/ditto/internal/harness"
	"github.com/dittolab/ditto/internal/harness/harnesstest"
	"github.com/dittolab/ditto/internal/tasks"
)

// TestConcurrentRuns: a worker runs many runs at once over shared tasks, schemas and fixture
// caches; run with -race.
func TestConcurrentRuns(t *testing.T) {
	names := []string{"aml_screening", "credit_ecl", "renal_dosing"}
	var wg sync.WaitGroup
	errs := make(chan string, 24)
	for i := range 24 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := names[i%3]
			task, _ := tasks.Get(name)
			c, _ := condition.Parse([]string{"baseline", "harness", "harness_sp"}[i%3])
			s := harness.RunSpec{Task: name, Instance: i % len(task.Instances), Condition: c, Model: "ideal"}
			rec := harnesstest.NewRecorder()
			res, err := harness.Run(context.Background(), s, harnesstest.IdealModel(task), rec)
			if err != nil || res.Status != events.StatusSucceeded {
				errs <- name + ": " + res.Status + " " + res.Error
				return
			}
			if _, err := rec.Fold(); err != nil {
				errs <- err.Error()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}
