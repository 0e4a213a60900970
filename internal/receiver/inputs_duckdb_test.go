//go:build cgo

package receiver_test

import (
	"fmt"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/analysis"
	"github.com/dittolab/ditto/internal/receiver"
	"github.com/dittolab/ditto/metrics"
)

// nativeRun writes one production run as a client without ditto's library would: JSON lines
// by hand, run.started carrying the run's input in the key order and spacing the client
// happened to use, and an input_key only when key is not empty. The run calls one tool whose
// arguments name the invoice, so runs of different inputs never agree.
func nativeRun(run string, at time.Time, input, key, invoice string) string {
	var b strings.Builder
	seq := 0
	line := func(typ, payload string) {
		seq++
		fmt.Fprintf(&b, `{"schema":3,"id":"01INPUT%s%03d","type":%q,"time":%q,"study":"prod","run":%q,"attempt":1,"seq":%d,`+
			`"source":{"kind":"production","id":"invoice-agent"},"payload":%s}`+"\n",
			strings.ToUpper(strings.ReplaceAll(run, "-", "")), seq, typ, at.Add(time.Duration(seq)*time.Millisecond).Format(time.RFC3339Nano),
			run, seq, payload)
	}
	started := `{"task":"triage","model":"gpt-4o-mini","condition":"r1","input_index":0,"seed_index":0,"components":[]`
	if input != "" {
		started += `,"input": ` + input
	}
	if key != "" {
		started += fmt.Sprintf(`,"input_key":%q`, key)
	}
	line("run.started", started+"}")
	line("tool.called", fmt.Sprintf(`{"call_id":"c1","tool":"fetch_invoice","args":{"invoice_id": %q}}`, invoice))
	line("tool.returned", `{"call_id":"c1","tool":"fetch_invoice","ok":true,"output":{"ok":true}}`)
	line("run.finished", `{"status":"succeeded","success":true,"output":{"queue":"standard"},"totals":{"tool_calls":1}}`)
	return b.String()
}

// TestNativeEventsInputGroups: native production events without an input key, sent to
// /v1/events and through the importer (producer import), form input groups by the hash of the
// run's canonical input: three invoices processed three times each, their inputs written in a
// different key order and spacing by each run (and a run of one invoice arriving by each
// path), have the key events.InputKeyOf gives for the input; a client's input_key is kept; a
// run without either is a group of its own. The analyzer pools RR over those groups (every
// invoice reproduced: RR 1, where pooling across invoices would give 20/156) and counts the
// single runs without scoring them.
func TestNativeEventsInputGroups(t *testing.T) {
	e := newEnv(t, nil)
	ctx := ctxT(t, 90*time.Second)
	t0 := time.Now().Add(-time.Hour).UTC().Truncate(time.Millisecond)
	// Three spellings of each invoice's input; the amount once with a trailing zero.
	spell := []string{
		`{"invoice": "INV-%d", "vendor": {"name": "Acme", "id": 7}, "amount": 12.50}`,
		`{"vendor":{"id":7,"name":"Acme"},"amount":12.5,"invoice":"INV-%d"}`,
		`{ "amount": 1.25e1, "invoice": "INV-%d", "vendor": { "name": "Acme", "id": 7.0 } }`,
	}
	var posted, imported []string
	n := 0
	add := func(to *[]string, run, input, key, invoice string) {
		*to = append(*to, nativeRun(run, t0.Add(time.Duration(n)*time.Second), input, key, invoice))
		n++
	}
	for inv := 0; inv < 3; inv++ {
		for rep := 0; rep < 3; rep++ {
			to := &posted
			if rep == 2 {
				to = &imported
			}
			add(to, fmt.Sprintf("run-%d-%d", inv, rep), fmt.Sprintf(spell[rep], inv), "", fmt.Sprintf("INV-%d", inv))
		}
	}
	add(&posted, "run-keyed-0", `{"invoice": "INV-9"}`, "INV-9", "INV-9") // the client's key wins over the hash
	add(&imported, "run-keyed-1", `{"invoice": "INV-9", "page": 2}`, "INV-9", "INV-9")
	add(&posted, "run-single", `{"invoice": "INV-5"}`, "", "INV-5")
	add(&imported, "run-nokey", "", "", "INV-6")

	resp, body := e.post(t, "/v1/events", tokProd, "application/x-ndjson", []byte(strings.Join(posted, "")))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /v1/events = %d %s", resp.StatusCode, body)
	}
	if r := decodeResp(t, body); r.Accepted != 4*len(posted) || len(r.Rejected) != 0 {
		t.Fatalf("POST /v1/events answered %+v, want all %d events accepted", r, 4*len(posted))
	}
	res, err := receiver.Import(ctx, e.bus, strings.NewReader(strings.Join(imported, "")), receiver.ImportConfig{})
	if err != nil || len(res.Rejected) != 0 {
		t.Fatalf("Import = %+v, %v; want every line published", res, err)
	}
	waitFinished(t, e.bus, n)

	w := caughtUp(ctx, t, e.bus)
	rows, err := w.DB().QueryContext(ctx, `SELECT run, coalesce(input_key, '') FROM run_folds WHERE study = 'prod'`)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for rows.Next() {
		var run, key string
		if err := rows.Scan(&run, &key); err != nil {
			t.Fatal(err)
		}
		got[run] = key
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"run-keyed-0": "INV-9", "run-keyed-1": "INV-9", "run-nokey": ""}
	for inv := 0; inv < 3; inv++ {
		// The expected key from the input as a value, not from any of the texts sent.
		k, err := events.InputKeyOf(events.MustCanonical(map[string]any{"invoice": fmt.Sprintf("INV-%d", inv),
			"vendor": map[string]any{"name": "Acme", "id": 7}, "amount": 12.5}))
		if err != nil {
			t.Fatal(err)
		}
		for rep := 0; rep < 3; rep++ {
			want[fmt.Sprintf("run-%d-%d", inv, rep)] = k
		}
	}
	single, _ := events.InputKeyOf([]byte(`{"invoice":"INV-5"}`))
	want["run-single"] = single
	if len(got) != len(want) {
		t.Errorf("run_folds holds %d runs of prod, want %d: %v", len(got), len(want), got)
	}
	for run, k := range want {
		if got[run] != k {
			t.Errorf("run %s: input_key %q, want %q", run, got[run], k)
		}
	}

	rep, err := analysis.Compute(ctx, w.DB(), "prod", analysis.Options{Permutations: 200, Seed: 42})
	if err != nil {
		t.Fatal(err)
	}
	c := rep.Cell(analysis.CellKey{Task: "triage", Model: "gpt-4o-mini", Condition: "r1"})
	if c == nil {
		t.Fatalf("no cell triage/gpt-4o-mini/r1 in %+v", rep.Cells)
	}
	if g := c.Metrics.InputGroups; c.Metrics.N != 13 || g == nil || *g != (metrics.InputGroups{Groups: 4, GroupedRuns: 11, SingleRuns: 2}) {
		t.Errorf("cell: N %d, input groups %+v; want 13 runs, 4 groups of 11 runs and 2 single runs", c.Metrics.N, g)
	}
	// Within groups every pair agrees; pooled across invoices only 3·(3·2) + 2·1 = 20 of the
	// 13·12 ordered pairs would: the figure must be the former.
	if rr := c.Metrics.RR.Value; !rr.Valid || math.Abs(rr.V-1) > 1e-12 {
		t.Errorf("RR = %v, want 1 within input groups", rr)
	}
}
