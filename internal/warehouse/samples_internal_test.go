package warehouse

import (
	"bytes"
	"testing"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/samples"
)

// sampleLine is one line of the bundled production traces (samples.Traces), its event's id and
// the subject the event is published on.
type sampleLine struct {
	line        []byte
	id, subject string
}

// sampleLines returns the bundled traces' lines with their subjects, in file order
// (warehousetest.SampleMsgs for the tests inside the package, which cannot import it).
func sampleLines(t testing.TB) []sampleLine {
	t.Helper()
	var out []sampleLine
	for _, line := range bytes.Split(bytes.TrimSpace(samples.Traces), []byte("\n")) {
		e, err := events.Decode(line)
		if err != nil {
			t.Fatal(err)
		}
		subj, err := events.SubjectOf(&e)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, sampleLine{line: line, id: e.ID, subject: subj})
	}
	return out
}
