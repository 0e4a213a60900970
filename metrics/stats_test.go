package metrics

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

func TestStatsEdgeCases(t *testing.T) {
	tests := []struct {
		name    string
		give    func() (float64, error)
		want    float64
		wantErr error
	}{
		{"fisher all zero", func() (float64, error) { return FisherExact(0, 0, 0, 0) }, 1, nil},
		{"fisher one row empty", func() (float64, error) { return FisherExact(0, 0, 5, 7) }, 1, nil},
		{"fisher negative", func() (float64, error) { return FisherExact(-1, 0, 5, 7) }, 0, ErrInvalidArgument},
		{"fisher extreme", func() (float64, error) { return FisherExact(1000, 0, 0, 1000) }, math.Exp(-2*lchoose(2000, 1000)/2) * 2 * math.Exp(lchoose(2000, 1000)-lchoose(2000, 1000)), nil},
		{"mcnemar none discordant", func() (float64, error) { return McNemarExact(0, 0) }, 1, nil},
		{"mcnemar one", func() (float64, error) { return McNemarExact(1, 0) }, 1, nil},
		{"mcnemar all one way", func() (float64, error) { return McNemarExact(10, 0) }, 2 * math.Pow(0.5, 10), nil},
		{"mcnemar negative", func() (float64, error) { return McNemarExact(0, -1) }, 0, ErrInvalidArgument},
		{"pass^k k>n", func() (float64, error) { return PassHatK([]TaskTrials{{Trials: 3, Successes: 3}}, 4) }, 0, ErrInvalidArgument},
		{"pass^k no tasks", func() (float64, error) { return PassHatK(nil, 1) }, 0, ErrEmpty},
		{"pass^k all succeed", func() (float64, error) { return PassHatK([]TaskTrials{{Trials: 8, Successes: 8}}, 8) }, 1, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.give()
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("error = %v, want %v", err, tt.wantErr)
			}
			if err == nil && tt.name != "fisher extreme" && math.Abs(got-tt.want) > 1e-15 {
				t.Errorf("= %v, want %v", got, tt.want)
			}
			if math.IsNaN(got) || got < 0 || got > 1 {
				t.Errorf("= %v, not a probability", got)
			}
		})
	}
	// p for a perfectly separated 1000/1000 table is 2/C(2000,1000) ≈ 1e-600:
	// it underflows to 0, and must be exactly 0, not NaN.
	if p, _ := FisherExact(1000, 0, 0, 1000); p != 0 {
		t.Errorf("FisherExact(1000, 0, 0, 1000) = %v, want 0 (underflow)", p)
	}
}

func TestWilsonEdgeCases(t *testing.T) {
	lo, hi, err := Wilson(0, 10, 0.95)
	if err != nil || lo != 0 || !(hi > 0.2 && hi < 0.35) {
		t.Errorf("Wilson(0, 10) = (%v, %v, %v)", lo, hi, err)
	}
	lo, hi, err = Wilson(10, 10, 0.95)
	if err != nil || hi < 1-1e-12 || hi > 1 || !(lo > 0.65 && lo < 0.8) {
		t.Errorf("Wilson(10, 10) = (%v, %v, %v)", lo, hi, err)
	}
	// 90% interval is narrower than 95%.
	l90, h90, _ := Wilson(30, 100, 0.90)
	l95, h95, _ := Wilson(30, 100, 0.95)
	if !(l90 > l95 && h90 < h95) {
		t.Errorf("90%% (%v, %v) not inside 95%% (%v, %v)", l90, h90, l95, h95)
	}
	for _, c := range []struct {
		s, n int
		conf float64
	}{{0, 0, 0.95}, {3, 2, 0.95}, {-1, 2, 0.95}, {1, 2, 1}, {1, 2, math.NaN()}} {
		if _, _, err := Wilson(c.s, c.n, c.conf); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("Wilson(%d, %d, %v) error = %v, want ErrInvalidArgument", c.s, c.n, c.conf, err)
		}
	}
}

