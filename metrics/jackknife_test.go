package metrics

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

// simCell draws one cell of n runs from a fixed stochastic "model": a
// trace is a perturbed base tool sequence with arguments drawn from small
// sets, so RR, DI, TSS and AC all lie strictly between 0 and 1.
func simCell(n int, r *rand.Rand) []Run {
	runs := make([]Run, n)
	base := []int{0, 1, 2, 3, 4}
	for i := range runs {
		seq := append([]int(nil), base...)
		switch u := r.Float64(); {
		case u < 0.10:
			seq[1], seq[2] = seq[2], seq[1]
		case u < 0.16:
			seq = append(seq[:3], seq[4:]...)
		case u < 0.20:
			seq = append(seq, 3)
		}
		run := Run{ID: strconv.Itoa(i), Tokens: int64(1000 + r.IntN(100)), LatencyMS: 100 * r.ExpFloat64()}
		for k, t := range seq {
			run.Tools = append(run.Tools, toolNames[t])
			run.States = append(run.States, stateNames[t])
			v := 0 // the modal argument, as a model usually picks it
			if r.Float64() < 0.08 {
				v = 1 + r.IntN(3)
			}
			args := `{"k":` + strconv.Itoa(k) + `,"v":` + strconv.Itoa(v) + `}`
			run.Calls = append(run.Calls, Call{Tool: toolNames[t], Args: args})
		}
		run.Output = `{"o":` + strconv.Itoa(min(r.IntN(4), r.IntN(4))) + `}`
		run.Success = run.Output == `{"o":0}`
		runs[i] = run
	}
	return runs
}

// TestJackknifeMatchesReplicateSD checks the leave-one-run-out SE against
// the spread of each metric over independent replicate cells, and that
// the independent-pairs SE (pairs treated as independent Bernoulli
// observations) is several times too small.
func TestJackknifeMatchesReplicateSD(t *testing.T) {
	reps, n := 400, 100
	if testing.Short() {
		reps = 150
	}
	r := rand.New(rand.NewPCG(42, 7))
	const naiveReps = 25
	type acc struct{ sum, sumSq, se, naive float64 }
	var a [4]acc
	names := [4]string{"RR", "DI", "TSS", "AC"}
	for rep := 0; rep < reps; rep++ {
		runs := simCell(n, r)
		m, err := ComputeCell(runs, Options{})
		if err != nil {
			t.Fatal(err)
		}
		for q, e := range [4]Estimate{m.RR, m.DI, m.TSS, m.AC} {
			if !e.Value.Valid || !e.SE.Valid || e.Estimated {
				t.Fatalf("%s = %+v", names[q], e)
			}
			v := e.Value.V
			a[q].sum += v
			a[q].sumSq += v * v
			a[q].se += e.SE.V
		}
		if rep < naiveReps { // brute force: a few replicates suffice
			for q, se := range naivePairSE(runs) {
				a[q].naive += se
			}
		}
	}
	for q := range a {
		mean := a[q].sum / float64(reps)
		sd := math.Sqrt((a[q].sumSq - float64(reps)*mean*mean) / float64(reps-1))
		se := a[q].se / float64(reps)
		naive := a[q].naive / naiveReps
		t.Logf("%s: mean %.4f, replicate SD %.5f, mean jackknife SE %.5f (ratio %.2f), independent-pairs SE %.5f (ratio %.2f)",
			names[q], mean, sd, se, se/sd, naive, naive/sd)
		if math.Abs(se/sd-1) > 0.2 {
			t.Errorf("%s: jackknife SE %.5f is not within 20%% of the replicate SD %.5f", names[q], se, sd)
		}
		if naive/sd > 0.5 {
			t.Errorf("%s: the independent-pairs SE %.5f is not several times below the replicate SD %.5f", names[q], naive, sd)
		}
	}
}

// TestSampledAgreesWithExact forces the sampled path on cells small enough
// for the exact one and checks that each estimate lies within its reported
// Monte Carlo SE of the exact value (4 SE, over several seeds), and that the
// sampled jackknife SE approximates the exact one.
func TestSampledAgreesWithExact(t *testing.T) {
	n := 1500
	if testing.Short() {
		n = 600
	}
	for _, s := range []shape{shapeFew, shapeDistinct} {
		runs := genRuns(n, s, 11)
		exact, err := ComputeCell(runs, Options{MaxExactDistinct: n + 1})
		if err != nil {
			t.Fatal(err)
		}
		var z2 float64
		var count int
		for seed := uint64(1); seed <= 5; seed++ {
			sampled, err := ComputeCell(runs, Options{MaxExactDistinct: 1, MaxSubsetWork: -1, SamplePairs: 1 << 15, Seed: seed})
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct {
				name string
				e, s Estimate
			}{{"TSS", exact.TSS, sampled.TSS}, {"AC", exact.AC, sampled.AC}} {
				if c.e.Estimated || !c.s.Estimated || !c.s.SamplingSE.Valid {
					t.Fatalf("%v %s: exact %+v, sampled %+v", s, c.name, c.e, c.s)
				}
				z := (c.s.Value.V - c.e.Value.V) / c.s.SamplingSE.V
				z2 += z * z
				count++
				if math.Abs(z) > 4 {
					t.Errorf("%v seed %d %s: sampled %v ± %v, exact %v (z = %.2f)", s, seed, c.name, c.s.Value.V, c.s.SamplingSE.V, c.e.Value.V, z)
				}
				// The sampled jackknife SE is itself estimated: it must be
				// within 35% of the exact one, or within the sampling SE
				// when the between-run variance is too small to resolve.
				if math.Abs(c.s.SE.V-c.e.SE.V) > max(0.35*c.e.SE.V, c.s.SamplingSE.V) {
					t.Errorf("%v seed %d %s: sampled jackknife SE %v, exact %v", s, seed, c.name, c.s.SE.V, c.e.SE.V)
				}
			}
		}
		// The reported SE must be calibrated, not merely large: the mean
		// squared z-score should be near 1.
		if rms := math.Sqrt(z2 / float64(count)); rms > 2 || rms < 0.2 {
			t.Errorf("%v: RMS z-score %.2f over %d estimates: the reported sampling SE is miscalibrated", s, rms, count)
		} else {
			t.Logf("%v: RMS z-score %.2f over %d estimates", s, rms, count)
		}
	}
}

