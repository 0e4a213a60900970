package worker_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/study"
	"github.com/dittolab/ditto/internal/worker"
)

// countingEndpoint is an endpoint that counts the requests it gets and refuses them all.
func countingEndpoint(t *testing.T) (*httptest.Server, *atomic.Int64) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) {
		n.Add(1)
		http.Error(rw, "no", http.StatusBadRequest)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

// TestKeyFromUnlistedVariableRefused is the reproduction: a spec whose endpoint reads
// its key from AWS_SECRET_ACCESS_KEY, sent as a bearer token to a base URL the spec chose. The
// worker, on its default policy (DITTO_KEY_*, OPENAI_API_KEY), records the run as errored
// with a permanent cause naming the variable and the flag that allows it, and the endpoint
// never gets a request: the variable's value goes nowhere.
func TestKeyFromUnlistedVariableRefused(t *testing.T) {
	e := newEnv(t, 0)
	ctx := testCtx(t, 30*time.Second)
	t.Setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
	srv, hits := countingEndpoint(t)
	p := realEndpointSpec(t, "awskey", srv.URL+"/v1", "AWS_SECRET_ACCESS_KEY", 2)
	e.submit(ctx, p)
	w := e.startWorker(worker.Config{ID: "w", Concurrency: 2, NakDelay: 10 * time.Millisecond})
	assertErroredAtOnce(t, e, w, "awskey", 2, events.CauseConfig, "AWS_SECRET_ACCESS_KEY", "--key-envs", "DITTO_KEY_ENVS")
	if n := hits.Load(); n != 0 {
		t.Errorf("the endpoint got %d requests; a key from a variable outside the policy must never be sent", n)
	}
	for _, ev := range e.readStudy(ctx, "awskey") {
		raw, _ := events.Encode(&ev)
		if strings.Contains(string(raw), "wJalrXUtnFEMI") {
			t.Errorf("event %s holds the variable's value", ev.Type)
		}
	}
}

// TestKeyEnvsFlagAllowsVariable: the operator's --key-envs lets a job read its key from the
// variables it lists, and then only those: the same job runs (the endpoint is called with the
// key) on a worker whose policy lists the variable.
func TestKeyEnvsFlagAllowsVariable(t *testing.T) {
	e := newEnv(t, 0)
	ctx := testCtx(t, 30*time.Second)
	t.Setenv("TEAM_LLM_TOKEN", "team-token-0123456789")
	var auth atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		auth.Store(r.Header.Get("Authorization"))
		http.Error(rw, "model unknown", http.StatusNotFound)
	}))
	t.Cleanup(srv.Close)
	p := realEndpointSpec(t, "teamkey", srv.URL+"/v1", "TEAM_LLM_TOKEN", 1)
	e.submit(ctx, p)
	w := e.startWorker(worker.Config{ID: "w", Concurrency: 1, Endpoints: study.EndpointPolicy{KeyEnvs: "DITTO_KEY_*,TEAM_LLM_*"}})
	waitFor(t, ctx, "the run to be recorded", func() bool { return w.Stats().Acked.Load() == 1 })
	if got, _ := auth.Load().(string); got != "Bearer team-token-0123456789" {
		t.Errorf("the endpoint got Authorization %q, want the allowed variable's key", got)
	}
}

// TestBaseURLOutsidePolicyRefused: with --base-urls set, a job sending its key (from an
// allowed variable) to another base URL is recorded as errored naming the URL and the flag,
// and that URL gets no request.
func TestBaseURLOutsidePolicyRefused(t *testing.T) {
	e := newEnv(t, 0)
	ctx := testCtx(t, 30*time.Second)
	t.Setenv("OPENAI_API_KEY", "sk-test-0123456789abcdef")
	srv, hits := countingEndpoint(t)
	p := realEndpointSpec(t, "elsewhere", srv.URL+"/v1", "OPENAI_API_KEY", 1)
	e.submit(ctx, p)
	w := e.startWorker(worker.Config{ID: "w", Concurrency: 1, NakDelay: 10 * time.Millisecond,
		Endpoints: study.EndpointPolicy{BaseURLs: "https://api.openai.com/v1"}})
	assertErroredAtOnce(t, e, w, "elsewhere", 1, events.CauseConfig, srv.URL+"/v1", "--base-urls", "DITTO_BASE_URLS")
	if n := hits.Load(); n != 0 {
		t.Errorf("the endpoint got %d requests; keys must only go to the allowed base URLs", n)
	}
}
