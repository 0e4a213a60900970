package tasks

import (
	"fmt"

	"github.com/dittolab/ditto/internal/coding/repos"
)

// Coding marks a coding task: its run works on an instance of a shipped repository
// (internal/coding/repos) in an ephemeral workspace, under the coding harness
// (internal/coding), instead of walking a state graph. A coding task has one instance, the
// defect; its States, Tools, FinalTool, Check and Ideal are unused.
type Coding struct {
	Repo     string
	Instance string
	Class    string // the defect class
}

// CodingTaskName is the registered name of a repository instance's coding task.
func CodingTaskName(repo, instance string) string { return "coding-" + repo + "-" + instance }

// CodingInstructions is the system prompt shared by every coding task; the coding harness
// adds how its tools are used.
const CodingInstructions = "You are a software engineer fixing a defect in a small Go module checked out in your " +
	"working directory. Read the code, change what is wrong, and keep the tests as they are: the change is " +
	"accepted when go build, go vet and go test pass with no test file changed."

func codingTasks() ([]*Task, error) {
	rs, err := repos.All()
	if err != nil {
		return nil, err
	}
	var out []*Task
	for _, r := range rs {
		for _, in := range r.Instances {
			out = append(out, &Task{
				Name:         CodingTaskName(r.Name, in.ID),
				Title:        fmt.Sprintf("%s: %s (%s)", r.Name, in.ID, in.Class),
				Instructions: CodingInstructions,
				Instances:    []Instance{{ID: in.ID, Prompt: in.Prompt}},
				Coding:       &Coding{Repo: r.Name, Instance: in.ID, Class: in.Class},
			})
		}
	}
	return out, nil
}

func (t *Task) validateCoding() error {
	if t.Name == "" || len(t.Instances) != 1 || t.Coding.Repo == "" || t.Coding.Instance == "" {
		return fmt.Errorf("tasks: %s: a coding task needs a name, one instance, a repository and an instance id", t.Name)
	}
	return nil
}
