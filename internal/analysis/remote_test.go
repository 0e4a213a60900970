package analysis

import (
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/dittolab/ditto/internal/queryapi"
	"github.com/dittolab/ditto/internal/sqlguard"
	"github.com/dittolab/ditto/internal/sqlguard/sqlguardtest"
	"github.com/dittolab/ditto/internal/warehouse/warehousetest"
)

// TestComputeThroughAPI: through a serving analyzer's HTTP API (real server on loopback over
// the same database, statements sent with their parameters) the result is identical to the
// one read from the database.
func TestComputeThroughAPI(t *testing.T) {
	sqlguardtest.NeedsQueries(t)
	envs, _ := harnessStudy("s1")
	w := ingest(t, envs)
	srv, err := queryapi.NewServer(w.DB(), queryapi.Config{Token: "secret"})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	ctx := warehousetest.Context(t, 60*time.Second)
	q := queryapi.NewClient(hs.URL, "secret").Querier()
	remote, err := ComputeFrom(ctx, q, "s1", testOpts)
	if err != nil {
		t.Fatalf("ComputeFrom(API) = %v", err)
	}
	if a, b := jsonOf(t, remote), jsonOf(t, mustCompute(t, w.DB(), "s1")); a != b {
		t.Errorf("result through the API differs from the local one:\n%s\n---\n%s", a, b)
	}
	// Parameters travel as values: a name holding a quote and a placeholder is just a name.
	for _, study := range []string{"nope", "it's $1 --"} {
		if _, err := ComputeFrom(ctx, q, study, testOpts); !errors.Is(err, ErrNoStudy) {
			t.Errorf("ComputeFrom(API, %q) = %v, want ErrNoStudy", study, err)
		}
	}

	// A server whose row limit is below the study's runs: a clear ErrTruncated.
	small, err := queryapi.NewServer(w.DB(), queryapi.Config{Limits: sqlguard.Config{MaxRows: 5, RowsCap: 5}})
	if err != nil {
		t.Fatal(err)
	}
	hs2 := httptest.NewServer(small)
	t.Cleanup(hs2.Close)
	if _, err := ComputeFrom(ctx, queryapi.NewClient(hs2.URL, "").Querier(), "s1", testOpts); !errors.Is(err, queryapi.ErrTruncated) {
		t.Errorf("ComputeFrom(small API) = %v, want queryapi.ErrTruncated", err)
	}
}
