package metrics

import (
	"math/rand/v2"
	"strconv"
)

// Synthetic cells for tests and benchmarks.

type shape int

const (
	// shapeFew: a harnessed cell, a handful of distinct traces.
	shapeFew shape = iota
	// shapeDistinct: a baseline cell, nearly every trace distinct: free-text
	// plans, per-run argument values and outputs, while the tool order is
	// mostly kept ("structural consistency, parametric variance": TSS ≈
	// 0.9, AC ≈ 0.7, as the research reports for baselines).
	shapeDistinct
	// shapeAdversarial: nearly every tool sequence distinct too (random
	// lengths, a third of the steps a random tool; TSS ≈ 0.4): the worst
	// case for the exact TSS, kept to show where the D² work bites.
	shapeAdversarial
)

func (s shape) String() string {
	switch s {
	case shapeFew:
		return "few-distinct"
	case shapeDistinct:
		return "nearly-all-distinct"
	}
	return "adversarial-distinct-tools"
}

var toolNames = []string{"load_data", "validate_data", "lookup", "fetch_rates", "calculate", "generate_report", "search", "summarize"}
var stateNames = []string{"load", "validate", "lookup", "fetch", "calc", "report", "search", "summary"}

// genRuns returns n runs of the given shape, deterministic in seed. Strings
// of the few-distinct shape are shared, as they would be after decoding
// into an interning table.
func genRuns(n int, s shape, seed uint64) []Run {
	r := rand.New(rand.NewPCG(seed, 99))
	runs := make([]Run, n)
	switch s {
	case shapeFew:
		type variant struct {
			plan   string
			tools  []string
			states []string
			calls  []Call
		}
		base := []int{0, 1, 2, 3, 4, 5}
		var variants []variant
		for v := 0; v < 6; v++ {
			idx := append([]int(nil), base...)
			if v%3 == 1 {
				idx = append(idx[:3], append([]int{3}, idx[3:]...)...) // a retry
			}
			if v%3 == 2 {
				idx[2], idx[3] = idx[3], idx[2]
			}
			var vt variant
			vt.plan = `[{"state":"load","tool":"load_data"},{"state":"report","tool":"generate_report"}]`
			if v >= 4 {
				vt.plan = `[{"state":"load","tool":"load_data"}]`
			}
			for k, t := range idx {
				vt.tools = append(vt.tools, toolNames[t])
				vt.states = append(vt.states, stateNames[t])
				args := `{"id":"C-1042","step":` + strconv.Itoa(k) + `}`
				if v == 5 && k == 2 {
					args = `{"id":"C-1042","step":2,"strict":true}`
				}
				vt.calls = append(vt.calls, Call{Tool: toolNames[t], Args: args})
			}
			variants = append(variants, vt)
		}
		outputs := []string{`{"ecl":1234.5}`, `{"ecl":1234.5,"note":"rounded"}`, `{"ecl":1200}`}
		weights := []float64{0.7, 0.1, 0.08, 0.06, 0.04, 0.02}
		for i := range runs {
			u, v := r.Float64(), 0
			for v < len(weights)-1 && u > weights[v] {
				u -= weights[v]
				v++
			}
			vt := variants[v]
			o := 0
			if r.IntN(20) == 0 {
				o = 1 + r.IntN(2)
			}
			runs[i] = Run{
				ID: "r" + strconv.Itoa(i), Plan: vt.plan, States: vt.states, Tools: vt.tools,
				Calls: vt.calls, Output: outputs[o], Success: o == 0,
				Tokens: 1800 + int64(r.IntN(200)), LatencyMS: 900 + 300*r.Float64(),
				Retries: boolInt(v%3 == 1), PlanReprompts: boolInt(v >= 4), Escalated: o == 2,
				PairKey: "input=" + strconv.Itoa(i%50) + "/seed=" + strconv.Itoa(i/50),
			}
		}
	case shapeDistinct:
		for i := range runs {
			idx := []int{0, 1, 2, 3, 4, 5}
			switch u := r.Float64(); {
			case u < 0.10:
				k := 1 + r.IntN(4)
				idx[k], idx[k+1] = idx[k+1], idx[k]
			case u < 0.18:
				k := 1 + r.IntN(5)
				idx = append(idx[:k], idx[k+1:]...)
			case u < 0.25:
				k := r.IntN(6)
				idx = append(idx[:k+1], idx[k:]...)
			}
			run := Run{ID: "r" + strconv.Itoa(i), PairKey: "input=" + strconv.Itoa(i%50) + "/seed=" + strconv.Itoa(i/50)}
			run.Tools = make([]string, len(idx))
			run.States = make([]string, len(idx))
			run.Calls = make([]Call, len(idx))
			for k, t := range idx {
				run.Tools[k] = toolNames[t]
				run.States[k] = stateNames[t]
				amount := "1234.5"
				if r.Float64() < 0.5 {
					amount = string(strconv.AppendFloat(nil, float64(r.IntN(1000000))/100, 'f', -1, 64))
				}
				id := "C-1042"
				if r.Float64() < 0.15 {
					id = "C-" + strconv.Itoa(r.IntN(5000))
				}
				run.Calls[k] = Call{Tool: toolNames[t], Args: `{"amount":` + amount + `,"currency":"EUR","id":"` + id + `","step":` + strconv.Itoa(k) + `}`}
			}
			drawRest(&run, r, 100000)
			runs[i] = run
		}
	case shapeAdversarial:
		for i := range runs {
			l := 4 + r.IntN(6)
			run := Run{ID: "r" + strconv.Itoa(i), PairKey: "input=" + strconv.Itoa(i%50) + "/seed=" + strconv.Itoa(i/50)}
			run.Tools = make([]string, l)
			run.States = make([]string, l)
			run.Calls = make([]Call, l)
			for k := 0; k < l; k++ {
				t := k % len(toolNames)
				if r.IntN(3) == 0 {
					t = r.IntN(len(toolNames))
				}
				run.Tools[k] = toolNames[t]
				run.States[k] = stateNames[t]
				amount := strconv.AppendFloat(nil, float64(r.IntN(100000))/100, 'f', -1, 64)
				args := `{"amount":` + string(amount) + `,"currency":"EUR","id":"C-` + strconv.Itoa(r.IntN(20)) + `"}`
				run.Calls[k] = Call{Tool: toolNames[t], Args: args}
			}
			drawRest(&run, r, 1000)
			runs[i] = run
		}
	}
	return runs
}

// drawRest draws what a generated run has besides its calls, in this order (the generator's
// sequence depends on it): plan, output (an ECL below eclMax), success, tokens, latency,
// retries and rejected calls.
func drawRest(run *Run, r *rand.Rand, eclMax int) {
	run.Plan = "First I will load the data, then compute the figure #" + strconv.Itoa(r.IntN(1<<30))
	run.Output = `{"ecl":` + strconv.Itoa(r.IntN(eclMax)) + `}`
	run.Success = r.IntN(2) == 0
	run.Tokens = 1500 + int64(r.IntN(2000))
	run.LatencyMS = 500 + 2000*r.Float64()
	run.Retries = r.IntN(2)
	run.RejectedToolCalls = r.IntN(3) / 2
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
