package study

import (
	"context"
	"errors"
	"fmt"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/bus"
	"github.com/nats-io/nats.go/jetstream"
)

// Progress is how far a submitted study is.
type Progress struct {
	Expected int // runs in the plan
	Finished int // runs with at least one run.finished
	Queued   int // jobs still in DITTO_JOBS (waiting or running)
}

// Done reports whether every run finished and no job is left.
func (p Progress) Done() bool { return p.Queued == 0 && p.Finished >= p.Expected }

// GetProgress reads the study's progress from the streams' subject counts (cheap: no message
// is read).
func GetProgress(ctx context.Context, b *bus.Bus, p *Plan) (Progress, error) {
	pr := Progress{Expected: len(p.Jobs)}
	jobs, _ := events.JobSubject(p.Spec.Name)
	s, err := b.Stream(ctx, events.JobsStream)
	if err != nil {
		return pr, fmt.Errorf("study: %w", err)
	}
	queued, err := s.Count(ctx, jobs)
	if err != nil {
		return pr, fmt.Errorf("study: %w", err)
	}
	pr.Queued = int(queued)
	if s, err = b.Stream(ctx, events.EventsStream); err != nil {
		return pr, fmt.Errorf("study: %w", err)
	}
	finished, err := s.SubjectCounts(ctx, finishedFilter(p.Spec.Name))
	if err != nil {
		return pr, fmt.Errorf("study: %w", err)
	}
	pr.Finished = len(finished) // one subject per run
	return pr, nil
}

func finishedFilter(study string) string {
	return fmt.Sprintf("%s.%s.*.%s", events.EventsPrefix, study, events.TypeRunFinished)
}

// CellOutcome counts the outcomes of one cell's runs by status.
type CellOutcome struct {
	events.Cell
	Statuses map[string]int
	// Causes counts the errored runs by cause ("kind: detail").
	Causes map[string]int
}

// Outcomes reads every run.finished of the study and counts, per cell, the status of each
// run's outcome: its latest finished attempt that was not aborted (an aborted attempt counts
// only when it is all there is).
func Outcomes(ctx context.Context, b *bus.Bus, p *Plan) ([]CellOutcome, error) {
	filter := finishedFilter(p.Spec.Name)
	s, err := b.Stream(ctx, events.EventsStream)
	if err != nil {
		return nil, fmt.Errorf("study: %w", err)
	}
	want, err := s.Count(ctx, filter)
	if err != nil {
		return nil, fmt.Errorf("study: %w", err)
	}
	type outcome struct {
		attempt int
		status  string
		cause   string
	}
	best := map[string]outcome{}
	err = s.Read(ctx, filter, want, func(m jetstream.Msg) error {
		e, err := events.Decode(m.Data())
		if err != nil {
			return nil
		}
		f, ok := e.Payload.(events.RunFinished)
		if !ok {
			return nil
		}
		cur, seen := best[e.Run]
		better := !seen ||
			(cur.status == events.StatusAborted) != (f.Status == events.StatusAborted) && f.Status != events.StatusAborted ||
			(cur.status == events.StatusAborted) == (f.Status == events.StatusAborted) && e.Attempt > cur.attempt
		if better {
			best[e.Run] = outcome{e.Attempt, f.Status, f.Cause.String()}
		}
		return nil
	})
	// Outcomes are shown while a study runs: a read cut short (a fetch that came back empty, as
	// during a leader election) shows what was delivered rather than nothing.
	if err != nil && !errors.Is(err, bus.ErrShortRead) {
		return nil, fmt.Errorf("study: read outcomes: %w", err)
	}
	index := map[cellKey]int{}
	out := make([]CellOutcome, len(p.Cells))
	for i, c := range p.Cells {
		out[i] = CellOutcome{Cell: c, Statuses: map[string]int{}, Causes: map[string]int{}}
		index[cellKey{c.Task, c.Model, c.Condition}] = i
	}
	for _, j := range p.Jobs {
		if o, ok := best[j.Run]; ok {
			c := &out[index[cellKey{j.Task, j.Model, j.Condition}]]
			c.Statuses[o.status]++
			if o.status == events.StatusErrored {
				c.Causes[o.cause]++
			}
		}
	}
	return out, nil
}
