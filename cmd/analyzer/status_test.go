package main

import (
	"strings"
	"testing"

	"github.com/dittolab/ditto/internal/queryapi"
)

func ptr[T any](v T) *T { return &v }

func TestWriteStatus(t *testing.T) {
	st := []queryapi.Study{
		{Study: "alpha", ExpectedRuns: ptr[int64](200), FinishedRuns: 57, IncompleteRuns: 2, SucceededRuns: 50, Progress: ptr(0.285)},
		{Study: "prod", SourceKind: "production", FinishedRuns: 24, SucceededRuns: 21},
		{Study: "nokey", ExpectedRuns: ptr[int64](4), FinishedRuns: 4, IncompleteRuns: 1, FoldErrors: 1, ErroredRuns: 3, Progress: ptr(1.0)},
	}
	tests := []struct {
		name string
		bars bool
		want []string
	}{
		{"plain", false, []string{
			"alpha  57/200 runs finished (28.5%), incomplete 2, succeeded 50\n",
			"prod   24 runs finished (no expected count: production traces), incomplete 0, succeeded 21\n",
			"nokey  4/4 runs finished (100.0%), incomplete 1 (1 with a gap or a refused event), succeeded 0, errored 3 (never reached",
		}},
		{"bars", true, []string{
			"alpha  28% |", "| (57/200)  incomplete 2, succeeded 50\n",
			"prod   24 runs finished",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			writeStatus(&b, st, tt.bars)
			for _, w := range tt.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("writeStatus(bars=%v) =\n%s\nlacks %q", tt.bars, b.String(), w)
				}
			}
			if strings.Contains(b.String(), "\r") {
				t.Errorf("writeStatus left a carriage return: %q", b.String())
			}
		})
	}
}

func TestAllDone(t *testing.T) {
	done := queryapi.Study{Study: "a", ExpectedRuns: ptr[int64](2), FinishedRuns: 2, Done: true}
	running := queryapi.Study{Study: "b", ExpectedRuns: ptr[int64](2), FinishedRuns: 1}
	prod := queryapi.Study{Study: "p", FinishedRuns: 5}
	tests := []struct {
		name string
		give []queryapi.Study
		want bool
	}{
		{"none yet", nil, false},
		{"all done", []queryapi.Study{done}, true},
		{"one running", []queryapi.Study{done, running}, false},
		{"production has no end", []queryapi.Study{done, prod}, false},
	}
	for _, tt := range tests {
		if got := allDone(tt.give); got != tt.want {
			t.Errorf("allDone(%s) = %v, want %v", tt.name, got, tt.want)
		}
	}
}
