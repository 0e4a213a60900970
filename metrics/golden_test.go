package metrics

import (
	"encoding/json"
	"math"
	"os"
	"testing"
)

// goldenPath holds the reference values computed with SciPy and statsmodels
// (see testdata/README.md for their origin and testdata/regen.py to
// recompute them).
const goldenPath = "testdata/golden.json"

type golden struct {
	Fisher []struct {
		Table [2][2]int `json:"table"`
		P     float64   `json:"p"`
	} `json:"fisher_exact_two_sided"`
	McNemar []struct {
		B, C int
		P    float64
	} `json:"mcnemar_exact"`
	MWAsym []struct {
		X, Y        []float64
		U1          float64
		P           float64
		CliffsDelta float64 `json:"cliffs_delta"`
	} `json:"mann_whitney_u_asymptotic"`
	MWExact []struct {
		X, Y []float64
		U1   float64
		P    float64
	} `json:"mann_whitney_u_exact"`
	Wilson []struct {
		Successes, N int
		Low, High    float64
	} `json:"wilson_95"`
	BH []struct {
		P        []float64 `json:"p"`
		Adjusted []float64 `json:"adjusted"`
		Reject   []bool    `json:"reject_at_0.05"`
	} `json:"benjamini_hochberg"`
	SeqSim []struct {
		A, B       []string
		Distance   int
		Similarity float64
	} `json:"sequence_similarity"`
	Agreement []struct {
		Signatures []string `json:"signatures"`
		Agreement  float64  `json:"agreement"`
	} `json:"pairwise_agreement"`
	PassHatK []struct {
		Tasks    []TaskTrials `json:"tasks"`
		K        int          `json:"k"`
		PassHatK float64      `json:"pass_hat_k"`
	} `json:"pass_hat_k"`
}

func loadGolden(t *testing.T) golden {
	t.Helper()
	b, err := os.ReadFile(goldenPath)
	if err != nil {
		t.Fatalf("reading the reference values: %v", err)
	}
	var g golden
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatalf("decoding %s: %v", goldenPath, err)
	}
	// A renamed or emptied key would otherwise let its test pass on nothing.
	for key, n := range map[string]int{
		"fisher_exact_two_sided": len(g.Fisher), "mcnemar_exact": len(g.McNemar),
		"mann_whitney_u_asymptotic": len(g.MWAsym), "mann_whitney_u_exact": len(g.MWExact),
		"wilson_95": len(g.Wilson), "benjamini_hochberg": len(g.BH),
		"sequence_similarity": len(g.SeqSim), "pairwise_agreement": len(g.Agreement), "pass_hat_k": len(g.PassHatK),
	} {
		if n == 0 {
			t.Fatalf("%s: no cases under %q", goldenPath, key)
		}
	}
	return g
}

// within reports whether got matches want within the reference tolerance:
// absolute 1e-9, or relative 1e-9 for values below 1e-6.
func within(got, want float64) bool {
	if math.IsNaN(got) || math.IsInf(got, 0) {
		return false
	}
	if math.Abs(want) < 1e-6 {
		return math.Abs(got-want) <= 1e-9*math.Abs(want)
	}
	return math.Abs(got-want) <= 1e-9
}

func TestGoldenFisher(t *testing.T) {
	g := loadGolden(t)
	for _, c := range g.Fisher {
		a, b, cc, d := c.Table[0][0], c.Table[0][1], c.Table[1][0], c.Table[1][1]
		got, err := FisherExact(a, b, cc, d)
		if err != nil || !within(got, c.P) {
			t.Errorf("FisherExact(%d, %d, %d, %d) = %v, %v, want %v", a, b, cc, d, got, err, c.P)
		}
	}
}

func TestGoldenMcNemar(t *testing.T) {
	g := loadGolden(t)
	for _, c := range g.McNemar {
		got, err := McNemarExact(c.B, c.C)
		if err != nil || !within(got, c.P) {
			t.Errorf("McNemarExact(%d, %d) = %v, %v, want %v", c.B, c.C, got, err, c.P)
		}
	}
}