func TestMannWhitneyEdgeCases(t *testing.T) {
	if _, err := MannWhitneyU(nil, []float64{1}); !errors.Is(err, ErrEmpty) {
		t.Errorf("empty x: %v, want ErrEmpty", err)
	}
	if _, err := MannWhitneyU([]float64{math.NaN()}, []float64{1}); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("NaN: %v, want ErrInvalidArgument", err)
	}
	if _, err := MannWhitneyUExact([]float64{1, 1}, []float64{1, 2}); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("exact with ties: %v, want ErrInvalidArgument", err)
	}
	// Zero variance: every value tied, p = 1, δ = 0.
	r, err := MannWhitneyU([]float64{5, 5, 5}, []float64{5, 5})
	if err != nil || r.P != 1 || r.CliffsDelta != 0 || r.Method != MethodAsymptotic {
		t.Errorf("all tied = %+v, %v", r, err)
	}
	// Complete separation, exact: p = 2 / C(n1+n2, n1).
	r, err = MannWhitneyU([]float64{1, 2, 3}, []float64{4, 5, 6, 7})
	if err != nil || math.Abs(r.P-2.0/35) > 1e-15 || r.CliffsDelta != -1 || r.U1 != 0 {
		t.Errorf("separated = %+v, %v", r, err)
	}
	// One small sample against a large one stays exact and cheap, and
	// agrees with the normal approximation roughly.
	x := []float64{0.5051, 10.5051, 20.5051, 30.5051, 40.5051, 50.5051, 60.5051, 170.5051}
	y := make([]float64, 20000)
	for i := range y {
		y[i] = float64(i) * 0.01
	}
	ex, err := MannWhitneyU(x, y)
	if err != nil || ex.Method != MethodExact {
		t.Fatalf("8 vs 20000: %+v, %v", ex, err)
	}
	as, _ := MannWhitneyUAsymptotic(x, y)
	if math.Abs(ex.P-as.P) > 0.02 {
		t.Errorf("8 vs 20000: exact p %v, asymptotic %v", ex.P, as.P)
	}
}

// The exact distribution must sum to one and be symmetric: check against
// brute-force enumeration of all rank subsets for small sizes.
func TestMannWhitneyExactAgainstEnumeration(t *testing.T) {
	for n1 := 1; n1 <= 5; n1++ {
		for n2 := 1; n2 <= 6; n2++ {
			n := n1 + n2
			counts := make([]int, n1*n2+1)
			total := 0
			for mask := 0; mask < 1<<n; mask++ {
				if popcount(mask) != n1 {
					continue
				}
				// U1 = Σ ranks of x − n1(n1+1)/2, ranks 1..n.
				u := 0
				for i := 0; i < n; i++ {
					if mask&(1<<i) != 0 {
						u += i + 1
					}
				}
				counts[u-n1*(n1+1)/2]++
				total++
			}
			for u := 0; u <= n1*n2; u++ {
				// Build samples with U1 = u: x takes ranks from a subset.
				x, y := samplesWithU(n1, n2, u)
				got, err := MannWhitneyUExact(x, y)
				if err != nil {
					t.Fatal(err)
				}
				lo := min(u, n1*n2-u)
				cum := 0
				for v := 0; v <= lo; v++ {
					cum += counts[v]
				}
				want := math.Min(1, 2*float64(cum)/float64(total))
				if math.Abs(got.P-want) > 1e-12 || got.U1 != float64(u) {
					t.Errorf("n1=%d n2=%d U=%d: p = %v (U1 %v), want %v", n1, n2, u, got.P, got.U1, want)
				}
			}
		}
	}
}

func popcount(m int) int {
	c := 0
	for ; m > 0; m &= m - 1 {
		c++
	}
	return c
}

