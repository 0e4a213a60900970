package metrics

import (
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestIdenticalRunsScoreOne(t *testing.T) {
	run := Run{
		Plan: `[{"state":"a","tool":"x"}]`, States: []string{"a", "b"}, Tools: []string{"x", "y"},
		Calls:  []Call{{"x", `{"q":1}`}, {"y", `{}`}},
		Output: `{"r":2}`, Success: true, Tokens: 10, LatencyMS: 5,
	}
	runs := make([]Run, 7)
	for i := range runs {
		runs[i] = run
		runs[i].ID = string(rune('a' + i))
	}
	m, err := ComputeCell(runs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for name, e := range map[string]Estimate{"RR": m.RR, "DI": m.DI, "TSS": m.TSS, "AC": m.AC, "plan": m.PlanAgree, "output": m.OutputAgree} {
		if !e.Value.Valid || e.Value.V != 1 {
			t.Errorf("%s = %v, want 1", name, e.Value)
		}
		if !e.SE.Valid || e.SE.V != 0 {
			t.Errorf("%s SE = %v, want 0", name, e.SE)
		}
	}
	for k, d := range m.Divergence {
		if d != Some(0) {
			t.Errorf("Divergence[%d] = %v, want 0", k, d)
		}
	}
	if m.DistinctOutputs != 1 || m.OutputModalShare != Some(1) {
		t.Errorf("outputs: %d distinct, modal share %v", m.DistinctOutputs, m.OutputModalShare)
	}
}

func TestPairwiseNullBelowTwoRuns(t *testing.T) {
	for _, n := range []int{0, 1} {
		m, err := ComputeCell(genRuns(n, shapeDistinct, 1), Options{})
		if err != nil {
			t.Fatal(err)
		}
		for name, e := range map[string]Estimate{"RR": m.RR, "DI": m.DI, "TSS": m.TSS, "AC": m.AC, "plan": m.PlanAgree, "tools": m.ToolsAgree} {
			if e.Value.Valid || e.SE.Valid {
				t.Errorf("N=%d: %s = %+v, want null", n, name, e)
			}
		}
		if m.Divergence != nil {
			t.Errorf("N=%d: Divergence = %v, want null", n, m.Divergence)
		}
	}
	// N = 2: defined, but no jackknife (leave-one-out cells have one run).
	m, _ := ComputeCell(genRuns(2, shapeFew, 1), Options{})
	if !m.RR.Value.Valid || m.RR.SE.Valid {
		t.Errorf("N=2: RR = %+v, want a value and a null SE", m.RR)
	}
}

func TestSymmetricInRunOrder(t *testing.T) {
	for _, s := range []shape{shapeFew, shapeDistinct} {
		runs := genRuns(400, s, 3)
		want, err := ComputeCell(runs, Options{})
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(1, 2))
		r.Shuffle(len(runs), func(i, j int) { runs[i], runs[j] = runs[j], runs[i] })
		got, err := ComputeCell(runs, Options{})
		if err != nil {
			t.Fatal(err)
		}
		pairs := []struct {
			name string
			g, w Estimate
		}{{"RR", got.RR, want.RR}, {"DI", got.DI, want.DI}, {"TSS", got.TSS, want.TSS}, {"AC", got.AC, want.AC}, {"plan", got.PlanAgree, want.PlanAgree}}
		for _, p := range pairs {
			// Point estimates sum exact rationals, so they are identical;
			// SEs are float sums in group order, equal to rounding.
			if !sameValue(p.g.Value, p.w.Value) || !nearValue(p.g.SE, p.w.SE, 1e-9) {
				t.Errorf("%v: %s after shuffling = %+v, before %+v", s, p.name, p.g, p.w)
			}
		}
		for k := range got.Divergence {
			if !sameValue(got.Divergence[k], want.Divergence[k]) {
				t.Errorf("%v: Divergence[%d] after shuffling = %v, before %v", s, k, got.Divergence[k], want.Divergence[k])
			}
		}
	}
}

func TestComputeCellEdgeCases(t *testing.T) {
	failed := genRuns(30, shapeDistinct, 5)
	for i := range failed {
		failed[i].Success = false
		failed[i].LatencyMS = 1000 // zero variance
		failed[i].Tokens = 0
		failed[i].Calls, failed[i].Tools = nil, nil
	}
	tests := []struct {
		name    string
		give    []Run
		opt     Options
		wantErr error
		check   func(t *testing.T, m CellMetrics)
	}{
		{name: "empty cell", give: nil, check: func(t *testing.T, m CellMetrics) {
			if m.N != 0 || m.Success.Rate.Valid || m.Tokens.Mean.Valid || m.Harness.RetriesPerRun.Valid || m.PassK != nil {
				t.Errorf("empty cell: %+v", m)
			}
		}},
		{name: "all failed, no calls, constant latency", give: failed, check: func(t *testing.T, m CellMetrics) {
			if m.Success.Rate != Some(0) || m.Success.WilsonLow != Some(0) || !(m.Success.WilsonHi.V > 0) {
				t.Errorf("success = %+v", m.Success)
			}
			for _, pk := range m.PassK {
				if pk.Value != 0 {
					t.Errorf("pass^%d = %v, want 0", pk.K, pk.Value)
				}
			}
			if m.Latency.SD != Some(0) || m.Latency.IQR != Some(0) || m.Latency.P95 != Some(1000) {
				t.Errorf("latency = %+v", m.Latency)
			}
			if m.AC.Value.Valid {
				t.Errorf("AC with no calls = %v, want null", m.AC.Value)
			}
			if m.TSS.Value != Some(1) {
				t.Errorf("TSS of empty tool sequences = %v, want 1", m.TSS.Value)
			}
			if len(m.Divergence) != 0 {
				t.Errorf("Divergence with no calls = %v, want no steps", m.Divergence)
			}
		}},
		{name: "negative tokens", give: []Run{{Tokens: -1}}, wantErr: ErrInvalidRun},
		{name: "NaN latency", give: []Run{{LatencyMS: math.NaN()}}, wantErr: ErrInvalidRun},
		{name: "negative option", give: nil, opt: Options{SamplePairs: -1}, wantErr: ErrInvalidOptions},
		{name: "bad pass k", give: nil, opt: Options{PassK: []int{0}}, wantErr: ErrInvalidOptions},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := ComputeCell(tt.give, tt.opt)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("ComputeCell error = %v, want %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			tt.check(t, m)
			b, err := json.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			if s := string(b); strings.Contains(s, "NaN") || strings.Contains(s, "Inf") {
				t.Errorf("JSON contains NaN or Inf: %s", s)
			}
		})
	}
}

