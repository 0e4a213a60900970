package worker

import (
	"fmt"

	"github.com/dittolab/ditto/internal/harness"
	"github.com/dittolab/ditto/internal/study"
)

// RunSpec is the harness's view of a job: its task, input and seed indexes, its condition
// rebuilt from the components and limits it carries, and its model and endpoint. Errors wrap
// study.ErrInvalidJob (a condition this build does not know).
func RunSpec(job *study.Job) (harness.RunSpec, error) {
	c, err := job.HarnessCondition()
	if err != nil {
		return harness.RunSpec{}, fmt.Errorf("%w: %v", study.ErrInvalidJob, err)
	}
	return harness.RunSpec{
		Task:      job.Task,
		Instance:  job.InputIndex,
		SeedIndex: job.SeedIndex,
		Condition: c,
		Model:     job.Model,
		Endpoint:  job.Endpoint.Name,
		Simulated: job.Endpoint.Sim,
		Seed:      job.Seed,
		Sampling:  job.Sampling,
	}, nil
}