func TestGoldenMannWhitneyAsymptotic(t *testing.T) {
	g := loadGolden(t)
	for i, c := range g.MWAsym {
		got, err := MannWhitneyUAsymptotic(c.X, c.Y)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if !within(got.U1, c.U1) || !within(got.P, c.P) || !within(got.CliffsDelta, c.CliffsDelta) {
			t.Errorf("case %d: MannWhitneyUAsymptotic = %+v, want u1 %v p %v delta %v", i, got, c.U1, c.P, c.CliffsDelta)
		}
	}
}

func TestGoldenMannWhitneyExact(t *testing.T) {
	g := loadGolden(t)
	for i, c := range g.MWExact {
		got, err := MannWhitneyUExact(c.X, c.Y)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if !within(got.U1, c.U1) || !within(got.P, c.P) {
			t.Errorf("case %d: MannWhitneyUExact = %+v, want u1 %v p %v", i, got, c.U1, c.P)
		}
		// The chooser must pick the exact method for these (no ties, small).
		auto, err := MannWhitneyU(c.X, c.Y)
		if err != nil || auto.Method != MethodExact || auto.P != got.P {
			t.Errorf("case %d: MannWhitneyU = %+v, %v, want the exact result", i, auto, err)
		}
	}
}

func TestGoldenWilson(t *testing.T) {
	g := loadGolden(t)
	for _, c := range g.Wilson {
		lo, hi, err := Wilson(c.Successes, c.N, 0.95)
		if err != nil || !within(lo, c.Low) || !within(hi, c.High) {
			t.Errorf("Wilson(%d, %d) = (%v, %v, %v), want (%v, %v)", c.Successes, c.N, lo, hi, err, c.Low, c.High)
		}
	}
}

func TestGoldenBenjaminiHochberg(t *testing.T) {
	g := loadGolden(t)
	for i, c := range g.BH {
		adj, rej, err := BenjaminiHochberg(c.P)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		for j := range c.P {
			if !within(adj[j], c.Adjusted[j]) || rej[j] != c.Reject[j] {
				t.Errorf("case %d[%d]: BenjaminiHochberg = (%v, %v), want (%v, %v)", i, j, adj[j], rej[j], c.Adjusted[j], c.Reject[j])
			}
		}
	}
}

func TestGoldenSequenceSimilarity(t *testing.T) {
	g := loadGolden(t)
	for _, c := range g.SeqSim {
		if d := Levenshtein(c.A, c.B); d != c.Distance {
			t.Errorf("Levenshtein(%q, %q) = %d, want %d", c.A, c.B, d, c.Distance)
		}
		if d := Levenshtein(c.B, c.A); d != c.Distance {
			t.Errorf("Levenshtein(%q, %q) = %d, want %d (symmetry)", c.B, c.A, d, c.Distance)
		}
		if s := SequenceSimilarity(c.A, c.B); !within(s, c.Similarity) {
			t.Errorf("SequenceSimilarity(%q, %q) = %v, want %v", c.A, c.B, s, c.Similarity)
		}
	}
}

func TestGoldenPairwiseAgreement(t *testing.T) {
	g := loadGolden(t)
	for i, c := range g.Agreement {
		got := AgreementOf(c.Signatures)
		if !got.Valid || !within(got.V, c.Agreement) {
			t.Errorf("case %d: AgreementOf = %v, want %v", i, got, c.Agreement)
		}
	}
}

func TestGoldenPassHatK(t *testing.T) {
	g := loadGolden(t)
	for i, c := range g.PassHatK {
		got, err := PassHatK(c.Tasks, c.K)
		if err != nil || !within(got, c.PassHatK) {
			t.Errorf("case %d: PassHatK(%v, %d) = %v, %v, want %v", i, c.Tasks, c.K, got, err, c.PassHatK)
		}
	}
}
