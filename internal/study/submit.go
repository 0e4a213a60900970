package study

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/bus"
	"github.com/nats-io/nats.go/jetstream"
)

// submitWindow bounds the job publishes awaiting acknowledgement during Submit.
const submitWindow = 512

// SubmitResult says what Submit did.
type SubmitResult struct {
	Study string
	Jobs  int // jobs in the plan
	// Published counts jobs newly stored in DITTO_JOBS; Duplicates those JetStream recognised
	// as already submitted (same Nats-Msg-Id within the duplicate window).
	Published  int
	Duplicates int
	// AlreadyDefined is true when the study's study.defined event was found with the same spec:
	// nothing was published. DefinedAt is that event's time.
	AlreadyDefined bool
	DefinedAt      time.Time
}

// DefinedSubject is the subject of a study's study.defined event.
func DefinedSubject(study string) (string, error) {
	return events.Subject(study, events.StudyRun, events.TypeStudyDefined)
}

// Defined returns the study.defined event of a study from DITTO_EVENTS, or ok=false when the
// study was never submitted.
func Defined(ctx context.Context, b *bus.Bus, study string) (e events.Envelope, ok bool, err error) {
	subject, err := DefinedSubject(study)
	if err != nil {
		return e, false, err
	}
	s, err := b.Stream(ctx, events.EventsStream)
	if err != nil {
		return e, false, fmt.Errorf("study: %w", err)
	}
	msg, err := s.LastMsg(ctx, subject)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return e, false, nil
	}
	if err != nil {
		return e, false, fmt.Errorf("study: look up %s: %w", subject, err)
	}
	e, err = events.Decode(msg.Data)
	if err != nil {
		return e, false, fmt.Errorf("study: stored %s does not decode: %w", subject, err)
	}
	return e, true, nil
}

// Submit publishes a plan: every job on ditto.jobs.<study> with Nats-Msg-Id "<study>/<run>",
// waiting for JetStream to acknowledge each, then the study.defined event. It is idempotent:
// if study.defined already exists with the same spec it publishes nothing
// (AlreadyDefined); with a different spec it returns ErrStudyExists. source names the
// submitter in the event (e.g. "producer"). The streams must exist (bus.EnsureStreams).
func Submit(ctx context.Context, b *bus.Bus, p *Plan, source string) (SubmitResult, error) {
	res := SubmitResult{Study: p.Spec.Name, Jobs: len(p.Jobs)}
	prev, found, err := Defined(ctx, b, p.Spec.Name)
	if err != nil {
		return res, err
	}
	if found {
		old, _ := prev.Payload.(events.StudyDefined)
		res.DefinedAt = prev.Time
		if !bytes.Equal(old.Spec, p.Defined.Spec) {
			return res, fmt.Errorf("%w: study %q was submitted at %s with %d expected runs; give this spec another name",
				ErrStudyExists, p.Spec.Name, prev.Time.Format(time.RFC3339), old.ExpectedRuns)
		}
		res.AlreadyDefined = true
		return res, nil
	}
	jr, err := submitJobs(ctx, b, p)
	res.Published, res.Duplicates = jr.Published, jr.Duplicates
	if err != nil {
		return res, err
	}
	if err := publishDefined(ctx, b, p, source); err != nil {
		return res, err
	}
	return res, nil
}

// publishDefined publishes study.defined after every job is stored, so that its presence
// means the whole study was submitted. Its Nats-Msg-Id is derived from the study name rather
// than the event id, so that two concurrent submissions store it once.
func publishDefined(ctx context.Context, b *bus.Bus, p *Plan, source string) error {
	if source == "" {
		source = "producer"
	}
	e := events.New(p.Spec.Name, events.StudyRun, time.Now(), p.Defined)
	e.Seq = 1
	e.Source = events.Source{Kind: events.SourceHarness, ID: source}
	data, err := events.Encode(&e)
	if err != nil {
		return fmt.Errorf("study: encode study.defined: %w", err)
	}
	subject, err := events.SubjectOf(&e)
	if err != nil {
		return err
	}
	pub, err := b.NewPublisher(bus.WithMaxInFlight(1))
	if err != nil {
		return err
	}
	if err := pub.Publish(ctx, subject, p.Spec.Name+"/"+events.StudyRun+"/"+string(events.TypeStudyDefined), data); err != nil {
		return fmt.Errorf("study: publish study.defined: %w", err)
	}
	if err := pub.Wait(ctx); err != nil {
		return fmt.Errorf("study: publish study.defined: %w", err)
	}
	return nil
}

// submitJobs publishes every job of p and waits for each acknowledgement, counting the jobs
// JetStream already held (a submission cut short and made again).
func submitJobs(ctx context.Context, b *bus.Bus, p *Plan) (SubmitResult, error) {
	var res SubmitResult
	subject, err := events.JobSubject(p.Spec.Name)
	if err != nil {
		return res, err
	}
	var published, duplicates atomic.Int64
	pub, err := b.NewPublisher(bus.WithMaxInFlight(submitWindow), bus.WithAckFunc(func(a bus.Ack) {
		if a.Duplicate {
			duplicates.Add(1)
		} else {
			published.Add(1)
		}
	}))
	if err != nil {
		return res, err
	}
	for i := range p.Jobs {
		j := &p.Jobs[i]
		data, err := j.Encode()
		if err == nil {
			err = pub.Publish(ctx, subject, j.MsgID(), data)
		}
		if err != nil {
			res.Published, res.Duplicates = int(published.Load()), int(duplicates.Load())
			return res, fmt.Errorf("study: publish job %s: %w", j.MsgID(), err)
		}
	}
	err = pub.Wait(ctx)
	res.Published, res.Duplicates = int(published.Load()), int(duplicates.Load())
	if err != nil {
		return res, fmt.Errorf("study: jobs not acknowledged: %w", err)
	}
	return res, nil
}

// Submitted rebuilds the plan of a submitted study from its study.defined event (which holds
// the normalized spec), and returns when it was submitted. Errors wrap ErrNotSubmitted when
// the study was never submitted.
func Submitted(ctx context.Context, b *bus.Bus, name string) (*Plan, time.Time, error) {
	e, ok, err := Defined(ctx, b, name)
	if err != nil {
		return nil, time.Time{}, err
	}
	if !ok {
		return nil, time.Time{}, fmt.Errorf("%w: %q", ErrNotSubmitted, name)
	}
	def, _ := e.Payload.(events.StudyDefined)
	s, err := Parse(def.Spec)
	if err != nil {
		return nil, e.Time, fmt.Errorf("study: the recorded spec of %s no longer parses: %w", name, err)
	}
	p, err := Expand(s)
	if err != nil {
		return nil, e.Time, err
	}
	return p, e.Time, nil
}