// samplesWithU returns samples of sizes n1, n2 without ties whose U1 is u:
// x starts as the n1 smallest values and is moved up one rank at a time.
func samplesWithU(n1, n2, u int) (x, y []float64) {
	pos := make([]int, n1) // number of y values below x[i], non-decreasing
	for i := n1 - 1; i >= 0 && u > 0; i-- {
		step := min(u, n2)
		if i < n1-1 {
			step = min(step, pos[i+1])
		}
		pos[i] = step
		u -= step
	}
	for i := 0; i < n1; i++ {
		x = append(x, float64(pos[i])+0.5+float64(i)*1e-6)
	}
	for j := 0; j < n2; j++ {
		y = append(y, float64(j)+0.75)
	}
	return x, y
}

func TestBenjaminiHochbergEdgeCases(t *testing.T) {
	adj, rej, err := BenjaminiHochberg([]float64{0, 1, 0.5})
	if err != nil || adj[0] != 0 || adj[1] != 1 || adj[2] != 0.75 || !rej[0] || rej[1] || rej[2] {
		t.Errorf("BH(0, 1, 0.5) = %v, %v, %v", adj, rej, err)
	}
	if _, _, err := BenjaminiHochberg([]float64{math.NaN()}); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("BH(NaN) error = %v", err)
	}
	if adj, rej, err := BenjaminiHochberg(nil); err != nil || len(adj) != 0 || len(rej) != 0 {
		t.Errorf("BH(nil) = %v, %v, %v", adj, rej, err)
	}
}

func TestSummarize(t *testing.T) {
	s := Summarize([]float64{4, 1, 3, 2})
	// Type 7: h = 3p.
	want := Summary{N: 4, Mean: Some(2.5), SD: Some(math.Sqrt(5.0 / 3)), Min: Some(1), Q1: Some(1.75), Median: Some(2.5),
		Q3: Some(3.25), IQR: Some(1.5), P95: Some(3.85), Max: Some(4)}
	if !nearValue(s.SD, want.SD, 1e-15) || !nearValue(s.P95, want.P95, 1e-15) {
		t.Errorf("Summarize = %+v, want %+v", s, want)
	}
	s.SD, s.P95, want.SD, want.P95 = Null, Null, Null, Null
	if s != want {
		t.Errorf("Summarize = %+v, want %+v", s, want)
	}
	if one := Summarize([]float64{7}); one.SD.Valid || one.Median != Some(7) || one.IQR != Some(0) {
		t.Errorf("Summarize(7) = %+v", one)
	}
	if q := Quantile([]float64{1, 2}, 1.5); q.Valid {
		t.Errorf("Quantile(p = 1.5) = %v, want null", q)
	}
}

// U1 and the tie term from the merged ranks must equal their definitions:
// U1 counts the pairs (x, y) with x > y, ties counting ½; Σ(t³ − t) runs
// over the groups of equal values of both samples together.
func TestRankSamplesMatchesDefinition(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 6))
	for trial := 0; trial < 50; trial++ {
		x := make([]float64, 1+r.IntN(40))
		y := make([]float64, 1+r.IntN(40))
		spread := 1 + r.IntN(30) // few distinct values: many ties
		for i := range x {
			x[i] = float64(r.IntN(spread))
		}
		for i := range y {
			y[i] = float64(r.IntN(spread))
		}
		if trial%5 == 0 {
			y[0] = math.Copysign(0, -1) // ties with x's zeros
		}
		var u1 float64
		count := map[float64]int{}
		for _, a := range x {
			count[a]++
			for _, b := range y {
				switch {
				case a > b:
					u1++
				case a == b:
					u1 += 0.5
				}
			}
		}
		for _, b := range y {
			count[b]++
		}
		var tie float64
		for _, c := range count {
			tf := float64(c)
			tie += tf*tf*tf - tf
		}
		rk, err := rankSamples(x, y)
		if err != nil || rk.u1 != u1 || rk.tieTerm != tie || rk.ties != (tie > 0) {
			t.Fatalf("rankSamples(%v, %v) = %+v, %v; want U1 %v, tie term %v", x, y, rk, err, u1, tie)
		}
	}
}
