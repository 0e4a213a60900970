package study

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/dittolab/ditto/events"
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
		st, err := b.JetStream().Stream(ctx, events.JobsStream)
		if err != nil {
			t.Fatal(err)
		}
		info, err := st.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return info.State.Msgs
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
	def, ok, err := Defined(ctx, b.JetStream(), s.Name)
	if err != nil || !ok {
		t.Fatalf("Defined = %v, %v", ok, err)
	}
	if got := def.Payload.(events.StudyDefined); got.ExpectedRuns != len(p.Jobs) || len(got.Cells) != len(p.Cells) {
		t.Errorf("study.defined = %+v", got)
	}

	rebuilt, _, err := Submitted(ctx, b.JetStream(), s.Name)
	if err != nil {
		t.Fatalf("Submitted = %v", err)
	}
	if !reflect.DeepEqual(rebuilt.Jobs, p.Jobs) {
		t.Error("the plan rebuilt from study.defined differs from the submitted one")
	}
	if _, _, err := Submitted(ctx, b.JetStream(), "never"); !errors.Is(err, ErrNotSubmitted) {
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
	r3, err := submitJobs(ctx, b.JetStream(), p)
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
