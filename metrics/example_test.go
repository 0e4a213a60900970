package metrics_test

import (
	"fmt"

	"github.com/dittolab/ditto/metrics"
)

func ExampleSequenceSimilarity() {
	a := []string{"load_data", "validate_data", "calculate", "generate_report"}
	b := []string{"load_data", "calculate", "calculate", "generate_report"}
	fmt.Println(metrics.Levenshtein(a, b), metrics.SequenceSimilarity(a, b))
	fmt.Println(metrics.SequenceSimilarity(nil, nil))
	// Output:
	// 1 0.75
	// 1
}

func ExampleAgreement() {
	// Five runs: three share one trace, two another. 3·2 + 2·1 of the
	// 5·4 ordered pairs agree.
	fmt.Println(metrics.Agreement([]int64{3, 2}))
	fmt.Println(metrics.AgreementOf([]string{"s0", "s0", "s1", "s0", "s1"}))
	fmt.Println(metrics.Agreement([]int64{1})) // one run: undefined
	// Output:
	// 0.4
	// 0.4
	// null
}

func ExampleFisherExact() {
	p, _ := metrics.FisherExact(8, 2, 1, 5)
	fmt.Printf("%.6f\n", p)
	// Output:
	// 0.034965
}

func ExampleWilson() {
	lo, hi, _ := metrics.Wilson(45, 50, 0.95)
	fmt.Printf("%.4f %.4f\n", lo, hi)
	// Output:
	// 0.7864 0.9565
}

func ExampleComputeCell() {
	runs := []metrics.Run{
		{Tools: []string{"lookup", "calculate"}, Calls: []metrics.Call{{Tool: "lookup", Args: `{"id":"A"}`}, {Tool: "calculate", Args: `{"x":1}`}}, Output: `{"r":1}`, Success: true, Tokens: 900, LatencyMS: 1200},
		{Tools: []string{"lookup", "calculate"}, Calls: []metrics.Call{{Tool: "lookup", Args: `{"id":"A"}`}, {Tool: "calculate", Args: `{"x":2}`}}, Output: `{"r":2}`, Success: false, Tokens: 950, LatencyMS: 1300},
		{Tools: []string{"lookup"}, Calls: []metrics.Call{{Tool: "lookup", Args: `{"id":"A"}`}}, Output: `{"r":1}`, Success: true, Tokens: 700, LatencyMS: 800},
	}
	m, err := metrics.ComputeCell(runs, metrics.Options{})
	if err != nil {
		panic(err)
	}
	fmt.Printf("RR %v, TSS %.4f, AC %v, success %.4f, divergence %v\n",
		m.RR.Value, m.TSS.Value.V, m.AC.Value, m.Success.Rate.V, m.Divergence)
	// Output:
	// RR 0, TSS 0.6667, AC 0.75, success 0.6667, divergence [0 1]
}