func TestArgumentLeaves(t *testing.T) {
	tests := []struct {
		a, b string
		want float64
	}{
		{`{}`, `{}`, 1},
		{`{}`, `[]`, 1},
		{`{"a":1}`, `{"a":1}`, 1},
		{`{"a":1,"b":2}`, `{"a":1,"b":3}`, 1.0 / 3},
		{`{"a":{"b":1}}`, `{"a":{"c":1}}`, 0},
		{`{"a":[1,2]}`, `{"a":[2,1]}`, 0},
		{`{"a":[1,2]}`, `{"a":[1,3]}`, 1.0 / 3},
		{`{"a":{}}`, `{"a":[]}`, 0},
		{`{"a":"x"}`, `{"a":"x","b":null}`, 0.5},
		{`{"a\"b":1}`, `{"a\"b":1}`, 1},
		{`not json`, `not json`, 1},
		{`not json`, `{"a":1}`, 0},
		{`{"a":1}`, `{"b":{"a":1}}`, 0},
	}
	for _, tt := range tests {
		if got := ArgumentJaccard(tt.a, tt.b); math.Abs(got-tt.want) > 1e-15 {
			t.Errorf("ArgumentJaccard(%q, %q) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
		if got := ArgumentJaccard(tt.b, tt.a); math.Abs(got-tt.want) > 1e-15 {
			t.Errorf("ArgumentJaccard(%q, %q) = %v, want %v (symmetry)", tt.b, tt.a, got, tt.want)
		}
	}
}

func TestSignaturesFraming(t *testing.T) {
	a := Run{Tools: []string{"ab", "c"}}
	b := Run{Tools: []string{"a", "bc"}}
	if ToolsSignature(a) == ToolsSignature(b) {
		t.Error("ToolsSignature does not frame elements")
	}
	c := Run{Calls: []Call{{"x", "{}"}}}
	d := Run{Calls: []Call{{"x{", "}"}}}
	if CallsSignature(c) == CallsSignature(d) || TraceSignature(c) == TraceSignature(d) {
		t.Error("CallsSignature does not frame tool and args")
	}
	e := Run{Plan: "p", Output: "o"}
	if PlanSignature(e) == OutputSignature(Run{Output: "p"}) {
		t.Error("signatures of different fields collide")
	}
	if TraceSignature(e) != TraceSignature(Run{Plan: "p", Output: "o", Tools: []string{"ignored"}}) {
		t.Error("TraceSignature depends on tools, which sig_trace does not cover")
	}
}

func TestValueJSON(t *testing.T) {
	tests := []struct {
		give Value
		want string
	}{
		{Null, "null"},
		{Some(math.NaN()), "null"},
		{Some(math.Inf(1)), "null"},
		{Value{V: math.NaN(), Valid: true}, "null"}, // defensive
		{Some(math.Copysign(0, -1)), "0"},
		{Some(0.25), "0.25"},
		{Some(1e-300), "1e-300"},
	}
	for _, tt := range tests {
		b, err := json.Marshal(tt.give)
		if err != nil || string(b) != tt.want {
			t.Errorf("json.Marshal(%#v) = %s, %v, want %s", tt.give, b, err, tt.want)
		}
	}
	var v Value
	if err := json.Unmarshal([]byte("null"), &v); err != nil || v.Valid {
		t.Errorf("Unmarshal(null) = %+v, %v", v, err)
	}
	if err := json.Unmarshal([]byte("0.5"), &v); err != nil || v != Some(0.5) {
		t.Errorf("Unmarshal(0.5) = %+v, %v", v, err)
	}
}
