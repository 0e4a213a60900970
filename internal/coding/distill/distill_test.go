package distill

import (
	"slices"
	"testing"
)

func TestDistill(t *testing.T) {
	const root = "/w/run-1"
	for _, tt := range []struct {
		name string
		give []Step
		want []Diagnostic
	}{
		{
			name: "compiler error with ANSI and the package line dropped",
			give: []Step{{Kind: KindCompile, Output: "# example.com/textutil\n\x1b[1m./anchor.go:5:15:\x1b[0m undefined: Slugify\n"}},
			want: []Diagnostic{{File: "anchor.go", Line: 5, Col: 15, Kind: KindCompile, Message: "undefined: Slugify"}},
		},
		{
			name: "vet finding",
			give: []Step{{Kind: KindVet, Output: "# example.com/x\n# [example.com/x]\n./x.go:5:28: fmt.Printf format %d reads arg #1, but call has 0 args\n"}},
			want: []Diagnostic{{File: "x.go", Line: 5, Col: 28, Kind: KindVet, Message: "fmt.Printf format %d reads arg #1, but call has 0 args"}},
		},
		{
			name: "go test -v: passing tests dropped, failing test's lines kept",
			give: []Step{{Kind: KindTestFailure, Output: "=== RUN   TestFormat\n    money_test.go:3: a log of a passing test\n--- PASS: TestFormat (0.00s)\n=== RUN   TestToCents\n" +
				"    rounding_test.go:11: ToCents(1.15) = 114, want 115\n--- FAIL: TestToCents (0.00s)\nFAIL\nFAIL\texample.com/ledger\t0.343s\nFAIL\n"}},
			want: []Diagnostic{{File: "rounding_test.go", Line: 11, Kind: KindTestFailure, Message: "TestToCents: ToCents(1.15) = 114, want 115"}},
		},
		{
			name: "go test without -v: lines after the verdict",
			give: []Step{{Kind: KindTestFailure, Output: "--- FAIL: TestA (0.00s)\n    a_test.go:7: boom\nFAIL\n"}},
			want: []Diagnostic{{File: "a_test.go", Line: 7, Kind: KindTestFailure, Message: "TestA: boom"}},
		},
		{
			name: "panic placed at the innermost frame in the tree",
			give: []Step{{Kind: KindTestFailure, Output: "=== RUN   TestAdd\n--- FAIL: TestAdd (0.00s)\npanic: assignment to entry in nil map [recovered]\n\ngoroutine 7 [running]:\n" +
				"testing.tRunner.func1.2({0x5}, {0x6})\n\t/usr/lib/go/src/testing/testing.go:1734 +0x21c\n" +
				"example.com/inventory.(*Stock).Add(...)\n\t/w/run-1/stock.go:21\n" +
				"example.com/inventory.TestAdd(0xc0001)\n\t/w/run-1/stock_test.go:7 +0x4b\n"}},
			want: []Diagnostic{{File: "stock.go", Line: 21, Kind: KindPanic, Message: "panic: assignment to entry in nil map [recovered]"}},
		},
		{
			name: "data race",
			give: []Step{{Kind: KindTestFailure, Output: "==================\nWARNING: DATA RACE\nRead at 0x00c000 by goroutine 8:\n  example.com/ledger.(*Ledger).Add()\n      /w/run-1/ledger.go:14 +0x44\n"}},
			want: []Diagnostic{{File: "ledger.go", Line: 14, Kind: KindRace, Message: "data race: read in example.com/ledger.(*Ledger).Add"}},
		},
		{
			name: "timeout",
			give: []Step{{Kind: KindTestFailure, TimedOut: true}},
			want: []Diagnostic{{Kind: KindTimeout, Message: "the command ran out of time"}},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, total := Distill(root, tt.give, Options{})
			if !slices.Equal(got, tt.want) || total != len(tt.want) {
				t.Errorf("Distill = %+v (total %d), want %+v", got, total, tt.want)
			}
		})
	}
}

func TestDistillCaps(t *testing.T) {
	out := ""
	for i := range 30 {
		out += "./a.go:" + string(rune('0'+i%10)) + string(rune('0'+i/10)) + ":1: undefined: x" + string(rune('a'+i%26)) + "\n"
	}
	got, total := Distill("", []Step{{Kind: KindCompile, Output: out}}, Options{MaxDiagnostics: 5, MaxMessage: 8})
	if len(got) != 5 || total != 30 {
		t.Fatalf("Distill kept %d of %d, want 5 of 30", len(got), total)
	}
	if got[0].Message != "undefine…" {
		t.Errorf("message %q, want it clipped to 8 bytes and an ellipsis", got[0].Message)
	}
	if r := Render(got, total); r == "" || r[len(r)-len("(25 more not shown)\n"):] != "(25 more not shown)\n" {
		t.Errorf("Render = %q, want the cap noted", r)
	}
}
