package harness_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"net/http/httptest"
	"testing"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/harness"
	"github.com/dittolab/ditto/internal/harness/harnesstest"
	"github.com/dittolab/ditto/internal/llm"
	"github.com/dittolab/ditto/internal/simllm"
)

// TestAgainstSimulatedModels drives the harness with the real model client (go-openai over
// loopback HTTP) against ditto's simulated models, in every named condition: every run must
// finish with a history that folds. It logs each cell's success rate and reproducibility
// (share of run pairs with identical plan, states, calls and output), which is what the
// research design measures; it asserts only what the harness guarantees.
func TestAgainstSimulatedModels(t *testing.T) {
	srv, err := simllm.NewServer(simllm.Config{})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	n := 12
	if testing.Short() {
		n = 4
	}
	for _, model := range srv.Models() {
		client, err := llm.NewOpenAI(llm.Config{BaseURL: hs.URL + "/v1", Model: model})
		if err != nil {
			t.Fatal(err)
		}
		for _, task := range []string{"credit_ecl", "renal_dosing", "aml_screening"} {
			for _, c := range []string{"baseline", "harness", "harness_sp"} {
				sigs := map[[32]byte]int{}
				succ := 0
				for seed := range n {
					s := spec(t, task, c, 1)
					sd := int64(seed)
					s.Seed, s.SeedIndex, s.Model, s.Simulated = &sd, seed, model, true
					rec := harnesstest.NewRecorder()
					res, err := harness.Run(context.Background(), s, client, rec)
					if err != nil {
						t.Fatalf("%s/%s/%s seed %d: %v", model, task, c, seed, err)
					}
					f, err := rec.Fold()
					if err != nil {
						t.Fatalf("%s/%s/%s seed %d: fold: %v", model, task, c, seed, err)
					}
					if res.Status == events.StatusFailed && res.Error != "" && res.Output == nil && f.ModelCalls == 0 {
						t.Fatalf("%s/%s/%s seed %d: no model call: %s", model, task, c, seed, res.Error)
					}
					if res.Success {
						succ++
					}
					b, _ := json.Marshal([]any{f.Plan, f.States, f.Calls, string(f.Output)})
					sigs[sha256.Sum256(b)]++
				}
				pairs := 0
				for _, k := range sigs {
					pairs += k * (k - 1)
				}
				t.Logf("%-10s %-13s %-10s success %2d/%d  distinct traces %2d  RR %.2f", model, task, c, succ, n, len(sigs),
					float64(pairs)/float64(n*(n-1)))
			}
		}
	}
}
