package study

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/bus"
	"github.com/dittolab/ditto/internal/bus/bustest"
)

func TestSubmitTwiceCreatesNoExtraJobs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b := bustest.NewServer(t).Connect(t)
	s, err := parseMap(t, base())
	if err != nil {
		t.Fatal(err)
	}
	p, err := Expand(s)
	if err != nil {
		t.Fatal(err)
	}
	jobs := func() uint64 {
		st, err := b.Stream(ctx, events.JobsStream)
		if err != nil {
			t.Fatal(err)
		}
		n, err := st.Count(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		return n
	}

	r1, err := Submit(ctx, b, p, "test")
	if err != nil {
		t.Fatalf("first Submit = %v", err)
	}
	if r1.Published != len(p.Jobs) || r1.Duplicates != 0 || r1.AlreadyDefined {
		t.Fatalf("first Submit = %+v, want %d published", r1, len(p.Jobs))
	}
	if n := jobs(); n != uint64(len(p.Jobs)) {
		t.Fatalf("jobs stream holds %d, want %d", n, len(p.Jobs))
	}
	def, ok, err := Defined(ctx, b, s.Name)
	if err != nil || !ok {
		t.Fatalf("Defined = %v, %v", ok, err)
	}
	if got := def.Payload.(events.StudyDefined); got.ExpectedRuns != len(p.Jobs) || len(got.Cells) != len(p.Cells) {
		t.Errorf("study.defined = %+v", got)
	}

	rebuilt, _, err := Submitted(ctx, b, s.Name)
	if err != nil {
		t.Fatalf("Submitted = %v", err)
	}
	if !reflect.DeepEqual(rebuilt.Jobs, p.Jobs) {
		t.Error("the plan rebuilt from study.defined differs from the submitted one")
	}
	if _, _, err := Submitted(ctx, b, "never"); !errors.Is(err, ErrNotSubmitted) {
		t.Errorf("Submitted(never) = %v, want ErrNotSubmitted", err)
	}

	r2, err := Submit(ctx, b, p, "test")
	if err != nil {
		t.Fatalf("second Submit = %v", err)
	}
	if !r2.AlreadyDefined || r2.Published != 0 {
		t.Errorf("second Submit = %+v, want AlreadyDefined and nothing published", r2)
	}
	if n := jobs(); n != uint64(len(p.Jobs)) {
		t.Errorf("after a second submit the jobs stream holds %d, want %d", n, len(p.Jobs))
	}

	// Even without the study.defined check, the duplicate window stores no job twice:
	// republish the jobs as a submission interrupted before study.defined would.
	r3, err := submitJobs(ctx, b, p)
	if err != nil {
		t.Fatal(err)
	}
	if r3.Published != 0 || r3.Duplicates != len(p.Jobs) {
		t.Errorf("republishing the jobs = %+v, want all %d duplicates", r3, len(p.Jobs))
	}
	if n := jobs(); n != uint64(len(p.Jobs)) {
		t.Errorf("after republishing the jobs stream holds %d, want %d", n, len(p.Jobs))
	}

	// Another spec under the same name is refused.
	m := base()
	m["runs"] = 6
	s2, _ := parseMap(t, m)
	p2, _ := Expand(s2)
	if _, err := Submit(ctx, b, p2, "test"); !errors.Is(err, ErrStudyExists) {
		t.Errorf("Submit(another spec, same name) = %v, want ErrStudyExists", err)
	}
	if n := jobs(); n != uint64(len(p.Jobs)) {
		t.Errorf("after a refused submit the jobs stream holds %d, want %d", n, len(p.Jobs))
	}
}

// Jobs whose acknowledgements are lost when the connection breaks are published again once it
// is back (same msg ids, so each is stored once) instead of failing the submission.
func TestSubmitJobsAcrossReconnect(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv := bustest.NewServer(t)
	direct := srv.Connect(t)
	proxy := bustest.NewProxy(t, srv.ClientURL())
	b, err := bus.Open(ctx, bus.Config{URL: proxy.URL()})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	s, err := parseMap(t, base())
	if err != nil {
		t.Fatal(err)
	}
	p, err := Expand(s)
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := direct.Stream(ctx, events.JobsStream)
	if err != nil {
		t.Fatal(err)
	}
	proxy.Hold()
	type result struct {
		res SubmitResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := submitJobs(ctx, b, p)
		done <- result{res, err}
	}()
	// Every job is stored, none of the acknowledgements has arrived: the connection breaks.
	for n := uint64(0); n < uint64(len(p.Jobs)); {
		select {
		case r := <-done:
			t.Fatalf("submitJobs returned with its acknowledgements held: %+v, %v", r.res, r.err)
		case <-ctx.Done():
			t.Fatalf("%d of %d jobs stored", n, len(p.Jobs))
		case <-time.After(10 * time.Millisecond):
		}
		if n, err = jobs.Count(ctx, ""); err != nil {
			t.Fatal(err)
		}
	}
	proxy.Cut()
	r := <-done
	if r.err != nil || r.res.Published+r.res.Duplicates != len(p.Jobs) {
		t.Fatalf("submitJobs across a reconnect = %+v, %v; want all %d jobs acknowledged", r.res, r.err, len(p.Jobs))
	}
	if n, err := jobs.Count(ctx, ""); err != nil || n != uint64(len(p.Jobs)) {
		t.Errorf("jobs stream holds %d (%v), want %d", n, err, len(p.Jobs))
	}
}
