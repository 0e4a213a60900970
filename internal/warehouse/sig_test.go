package warehouse_test

import (
	"database/sql"
	"encoding/hex"
	"testing"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/warehouse"
	"github.com/dittolab/ditto/metrics"
)

// checkSignatures folds each finished, well-formed attempt of msgs with events.Fold and checks
// that runs holds the same fields and the signatures of package metrics.
func checkSignatures(t *testing.T, db *sql.DB, msgs []msg) {
	t.Helper()
	type key struct {
		study, run string
		attempt    int
	}
	hist := map[key][]events.Envelope{}
	for _, m := range msgs {
		e, err := events.Decode(m.Data)
		if err != nil || e.Run == events.StudyRun {
			continue
		}
		k := key{e.Study, e.Run, e.Attempt}
		hist[k] = append(hist[k], e)
	}
	checked := 0
	for k, h := range hist {
		r, err := events.Fold(h)
		if err != nil || !r.Done() {
			continue
		}
		mr := metrics.Run{Plan: r.Plan, States: r.States, Tools: r.Tools, Output: warehouse.NoOutput}
		if len(r.Output) > 0 {
			mr.Output = string(r.Output)
		}
		for _, c := range r.Calls {
			mr.Calls = append(mr.Calls, metrics.Call{Tool: c.Tool, Args: string(c.Args)})
		}
		var plan, sigTrace, sigCalls, sigPlan string
		var out sql.NullString // NULL: the run produced no output
		if err := db.QueryRow(`SELECT plan, output, sig_trace, sig_calls, sig_plan FROM runs
			WHERE study = ? AND run = ? AND attempt = ?`, k.study, k.run, k.attempt).Scan(&plan, &out, &sigTrace, &sigCalls, &sigPlan); err != nil {
			t.Fatalf("runs row of %v: %v", k, err)
		}
		output := warehouse.NoOutput
		if out.Valid {
			output = out.String
		}
		hexSig := func(s metrics.Signature) string { return hex.EncodeToString(s[:]) }
		if plan != r.Plan || output != mr.Output || sigTrace != hexSig(metrics.TraceSignature(mr)) ||
			sigCalls != hexSig(metrics.CallsSignature(mr)) || sigPlan != hexSig(metrics.PlanSignature(mr)) {
			t.Errorf("runs row of %v = (%q, %q, %s, %s), want the fold's (%q, %q) and metrics' signatures", k, plan, output, sigTrace, sigCalls, r.Plan, mr.Output)
		}
		checked++
	}
	if checked < 20 {
		t.Errorf("checked %d runs, want at least 20", checked)
	}
}
