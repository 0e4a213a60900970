package receiver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/bus/bustest"
	"github.com/dittolab/ditto/internal/receiver"
)

// pythonStyle rewrites the JSON values of encoded events as Python's json.dumps writes them:
// keys in insertion order, a space after ':' and ',', floats with a decimal point.
func pythonStyle(line string) string {
	for _, r := range []struct{ old, new string }{
		{`"args":{"i":0}`, `"args":{"z": 1.0, "i": 0}`},
		{`"args":{"i":1}`, `"args":{"z": [1, 2.50], "i": 1}`},
		{`"output":0`, `"output":0.0`},
	} {
		line = strings.Replace(line, r.old, r.new, 1)
	}
	return line
}

// TestEventsCanonicalized: a batch whose arguments and outputs are valid JSON but not in RFC
// 8785 form is stored whole, every value in canonical form, and the run folds.
func TestEventsCanonicalized(t *testing.T) {
	e := newEnv(t, nil)
	evs := runEvents(t, "prod", "run-py", 2) // started, 2 × (called, returned), finished
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(string(ndjson(t, evs))), "\n") {
		lines = append(lines, pythonStyle(l))
	}
	if lines[1] == strings.Split(string(ndjson(t, evs)), "\n")[1] {
		t.Fatal("the test's arguments were not rewritten")
	}
	resp, body := e.post(t, "/v1/events", tokProd, "application/x-ndjson", []byte(strings.Join(lines, "\n")))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST = %d %s", resp.StatusCode, body)
	}
	r := decodeResp(t, body)
	if r.Accepted != len(evs) || len(r.Rejected) != 0 || r.Canonicalized != 3 || len(r.IncompleteRuns) != 0 {
		t.Fatalf("response = %+v, want all %d accepted, 3 canonicalized, no incomplete run", r, len(evs))
	}
	run := folds(t, stored(t, e.bus))["prod/run-py"]
	if run == nil || !run.Done() || len(run.Calls) != 2 {
		t.Fatalf("stored run = %+v, want it whole", run)
	}
	for i, want := range []string{`{"i":0,"z":1}`, `{"i":1,"z":[1,2.5]}`} {
		if got := string(run.Calls[i].Args); got != want {
			t.Errorf("stored args %d = %s, want %s", i, got, want)
		}
	}
}

// TestEventsNameIncompleteRuns: when a batch's rejections leave a run with a gap, the answer
// names the run and the missing sequence numbers.
func TestEventsNameIncompleteRuns(t *testing.T) {
	e := newEnv(t, nil)
	evs := runEvents(t, "prod", "run-gap", 2)
	lines := strings.Split(strings.TrimSpace(string(ndjson(t, evs))), "\n")
	lines[2] = strings.Replace(lines[2], `"tool":"lookup"`, `"tool":""`, 1) // seq 3: tool.returned without its tool
	resp, body := e.post(t, "/v1/events", tokProd, "application/x-ndjson", []byte(strings.Join(lines, "\n")))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST = %d %s", resp.StatusCode, body)
	}
	r := decodeResp(t, body)
	want := []receiver.IncompleteRun{{Study: "prod", Run: "run-gap", Attempt: 1, Rejected: 1, Accepted: len(evs) - 1, MissingSeqs: []int64{3}}}
	if r.Accepted != len(evs)-1 || !reflect.DeepEqual(r.IncompleteRuns, want) {
		t.Fatalf("response = %+v, want IncompleteRuns %+v", r, want)
	}
	raw, _ := json.Marshal(r)
	if !strings.Contains(string(raw), `"incomplete_runs":[{"study":"prod","run":"run-gap","attempt":1,"rejected":1,"accepted":5,"missing_seqs":[3]}]`) {
		t.Errorf("answer JSON = %s", raw)
	}
}

// TestImportCanonicalizes: producer import stores lines with unsorted keys in canonical form.
func TestImportCanonicalizes(t *testing.T) {
	b := bustest.NewServer(t).Connect(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	evs := runEvents(t, "prod", "run-imp", 2)
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(string(ndjson(t, evs))), "\n") {
		lines = append(lines, pythonStyle(l))
	}
	res, err := receiver.Import(ctx, b, strings.NewReader(strings.Join(lines, "\n")), receiver.ImportConfig{})
	if err != nil || res.Published != len(evs) || len(res.Rejected) != 0 || res.Canonicalized != 3 {
		t.Fatalf("Import() = %+v, %v; want all published, 3 canonicalized", res, err)
	}
	run := folds(t, stored(t, b))["prod/run-imp"]
	if run == nil || !run.Done() || string(run.Calls[1].Args) != `{"i":1,"z":[1,2.5]}` {
		t.Fatalf("stored run = %+v", run)
	}
	if _, err := events.Decode([]byte(lines[1])); err == nil {
		t.Error("the test's line is canonical already")
	}
}