func TestSampledIsReproducible(t *testing.T) {
	runs := genRuns(500, shapeDistinct, 2)
	opt := Options{MaxExactDistinct: 10, MaxSubsetWork: -1, SamplePairs: 5000, Seed: 9}
	a, _ := ComputeCell(runs, opt)
	b, _ := ComputeCell(runs, opt)
	if a.TSS != b.TSS || a.AC != b.AC {
		t.Errorf("same seed, different estimates: %+v / %+v", a.TSS, b.TSS)
	}
	opt.Seed = 10
	c, _ := ComputeCell(runs, opt)
	if c.TSS == a.TSS {
		t.Error("different seeds gave the same TSS estimate")
	}
}

// naivePairSE is the wrong standard error docs/metrics.md warns about: the SD of
// the pair values divided by the square root of their number, as if the
// N(N−1)/2 pairs (for AC, the aligned (k, pair) values) were independent.
// Order: RR, DI, TSS, AC.
func naivePairSE(runs []Run) [4]float64 {
	var vals [4][]float64
	var p leafParser
	for i := range runs {
		for j := i + 1; j < len(runs); j++ {
			a, b := &runs[i], &runs[j]
			eq := func(x, y bool) float64 {
				if x && y {
					return 1
				}
				return 0
			}
			same := func(x, y []string) bool { return string(appendStrings(nil, x)) == string(appendStrings(nil, y)) }
			trace := eq(a.Plan == b.Plan && same(a.States, b.States) && a.Output == b.Output,
				string(appendCalls(nil, a.Calls)) == string(appendCalls(nil, b.Calls)))
			vals[0] = append(vals[0], trace)
			di := (eq(same(a.Tools, b.Tools), true) + eq(same(a.States, b.States), true) + eq(a.Output == b.Output, true)) / 3
			vals[1] = append(vals[1], di)
			vals[2] = append(vals[2], SequenceSimilarity(a.Tools, b.Tools))
			for k := 0; k < min(len(a.Calls), len(b.Calls)); k++ {
				inter, union := jaccardCounts(p.leafSet(a.Calls[k].Args, nil), p.leafSet(b.Calls[k].Args, nil))
				j := 1.0
				if union > 0 {
					j = float64(inter) / float64(union)
				}
				vals[3] = append(vals[3], j)
			}
		}
	}
	var out [4]float64
	for q, v := range vals {
		var mean, ss float64
		for _, x := range v {
			mean += x
		}
		mean /= float64(len(v))
		for _, x := range v {
			ss += (x - mean) * (x - mean)
		}
		out[q] = math.Sqrt(ss/float64(len(v)-1)) / math.Sqrt(float64(len(v)))
	}
	return out
}

// Beyond MaxExactDistinct, AC stays exact through the subset counts while
// their work fits MaxSubsetWork, and equals the unconditional exact value.
func TestACExactBeyondThresholdViaSubsets(t *testing.T) {
	runs := genRuns(3000, shapeDistinct, 4)
	got, err := ComputeCell(runs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got.DistinctArgSeqs <= DefaultMaxExactDistinct {
		t.Fatalf("only %d distinct argument sequences: the test needs more than %d", got.DistinctArgSeqs, DefaultMaxExactDistinct)
	}
	want, _ := ComputeCell(runs, Options{MaxExactDistinct: 5000})
	if got.AC.Estimated || !sameValue(got.AC.Value, want.AC.Value) || !nearValue(got.AC.SE, want.AC.SE, 1e-9) {
		t.Errorf("AC = %+v, exact %+v", got.AC, want.AC)
	}
	// With too small a budget it falls back to the sample.
	small, _ := ComputeCell(runs, Options{MaxSubsetWork: 64 * 3000})
	if !small.AC.Estimated {
		t.Errorf("AC with a tiny subset budget = %+v, want estimated", small.AC)
	}
}
