package worker_test

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/study"
	"github.com/dittolab/ditto/internal/worker"
)

// realEndpointSpec is a one-task study on a real (OpenAI-compatible) endpoint at baseURL
// whose key is read from keyEnv ("" for none).
func realEndpointSpec(t *testing.T, name, baseURL, keyEnv string, runs int) *study.Plan {
	t.Helper()
	s := &study.Spec{
		Name: name, Tasks: []string{"renal_dosing"}, Models: []string{"gpt-4o-mini"}, Conditions: []string{"harness"}, Runs: runs,
		Endpoints: map[string]study.Endpoint{"openai": {BaseURL: baseURL, APIKeyEnv: keyEnv, Models: []string{"gpt-4o-mini"}, MaxRetries: 1}},
		Seeds:     study.Seeds{Base: 7},
	}
	s.Normalize()
	p, err := study.Expand(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestMissingKeyErrsAtOnce: a job whose endpoint's key variable is unset is recorded at its
// first delivery as errored, cause missing_key, naming the variable; it is not retried.
func TestMissingKeyErrsAtOnce(t *testing.T) {
	e := newEnv(t, 0)
	ctx := testCtx(t, 30*time.Second)
	t.Setenv("DITTO_KEY_TEST_NO_SUCH", "")
	p := realEndpointSpec(t, "nokey", "http://127.0.0.1:9/v1", "DITTO_KEY_TEST_NO_SUCH", 3)
	e.submit(ctx, p)
	w := e.startWorker(worker.Config{ID: "w", Concurrency: 2, NakDelay: 10 * time.Millisecond})
	assertErroredAtOnce(t, e, w, "nokey", 3, events.CauseMissingKey, "DITTO_KEY_TEST_NO_SUCH")
	if n := e.streamCount(ctx, events.JobsStream, ""); n != 0 {
		t.Errorf("%d jobs left", n)
	}
}

// TestNothingListeningErrs: an endpoint where nothing listens is tried (the client's bounded
// retries), then the run is recorded as errored, cause unreachable, and the job acknowledged.
func TestNothingListeningErrs(t *testing.T) {
	e := newEnv(t, 0)
	ctx := testCtx(t, 60*time.Second)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	p := realEndpointSpec(t, "refused", "http://"+addr+"/v1", "", 1)
	e.submit(ctx, p)
	w := e.startWorker(worker.Config{ID: "w", Concurrency: 1})
	waitFor(t, ctx, "the run to be recorded", func() bool { return w.Stats().Acked.Load() == 1 })
	hs := histories(t, e.readStudy(ctx, "refused"))
	r, err := events.Fold(hs[attemptKey{p.Jobs[0].Run, 1}])
	if err != nil || !r.Done() {
		t.Fatalf("fold: %+v, %v", r.Finished, err)
	}
	c := r.Finished.Cause
	if r.Finished.Status != events.StatusErrored || c.Kind != events.CauseUnreachable || c.Permanent || c.Attempts != 2 ||
		!strings.Contains(c.Detail, "refused") {
		t.Errorf("run.finished = %s %#v, want errored, unreachable after 2 attempts (max_retries 1)", r.Finished.Status, c)
	}
}
