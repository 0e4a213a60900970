package metrics

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// TestSignaturesMatchTheOneByOne checks that Signatures gives each of the six signatures the
// function of its field gives, over runs with empty and missing fields, long strings (lengths
// that take two and three bytes of uvarint) and lists of random lengths up to 199.
func TestSignaturesMatchTheOneByOne(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	str := func() string {
		switch rng.IntN(4) {
		case 0:
			return ""
		case 1:
			return strings.Repeat("x", 100+rng.IntN(20000))
		}
		return string(rune('a'+rng.IntN(26))) + strings.Repeat("é", rng.IntN(10))
	}
	list := func() []string {
		if rng.IntN(5) == 0 {
			return nil
		}
		out := make([]string, rng.IntN(200))
		for i := range out {
			out[i] = str()
		}
		return out
	}
	runs := []Run{{}, {Plan: "p"}, {Calls: []Call{{}}}}
	for range 300 {
		r := Run{Plan: str(), States: list(), Tools: list(), Output: str()}
		for range rng.IntN(30) {
			r.Calls = append(r.Calls, Call{Tool: str(), Args: str()})
		}
		runs = append(runs, r)
	}
	for i, r := range runs {
		got := Signatures(r)
		want := RunSignatures{PlanSignature(r), StatesSignature(r), ToolsSignature(r), CallsSignature(r),
			OutputSignature(r), TraceSignature(r)}
		if got != want {
			t.Fatalf("run %d: Signatures = %x, the six functions %x", i, got, want)
		}
	}
	// Fields that differ give different signatures (the framing keeps them apart).
	a, b := Signatures(Run{States: []string{"ab", "c"}}), Signatures(Run{States: []string{"a", "bc"}})
	if a.States == b.States || a.Trace == b.Trace || a.Plan != b.Plan {
		t.Error("(ab, c) and (a, bc): states or trace signatures equal, or plan signatures differ")
	}
}
